//===- OnnxPad.cpp - ONNX Pad ---------------------------------------------===//
//
// Pad, one axis at a time: negative pads crop (a slice); constant padding
// concatenates blocks of the fill value; edge, reflect and wrap padding is
// one gather whose constant indices map each output position to the input
// position it copies.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

enum class PadMode { Constant, Edge, Reflect, Wrap };

/// The input position output position `p` (counted from the first original
/// element; negative in the begin padding) copies along an axis of `n`.
int64_t getSourceIndex(PadMode mode, int64_t p, int64_t n) {
  switch (mode) {
  case PadMode::Edge:
    return std::clamp<int64_t>(p, 0, n - 1);
  case PadMode::Wrap:
    return llvm::mod(p, n);
  case PadMode::Reflect: {
    if (n == 1)
      return 0;
    int64_t period = 2 * n - 2;
    int64_t q = llvm::mod(p, period);
    return q >= n ? period - q : q;
  }
  case PadMode::Constant:
    break;
  }
  llvm_unreachable("constant padding copies no input position");
}

/// `x` padded along `axis` by `begin` and `end` (both >= 0) copies of its
/// own elements, as `mode` picks them.
FailureOr<Value> padByGather(NodeImporter &node, Value x, int64_t axis,
                             int64_t begin, int64_t end, PadMode mode) {
  int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(axis);
  SmallVector<int64_t> indices;
  for (int64_t p = -begin; p < n + end; ++p)
    indices.push_back(getSourceIndex(mode, p, n));
  auto indicesType = RankedTensorType::get(
      {static_cast<int64_t>(indices.size())}, node.b.getI64Type());
  Value positions = ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(indicesType, ArrayRef<int64_t>(indices)));
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  return createInferred<GatherOp>(node, {x, positions}, props);
}

/// `x` with `begin` and `end` elements of `fill` (a scalar) on either side
/// of `axis`.
FailureOr<Value> padByConcat(NodeImporter &node, Value x, int64_t axis,
                             int64_t begin, int64_t end, Value fill) {
  SymbolicInts shape = node.graph.getShape(x);
  SmallVector<Value> parts;
  auto block = [&](int64_t count) -> FailureOr<Value> {
    SymbolicInts blockShape = shape;
    blockShape[axis] = getAffineConstantExpr(count, node.b.getContext());
    return createBroadcast(node, fill, blockShape);
  };
  if (begin > 0) {
    FailureOr<Value> before = block(begin);
    if (failed(before))
      return failure();
    parts.push_back(*before);
  }
  parts.push_back(x);
  if (end > 0) {
    FailureOr<Value> after = block(end);
    if (failed(after))
      return failure();
    parts.push_back(*after);
  }
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  FailureOr<Value> padded = createInferred<ConcatOp>(node, parts, props);
  // The next axis reads the shape.
  if (succeeded(padded) &&
      !cast<RankedTensorType>(padded->getType()).hasStaticShape()) {
    shape[axis] = simplify(shape[axis] + (begin + end));
    node.graph.setShape(*padded, shape);
  }
  return padded;
}

/// `x` without `begin` and `end` elements (both >= 0) of `axis`.
FailureOr<Value> crop(NodeImporter &node, Value x, int64_t axis, int64_t begin,
                      int64_t end) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[axis] = begin;
  sizes[axis] -= begin + end;
  if (sizes[axis] < 0)
    return node.emitError()
           << "negative pads remove more than the " << type.getDimSize(axis)
           << " elements of axis " << axis;
  SliceOp::Properties props;
  props.offsets = node.b.getDenseI64ArrayAttr(offsets);
  props.sizes = node.b.getDenseI64ArrayAttr(sizes);
  props.strides = node.b.getDenseI64ArrayAttr(strides);
  return SliceOp::create(node.b, node.loc, x, props).getResult();
}

/// The fill value of constant padding, as a scalar of `x`'s type: the
/// `value` attribute before opset 11, then the optional input 2.
FailureOr<Value> getFillValue(NodeImporter &node, Value x) {
  Type elementType = getElementTypeOrSelf(x.getType());
  if (node.getOpset() < 11 || node.operands.size() < 3 || !node.operands[2])
    return createScalar(node, elementType,
                        node.getOpset() < 11 ? node.getFloatAttr("value", 0)
                                             : 0.0);
  Value fill = node.operands[2];
  auto type = cast<RankedTensorType>(fill.getType());
  if (type.getElementType() != elementType || type.getNumElements() != 1)
    return node.emitError() << "constant_value must be one element of the "
                               "input's type";
  return type.getRank() == 0 ? fill
                             : createReshape(node, fill, ArrayRef<int64_t>{});
}

} // namespace

LogicalResult kiln::importPad(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  std::string modeName = node.getStringAttr("mode", "constant");
  std::optional<PadMode> mode =
      llvm::StringSwitch<std::optional<PadMode>>(modeName)
          .Case("constant", PadMode::Constant)
          .Case("edge", PadMode::Edge)
          .Case("reflect", PadMode::Reflect)
          .Case("wrap", PadMode::Wrap)
          .Default(std::nullopt);
  if (!mode)
    return node.emitError() << "unknown mode '" << modeName << "'";

  FailureOr<std::optional<SmallVector<int64_t>>> padsOrNone =
      node.getOpset() < 11
          ? FailureOr<std::optional<SmallVector<int64_t>>>(
                node.getIntsAttr(node.getOpset() < 2 ? "paddings" : "pads"))
          : node.getIntsFromAttrOrInput("pads", 1);
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getOpset() < 18
          ? FailureOr<std::optional<SmallVector<int64_t>>>(std::nullopt)
          : node.getIntsFromAttrOrInput("axes", 3);
  if (failed(padsOrNone) || failed(axesOrNone))
    return failure();
  if (!*padsOrNone)
    return node.emitError() << "missing the pads";
  SmallVector<int64_t> axes =
      *axesOrNone ? **axesOrNone : llvm::to_vector(llvm::seq<int64_t>(0, rank));
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();
  ArrayRef<int64_t> pads = **padsOrNone;
  size_t count = normalized->size();
  if (pads.size() != 2 * count)
    return node.emitError()
           << "expects " << 2 * count << " pads, got " << pads.size();

  FailureOr<Value> fill =
      *mode == PadMode::Constant ? getFillValue(node, *x) : Value();
  FailureOr<Value> result = *x;
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    int64_t begin = pads[i], end = pads[count + i];
    if (begin == 0 && end == 0)
      continue;
    // Zeros or a constant go on either side of a dynamic axis as well;
    // the other modes pick positions by its size.
    if (type.isDynamicDim(axis) &&
        (*mode != PadMode::Constant || begin < 0 || end < 0))
      return node.emitError() << "axis " << axis
                              << " is dynamic: Kiln pads it with a constant "
                                 "only, by non-negative pads";
    if (failed(fill))
      return failure();
    if (begin < 0 || end < 0)
      result = crop(node, *result, axis, std::max<int64_t>(-begin, 0),
                    std::max<int64_t>(-end, 0));
    begin = std::max<int64_t>(begin, 0);
    end = std::max<int64_t>(end, 0);
    if (failed(result) || (begin == 0 && end == 0))
      continue;
    if (*mode != PadMode::Constant &&
        cast<RankedTensorType>(result->getType()).getDimSize(axis) == 0)
      return node.emitError() << "cannot pad an empty axis by " << modeName;
    result = *mode == PadMode::Constant
                 ? padByConcat(node, *result, axis, begin, end, *fill)
                 : padByGather(node, *result, axis, begin, end, *mode);
  }
  return addResult(node, result);
}
