//===- OnnxIndexOps.cpp - ONNX ops over element positions -----------------===//
//
// ArgMax, ArgMin, Hardmax, Trilu, EyeLike and OneHot compare element
// positions (int64 sequences laid along an axis) with values; each is a
// formula over kiln's reductions, comparisons and selects:
//   ArgMax(x)  = min over the axis of (x == max(x) ? position : 2^62)
//   Trilu(x)   = (column - row >= k) ? x : 0   (upper; <= k for lower)
//   OneHot(i)  = (position == i) ? on : off
//   TopK(x)    = the elements whose rank along the axis is below k
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

template <typename OpTy>
FailureOr<Value> reduceAxis(NodeImporter &node, FailureOr<Value> input,
                            int64_t axis, bool keepDims) {
  if (failed(input))
    return failure();
  typename OpTy::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr({axis});
  if (keepDims)
    props.keep_dims = node.b.getUnitAttr();
  return createInferred<OpTy>(node, *input, props);
}

/// The position along `axis` of the first (or `last`) maximum of `x` (or
/// minimum, with ReduceMinOp as `ExtremumOp`).
template <typename ExtremumOp>
FailureOr<Value> createArgExtremum(NodeImporter &node, Value x, int64_t axis,
                                   bool keepDims, bool last) {
  SymbolicInts shape = node.graph.getShape(x);
  FailureOr<Value> extremum =
      reduceAxis<ExtremumOp>(node, x, axis, /*keepDims=*/true);
  FailureOr<Value> positions =
      createIndexSequence(node, shape[axis], axis, shape.size());
  if (failed(extremum) || failed(positions))
    return failure();
  FailureOr<Value> hits = createInferred<EqualOp>(node, {x, *extremum});
  if (failed(hits))
    return failure();
  Type i64 = node.b.getI64Type();
  // Beyond any position, and exact as the double createScalar takes.
  double miss = last ? -1.0 : 0x1p62;
  FailureOr<Value> candidates = createInferred<SelectOp>(
      node, {*hits, *positions, createScalar(node, i64, miss)});
  if (last)
    return reduceAxis<ReduceMaxOp>(node, candidates, axis, keepDims);
  return reduceAxis<ReduceMinOp>(node, candidates, axis, keepDims);
}

template <typename ExtremumOp> LogicalResult importArg(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x))
    return failure();
  if (failed(requireNumeric(node, *x)))
    return failure();
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  FailureOr<Value> result = createArgExtremum<ExtremumOp>(
      node, *x, *axis, node.getIntAttr("keepdims", 1) != 0,
      node.getIntAttr("select_last_index", 0) != 0);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// 1 at the first maximum along the axis, 0 elsewhere; before opset 13 on
