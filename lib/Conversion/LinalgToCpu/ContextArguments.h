//===- ContextArguments.h - arguments a call's context provides -*- C++ -*-===//
//
// Scratch memory, state and the executor reach generated functions as
// arguments marked by an attribute (dialects/Kiln/IR/EntryPoints.h). Passes
// that need one ask for it by that attribute; kiln-export-entries fills each
// entry's from the ABI call structure.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_LINALGTOCPU_CONTEXTARGUMENTS_H
#define KILN_LIB_CONVERSION_LINALGTOCPU_CONTEXTARGUMENTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// The argument of `func` marked `attrName`, or null.
mlir::BlockArgument findContextArgument(mlir::func::FuncOp func,
                                        llvm::StringRef attrName);

/// The argument of `func` marked `attrName`; appended with `type` if it has
/// none, in which case every caller passes its own, found or appended the
/// same way. Fails with an error if `func` is used other than by calls.
mlir::FailureOr<mlir::BlockArgument>
getOrAddContextArgument(mlir::func::FuncOp func, llvm::StringRef attrName,
                        mlir::Type type);

} // namespace kiln

#endif // KILN_LIB_CONVERSION_LINALGTOCPU_CONTEXTARGUMENTS_H
