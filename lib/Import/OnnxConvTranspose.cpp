//===- OnnxConvTranspose.cpp - ONNX ConvTranspose -------------------------===//
//
// A transposed convolution is the convolution of the input spread out by
// its strides (stride - 1 zeros between elements) with the filter flipped
// in space and its input and output channels swapped (per group), padded by
// dilation * (kernel - 1) minus the transposed convolution's own pads:
//   y[o] = sum over i, k with i * stride + k * dilation - pad_begin = o of
//          x[i] * w[k]
// Pads larger than that margin crop the result instead.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

/// `x` with stride - 1 zeros inserted between neighbours along `axis`:
/// [..., n, ...] becomes [..., (n - 1) * stride + 1, ...].
FailureOr<Value> spreadAxis(NodeImporter &node, Value x, int64_t axis,
                            int64_t stride) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t n = shape[axis];
  SmallVector<int64_t> column(shape);
  column.insert(column.begin() + axis + 1, 1);
  SmallVector<int64_t> gap(column);
  gap[axis + 1] = stride - 1;
  Value zeros = BroadcastOp::create(
      node.b, node.loc, RankedTensorType::get(gap, type.getElementType()),
      createScalar(node, type.getElementType(), 0), ValueRange());
  ConcatOp::Properties concat;
  concat.axis = node.b.getI64IntegerAttr(axis + 1);
  FailureOr<Value> spread = createInferred<ConcatOp>(
      node, {createReshape(node, x, column), zeros}, concat);
  if (failed(spread))
    return failure();
  SmallVector<int64_t> merged(shape);
  merged[axis] = n * stride;
  SmallVector<int64_t> offsets(shape.size(), 0), sizes(merged),
      strides(shape.size(), 1);
  sizes[axis] = (n - 1) * stride + 1;
  SliceOp::Properties slice;
  slice.offsets = node.b.getDenseI64ArrayAttr(offsets);
  slice.sizes = node.b.getDenseI64ArrayAttr(sizes);
  slice.strides = node.b.getDenseI64ArrayAttr(strides);
  return SliceOp::create(node.b, node.loc, createReshape(node, *spread, merged),
                         slice)
      .getResult();
}

/// The ConvTranspose filter [C_in, C_out / g, k...] as a convolution filter
/// [C_out, C_in / g, k...] flipped along its spatial axes.
FailureOr<Value> createFlippedFilter(NodeImporter &node, Value filter,
                                     int64_t groups) {
  auto type = cast<RankedTensorType>(filter.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t inPerGroup = shape[0] / groups, outPerGroup = shape[1];
  SmallVector<int64_t> grouped = {groups, inPerGroup, outPerGroup};
  llvm::append_range(grouped, shape.drop_front(2));
  SmallVector<int64_t> perm = {0, 2, 1};
  for (size_t d = 3; d < grouped.size(); ++d)
    perm.push_back(d);
  Value swapped =
      createTranspose(node, createReshape(node, filter, grouped), perm);
  SmallVector<int64_t> swappedShape = {groups * outPerGroup, inPerGroup};
  llvm::append_range(swappedShape, shape.drop_front(2));
  Value flipped = createReshape(node, swapped, swappedShape);
  for (int64_t axis = 2; axis < type.getRank(); ++axis) {
    SmallVector<int64_t> reversed;
    for (int64_t i = shape[axis] - 1; i >= 0; --i)
      reversed.push_back(i);
    flipped = createAxisGather(node, flipped, axis, reversed);
  }
  return flipped;
}

/// The pads (begins, then ends) of the transposed convolution: given, or
/// derived from output_shape or auto_pad (SAME: output = input * stride).
FailureOr<SmallVector<int64_t>>
getTransposedPads(NodeImporter &node, ArrayRef<int64_t> inputSizes,
                  ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations,
                  ArrayRef<int64_t> outputPadding) {
  size_t spatial = kernel.size();
  SmallVector<int64_t> pads =
      node.getIntsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (pads.size() != 2 * spatial)
    return node.emitError()
           << "pads do not match the " << spatial << "-D input";
  std::string mode = node.getStringAttr("auto_pad", "NOTSET");
  std::optional<SmallVector<int64_t>> outputShape =
      node.getIntsAttr("output_shape");
  if (mode == "VALID")
    return SmallVector<int64_t>(2 * spatial, 0);
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER")
    return node.emitError() << "unknown auto_pad '" << mode << "'";
  if (mode == "NOTSET" && !outputShape)
    return pads;
  if (outputShape && outputShape->size() < spatial)
    return node.emitError() << "output_shape needs " << spatial << " sizes";
  for (size_t d = 0; d < spatial; ++d) {
    int64_t target = outputShape
                         ? (*outputShape)[outputShape->size() - spatial + d]
                         : inputSizes[d] * strides[d];
    int64_t total = strides[d] * (inputSizes[d] - 1) + outputPadding[d] +
                    (kernel[d] - 1) * dilations[d] + 1 - target;
    // The odd unit of padding goes to the end for SAME_UPPER, else to the
    // start. A larger output than the input gives makes the padding
    // negative: the result extends by zeros' contributions at the end.
    int64_t half = llvm::divideFloorSigned(total, 2);
    bool upper = mode == "SAME_UPPER";
    pads[d] = upper ? half : total - half;
    pads[spatial + d] = upper ? total - half : half;
  }
  return pads;
}

} // namespace

