//===- ParallelCodegen.h - machine code on several threads ------*- C++ -*-===//
//
// LLVM's code generator works one function at a time on one thread; an
// artifact's code is many independent kernels, so it is split into parts
// that are compiled side by side and linked together.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_PARALLELCODEGEN_H
#define KILN_LIB_CODEGEN_PARALLELCODEGEN_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>

namespace kiln {

/// Writes an object file for `module` to `os` with `machine`.
llvm::Error writeObject(llvm::Module &module, llvm::TargetMachine &machine,
                        llvm::raw_pwrite_stream &os);

/// Splits `module` (consumed) into one part per stream in `outputs` and
/// writes each part's object there, each on its own thread with its own
/// machine from `machines` (one per output). Internal symbols become hidden
/// so that the parts link to each other and to nothing else.
llvm::Error
writeObjectsInParallel(llvm::Module &module,
                       llvm::ArrayRef<std::unique_ptr<llvm::TargetMachine>> machines,
                       llvm::ArrayRef<llvm::raw_pwrite_stream *> outputs);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_PARALLELCODEGEN_H
