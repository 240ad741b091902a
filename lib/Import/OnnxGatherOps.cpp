//===- OnnxGatherOps.cpp - ONNX Gather and GatherElements -----------------===//
//
// Indexed reads. Indices may be int32 or int64; kiln's gathers take int64,
// so int32 indices are widened first.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

FailureOr<Value> kiln::getIndicesOperand(NodeImporter &node, unsigned i) {
  FailureOr<Value> indices = node.getOperand(i);
  if (failed(indices))
    return failure();
  RankedTensorType type = node.getOperandType(i);
  if (type.getElementType().isInteger(64))
    return indices;
  if (!type.getElementType().isInteger(32))
    return node.emitError()
           << "indices must be int32 or int64, not " << type.getElementType();
  auto wide = RankedTensorType::get(type.getShape(), node.b.getI64Type());
  return CastOp::create(node.b, node.loc, wide, *indices).getResult();
}

template <typename OpTy> LogicalResult importIndexedRead(NodeImporter &node) {
  FailureOr<Value> data = node.getOperand(0);
  FailureOr<Value> indices = getIndicesOperand(node, 1);
  if (failed(data) || failed(indices))
    return failure();
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  typename OpTy::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  return addInferredResult<OpTy>(node, {*data, *indices}, props);
}

LogicalResult kiln::importGather(NodeImporter &node) {
  return importIndexedRead<GatherOp>(node);
}

LogicalResult kiln::importGatherElements(NodeImporter &node) {
  return importIndexedRead<GatherElementsOp>(node);
}
