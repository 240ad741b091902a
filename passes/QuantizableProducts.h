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
#include <vector>

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

/// The integers weights become, each with its scale: int8-dynamic's 7-bit
/// per column (`max |w| / 63`), int4-weight's 4-bit per block of
/// `blockSize` rows of a column (`max |w| / 7`). The scales are
/// `scales[block * n + col]` (one block for int8); 0 for all-zero ones.
std::vector<float> getWeightScales(const ConstantWeights &weights,
                                   int64_t blockSize, int maxInteger);
/// `value` over `scale`, rounded half to even into [-maxInteger - extra,
/// maxInteger] (extra 1 for int4's [-8, 7], 0 for int8's symmetric range).
int quantizeWeight(float value, float scale, int maxInteger, int extra);

inline constexpr int kMaxInt8Weight = 63;
inline constexpr int kMaxInt4Weight = 7;

/// int4-weight's quantization of a `[k, n]` matrix: for each block of
/// `blockSize` rows of a column a scale and a zero point in [0, 15], and
/// the integers `w = q - zero` the weights round to. Symmetric: scale
/// `max |w| / 7`, zero point 8, `w` in [-8, 7]; with zero points: the
/// block's range widened to 0 over 15 steps, `w` in [-zero, 15 - zero].
struct Int4Quantization {
  Int4Quantization(const ConstantWeights &weights, int64_t blockSize,
                   bool withZeroPoints);

  float scale(int64_t block, int64_t col) const { return scales[block * n + col]; }
  int zeroPoint(int64_t block, int64_t col) const {
    return zeroPoints[block * n + col];
  }
  int integer(int64_t row, int64_t col) const;

  const ConstantWeights &weights;
  int64_t blockSize, n;
  std::vector<float> scales;
  std::vector<int> zeroPoints;
  bool symmetric;
};

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

/// Whether `width` can be a weight panel's column count (whole AVX2
/// registers); if not, reports it on `root` in `pass`'s name.
llvm::LogicalResult checkPanelWidth(mlir::Operation *root,
                                    llvm::StringRef pass, int64_t width);

/// A 0-D i8 constant holding the uint8 zero point `zeroPoint` (its bits),
/// for kiln.quantized_matmul's static input quantization.
mlir::Value createUnsignedZeroPoint(mlir::OpBuilder &b, mlir::Location loc,
                                    int64_t zeroPoint);

/// Records on `product` (as `kiln.weight_error`) the relative RMS error of
/// its quantized weights: the square roots of the summed squares of the
/// errors over those of the weights; and what calibration said of
/// `original`, the product it replaces (its measured error, or why it was
/// not measured), if anything.
void setWeightError(mlir::Operation *product, double errorSquares,
                    double weightSquares, mlir::Operation *original);

/// Marks each product under `root` that has constant 2-D weights but was
/// not quantized with `kiln.kept_float`, the reason as a string.
void markProductsKeptInFloat(mlir::Operation *root, int64_t minDepth);

} // namespace kiln

#endif // KILN_PASSES_QUANTIZABLEPRODUCTS_H
