//===- ConstantEvaluation.h - evaluate kiln ops on constants ----*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H
#define KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace kiln {

/// Whether evaluateConstantOp knows how to compute `op`.
bool isConstantEvaluable(mlir::Operation *op);

/// The value `op` computes when its operands are `operands`, with exactly
/// the semantics of the generated code; null if `op` is not evaluable or
/// the result is not well defined (an out-of-range float-to-int cast).
mlir::DenseElementsAttr
evaluateConstantOp(mlir::Operation *op,
                   llvm::ArrayRef<mlir::DenseElementsAttr> operands);

/// A reshape, transpose, slice or broadcast of `input` computed on its
/// bytes: what kiln-fold-constants uses for weights, which can be large
/// resource blobs (a reshape keeps the blob; the rest write a new one).
/// Null if `op` is none of those or `input`'s bytes can't be read.
mlir::ElementsAttr evaluateDataMovement(mlir::Operation *op,
                                        mlir::ElementsAttr input);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H
