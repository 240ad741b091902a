//===- KilnCompositeOps.cpp - normalizations and conv2d -------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

LogicalResult LayerNormOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  int64_t rank = inputType.getRank();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  ArrayRef<int64_t> normalized = inputType.getShape().drop_front(axis);
  for (Value param : {getScale(), getBias()}) {
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(param.getType()).getShape();
    SmallVector<int64_t> broadcast;
    if (!OpTrait::util::getBroadcastedShape(normalized, shape, broadcast) ||
        ArrayRef<int64_t>(broadcast) != normalized)
      return emitOpError("scale and bias must broadcast to the normalized "
                         "dimensions");
  }
  return success();
}

LogicalResult GroupNormOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  if (inputType.getRank() < 2 || inputType.isDynamicDim(1))
    return emitOpError("input must be [N, C, spatial...] with a static C");
  int64_t channels = inputType.getDimSize(1);
  int64_t groups = static_cast<int64_t>(getGroups());
  if (groups <= 0 || channels % groups != 0)
    return emitOpError() << channels << " channels do not split into " << groups
                         << " groups";
  for (Value param : {getScale(), getBias()})
    if (cast<RankedTensorType>(param.getType()).getShape() !=
        ArrayRef<int64_t>{channels})
      return emitOpError("scale and bias must hold one value per channel, [")
             << channels << "]";
  return success();
}

