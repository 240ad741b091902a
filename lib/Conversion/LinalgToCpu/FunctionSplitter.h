//===- FunctionSplitter.h - cut a function into outlined parts --*- C++ -*-===//
//
// Cuts a function's blocks into runs of operations of bounded size and moves
// each run into a private function called in its place. Two passes use it:
// one before bufferization, with tensors crossing between parts, and one
// before LLVM, with buffers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CONVERSION_LINALGTOCPU_FUNCTIONSPLITTER_H
#define KILN_CONVERSION_LINALGTOCPU_FUNCTIONSPLITTER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln {

/// Marks the parts cut before bufferization, to be put back in place after
/// it.
constexpr llvm::StringLiteral kBufferizationPartAttr =
    "kiln.bufferization_part";

/// What may cross a part's boundary, and what stays out of every run.
class SplitPolicy {
public:
  virtual ~SplitPolicy() = default;
  /// Operations left in place and recreated in every part that uses them.
  virtual bool isRecomputable(mlir::Operation *op) const = 0;
  /// Types a part may take or return.
  virtual bool isPassable(mlir::Type type) const = 0;
  /// Operations that stay in the function between runs.
  virtual bool isBarrier(mlir::Operation *op) const = 0;
  /// Whether an operation larger than a part has its regions split (or is
  /// a part of its own).
  virtual bool splitsRegions() const = 0;
};

/// Number of operations in `op`, `op` and nested ones included.
int64_t countNestedOps(mlir::Operation *op);

/// Cuts every block of `func` into runs of at most `maxOps` operations
/// (nested ones counted) and outlines each into a private function named
/// after `func` with a `_part` suffix; returns those functions. An
/// operation larger than `maxOps` has its regions split instead where the
/// policy allows it, and is a part of its own otherwise. A run
/// whose values cannot cross a call (by the policy) stays.
llvm::SmallVector<mlir::func::FuncOp> splitFunction(mlir::func::FuncOp func,
                                                    mlir::SymbolTable &symbols,
                                                    const SplitPolicy &policy,
                                                    int64_t maxOps);

} // namespace kiln

#endif // KILN_CONVERSION_LINALGTOCPU_FUNCTIONSPLITTER_H
