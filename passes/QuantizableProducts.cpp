//===- QuantizableProducts.cpp - products whose weights can be quantized --===//
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/Weights.h"
#include "passes/Passes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace kiln;

std::optional<ConstantWeights> kiln::matchQuantizableProduct(MatMulOp op,
                                                             int64_t minDepth) {
  auto weight = op.getRhs().getDefiningOp<ConstantOp>();
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  // Already decided (calibration found its error too large).
  if (op->hasAttr(kKeptFloatAttr))
    return std::nullopt;
  if (!weight || lhsType.getRank() < 2 ||
      ShapedType::isDynamic(lhsType.getShape().back()) ||
      !lhsType.getElementType().isF32())
    return std::nullopt;
  std::optional<ArrayRef<char>> bytes = getRawBytes(weight.getValue());
  auto type = cast<RankedTensorType>(weight.getType());
  if (!bytes || !type.getElementType().isF32() || type.getRank() != 2 ||
      type.getDimSize(1) == 0 || type.getDimSize(0) < minDepth)
    return std::nullopt;
  return ConstantWeights{weight, reinterpret_cast<const float *>(bytes->data()),
                         type.getDimSize(0), type.getDimSize(1)};
}

std::vector<float> kiln::getWeightScales(const ConstantWeights &weights,
                                         int64_t blockSize, int maxInteger) {
  int64_t k = weights.k, n = weights.n;
  int64_t blocks = llvm::divideCeil(k, blockSize);
  std::vector<float> scales(blocks * n, 0.0f);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t col = 0; col < n; ++col) {
      float largest = 0;
      for (int64_t row = b * blockSize; row < std::min(k, (b + 1) * blockSize);
           ++row)
        largest = std::max(largest, std::fabs(weights.at(row, col)));
      scales[b * n + col] = largest / maxInteger;
    }
  return scales;
}

int kiln::quantizeWeight(float value, float scale, int maxInteger, int extra) {
  if (scale == 0)
    return 0;
  float q = std::nearbyint(value / scale);
  return static_cast<int>(
      std::clamp(q, float(-maxInteger - extra), float(maxInteger)));
}

Int4Quantization::Int4Quantization(const ConstantWeights &weights,
                                   int64_t blockSize, bool withZeroPoints)
    : weights(weights), blockSize(blockSize), n(weights.n),
      symmetric(!withZeroPoints) {
  if (symmetric) {
    scales = getWeightScales(weights, blockSize, kMaxInt4Weight);
    zeroPoints.assign(scales.size(), 8);
    return;
  }
  int64_t blocks = llvm::divideCeil(weights.k, blockSize);
  scales.assign(blocks * n, 0.0f);
  zeroPoints.assign(blocks * n, 0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t col = 0; col < n; ++col) {
      float low = 0, high = 0;
      for (int64_t row = b * blockSize;
           row < std::min(weights.k, (b + 1) * blockSize); ++row) {
        low = std::min(low, weights.at(row, col));
        high = std::max(high, weights.at(row, col));
      }
      float scale = (high - low) / 15;
      scales[b * n + col] = scale;
      zeroPoints[b * n + col] =
          scale > 0 ? int(std::clamp(std::nearbyint(-low / scale), 0.0f, 15.0f))
                    : 8;
    }
}

int Int4Quantization::integer(int64_t row, int64_t col) const {
  int64_t block = row / blockSize;
  if (symmetric)
    return quantizeWeight(weights.at(row, col), scale(block, col),
                          kMaxInt4Weight, 1);
  float s = scale(block, col);
  int zero = zeroPoint(block, col);
  if (s == 0)
    return 0;
  float q = std::nearbyint(weights.at(row, col) / s) + zero;
  return int(std::clamp(q, 0.0f, 15.0f)) - zero;
}