LogicalResult PackedMatMulOp::verify() {
  auto lhsType = cast<RankedTensorType>(getLhs().getType());
  auto rhsType = cast<RankedTensorType>(getRhs().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (lhsType.getRank() < 2 || rhsType.getRank() != 3)
    return emitOpError("takes a lhs of rank 2 or more and a rank-3 rhs");
  ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
  if (lhs.back() != rhs[1])
    return emitOpError("lhs has ")
           << lhs.back() << " columns but the panels have " << rhs[1]
           << " rows";
  ArrayRef<int64_t> result = resultType.getShape();
  if (result.size() != lhs.size() ||
      failed(verifyCompatibleShape(result.drop_back(), lhs.drop_back())) ||
      resultType.getElementType() != lhsType.getElementType() ||
      rhsType.getElementType() != lhsType.getElementType())
    return emitOpError("result must have the lhs's element type and leading "
                       "dimensions");
  int64_t columns = result.back();
  if (columns > rhs[0] * rhs[2] || columns <= (rhs[0] - 1) * rhs[2])
    return emitOpError("result has ")
           << columns << " columns, which " << rhs[0] << " panels of " << rhs[2]
           << " don't hold with less than a panel of padding";
  if (Value bias = getBias()) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getShape() != ArrayRef<int64_t>{rhs[0], rhs[2]} ||
        biasType.getElementType() != lhsType.getElementType())
      return emitOpError("bias must be ")
             << RankedTensorType::get({rhs[0], rhs[2]},
                                      lhsType.getElementType())
             << ", the panels of the result's columns";
  }
  return success();
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  auto filterType = cast<RankedTensorType>(adaptor.getFilter().getType());
  ArrayRef<int64_t> strides = adaptor.getStrides(),
                    dilations = adaptor.getDilations(),
                    pads = adaptor.getPads();
  if (inputType.getRank() != 4 || filterType.getRank() != 4)
    return emitOptionalError(loc, "conv2d takes a rank-4 input and filter");
  if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
    return emitOptionalError(loc, "conv2d needs 2 strides, 2 dilations and 4 "
                                  "pads");
  int64_t groups = static_cast<int64_t>(adaptor.getGroups());
  if (groups < 1 || filterType.getDimSize(0) % groups != 0)
    return emitOptionalError(loc, "groups must be positive and divide the ",
                             filterType.getDimSize(0), " output channels");
  if (inputType.getDimSize(1) != filterType.getDimSize(1) * groups)
    return emitOptionalError(loc, "input has ", inputType.getDimSize(1),
                             " channels but the filter expects ",
                             filterType.getDimSize(1) * groups);
  SmallVector<int64_t> shape = {inputType.getDimSize(0),
                                filterType.getDimSize(0)};
  for (int d = 0; d < 2; ++d) {
    if (strides[d] < 1 || dilations[d] < 1 || pads[d] < 0 || pads[d + 2] < 0)
      return emitOptionalError(loc, "strides and dilations must be positive "
                                    "and pads non-negative");
    if (inputType.isDynamicDim(2 + d) || filterType.isDynamicDim(2 + d)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    int64_t extent = dilations[d] * (filterType.getDimSize(2 + d) - 1) + 1;
    int64_t padded = inputType.getDimSize(2 + d) + pads[d] + pads[d + 2];
    if (padded < extent)
      return emitOptionalError(loc, "the filter is larger than the padded "
                                    "input");
    shape.push_back((padded - extent) / strides[d] + 1);
  }
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// PoolOp
//===----------------------------------------------------------------------===//

/// The number of windows along one spatial dimension of `input` elements,
/// or nullopt if the window is larger than the padded input.
static std::optional<int64_t> getWindowCount(int64_t input, int64_t kernel,
                                             int64_t stride, int64_t dilation,
                                             int64_t padBegin, int64_t padEnd,
                                             bool ceilMode) {
  int64_t extent = dilation * (kernel - 1) + 1;
  int64_t padded = input + padBegin + padEnd;
  if (padded < extent)
    return std::nullopt;
  int64_t span = padded - extent;
  int64_t count = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // A window may not start in the end padding.
  if (ceilMode && (count - 1) * stride >= input + padBegin)
    --count;
  return count;
}

LogicalResult PoolOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> kernel = adaptor.getKernel(),
                    strides = adaptor.getStrides(),
                    dilations = adaptor.getDilations(),
                    pads = adaptor.getPads();
  size_t spatial = kernel.size();
  if (spatial < 1 || spatial > 3 ||
      inputType.getRank() != static_cast<int64_t>(spatial) + 2)
    return emitOptionalError(loc, "pool takes an input of rank 3 to 5 and one "
                                  "kernel size per spatial dimension");
  if (strides.size() != spatial || dilations.size() != spatial ||
      pads.size() != 2 * spatial)
    return emitOptionalError(loc, "pool needs one stride and dilation per "
                                  "spatial dimension and two pads");
  SmallVector<int64_t> shape(inputType.getShape().take_front(2));
  for (size_t d = 0; d < spatial; ++d) {
    int64_t input = inputType.getDimSize(2 + d);
    if (kernel[d] < 1 || strides[d] < 1 || dilations[d] < 1 || pads[d] < 0 ||
        pads[spatial + d] < 0)
      return emitOptionalError(loc, "kernel sizes, strides and dilations "
                                    "must be positive and pads non-negative");
    if (ShapedType::isDynamic(input)) {
      if (adaptor.getCeilMode())
        return emitOptionalError(loc, "a ceil_mode pool needs static spatial "
                                      "dimensions");
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    std::optional<int64_t> count =
        getWindowCount(input, kernel[d], strides[d], dilations[d], pads[d],
                       pads[spatial + d], adaptor.getCeilMode());
    if (!count)
      return emitOptionalError(loc, "the window is larger than the padded "
                                    "input");
    shape.push_back(*count);
  }
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

int64_t PoolOp::getOverhang(unsigned d) {
  size_t spatial = getKernel().size();
  int64_t input =
      cast<RankedTensorType>(getInput().getType()).getDimSize(2 + d);
  if (ShapedType::isDynamic(input))
    return 0; // Not in ceil mode, every window ends inside the padding.
  int64_t extent = getDilations()[d] * (getKernel()[d] - 1) + 1;
  int64_t windows =
      cast<RankedTensorType>(getResult().getType()).getDimSize(2 + d);
  int64_t padded = input + getPads()[d] + getPads()[spatial + d];
  return std::max<int64_t>(0,
                           (windows - 1) * getStrides()[d] + extent - padded);
}

/// `shape` in `[..., H, S, D]` order: an operand stored sequence first
/// (`[..., S, H, D]`) has its two dimensions before the last swapped.
static SmallVector<int64_t> getHeadsFirstShape(Value value, bool seqFirst) {
  SmallVector<int64_t> shape(
      cast<RankedTensorType>(value.getType()).getShape());
  if (seqFirst && shape.size() >= 3)
    std::swap(shape[shape.size() - 3], shape[shape.size() - 2]);
  return shape;
}

LogicalResult AttentionOp::verify() {
  SmallVector<int64_t> queryShape =
      getHeadsFirstShape(getQuery(), getQuerySeqFirst());
  SmallVector<int64_t> valueShape =
      getHeadsFirstShape(getValue(), getValueSeqFirst());
  SmallVector<int64_t> resultShape =
      getHeadsFirstShape(getResult(), getResultSeqFirst());
  ArrayRef<int64_t> query = queryShape, value = valueShape,
                    result = resultShape;
  ArrayRef<int64_t> keyT = getKeyT().getType().getShape();
  size_t rank = query.size();
  if (rank < 2 || keyT.size() != rank || value.size() != rank ||
      result.size() != rank)
    return emitOpError("query, key_t, value and result must have one rank, "
                       "at least 2");
  if (rank < 3 &&
      (getQuerySeqFirst() || getValueSeqFirst() || getResultSeqFirst()))
    return emitOpError("sequence-first operands need a heads dimension "
                       "(rank 3 or more)");
  ArrayRef<int64_t> batch = query.drop_back(2);
  if (failed(verifyCompatibleShape(keyT.drop_back(2), batch)) ||
      failed(verifyCompatibleShape(value.drop_back(2), batch)) ||
      failed(verifyCompatibleShape(result.drop_back(2), batch)))
    return emitOpError("query, key_t, value and result must have the same "
                       "batch dimensions");
  int64_t queries = query[rank - 2], depth = query[rank - 1];
  int64_t keys = keyT[rank - 1];
  if (failed(verifyCompatibleShape({keyT[rank - 2]}, {depth})))
    return emitOpError("query rows have ")
           << depth << " elements but key_t has " << keyT[rank - 2] << " rows";
  if (failed(verifyCompatibleShape({value[rank - 2]}, {keys})))
    return emitOpError("key_t has ")
           << keys << " keys but value has " << value[rank - 2] << " rows";
  if (failed(verifyCompatibleShape({result[rank - 2], result[rank - 1]},
                                   {queries, value[rank - 1]})))
    return emitOpError("result must be [..., ")
           << queries << ", " << value[rank - 1] << "]";
  if (Value mask = getMask()) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> scores(batch);
    scores.append({queries, keys});
    SmallVector<int64_t> broadcast;
    if (!OpTrait::util::getBroadcastedShape(scores, maskType.getShape(),
                                            broadcast) ||
        failed(verifyCompatibleShape(broadcast, scores)))
      return emitOpError("mask ")
             << maskType << " does not broadcast to the scores' shape";
    bool boolean = maskType.getElementType().isInteger(1);
    if (boolean != getMaskFill().has_value())
      return emitOpError("an i1 mask takes a mask_fill and an f32 mask none");
  } else if (getMaskFill()) {
    return emitOpError("mask_fill without a mask");
  }
  return success();
}

LogicalResult WinogradConv2DOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto transformType = cast<RankedTensorType>(getFilterTransform().getType());
  auto resultType = cast<RankedTensorType>(getResult().getType());
  if (!inputType.hasStaticShape() || !transformType.hasStaticShape() ||
      !resultType.hasStaticShape() || inputType.getRank() != 4 ||
      transformType.getRank() != 3 || resultType.getRank() != 4)
    return emitOpError("takes a static 4-D input, a static [16, F, C] "
                       "filter transform and gives a static 4-D result");
  if (transformType.getElementType() != inputType.getElementType() ||
      resultType.getElementType() != inputType.getElementType())
    return emitOpError("input, filter transform and result must have one "
                       "element type");
  ArrayRef<int64_t> pads = getPads();
  if (pads.size() != 4 || llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return emitOpError("pads must be 4 values, none negative");
  ArrayRef<int64_t> input = inputType.getShape(),
                    transform = transformType.getShape(),
                    result = resultType.getShape();
  int64_t tile = getOutputTile();
  if (tile == 0 || transform[2] != input[1])
    return emitOpError("filter transform must be [16, F, ")
           << input[1] << "] or [36, F, " << input[1] << "], got "
           << transformType;
  int64_t height = input[2] + pads[0] + pads[2] - 2,
          width = input[3] + pads[1] + pads[3] - 2;
  if (result[0] != input[0] || result[1] != transform[1] ||
      result[2] != height || result[3] != width)
    return emitOpError("result must be ")
           << RankedTensorType::get({input[0], transform[1], height, width},
                                    inputType.getElementType());
  if (height <= 0 || width <= 0 || height % tile != 0 || width % tile != 0)
    return emitOpError("output height and width must be positive multiples "
                       "of the tile side ")
           << tile << ", got " << height << "x" << width;
  return success();
}

int64_t WinogradConv2DOp::getOutputTile() {
  switch (
      cast<RankedTensorType>(getFilterTransform().getType()).getDimSize(0)) {
  case 16:
    return 2;
  case 36:
    return 4;
  default:
    return 0;
  }
}