LogicalResult kiln::importConvTranspose(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), filter = node.getOperand(1);
  if (failed(input) || failed(filter) || failed(requireFloat(node, *input)) ||
      failed(requireFloat(node, *filter)))
    return failure();
  RankedTensorType inputType = node.getOperandType(0);
  RankedTensorType filterType = node.getOperandType(1);
  int64_t spatial = inputType.getRank() - 2;
  if (filterType.getRank() != inputType.getRank())
    return node.emitError() << "the weights have rank " << filterType.getRank()
                            << " and the input rank " << inputType.getRank()
                            << "; they must be equal";
  if (spatial != 1 && spatial != 2)
    return node.emitError() << "only 1-D and 2-D transposed convolutions are "
                               "supported; the input has rank "
                            << inputType.getRank();
  if (!filterType.hasStaticShape() ||
      llvm::any_of(inputType.getShape().drop_front(1), ShapedType::isDynamic))
    return node.emitError() << "needs a static filter and static channels "
                               "and spatial dimensions";
  int64_t groups = node.getIntAttr("group", 1);
  if (groups < 1 || filterType.getDimSize(0) != inputType.getDimSize(1) ||
      inputType.getDimSize(1) % groups != 0)
    return node.emitError() << "the filter's " << filterType.getDimSize(0)
                            << " input channels must equal the input's "
                            << inputType.getDimSize(1) << " and divide into "
                            << groups << " groups";
  ArrayRef<int64_t> inputSizes = inputType.getShape().drop_front(2);
  ArrayRef<int64_t> kernel = filterType.getShape().drop_front(2);
  auto ints = [&](StringRef name, int64_t fill) {
    return node.getIntsAttr(name).value_or(SmallVector<int64_t>(spatial, fill));
  };
  SmallVector<int64_t> strides = ints("strides", 1),
                       dilations = ints("dilations", 1),
                       outputPadding = ints("output_padding", 0);
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(outputPadding.size()) != spatial ||
      llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
    return node.emitError() << "strides, dilations and output_padding must "
                               "give one positive size per spatial dimension";
  FailureOr<SmallVector<int64_t>> pads = getTransposedPads(
      node, inputSizes, kernel, strides, dilations, outputPadding);
  if (failed(pads))
    return failure();

  FailureOr<Value> spread = *input;
  for (int64_t d = 0; d < spatial && succeeded(spread); ++d)
    if (strides[d] > 1)
      spread = spreadAxis(node, *spread, 2 + d, strides[d]);
  FailureOr<Value> flipped = createFlippedFilter(node, *filter, groups);
  if (failed(spread) || failed(flipped))
    return failure();

  // The convolution's pads; where the transposed one's pads exceed the
  // margin, the excess is cropped from the result.
  WindowAttrs window{SmallVector<int64_t>(spatial, 1), dilations,
                     SmallVector<int64_t>(2 * spatial, 0)};
  SmallVector<int64_t> cropBegin(spatial, 0), cropEnd(spatial, 0);
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t margin = dilations[d] * (kernel[d] - 1);
    int64_t begin = margin - (*pads)[d];
    int64_t end = margin - (*pads)[spatial + d] + outputPadding[d];
    window.pads[d] = std::max<int64_t>(begin, 0);
    window.pads[spatial + d] = std::max<int64_t>(end, 0);
    cropBegin[d] = std::max<int64_t>(-begin, 0);
    cropEnd[d] = std::max<int64_t>(-end, 0);
  }
  FailureOr<Value> result =
      createConvolution(node, *spread, *flipped, window, groups);
  if (failed(result))
    return failure();
  if (llvm::any_of(cropBegin, [](int64_t c) { return c > 0; }) ||
      llvm::any_of(cropEnd, [](int64_t c) { return c > 0; })) {
    auto type = cast<RankedTensorType>(result->getType());
    SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
        steps(type.getRank(), 1);
    for (int64_t d = 0; d < spatial; ++d) {
      offsets[2 + d] = cropBegin[d];
      sizes[2 + d] -= cropBegin[d] + cropEnd[d];
      if (sizes[2 + d] < 1)
        return node.emitError() << "the pads leave no output";
    }
    SliceOp::Properties slice;
    slice.offsets = node.b.getDenseI64ArrayAttr(offsets);
    slice.sizes = node.b.getDenseI64ArrayAttr(sizes);
    slice.strides = node.b.getDenseI64ArrayAttr(steps);
    result = SliceOp::create(node.b, node.loc, *result, slice).getResult();
  }
  if (node.operands.size() > 2 && node.operands[2]) {
    Value bias = node.operands[2];
    if (failed(requireFloat(node, bias)))
      return failure();
    SmallVector<int64_t> perChannel(spatial + 1, 1);
    perChannel[0] = cast<RankedTensorType>(bias.getType()).getNumElements();
    result = createInferred<AddOp>(
        node, {*result, createReshape(node, bias, perChannel)});
  }
  return addResult(node, result);
}
