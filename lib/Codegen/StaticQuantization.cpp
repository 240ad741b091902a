//===- StaticQuantization.cpp - int8-static's choice per product ----------===//
#include "lib/Codegen/StaticQuantization.h"

#include <algorithm>
#include <cmath>

using namespace kiln;

namespace {

/// SmoothQuant's migration strengths tried besides no smoothing: the
/// paper's 0.5 suits most layers, but the best differs from layer to layer.
constexpr float kAlphas[] = {0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
/// The fractions of the (smoothed) calibration range tried: clipping rare
/// outliers refines the step for every other value.
constexpr float kRangeClips[] = {1.0f, 0.9f, 0.8f, 0.7f, 0.6f, 0.5f, 0.4f};
/// How many candidates, best estimated first, are measured exactly.
constexpr size_t kMeasuredCandidates = 3;

double sumOfSquares(const std::vector<float> &values) {
  double sum = 0;
  for (float v : values)
    sum += double(v) * v;
  return sum;
}

/// The weights with each row multiplied by its smoothing factor, exact and
/// as int8-static's 7-bit integers per column give them back.
struct SmoothedWeights {
  std::vector<float> exact, rounded;
  /// Per row: the summed squares of the rounded weights, and of the
  /// rounding errors.
  std::vector<double> norms, errors;
};

SmoothedWeights smoothWeights(const ConstantWeights &weights,
                              const std::vector<float> &factors) {
  int64_t k = weights.k, n = weights.n;
  SmoothedWeights smoothed;
  smoothed.exact.resize(k * n);
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col)
      smoothed.exact[row * n + col] = weights.at(row, col) * factors[row];
  ConstantWeights view = weights;
  view.values = smoothed.exact.data();
  std::vector<float> scales = getWeightScales(view, k, kMaxInt8Weight);
  smoothed.rounded.resize(k * n);
  smoothed.norms.assign(k, 0);
  smoothed.errors.assign(k, 0);
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col) {
      float value = smoothed.exact[row * n + col];
      float rounded =
          quantizeWeight(value, scales[col], kMaxInt8Weight, 0) * scales[col];
      smoothed.rounded[row * n + col] = rounded;
      smoothed.norms[row] += double(rounded) * rounded;
      smoothed.errors[row] += double(rounded - value) * (rounded - value);
    }
  return smoothed;
}

/// SmoothQuant's factor for each input column, `max |x|^alpha / max
/// |w|^(1 - alpha)` over the column's inputs and the row's weights; 1
/// where either is all zeros, and for a negative alpha.
std::vector<float> getFactors(const ConstantWeights &weights,
                              const StaticInputs &inputs, float alpha) {
  std::vector<float> factors(weights.k, 1.0f);
  if (alpha < 0)
    return factors;
  for (int64_t row = 0; row < weights.k; ++row) {
    float input = std::max(-inputs.low[row], inputs.high[row]), weight = 0;
    for (int64_t col = 0; col < weights.n; ++col)
      weight = std::max(weight, std::fabs(weights.at(row, col)));
    if (input > 0 && weight > 0)
      factors[row] = std::pow(input, alpha) / std::pow(weight, 1 - alpha);
  }
  return factors;
}

/// The kept rows divided by `factors`, quantized with `scale` and `zero`
/// as kiln.quantized_matmul does (dividing by the scale times the factor),
/// and given back.
std::vector<float> roundRows(const StaticInputs &inputs,
                             const std::vector<float> &factors, float scale,
                             float zero) {
  std::vector<float> rounded(inputs.rows.size());
  for (size_t i = 0; i < rounded.size(); ++i) {
    float divisor = scale * factors[i % inputs.k];
    float q = divisor > 0 ? std::nearbyint(inputs.rows[i] / divisor) : 0;
    rounded[i] = (std::clamp(q + zero, 0.0f, 255.0f) - zero) * scale;
  }
  return rounded;
}

struct Candidate {
  float alpha, clip;
  /// The squared output error expected if the rounding errors of
  /// different input columns are independent: each column's input
  /// error times its weight row's squared norm, plus each weight row's
  /// error times its input's squares.
  double estimate;
};

} // namespace

std::vector<float> kiln::multiplyRows(const std::vector<float> &a,
                                      const float *b, int64_t k, int64_t n) {
  int64_t rows = a.size() / k;
  std::vector<float> c(rows * n, 0.0f);
  constexpr int64_t kBlock = 8;
  for (int64_t first = 0; first < rows; first += kBlock) {
    int64_t last = std::min(rows, first + kBlock);
    for (int64_t i = 0; i < k; ++i) {
      const float *bRow = b + i * n;
      for (int64_t r = first; r < last; ++r) {
        float x = a[r * k + i];
        float *cRow = c.data() + r * n;
        for (int64_t j = 0; j < n; ++j)
          cRow[j] += x * bRow[j];
      }
    }
  }
  return c;
}

