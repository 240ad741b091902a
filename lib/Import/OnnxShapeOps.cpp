//===- OnnxShapeOps.cpp - importers of ONNX data-movement ops -------------===//
//
// Ops that only move or reshape data. Their shape-deciding inputs (Reshape's
// shape, Squeeze/Unsqueeze axes) must be compile-time constants.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

LogicalResult kiln::importTranspose(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  SmallVector<int64_t> perm;
  if (std::optional<SmallVector<int64_t>> attr = node.getIntsAttr("perm"))
    perm = *attr;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  TransposeOp::Properties props;
  props.perm = node.b.getDenseI64ArrayAttr(perm);
  return addInferredResult<TransposeOp>(node, *input, props);
}

LogicalResult kiln::importConcat(NodeImporter &node) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.operands.size(); ++i) {
    FailureOr<Value> input = node.getOperand(i);
    if (failed(input))
      return failure();
    if (i > 0 && failed(requireSameElementType(node, inputs[0], *input)))
      return failure();
    inputs.push_back(*input);
  }
  if (inputs.empty())
    return node.emitError() << "needs at least one input";
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  return addInferredResult<ConcatOp>(node, inputs, props);
}

LogicalResult kiln::importGather(NodeImporter &node) {
  FailureOr<Value> data = node.getOperand(0), indices = node.getOperand(1);
  if (failed(data) || failed(indices))
    return failure();
  if (!node.getOperandType(1).getElementType().isInteger(64))
    return node.emitError() << "indices must be int64";
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  return addInferredResult<GatherOp>(node, {*data, *indices}, props);
}

/// Computes Reshape's output shape: 0 copies the input dimension (unless
/// allowzero) and one -1 takes the remaining elements.
LogicalResult kiln::importReshape(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> shapeOrNone =
      node.getOpset() < 5 ? FailureOr<std::optional<SmallVector<int64_t>>>(
                                node.getIntsAttr("shape"))
                          : node.getIntsFromAttrOrInput("shape", 1);
  if (failed(shapeOrNone))
    return failure();
  if (!*shapeOrNone)
    return node.emitError() << "missing the target shape";
  RankedTensorType type = node.getOperandType(0);
  SmallVector<int64_t> shape = **shapeOrNone;
  bool allowZero = node.getIntAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (dim == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return node.emitError() << "shape entry " << i
                                << " is 0 but the input has rank " << type.getRank();
      dim = type.getDimSize(i);
    }
    if (dim == -1) {
      if (inferred != -1)
        return node.emitError() << "shape has more than one -1";
      inferred = i;
      continue;
    }
    if (dim < 0)
      return node.emitError() << "shape entry " << i << " is " << dim;
    known *= dim;
  }
  if (inferred != -1) {
    if (known == 0 || type.getNumElements() % known != 0)
      return node.emitError() << "cannot infer the -1 dimension of the shape";
    shape[inferred] = type.getNumElements() / known;
    known *= shape[inferred];
  }
  if (known != type.getNumElements())
    return node.emitError() << "cannot reshape " << type << " ("
                            << type.getNumElements() << " elements) into "
                            << known << " elements";
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult kiln::importFlatten(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  int64_t axis = node.getIntAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return node.emitError() << "axis " << axis << " is out of range";
  if (axis < 0)
    axis += rank;
  node.results.push_back(
      createReshape(node, *input, getFlattenedShape(type.getShape(), axis)));
  return success();
}

LogicalResult kiln::importUnsqueeze(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  if (!*axesOrNone)
    return node.emitError() << "missing axes";
  ArrayRef<int64_t> inShape = node.getOperandType(0).getShape();
  int64_t outRank = inShape.size() + (*axesOrNone)->size();
  FailureOr<SmallVector<int64_t>> inserted =
      normalizeAxes(node, **axesOrNone, outRank);
  if (failed(inserted))
    return failure();
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(*inserted, d) ? 1 : inShape[next++]);
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult kiln::importSqueeze(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  ArrayRef<int64_t> inShape = node.getOperandType(0).getShape();
  int64_t rank = inShape.size();
  SmallVector<bool> removed(rank, false);
  if (*axesOrNone) {
    FailureOr<SmallVector<int64_t>> axes = normalizeAxes(node, **axesOrNone, rank);
    if (failed(axes))
      return failure();
    for (int64_t axis : *axes) {
      if (inShape[axis] != 1)
        return node.emitError() << "cannot squeeze axis " << axis << " of size "
                                << inShape[axis];
      removed[axis] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = inShape[d] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      shape.push_back(inShape[d]);
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}
