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

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H
