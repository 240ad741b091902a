//===- Int4Weights.h - the constants of kiln.int4_matmul --------*- C++ -*-===//
//
// Both producers of 4-bit products, the int4-weight quantization pass and
// the import of ONNX Runtime's MatMulNBits, lay out their integers and
// scales the same way; this builds that layout once.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_IR_INT4WEIGHTS_H
#define KILN_DIALECT_KILN_IR_INT4WEIGHTS_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// The weight panels, block scales, column sums and (for asymmetric
/// weights; null otherwise) block zero points of a kiln.int4_matmul.
struct Int4Weights {
  mlir::Value panels, scales, columnSums, zeroPoints;
};

/// Creates, at `b`'s insertion point, the constants of a kiln.int4_matmul
/// for a `[k, n]` matrix of integers `integer(row, col)` with
/// `scale(block, col)` for each block of `blockSize` rows, in panels of
/// `width` columns. The integers lie in [-8, 7] (zero point 8), or, given
/// `zeroPoint(block, col)` in [0, 15], in [-zeroPoint, 15 - zeroPoint].
Int4Weights createInt4Weights(
    mlir::OpBuilder &b, mlir::Location loc, int64_t k, int64_t n,
    int64_t blockSize, int64_t width,
    llvm::function_ref<int(int64_t row, int64_t col)> integer,
    llvm::function_ref<float(int64_t block, int64_t col)> scale,
    llvm::function_ref<int(int64_t block, int64_t col)> zeroPoint = nullptr);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_INT4WEIGHTS_H
