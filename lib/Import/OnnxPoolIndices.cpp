//===- OnnxPoolIndices.cpp - MaxPool's Indices output and MaxUnpool -------===//
//
// ONNX MaxPool can also return where each maximum came from, as an index
// into the flattened input, and MaxUnpool writes values back at such
// indices. Both are spelled in kiln ops at import: the index of a window's
// maximum is found by comparing the pooled maximum with every kernel tap
// (a strided slice of the input padded with -inf), the first equal tap in
// the window's row-major order winning, as in ONNX's reference; MaxUnpool
// is one scatter into a zero tensor.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

/// `x` with `before` and `after` elements of `fill` around each spatial
/// dimension d (dimension d + 2).
Value padSpatial(NodeImporter &node, Value x, ArrayRef<int64_t> before,
                 ArrayRef<int64_t> after, double fill) {
  for (size_t d = 0; d < before.size(); ++d)
    x = createAxisPad(node, x, d + 2, before[d], after[d], fill);
  return x;
}

Value createIndexConstant(NodeImporter &node, ArrayRef<int64_t> shape,
                          ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, node.b.getI64Type());
  return ConstantOp::create(node.b, node.loc,
                            DenseElementsAttr::get(type, values));
}

} // namespace

FailureOr<Value> kiln::createMaxPoolIndices(NodeImporter &node, Value input,
                                            Value pooled,
                                            const WindowAttrs &window,
                                            ArrayRef<int64_t> kernel) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto pooledType = cast<RankedTensorType>(pooled.getType());
  if (!inputType.hasStaticShape() || !pooledType.hasStaticShape())
    return node.emitError() << "the Indices output needs static shapes";
  int64_t spatial = inputType.getRank() - 2;
  ArrayRef<int64_t> inSizes = inputType.getShape().drop_front(2);
  ArrayRef<int64_t> outSizes = pooledType.getShape().drop_front(2);
  // Pad the far end as far as ceil_mode's last windows reach.
  SmallVector<int64_t> before, after;
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t reach = (outSizes[d] - 1) * window.strides[d] +
                    (kernel[d] - 1) * window.dilations[d] + 1;
    before.push_back(window.pads[d]);
    after.push_back(std::max<int64_t>(window.pads[spatial + d],
                                      reach - inSizes[d] - window.pads[d]));
  }
  Value padded = padSpatial(node, input, before, after,
                            -std::numeric_limits<double>::infinity());

  // Flat positions within one [spatial...] image: row-major, or with
  // storage_order 1 the first two spatial dimensions swapped (column-major
  // 2-D images).
  SmallVector<int64_t> strides = computeStrides(inSizes);
  if (node.getIntAttr("storage_order", 0) != 0 && spatial == 2)
    strides = {1, inSizes[0]};
  SmallVector<int64_t> tapShape = {1, 1};
  tapShape.append(outSizes.begin(), outSizes.end());
  int64_t points = pooledType.getNumElements() / pooledType.getDimSize(0) /
                   pooledType.getDimSize(1);
  int64_t taps = 1;
  for (int64_t k : kernel)
    taps *= k;

  Value index;
  // Taps from last to first, so the first equal one is selected last.
  for (int64_t tap = taps - 1; tap >= 0; --tap) {
    SmallVector<int64_t> offset(spatial);
    for (int64_t d = spatial - 1, rest = tap; d >= 0; --d) {
      offset[d] = rest % kernel[d];
      rest /= kernel[d];
    }
    SmallVector<int64_t> sliceOffsets = {0, 0},
                         sliceSizes(pooledType.getShape()),
                         sliceStrides = {1, 1};
    for (int64_t d = 0; d < spatial; ++d) {
      sliceOffsets.push_back(offset[d] * window.dilations[d]);
      sliceStrides.push_back(window.strides[d]);
    }
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr(sliceOffsets);
    props.sizes = node.b.getDenseI64ArrayAttr(sliceSizes);
    props.strides = node.b.getDenseI64ArrayAttr(sliceStrides);
    Value values = SliceOp::create(node.b, node.loc, padded, props);

    SmallVector<int64_t> flat;
    for (int64_t p = 0; p < points; ++p) {
      int64_t position = 0;
      for (int64_t d = spatial - 1, rest = p; d >= 0; --d) {
        int64_t out = rest % outSizes[d];
        rest /= outSizes[d];
        position += (out * window.strides[d] + offset[d] * window.dilations[d] -
                     window.pads[d]) *
                    strides[d];
      }
      flat.push_back(position);
    }
    Value tapIndex = createIndexConstant(node, tapShape, flat);
    if (!index) {
      index = BroadcastOp::create(node.b, node.loc,
                                  pooledType.clone(node.b.getI64Type()),
                                  tapIndex, ValueRange());
      continue;
    }
    FailureOr<Value> equal = createInferred<EqualOp>(node, {values, pooled});
    if (failed(equal))
      return failure();
    FailureOr<Value> chosen =
        createInferred<SelectOp>(node, {*equal, tapIndex, index});
    if (failed(chosen))
      return failure();
    index = *chosen;
  }
  // The offsets of each image: (n * C + c) * its element count.
  int64_t batch = pooledType.getDimSize(0), channels = pooledType.getDimSize(1);
  int64_t image = 1;
  for (int64_t size : inSizes)
    image *= size;
  SmallVector<int64_t> imageShape = {batch, channels};
  imageShape.append(spatial, 1);
  SmallVector<int64_t> starts;
  for (int64_t i = 0; i < batch * channels; ++i)
    starts.push_back(i * image);
  return createInferred<AddOp>(
      node, {index, createIndexConstant(node, imageShape, starts)});
}

