//===- OnnxOpUtils.cpp - helpers shared by the ONNX op importers ----------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include <numeric>

using namespace mlir;
using namespace kiln;

Value kiln::createReshape(NodeImporter &node, Value input, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(input.getType()).getElementType());
  if (type == input.getType())
    return input;
  return ReshapeOp::create(node.b, node.loc, type, input);
}

Value kiln::createScalar(NodeImporter &node, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr = isa<FloatType>(elementType)
                       ? Attribute(node.b.getFloatAttr(elementType, value))
                       : Attribute(node.b.getIntegerAttr(
                             elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(node.b, node.loc, DenseElementsAttr::get(type, attr));
}

SmallVector<int64_t> kiln::getFlattenedShape(ArrayRef<int64_t> shape, int64_t axis) {
  int64_t outer = std::accumulate(shape.begin(), shape.begin() + axis,
                                  int64_t(1), std::multiplies<int64_t>());
  int64_t inner = std::accumulate(shape.begin() + axis, shape.end(), int64_t(1),
                                  std::multiplies<int64_t>());
  return {outer, inner};
}

FailureOr<SmallVector<int64_t>>
kiln::normalizeAxes(NodeImporter &node, ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> normalized;
  for (int64_t axis : axes) {
    FailureOr<int64_t> n = node.normalizeAxis(axis, rank);
    if (failed(n))
      return failure();
    if (llvm::is_contained(normalized, *n))
      return node.emitError() << "axes contain a repeated axis";
    normalized.push_back(*n);
  }
  return normalized;
}

LogicalResult kiln::requireFloat(NodeImporter &node, Value value) {
  if (cast<RankedTensorType>(value.getType()).getElementType().isF32())
    return success();
  return node.emitError() << "input of type "
                          << cast<RankedTensorType>(value.getType())
                                 .getElementType()
                          << " is not supported; Kiln computes it in f32 only";
}

LogicalResult kiln::requireSameElementType(NodeImporter &node, Value lhs, Value rhs) {
  Type l = cast<RankedTensorType>(lhs.getType()).getElementType();
  Type r = cast<RankedTensorType>(rhs.getType()).getElementType();
  if (l == r)
    return success();
  return node.emitError() << "inputs have different element types " << l
                          << " and " << r;
}

