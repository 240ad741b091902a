//===- CompileDeadline.cpp - kiln-compile's --max-compile-seconds ---------===//
#include "CompileDeadline.h"

#include "llvm/Support/Signals.h"

#include <chrono>
#include <unistd.h>

using namespace kiln;

CompileDeadline::CompileDeadline(unsigned seconds, std::string message) {
  if (seconds == 0)
    return;
  watcher = std::thread([this, seconds, message = std::move(message)] {
    std::unique_lock<std::mutex> lock(mutex);
    if (finished.wait_for(lock, std::chrono::seconds(seconds),
                          [this] { return done; }))
      return;
    llvm::sys::RunInterruptHandlers();
    std::string line = message + "\n";
    (void)::write(STDERR_FILENO, line.data(), line.size());
    _exit(1);
  });
}

CompileDeadline::~CompileDeadline() {
  if (!watcher.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  finished.notify_one();
  watcher.join();
}
