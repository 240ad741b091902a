//===- QuantizableProducts.cpp - products whose weights can be quantized --===//
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/Weights.h"
#include "passes/Passes.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

std::optional<ConstantWeights> kiln::matchQuantizableProduct(MatMulOp op,
                                                             int64_t minDepth) {
  auto weight = op.getRhs().getDefiningOp<ConstantOp>();
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
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

void kiln::setWeightError(Operation *product, double errorSquares,
                          double weightSquares) {
  double error = weightSquares > 0 ? std::sqrt(errorSquares / weightSquares) : 0;
  product->setAttr(kWeightErrorAttr,
                   FloatAttr::get(Float32Type::get(product->getContext()), error));
}

void kiln::markProductsKeptInFloat(Operation *root, int64_t minDepth) {
  root->walk([&](MatMulOp op) {
    auto weight = op.getRhs().getDefiningOp<ConstantOp>();
    auto type = weight ? dyn_cast<RankedTensorType>(weight.getType())
                       : RankedTensorType();
    if (!type || type.getRank() != 2)
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
