//===- OutputFile.cpp - files that appear whole or not at all -------------===//
#include "lib/Codegen/OutputFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"

using namespace mlir;
using namespace kiln;

OutputFile::~OutputFile() {
  if (tempPath.empty())
    return;
  llvm::sys::fs::remove(tempPath);
  llvm::sys::DontRemoveFileOnSignal(tempPath);
}

LogicalResult OutputFile::create(StringRef finalPath, Location loc) {
  this->finalPath = finalPath.str();
  if (isStdout())
    return success();
  SmallString<256> model(finalPath);
  model += ".tmp-%%%%%%";
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(model, fd, tempPath))
    return emitError(loc) << "cannot write '" << finalPath
                          << "': " << ec.message();
  // A compile stopped by SIGINT or SIGTERM (a timeout) leaves nothing.
  llvm::sys::RemoveFileOnSignal(tempPath);
  stream = std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
  return success();
}

LogicalResult OutputFile::close(Location loc) {
  if (isStdout()) {
    llvm::outs().flush();
    return success();
  }
  if (closed)
    return success();
  closed = true;
  stream->close();
  if (!stream->has_error())
    return success();
  std::error_code ec = stream->error();
  stream->clear_error();
  return emitError(loc) << "cannot write '" << finalPath
                        << "': " << ec.message();
}

LogicalResult OutputFile::commit(Location loc) {
  if (failed(close(loc)))
    return failure();
  if (isStdout())
    return success();
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, finalPath))
    return emitError(loc) << "cannot write '" << finalPath
                          << "': " << ec.message();
  llvm::sys::DontRemoveFileOnSignal(tempPath);
  tempPath.clear();
  return success();
}

TemporaryFileRemover::TemporaryFileRemover(StringRef path) : path(path.str()) {
  llvm::sys::RemoveFileOnSignal(path);
}

TemporaryFileRemover::~TemporaryFileRemover() {
  llvm::sys::fs::remove(path);
  llvm::sys::DontRemoveFileOnSignal(path);
}
