//===- CompileDeadline.h - kiln-compile's --max-compile-seconds -*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_COMPILE_COMPILEDEADLINE_H
#define KILN_TOOLS_KILN_COMPILE_COMPILEDEADLINE_H

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace kiln {

/// Ends the process with exit status 1 and `message` on stderr unless
/// destroyed within `seconds` (0: never). The files a compile has in
/// progress are registered with LLVM's signal handlers, which this runs
/// first, so nothing is left behind. The compile itself can't be stopped
/// part way (a pass has no point to stop at), hence the whole process.
class CompileDeadline {
public:
  CompileDeadline(unsigned seconds, std::string message);
  CompileDeadline(const CompileDeadline &) = delete;
  CompileDeadline &operator=(const CompileDeadline &) = delete;
  ~CompileDeadline();

private:
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread watcher;
};

} // namespace kiln

#endif // KILN_TOOLS_KILN_COMPILE_COMPILEDEADLINE_H
