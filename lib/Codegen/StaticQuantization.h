//===- StaticQuantization.h - int8-static's choice per product -*- C++ -*-===//
//
// A static quantization fixes each product's input scale when the model is
// compiled, so one range serves every token: a few outlier columns (a
// transformer's LayerNorm outputs have them) stretch it and coarsen the
// step for all the others. SmoothQuant divides each input column by a
// factor and multiplies the matching weight row by it, moving part of an
// outlier's range into the weights, which are quantized per column. The
// migration strength alpha and the clipping of the range are chosen per
// product, on what calibration saw entering it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_STATICQUANTIZATION_H
#define KILN_LIB_CODEGEN_STATICQUANTIZATION_H

#include "passes/QuantizableProducts.h"

#include <utility>
#include <vector>

namespace kiln {

/// The uint8 scale and zero point of the range [low, high] widened to 0.
std::pair<float, float> getUint8Range(float low, float high);

/// `a` (`[rows, k]`) times `b` (`[k, n]`), row-major, eight rows at a time
/// so that each row of `b` is read once per eight rows.
std::vector<float> multiplyRows(const std::vector<float> &a, const float *b,
                                int64_t k, int64_t n);

/// What calibration saw entering one product of depth `k`.
struct StaticInputs {
  explicit StaticInputs(int64_t k);
  /// Adds the `m` rows of `x` (`[m, k]`) to each column's range, and every
  /// `step`th of them to the rows kept for measuring.
  void add(const float *x, int64_t m, int64_t step);

  int64_t k;
  /// Each input column's smallest and largest value over every row seen.
  std::vector<float> low, high;
  /// The rows kept, `[rows, k]`.
  std::vector<float> rows;
};

/// A product's static input quantization: `q = round(x[k] / (scale *
/// smoothing[k])) + zeroPoint` (no smoothing: factors of 1).
struct StaticQuantization {
  float scale = 0;
  int64_t zeroPoint = 0;
  /// SmoothQuant's migration strength, negative if unsmoothed.
  float alpha = -1;
  /// One factor per input column; empty if unsmoothed.
  std::vector<float> smoothing;
  /// The relative RMS error of the product's output on the kept rows, with
  /// its weights quantized as int8-static does (smoothed, 7 bits per
  /// column).
  double error = 0;
};

/// The smoothing and clipped range with the least output error on
/// `inputs`' rows for the product with `weights`.
StaticQuantization chooseStaticQuantization(const ConstantWeights &weights,
                                            const StaticInputs &inputs);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_STATICQUANTIZATION_H
