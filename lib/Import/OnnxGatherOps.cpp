//===- OnnxGatherOps.cpp - ONNX gathers and scatters ----------------------===//
//
// Indexed reads (Gather, GatherElements, GatherND, and Compress by a
// constant condition) and writes (ScatterElements, Scatter, ScatterND). Indices
// may be int32 or int64; kiln's ops take int64, so int32 indices are widened
// first.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"

#include <limits>

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
  // Out-of-range indices known now are the model's error; ones known only
  // at run time are clamped by the lowering.
  int64_t axisSize = node.getOperandType(0).getDimSize(*axis);
  if (!ShapedType::isDynamic(axisSize))
    if (std::optional<SmallVector<int64_t>> constant =
            node.graph.getConstantInts(node.node.input(1)))
      for (int64_t index : *constant)
        if (index < -axisSize || index >= axisSize)
          return node.emitError()
                 << "index " << index << " is out of range for axis " << *axis
                 << " of size " << axisSize;
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

LogicalResult kiln::importGatherND(NodeImporter &node) {
  FailureOr<Value> data = node.getOperand(0);
  FailureOr<Value> indices = getIndicesOperand(node, 1);
  if (failed(data) || failed(indices))
    return failure();
  GatherNDOp::Properties props;
  props.batch_dims = node.b.getI64IntegerAttr(node.getIntAttr("batch_dims", 0));
  return addInferredResult<GatherNDOp>(node, {*data, *indices}, props);
}

/// The node's `reduction` attribute; an error unless the data's element
/// type can be combined when it is not "none".
static FailureOr<ScatterReduction> getScatterReduction(NodeImporter &node,
                                                       Value data) {
  std::string name = node.getStringAttr("reduction", "none");
  std::optional<ScatterReduction> reduction =
      llvm::StringSwitch<std::optional<ScatterReduction>>(name)
          .Case("none", ScatterReduction::None)
          .Case("add", ScatterReduction::Add)
          .Case("mul", ScatterReduction::Mul)
          .Case("max", ScatterReduction::Max)
          .Case("min", ScatterReduction::Min)
          .Default(std::nullopt);
  if (!reduction)
    return node.emitError() << "unknown reduction '" << name << "'";
  if (*reduction != ScatterReduction::None &&
      failed(requireNumeric(node, data)))
    return failure();
  return *reduction;
}

/// The data, indices and updates of a scatter, the updates of the data's
/// element type.
static FailureOr<std::array<Value, 3>> getScatterOperands(NodeImporter &node) {
  FailureOr<Value> data = node.getOperand(0), updates = node.getOperand(2);
  FailureOr<Value> indices = getIndicesOperand(node, 1);
  if (failed(data) || failed(indices) || failed(updates) ||
      failed(requireSameElementType(node, *data, *updates)))
    return failure();
  return std::array<Value, 3>{*data, *indices, *updates};
}

LogicalResult kiln::importScatterElements(NodeImporter &node) {
  FailureOr<std::array<Value, 3>> operands = getScatterOperands(node);
  if (failed(operands))
    return failure();
  auto [data, indices, updates] = *operands;
  RankedTensorType indicesType = node.getOperandType(1);
  if (indicesType.getShape() !=
      cast<RankedTensorType>(updates.getType()).getShape())
    return node.emitError() << "indices and updates must have one shape";
  int64_t rank = node.getOperandType(0).getRank();
  if (indicesType.getRank() != rank)
    return node.emitError() << "indices have rank " << indicesType.getRank()
                            << " but data has rank " << rank;
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", 0), rank);
  FailureOr<ScatterReduction> reduction = getScatterReduction(node, data);
  if (failed(axis) || failed(reduction))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis &&
        indicesType.getDimSize(d) > node.getOperandType(0).getDimSize(d) &&
        !ShapedType::isDynamic(node.getOperandType(0).getDimSize(d)))
      return node.emitError()
             << "indices are larger than data in dimension " << d;
  node.results.push_back(ScatterElementsOp::create(
      node.b, node.loc, data, indices, updates, *axis, *reduction));
  return success();
}

LogicalResult kiln::importScatterND(NodeImporter &node) {
  FailureOr<std::array<Value, 3>> operands = getScatterOperands(node);
  if (failed(operands))
    return failure();
  auto [data, indices, updates] = *operands;
  FailureOr<ScatterReduction> reduction = getScatterReduction(node, data);
  if (failed(reduction))
    return failure();
  RankedTensorType dataType = node.getOperandType(0);
  RankedTensorType indicesType = node.getOperandType(1);
  auto updatesType = cast<RankedTensorType>(updates.getType());
  int64_t depth = indicesType.getRank() ? indicesType.getShape().back() : 0;
  if (indicesType.getRank() < 1 || ShapedType::isDynamic(depth) ||
      depth > dataType.getRank())
    return node.emitError() << "indices must have a static last dimension of "
                               "at most the data's rank";
  SmallVector<int64_t> expected(indicesType.getShape().drop_back());
  llvm::append_range(expected, dataType.getShape().drop_front(depth));
  if (updatesType.getShape() != ArrayRef<int64_t>(expected))
    return node.emitError() << "updates have shape " << updatesType
                            << " where indices.shape[:-1] + data.shape[k:] "
                               "is expected";
  node.results.push_back(ScatterNDOp::create(node.b, node.loc, data, indices,
                                             updates, *reduction));
  return success();
}

/// Compress as a Gather of the positions where the constant condition
/// holds (the output's size depends on them).
LogicalResult kiln::importCompress(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), condition = node.getOperand(1);
  if (failed(input) || failed(condition))
    return failure();
  DenseElementsAttr values;
  if (!matchPattern(*condition, m_Constant(&values)) ||
      !values.getElementType().isInteger(1))
    return node.emitError() << "condition must be a constant boolean tensor "
                               "(it decides the output's shape)";
  RankedTensorType type = node.getOperandType(0);
  Value data = *input;
  int64_t axis = 0;
  if (node.getAttr("axis")) {
    FailureOr<int64_t> normalized =
        node.normalizeAxis(node.getIntAttr("axis", 0), type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    if (!type.hasStaticShape())
      return node.emitError() << "without axis the input must have a static "
                                 "shape";
    data = createReshape(node, data, {type.getNumElements()});
  }
  int64_t size = cast<RankedTensorType>(data.getType()).getDimSize(axis);
  SmallVector<int64_t> positions;
  for (auto [i, keep] : llvm::enumerate(values.getValues<bool>())) {
    if (!keep)
      continue;
    if (!ShapedType::isDynamic(size) && static_cast<int64_t>(i) >= size)
      return node.emitError()
             << "condition selects position " << i << " of an axis of " << size;
    positions.push_back(i);
  }
  // A dynamic axis must hold every selected position: the runtime checks.
  if (ShapedType::isDynamic(size) && !positions.empty())
    node.graph.require(node.graph.getShape(data)[axis], positions.back() + 1,
                       std::numeric_limits<int64_t>::max(), node.describe());
  Value indices = ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(
          RankedTensorType::get({static_cast<int64_t>(positions.size())},
                                node.b.getI64Type()),
          ArrayRef<int64_t>(positions)));
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  return addInferredResult<GatherOp>(node, {data, indices}, props);
}
