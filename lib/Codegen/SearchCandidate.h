//===- SearchCandidate.h - compile one candidate of a search ----*- C++ -*-===//
//
// The quality-budget searches (layers to skip, a sampler's cache) compile
// candidates of the module they were given and measure them. Each
// candidate is a library compiled from a clone with the search's own
// options turned off.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_SEARCHCANDIDATE_H
#define KILN_LIB_CODEGEN_SEARCHCANDIDATE_H

#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// `options` for a candidate: a shared library at `path`, no calibration,
/// quality budget, reports, searches, pass-manager hooks or timing.
CompileOptions candidateOptions(const CompileOptions &options,
                                llvm::StringRef path);

/// Compiles a clone of `module` (sharing its weights) with `candidate`.
mlir::LogicalResult compileCandidate(mlir::ModuleOp module,
                                     const CompileOptions &candidate);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_SEARCHCANDIDATE_H
