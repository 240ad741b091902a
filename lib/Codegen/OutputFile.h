//===- OutputFile.h - files that appear whole or not at all -----*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_OUTPUTFILE_H
#define KILN_LIB_CODEGEN_OUTPUTFILE_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace kiln {

/// A file created next to the final output and renamed onto it by commit();
/// removed if the compile fails before that, so a failed compile never
/// leaves a partial file behind. Errors name the final path. The path "-"
/// is standard output, written directly.
class OutputFile {
public:
  OutputFile() = default;
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;
  ~OutputFile();

  mlir::LogicalResult create(llvm::StringRef finalPath, mlir::Location loc);
  llvm::raw_fd_ostream &os() { return stream ? *stream : llvm::outs(); }
  /// The temporary file's path; empty before create() and for stdout.
  llvm::StringRef path() const { return tempPath; }
  bool isStdout() const { return finalPath == "-"; }
  /// Flushes and closes the file.
  mlir::LogicalResult close(mlir::Location loc);
  /// Closes the file and renames it onto the final path.
  mlir::LogicalResult commit(mlir::Location loc);

private:
  std::string finalPath;
  llvm::SmallString<256> tempPath;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
  bool closed = false;
};

/// Removes the file at `path` when it goes out of scope, or from LLVM's
/// signal handlers if the process is stopped first (Ctrl-C, a time limit),
/// so that no temporary file outlives a compile.
class TemporaryFileRemover {
public:
  explicit TemporaryFileRemover(llvm::StringRef path);
  TemporaryFileRemover(const TemporaryFileRemover &) = delete;
  TemporaryFileRemover &operator=(const TemporaryFileRemover &) = delete;
  ~TemporaryFileRemover();

private:
  std::string path;
};

} // namespace kiln

#endif // KILN_LIB_CODEGEN_OUTPUTFILE_H