/// MaxUnpool: X written at the flat indices I into a zero tensor of the
/// shape the pooling's window attributes invert to; a given output_shape
/// then crops it or pads it with zeros at the end, as ONNX's reference does.
LogicalResult kiln::importMaxUnpool(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  FailureOr<Value> indices = getIndicesOperand(node, 1);
  if (failed(x) || failed(indices))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (!type.hasStaticShape() || type.getRank() < 3 ||
      cast<RankedTensorType>(indices->getType()).getShape() != type.getShape())
    return node.emitError() << "X must be statically shaped [N, C, ...] and "
                               "I of its shape";
  int64_t spatial = type.getRank() - 2;
  std::optional<SmallVector<int64_t>> kernel = node.getIntsAttr("kernel_shape");
  if (!kernel || static_cast<int64_t>(kernel->size()) != spatial)
    return node.emitError() << "needs kernel_shape with one size per spatial "
                               "dimension";
  SmallVector<int64_t> strides =
      node.getIntsAttr("strides").value_or(SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      node.getIntsAttr("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return node.emitError()
           << "strides and pads do not match the " << spatial << "-D input";
  SmallVector<int64_t> inferred(type.getShape());
  int64_t total = type.getDimSize(0) * type.getDimSize(1);
  for (int64_t d = 0; d < spatial; ++d) {
    inferred[d + 2] = (type.getDimSize(d + 2) - 1) * strides[d] - pads[d] -
                      pads[spatial + d] + (*kernel)[d];
    if (inferred[d + 2] < 1)
      return node.emitError()
             << "the unpooled dimension " << d + 2 << " would be empty";
    total *= inferred[d + 2];
  }
  SmallVector<int64_t> shape = inferred;
  if (node.node.input_size() > 2 && !node.node.input(2).empty()) {
    std::optional<SmallVector<int64_t>> given =
        node.graph.getConstantInts(node.node.input(2));
    if (!given || given->size() != shape.size() || (*given)[0] != shape[0] ||
        (*given)[1] != shape[1] ||
        llvm::any_of(*given, [](int64_t size) { return size < 1; }))
      return node.emitError() << "output_shape must be a compile-time "
                                 "constant [N, C, ...] of positive sizes";
    shape = *given;
  }
  Type element = type.getElementType();
  Value zeros = BroadcastOp::create(
      node.b, node.loc, RankedTensorType::get({total}, element),
      createScalar(node, element, 0), ValueRange());
  int64_t count = type.getNumElements();
  Value flatValues = createReshape(node, *x, ArrayRef<int64_t>{count});
  Value flatIndices = createReshape(node, *indices, ArrayRef<int64_t>{count});
  Value result = createReshape(
      node,
      ScatterElementsOp::create(node.b, node.loc, zeros, flatIndices,
                                flatValues, 0, ScatterReduction::None),
      inferred);
  SmallVector<int64_t> before(spatial, 0), after(spatial, 0);
  for (int64_t d = 0; d < spatial; ++d) {
    if (shape[d + 2] < inferred[d + 2])
      result = createAxisSlice(node, result, d + 2, 0, shape[d + 2]);
    else
      after[d] = shape[d + 2] - inferred[d + 2];
  }
  node.results.push_back(padSpatial(node, result, before, after, 0));
  return success();
}