/// the input flattened to 2-D at the axis, as Softmax then was.
LogicalResult importHardmax(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireFloat(node, *x)))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  bool flattened = node.getOpset() < 13;
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", flattened ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  SymbolicInts shape = node.graph.getShape(*x);
  FailureOr<Value> input = *x;
  int64_t hardmaxAxis = *axis;
  if (flattened) {
    input = createReshape(node, *x,
                          getFlattenedShape(node.b.getContext(), shape, *axis));
    hardmaxAxis = 1;
  }
  if (failed(input))
    return failure();
  SymbolicInts inputShape = node.graph.getShape(*input);
  FailureOr<Value> winner = createArgExtremum<ReduceMaxOp>(
      node, *input, hardmaxAxis, /*keepDims=*/true, /*last=*/false);
  FailureOr<Value> positions = createIndexSequence(
      node, inputShape[hardmaxAxis], hardmaxAxis, inputShape.size());
  if (failed(winner) || failed(positions))
    return failure();
  FailureOr<Value> isWinner =
      createInferred<EqualOp>(node, {*positions, *winner});
  if (failed(isWinner))
    return failure();
  Type f32 = node.b.getF32Type();
  Value ones = CastOp::create(
      node.b, node.loc,
      RankedTensorType::get(
          cast<RankedTensorType>(isWinner->getType()).getShape(), f32),
      *isWinner);
  FailureOr<Value> result = createReshape(node, ones, shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// column - row over the last two dimensions of a rank-`rank` tensor whose
/// last two sizes are `rows` and `columns`.
FailureOr<Value> createDiagonalOffsets(NodeImporter &node, AffineExpr rows,
                                       AffineExpr columns, int64_t rank) {
  FailureOr<Value> row = createIndexSequence(node, rows, rank - 2, rank);
  FailureOr<Value> column = createIndexSequence(node, columns, rank - 1, rank);
  if (failed(row) || failed(column))
    return failure();
  return createInferred<SubOp>(node, {*column, *row});
}

/// The lower (upper = 0) or upper triangle from diagonal k on, zeros
/// elsewhere.
LogicalResult importTrilu(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  if (rank < 2)
    return node.emitError() << "input must have rank >= 2";
  Type i64 = node.b.getI64Type();
  Value k = createScalar(node, i64, 0);
  if (node.operands.size() > 1 && node.operands[1]) {
    k = node.operands[1];
    auto kType = cast<RankedTensorType>(k.getType());
    if (!kType.getElementType().isInteger(64) || kType.getNumElements() != 1)
      return node.emitError() << "k must be one int64";
    if (kType.getRank() != 0)
      k = createReshape(node, k, ArrayRef<int64_t>{});
  }
  SymbolicInts shape = node.graph.getShape(*x);
  FailureOr<Value> offsets =
      createDiagonalOffsets(node, shape[rank - 2], shape[rank - 1], rank);
  if (failed(offsets))
    return failure();
  bool upper = node.getIntAttr("upper", 1) != 0;
  FailureOr<Value> keep =
      upper ? createInferred<LessEqualOp>(node, {k, *offsets})
            : createInferred<LessEqualOp>(node, {*offsets, k});
  if (failed(keep))
    return failure();
  return addInferredResult<SelectOp>(
      node,
      {*keep, *x, createScalar(node, getElementTypeOrSelf(x->getType()), 0)});
}

/// Ones on diagonal k of a 2-D shape, in `dtype` (the input's type by
/// default).
LogicalResult importEyeLike(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x))
    return failure();
  if (node.getOperandType(0).getRank() != 2)
    return node.emitError() << "input must be 2-D";
  Type elementType = getElementTypeOrSelf(x->getType());
  if (const onnx::AttributeProto *dtype = node.getAttr("dtype")) {
    elementType = getElementType(node.b.getContext(), dtype->i());
    if (!elementType)
      return node.emitError()
             << "dtype " << getOnnxTypeName(dtype->i())
             << " is not supported; Kiln supports " << kSupportedTypes;
    node.graph.setValueType(node.node.output(0), dtype->i());
  }
  SymbolicInts shape = node.graph.getShape(*x);
  FailureOr<Value> offsets = createDiagonalOffsets(node, shape[0], shape[1], 2);
  if (failed(offsets))
    return failure();
  FailureOr<Value> diagonal = createInferred<EqualOp>(
      node, {*offsets,
             createScalar(node, node.b.getI64Type(), node.getIntAttr("k", 0))});
  if (failed(diagonal))
    return failure();
  node.results.push_back(CastOp::create(
      node.b, node.loc,
      RankedTensorType::get(node.getOperandType(0).getShape(), elementType),
      *diagonal));
  return success();
}

/// The value of a one-element constant (of any numeric type), if it is
/// one.
std::optional<int64_t> getConstantScalar(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                        : DenseElementsAttr();
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  if (isa<FloatType>(dense.getElementType()))
    return static_cast<int64_t>(
        (*dense.getValues<APFloat>().begin()).convertToDouble());
  return (*dense.getValues<APInt>().begin()).getSExtValue();
}

/// values[1] where an index (negative ones counting from depth) equals the
/// position along the new axis, values[0] elsewhere.
LogicalResult importOneHot(NodeImporter &node) {
  FailureOr<Value> indices = node.getOperand(0),
                   depthValue = node.getOperand(1), values = node.getOperand(2);
  if (failed(indices) || failed(depthValue) || failed(values))
    return failure();
  std::optional<int64_t> depth = getConstantScalar(*depthValue);
  if (!depth || *depth < 1)
    return node.emitError() << "depth must be a positive compile-time "
                               "constant";
  auto valuesType = cast<RankedTensorType>(values->getType());
  if (valuesType.getRank() != 1 ||
      (valuesType.hasStaticShape() && valuesType.getNumElements() != 2))
    return node.emitError() << "values must hold [off, on]";
  // A dynamic length must be 2 at run time: a requirement of the artifact.
  if (!valuesType.hasStaticShape()) {
    node.graph.require(node.graph.getShape(*values)[0], 2, node.describe());
    values = createReshape(node, *values, ArrayRef<int64_t>{2});
  }
  int64_t rank = node.getOperandType(0).getRank() + 1;
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", -1), rank);
  if (failed(axis))
    return failure();
  Type i64 = node.b.getI64Type();
  Value index = *indices;
  auto indicesType = node.getOperandType(0);
  if (!indicesType.getElementType().isInteger(64))
    index = CastOp::create(node.b, node.loc,
                           RankedTensorType::get(indicesType.getShape(), i64),
                           index);
  SymbolicInts shape = node.graph.getShape(*indices);
  shape.insert(shape.begin() + *axis,
               getAffineConstantExpr(1, node.b.getContext()));
  FailureOr<Value> expanded = createReshape(node, index, shape);
  FailureOr<Value> positions = createIndexSequence(
      node, getAffineConstantExpr(*depth, node.b.getContext()), *axis, rank);
  if (failed(expanded) || failed(positions))
    return failure();
  Formula f(node, *expanded);
  FailureOr<Value> wrapped =
      f.select(f.apply<LessOp>(*expanded, f.constant(0)),
               f.apply<AddOp>(*expanded, f.constant(*depth)), *expanded);
  FailureOr<Value> hits = f.apply<EqualOp>(wrapped, *positions);
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(0);
  auto pick = [&](int64_t i) {
    return createInferred<GatherOp>(node, {*values, createScalar(node, i64, i)},
                                    props);
  };
  return f.result(f.select(hits, pick(1), pick(0)));
}