Int8Weights kiln::createInt8Weights(OpBuilder &b, Location loc,
                                  const ConstantWeights &weights,
                                  int64_t width) {
  int64_t k = weights.k, n = weights.n;
  int64_t panels = llvm::divideCeil(n, width), groups = llvm::divideCeil(k, 4);
  int64_t padded = panels * width;
  auto w = [&](int64_t row, int64_t col) { return weights.at(row, col); };

  std::vector<float> scales = getWeightScales(weights, k, kMaxInt8Weight);
  scales.resize(padded, 0.0f);
  std::vector<int32_t> sums(padded, 0);
  auto quantized = [&](int64_t row, int64_t col) -> int8_t {
    if (row >= k || col >= n)
      return 0;
    return quantizeWeight(w(row, col), scales[col], kMaxInt8Weight, 0);
  };
  auto packedType = RankedTensorType::get({panels, groups, width, 4},
                                          b.getI8Type());
  double errorSquares = 0, weightSquares = 0;
  ElementsAttr packed = createElements(packedType, [&](MutableArrayRef<char> out) {
    char *next = out.data();
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t g = 0; g < groups; ++g)
        for (int64_t j = 0; j < width; ++j)
          for (int64_t lane = 0; lane < 4; ++lane) {
            int64_t row = g * 4 + lane, col = p * width + j;
            int8_t q = quantized(row, col);
            sums[col] += q;
            *next++ = static_cast<char>(q);
            if (row < k && col < n) {
              double value = w(row, col);
              double error = value - double(q) * scales[col];
              errorSquares += error * error;
              weightSquares += value * value;
            }
          }
  });
  Value panelsValue = ConstantOp::create(b, loc, packed);
  auto scaleType = RankedTensorType::get({padded}, b.getF32Type());
  Value scaleValue = ConstantOp::create(
      b, loc, DenseElementsAttr::get(scaleType, ArrayRef<float>(scales)));
  auto sumType = RankedTensorType::get({padded}, b.getI32Type());
  Value sumValue = ConstantOp::create(
      b, loc, DenseElementsAttr::get(sumType, ArrayRef<int32_t>(sums)));
  return {panelsValue, scaleValue, sumValue, errorSquares, weightSquares};
}

LogicalResult kiln::checkPanelWidth(Operation *root, StringRef pass,
                                    int64_t width) {
  if (width > 0 && width % 8 == 0)
    return success();
  return root->emitError(pass) << ": panel-width must be a positive multiple "
                                  "of 8, not "
                               << width;
}

Value kiln::createUnsignedZeroPoint(OpBuilder &b, Location loc,
                                   int64_t zeroPoint) {
  Type i8 = b.getI8Type();
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, i8),
                             b.getIntegerAttr(i8, APInt(8, zeroPoint))));
}

void kiln::setWeightError(Operation *product, double errorSquares,
                          double weightSquares, Operation *original) {
  for (StringRef name : {kCalibrationErrorAttr, kCalibrationSkippedAttr})
    if (Attribute value = original ? original->getAttr(name) : Attribute())
      product->setAttr(name, value);
  double error = weightSquares > 0 ? std::sqrt(errorSquares / weightSquares) : 0;
  product->setAttr(kWeightErrorAttr,
                   FloatAttr::get(Float32Type::get(product->getContext()), error));
}

void kiln::markProductsKeptInFloat(Operation *root, int64_t minDepth) {
  root->walk([&](MatMulOp op) {
    auto weight = op.getRhs().getDefiningOp<ConstantOp>();
    auto type = weight ? dyn_cast<RankedTensorType>(weight.getType())
                       : RankedTensorType();
    if (!type || type.getRank() != 2 || op->hasAttr(kKeptFloatAttr))
      return;
    std::string reason;
    if (type.getDimSize(0) < minDepth)
      reason = "depth " + std::to_string(type.getDimSize(0)) +
               " is below min-depth " + std::to_string(minDepth);
    else if (ShapedType::isDynamic(op.getLhs().getType().getShape().back()))
      reason = "its depth is a dynamic dimension";
    else if (!type.getElementType().isF32())
      reason = "its weights are not f32";
    else if (op.getLhs().getType().getRank() < 2)
      reason = "its input is a vector";
    if (!reason.empty())
      op->setAttr(kKeptFloatAttr, StringAttr::get(op.getContext(), reason));
  });
}
