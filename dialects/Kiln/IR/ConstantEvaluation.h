//===- ConstantEvaluation.h - evaluate kiln ops on constants ----*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H
#define KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace kiln {

class ConcatOp;

/// The most elements an op folder computes: shape arithmetic and small
/// tables fold; anything larger is kiln-fold-constants' decision.
constexpr int64_t kFoldElementLimit = 4096;

/// Whether evaluateConstantOp knows how to compute `op`.
bool isConstantEvaluable(mlir::Operation *op);

/// The value `op` computes when its operands are `operands`, with exactly
/// the semantics of the generated code; null if `op` is not evaluable or
/// the result is not well defined (an out-of-range float-to-int cast).
mlir::DenseElementsAttr
evaluateConstantOp(mlir::Operation *op,
                   llvm::ArrayRef<mlir::DenseElementsAttr> operands);

/// The fold of an evaluable op (its `fold` method): the result of
/// evaluateConstantOp when every operand is a dense constant and the result
/// has a static shape of at most kFoldElementLimit elements; null otherwise.
mlir::OpFoldResult foldConstantOperands(mlir::Operation *op,
                                        llvm::ArrayRef<mlir::Attribute> operands);

/// A reshape, transpose, slice or broadcast of `input` computed on its
/// bytes: what kiln-fold-constants uses for weights, which can be large
/// resource blobs (a reshape keeps the blob; the rest write a new one).
/// Null if `op` is none of those or `input`'s bytes can't be read.
mlir::ElementsAttr evaluateDataMovement(mlir::Operation *op,
                                        mlir::ElementsAttr input);

/// A concatenation of `inputs` computed on their bytes, as
/// evaluateDataMovement (an LSTM's gate weights, reordered by the importer,
/// are concatenations of resource blobs). Null if an input's bytes can't be
/// read.
mlir::ElementsAttr
evaluateConcatBytes(ConcatOp op, llvm::ArrayRef<mlir::ElementsAttr> inputs);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_CONSTANTEVALUATION_H