/// TopK by ranks: element i's rank along the axis is the number of
/// elements that come before it (larger, or equal at a lower position;
/// smaller for `largest` = 0), and output slot r takes the element of rank
/// r. That compares every pair along the axis, O(n^2) for n elements,
/// where a sort takes O(n log n); the result is always sorted.
LogicalResult importTopK(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireNumeric(node, *x)))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  if (!type.hasStaticShape())
    return node.emitError() << "the input must have a static shape";
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", -1), rank);
  FailureOr<std::optional<SmallVector<int64_t>>> kInput =
      node.getIntsFromAttrOrInput("k", 1);
  if (failed(axis) || failed(kInput))
    return failure();
  int64_t n = type.getDimSize(*axis);
  if (!*kInput || (*kInput)->size() != 1 || (**kInput)[0] < 0 ||
      (**kInput)[0] > n)
    return node.emitError() << "k must be one constant from 0 to " << n;
  int64_t k = (**kInput)[0];
  bool largest = node.getIntAttr("largest", 1) != 0;
  MLIRContext *ctx = node.b.getContext();
  // Element i along `axis`, element j along a new axis after it.
  SmallVector<int64_t> column(type.getShape()), row(type.getShape());
  column.insert(column.begin() + *axis + 1, 1);
  row.insert(row.begin() + *axis, 1);
  // Unsigned values compare as signed ones once widened (uint32) or
  // shifted by 2^63 (uint64).
  Value key = *x;
  Type element = type.getElementType();
  if (node.isUnsignedOperand(0) && element.isInteger(32)) {
    auto cast =
        CastOp::create(node.b, node.loc, type.clone(node.b.getI64Type()), key);
    cast.setInputUnsigned(true);
    key = cast;
  } else if (node.isUnsignedOperand(0) && element.isInteger(64)) {
    FailureOr<Value> shifted = createInferred<AddOp>(
        node, {key, createScalar(node, element, double(INT64_MIN))});
    if (failed(shifted))
      return failure();
    key = *shifted;
  }
  Value xi = createReshape(node, key, column),
        xj = createReshape(node, key, row);
  FailureOr<Value> i =
      createIndexSequence(node, getAffineConstantExpr(n, ctx), *axis, rank + 1);
  FailureOr<Value> j = createIndexSequence(node, getAffineConstantExpr(n, ctx),
                                           *axis + 1, rank + 1);
  if (failed(i) || failed(j))
    return failure();
  FailureOr<Value> better = largest ? createInferred<LessOp>(node, {xi, xj})
                                    : createInferred<LessOp>(node, {xj, xi});
  FailureOr<Value> tie = createInferred<EqualOp>(node, {xi, xj});
  FailureOr<Value> earlier = createInferred<LessOp>(node, {*j, *i});
  if (failed(better) || failed(tie) || failed(earlier))
    return failure();
  FailureOr<Value> tieBefore = createInferred<AndOp>(node, {*tie, *earlier});
  FailureOr<Value> before =
      failed(tieBefore) ? tieBefore
                        : createInferred<OrOp>(node, {*better, *tieBefore});
  if (failed(before))
    return failure();
  Type i64 = node.b.getI64Type();
  FailureOr<Value> ranks = reduceAxis<ReduceSumOp>(
      node,
      createInferred<SelectOp>(node, {*before, createScalar(node, i64, 1),
                                      createScalar(node, i64, 0)}),
      *axis + 1, /*keepDims=*/true);
  // Slot r (along the new axis) takes the position whose rank is r.
  FailureOr<Value> slots = createIndexSequence(
      node, getAffineConstantExpr(k, ctx), *axis + 1, rank + 1);
  if (failed(ranks) || failed(slots))
    return failure();
  FailureOr<Value> picked = createInferred<EqualOp>(node, {*ranks, *slots});
  if (failed(picked))
    return failure();
  FailureOr<Value> indices = reduceAxis<ReduceSumOp>(
      node,
      createInferred<SelectOp>(node, {*picked, *i, createScalar(node, i64, 0)}),
      *axis, /*keepDims=*/false);
  if (failed(indices))
    return failure();
  GatherElementsOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  FailureOr<Value> values =
      createInferred<GatherElementsOp>(node, {*x, *indices}, props);
  if (failed(values))
    return failure();
  node.results.push_back(*values);
  node.results.push_back(*indices);
  return success();
}

} // namespace

OpImportFn kiln::lookupIndexOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("ArgMax", importArg<ReduceMaxOp>)
      .Case("ArgMin", importArg<ReduceMinOp>)
      .Case("Hardmax", importHardmax)
      .Case("Trilu", importTrilu)
      .Case("EyeLike", importEyeLike)
      .Case("OneHot", importOneHot)
      .Case("TopK", importTopK)
      .Default(nullptr);
}
