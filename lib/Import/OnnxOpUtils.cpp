//===- OnnxOpUtils.cpp - helpers shared by the ONNX op importers ----------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"


using namespace mlir;
using namespace kiln;

FailureOr<Value> kiln::createReshape(NodeImporter &node, Value input,
                                     ArrayRef<AffineExpr> shape) {
  auto type = RankedTensorType::get(
      getStaticSizes(shape),
      cast<RankedTensorType>(input.getType()).getElementType());
  if (type == input.getType() &&
      ArrayRef<AffineExpr>(node.graph.getShape(input)) == shape)
    return input;
  FailureOr<SmallVector<Value>> dims =
      node.graph.materializeDynamicSizes(shape, node.loc);
  if (failed(dims))
    return failure();
  Value result = ReshapeOp::create(node.b, node.loc, type, input, *dims);
  if (!type.hasStaticShape())
    node.graph.setShape(result, SymbolicInts(shape));
  return result;
}

Value kiln::createReshape(NodeImporter &node, Value input,
                          ArrayRef<int64_t> shape) {
  // Constant sizes need no computation, so this cannot fail.
  assert(llvm::none_of(shape, ShapedType::isDynamic) &&
         "a dynamic size needs the symbolic createReshape");
  return *createReshape(node, input,
                        kiln::getConstantInts(node.b.getContext(), shape));
}

FailureOr<Value> kiln::createIndexSequence(NodeImporter &node,
                                           AffineExpr length, int64_t axis,
                                           int64_t rank) {
  Type i64 = node.b.getI64Type();
  auto type = RankedTensorType::get({getStaticSizes({length})[0]}, i64);
  Value size;
  if (type.isDynamicDim(0)) {
    FailureOr<Value> materialized = node.graph.materialize(length, node.loc);
    if (failed(materialized))
      return failure();
    size = *materialized;
  }
  Value sequence =
      RangeOp::create(node.b, node.loc, type, createScalar(node, i64, 0),
                      createScalar(node, i64, 1), size);
  if (size)
    node.graph.setShape(sequence, {length});
  SymbolicInts shape(rank, getAffineConstantExpr(1, node.b.getContext()));
  shape[axis] = length;
  return createReshape(node, sequence, shape);
}

Value kiln::createScalar(NodeImporter &node, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr = isa<FloatType>(elementType)
                       ? Attribute(node.b.getFloatAttr(elementType, value))
                       : Attribute(node.b.getIntegerAttr(
                             elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(node.b, node.loc, DenseElementsAttr::get(type, attr));
}

SymbolicInts kiln::getFlattenedShape(MLIRContext *context,
                                     ArrayRef<AffineExpr> shape, int64_t axis) {
  return {getProduct(context, shape.take_front(axis)),
          getProduct(context, shape.drop_front(axis))};
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

LogicalResult kiln::requireReal(NodeImporter &node, Value value) {
  Type type = cast<RankedTensorType>(value.getType()).getElementType();
  if (type.isF32() || type.isF64())
    return success();
  return node.emitError() << "input of type " << type
                          << " is not supported; the op takes f32 or f64";
}

LogicalResult kiln::requireNumeric(NodeImporter &node, Value value) {
  Type type = getElementTypeOrSelf(value.getType());
  if (type.isF32() || type.isF64() || type.isInteger(64) || type.isInteger(32))
    return success();
  return node.emitError()
         << "input of type " << type
         << " is not supported; the op takes f32, f64, i64 or i32";
}

LogicalResult kiln::requireSameElementType(NodeImporter &node, Value lhs, Value rhs) {
  Type l = cast<RankedTensorType>(lhs.getType()).getElementType();
  Type r = cast<RankedTensorType>(rhs.getType()).getElementType();
  if (l == r)
    return success();
  return node.emitError() << "inputs have different element types " << l
                          << " and " << r;
}

Value kiln::createTranspose(NodeImporter &node, Value x,
                            ArrayRef<int64_t> perm) {
  TransposeOp::Properties props;
  props.perm = node.b.getDenseI64ArrayAttr(perm);
  FailureOr<Value> moved = createInferred<TransposeOp>(node, x, props);
  assert(succeeded(moved) && "a checked permutation always infers");
  return *moved;
}

Value kiln::createAxisGather(NodeImporter &node, Value x, int64_t axis,
                             ArrayRef<int64_t> indices) {
  auto indicesType = RankedTensorType::get(
      {static_cast<int64_t>(indices.size())}, node.b.getI64Type());
  Value indexTensor = ConstantOp::create(
      node.b, node.loc, DenseElementsAttr::get(indicesType, indices));
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  FailureOr<Value> gathered =
      createInferred<GatherOp>(node, {x, indexTensor}, props);
  assert(succeeded(gathered) && "indices the caller checked always infer");
  return *gathered;
}

Value kiln::createAxisSlice(NodeImporter &node, Value x, int64_t axis,
                            int64_t begin, int64_t end) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[axis] = begin;
  sizes[axis] = end - begin;
  SliceOp::Properties props;
  props.offsets = node.b.getDenseI64ArrayAttr(offsets);
  props.sizes = node.b.getDenseI64ArrayAttr(sizes);
  props.strides = node.b.getDenseI64ArrayAttr(strides);
  return SliceOp::create(node.b, node.loc, x, props);
}

Value kiln::createAxisPad(NodeImporter &node, Value x, int64_t axis,
                          int64_t before, int64_t after, double fill) {
  if (before == 0 && after == 0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  auto filler = [&](int64_t size) -> Value {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = size;
    return BroadcastOp::create(node.b, node.loc, type.clone(shape),
                               createScalar(node, type.getElementType(), fill),
                               ValueRange());
  };
  SmallVector<Value> parts;
  if (before)
    parts.push_back(filler(before));
  parts.push_back(x);
  if (after)
    parts.push_back(filler(after));
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  return createMatching<ConcatOp>(node, parts, props);
}
