//===- QuantizableProducts.h - products whose weights can be quantized ----===//
//
// What the weight-quantizing passes share: which kiln.matmul products have
// constant float weights they can rewrite, and why the others stay float
// (for the quantization report).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_QUANTIZABLEPRODUCTS_H
#define KILN_PASSES_QUANTIZABLEPRODUCTS_H

#include "dialects/Kiln/IR/KilnOps.h"

#include <optional>

namespace kiln {

/// The constant `[K, N]` f32 weights of a product, row-major.
struct ConstantWeights {
  ConstantOp op;
  const float *values;
  int64_t k, n;

  float at(int64_t row, int64_t col) const { return values[row * n + col]; }
};

/// The weights of `op` if it multiplies an f32 input of rank 2 or more
/// (static depth) by constant f32 weights of at least `minDepth` rows.
std::optional<ConstantWeights> matchQuantizableProduct(MatMulOp op,
                                                       int64_t minDepth);

/// The constants of a kiln.quantized_matmul for `weights`: each column
/// quantized symmetrically to 7 bits (scale `max |w| / 63`), in panels of
/// `width` columns; and the summed squares of the weights' errors and of
/// the weights, for setWeightError.
struct Int8Weights {
  mlir::Value panels, scales, columnSums;
  double errorSquares, weightSquares;
};
Int8Weights createInt8Weights(mlir::OpBuilder &b, mlir::Location loc,
                              const ConstantWeights &weights, int64_t width);

/// Records on `product` (as `kiln.weight_error`) the relative RMS error of
/// its quantized weights: the square roots of the summed squares of the
/// errors over those of the weights.
void setWeightError(mlir::Operation *product, double errorSquares,
                    double weightSquares);

/// Marks each product under `root` that has constant 2-D weights but was
/// not quantized with `kiln.kept_float`, the reason as a string.
void markProductsKeptInFloat(mlir::Operation *root, int64_t minDepth);

} // namespace kiln

#endif // KILN_PASSES_QUANTIZABLEPRODUCTS_H