std::pair<float, float> kiln::getUint8Range(float low, float high) {
  low = std::min(low, 0.0f);
  high = std::max(high, 0.0f);
  float scale = (high - low) / 255;
  float zero = scale > 0 ? std::clamp(std::nearbyint(-low / scale), 0.0f, 255.0f)
                         : 0.0f;
  return {scale, zero};
}

StaticInputs::StaticInputs(int64_t k)
    : k(k), low(k, 0.0f), high(k, 0.0f) {}

void StaticInputs::add(const float *x, int64_t m, int64_t step) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < k; ++i) {
      low[i] = std::min(low[i], x[r * k + i]);
      high[i] = std::max(high[i], x[r * k + i]);
    }
  for (int64_t r = 0; r < m; r += step)
    rows.insert(rows.end(), x + r * k, x + (r + 1) * k);
}

StaticQuantization kiln::chooseStaticQuantization(const ConstantWeights &weights,
                                                  const StaticInputs &inputs) {
  int64_t k = weights.k, n = weights.n;
  std::vector<double> inputSquares(k, 0);
  for (size_t i = 0; i < inputs.rows.size(); ++i)
    inputSquares[i % k] += double(inputs.rows[i]) * inputs.rows[i];

  auto rangeOf = [&](const std::vector<float> &factors, float clip) {
    float low = 0, high = 0;
    for (int64_t i = 0; i < k; ++i) {
      low = std::min(low, inputs.low[i] / factors[i]);
      high = std::max(high, inputs.high[i] / factors[i]);
    }
    return getUint8Range(clip * low, clip * high);
  };

  // Every candidate's estimate: cheap (no product), so all are tried.
  std::vector<float> alphas = {-1.0f};
  alphas.insert(alphas.end(), std::begin(kAlphas), std::end(kAlphas));
  std::vector<Candidate> candidates;
  for (float alpha : alphas) {
    std::vector<float> factors = getFactors(weights, inputs, alpha);
    SmoothedWeights smoothed = smoothWeights(weights, factors);
    double weightTerm = 0;
    for (int64_t i = 0; i < k; ++i)
      weightTerm += inputSquares[i] / (double(factors[i]) * factors[i]) *
                    smoothed.errors[i];
    for (float clip : kRangeClips) {
      auto [scale, zero] = rangeOf(factors, clip);
      std::vector<float> rounded = roundRows(inputs, factors, scale, zero);
      double inputTerm = 0;
      for (size_t i = 0; i < rounded.size(); ++i) {
        double error = rounded[i] - double(inputs.rows[i]) / factors[i % k];
        inputTerm += error * error * smoothed.norms[i % k];
      }
      candidates.push_back({alpha, clip, inputTerm + weightTerm});
    }
  }

  // The best estimated, and the best unsmoothed (so smoothing is chosen
  // only where it measures better), measured exactly.
  std::vector<Candidate> measured(candidates);
  std::sort(measured.begin(), measured.end(),
                   [](const Candidate &a, const Candidate &b) {
                     return a.estimate < b.estimate;
                   });
  measured.resize(std::min(measured.size(), kMeasuredCandidates));
  auto unsmoothed = std::min_element(
      candidates.begin(), candidates.begin() + std::size(kRangeClips),
      [](const Candidate &a, const Candidate &b) {
        return a.estimate < b.estimate;
      });
  if (std::none_of(measured.begin(), measured.end(),
                   [](const Candidate &c) { return c.alpha < 0; }))
    measured.push_back(*unsmoothed);

  std::vector<float> exact = multiplyRows(inputs.rows, weights.values, k, n);
  double outputSquares = sumOfSquares(exact);
  StaticQuantization best;
  best.error = INFINITY;
  for (const Candidate &candidate : measured) {
    std::vector<float> factors = getFactors(weights, inputs, candidate.alpha);
    SmoothedWeights smoothed = smoothWeights(weights, factors);
    auto [scale, zero] = rangeOf(factors, candidate.clip);
    std::vector<float> output = multiplyRows(roundRows(inputs, factors, scale, zero),
                                         smoothed.rounded.data(), k, n);
    double errorSquares = 0;
    for (size_t i = 0; i < output.size(); ++i)
      errorSquares += double(output[i] - exact[i]) * (output[i] - exact[i]);
    double error = outputSquares > 0 ? std::sqrt(errorSquares / outputSquares)
                                     : 0;
    if (error < best.error) {
      best.scale = scale;
      best.zeroPoint = int64_t(zero);
      best.alpha = candidate.alpha;
      best.smoothing = candidate.alpha < 0 ? std::vector<float>() : factors;
      best.error = error;
    }
  }
  return best;
}
