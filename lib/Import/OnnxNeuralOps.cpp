//===- OnnxNeuralOps.cpp - importers of ONNX layer ops --------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Pads of one spatial dimension for auto_pad SAME_UPPER / SAME_LOWER: the
/// output has ceil(input / stride) elements, any odd padding at the end
/// (UPPER) or the start (LOWER).
std::pair<int64_t, int64_t> getSamePads(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t dilation,
                                        bool upper) {
  int64_t output = (input + stride - 1) / stride;
  int64_t total = std::max<int64_t>(
      (output - 1) * stride + (kernel - 1) * dilation + 1 - input, 0);
  int64_t small = total / 2, large = total - small;
  return upper ? std::make_pair(small, large) : std::make_pair(large, small);
}

} // namespace

FailureOr<WindowAttrs> kiln::getWindowAttrs(NodeImporter &node,
                                            ArrayRef<int64_t> inputSizes,
                                            ArrayRef<int64_t> kernel) {
  size_t spatial = kernel.size();
  auto ints = [&](StringRef name, int64_t fill, size_t count) {
    return node.getIntsAttr(name).value_or(SmallVector<int64_t>(count, fill));
  };
  WindowAttrs attrs{ints("strides", 1, spatial), ints("dilations", 1, spatial),
                    ints("pads", 0, 2 * spatial)};
  if (attrs.strides.size() != spatial || attrs.dilations.size() != spatial ||
      attrs.pads.size() != 2 * spatial)
    return node.emitError() << "strides, dilations and pads do not match the "
                            << spatial << "-D input";
  std::string padMode = node.getStringAttr("auto_pad", "NOTSET");
  if (padMode == "VALID") {
    attrs.pads.assign(2 * spatial, 0);
  } else if (padMode == "SAME_UPPER" || padMode == "SAME_LOWER") {
    for (size_t d = 0; d < spatial; ++d) {
      // At stride 1 the pads are the window's extent less 1, whatever the
      // size; other strides pad to a multiple of the stride.
      if (ShapedType::isDynamic(kernel[d]))
        return node.emitError()
               << "auto_pad " << padMode << " needs a static window";
      bool dynamic = ShapedType::isDynamic(inputSizes[d]);
      if (dynamic && attrs.strides[d] != 1)
        return node.emitError()
               << "auto_pad " << padMode
               << " at a stride other than 1 needs static spatial dimensions";
      std::tie(attrs.pads[d], attrs.pads[spatial + d]) =
          getSamePads(dynamic ? 1 : inputSizes[d], kernel[d], attrs.strides[d],
                      attrs.dilations[d], padMode == "SAME_UPPER");
    }
  } else if (padMode != "NOTSET") {
    return node.emitError() << "unknown auto_pad '" << padMode << "'";
  }
  return attrs;
}

/// A 3-D convolution as a sum over the filter's depth taps of 2-D ones:
/// depth tap k reads input depth d * stride + k * dilation (after padding)
/// for output depth d, so the padded input, its depth moved next to the
/// batch, is sliced with the depth stride and folded into the batch, and
/// convolved with the filter's k-th depth slice.
static FailureOr<Value> createConvolution3D(NodeImporter &node, Value input,
                                            Value filter,
                                            const WindowAttrs &window,
                                            int64_t groups) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  if (!inputType.hasStaticShape() || !filterType.hasStaticShape())
    return node.emitError() << "a 3-D convolution needs static shapes; the "
                               "input is "
                            << inputType << " and the filter " << filterType;
  ArrayRef<int64_t> shape = inputType.getShape();
  int64_t batch = shape[0], channels = shape[1], height = shape[3],
          width = shape[4];
  int64_t front = window.pads[0], back = window.pads[3];
  int64_t stride = window.strides[0], dilation = window.dilations[0];
  int64_t taps = filterType.getDimSize(2);
  int64_t padded = shape[2] + front + back;
  int64_t span = dilation * (taps - 1) + 1;
  if (padded < span || stride < 1)
    return node.emitError()
           << "the filter's depth " << taps
           << " does not fit the padded input depth " << padded;
  int64_t depth = (padded - span) / stride + 1;

  // [N, D + pads, C, H, W]
  Value x = createTranspose(node, input, {0, 2, 1, 3, 4});
  x = createAxisPad(node, x, 1, front, back, 0);
  WindowAttrs planar{
      {window.strides[1], window.strides[2]},
      {window.dilations[1], window.dilations[2]},
      {window.pads[1], window.pads[2], window.pads[4], window.pads[5]}};
  Value sum;
  for (int64_t k = 0; k < taps; ++k) {
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr({0, k * dilation, 0, 0, 0});
    props.sizes =
        node.b.getDenseI64ArrayAttr({batch, depth, channels, height, width});
    props.strides = node.b.getDenseI64ArrayAttr({1, stride, 1, 1, 1});
    Value slice = SliceOp::create(node.b, node.loc, x, props);
    slice = createReshape(
        node, slice, ArrayRef<int64_t>{batch * depth, channels, height, width});
    Value w = createAxisSlice(node, filter, 2, k, k + 1);
    w = createReshape(
        node, w,
        ArrayRef<int64_t>{filterType.getDimSize(0), filterType.getDimSize(1),
                          filterType.getDimSize(3), filterType.getDimSize(4)});
    FailureOr<Value> conv = createConvolution(node, slice, w, planar, groups);
    if (failed(conv))
      return failure();
    if (!sum) {
      sum = *conv;
      continue;
    }
    FailureOr<Value> added = createInferred<AddOp>(node, {sum, *conv});
    if (failed(added))
      return failure();
    sum = *added;
  }
  auto planarType = cast<RankedTensorType>(sum.getType());
  Value result = createReshape(
      node, sum,
      ArrayRef<int64_t>{batch, depth, planarType.getDimSize(1),
                        planarType.getDimSize(2), planarType.getDimSize(3)});
  return createTranspose(node, result, {0, 2, 1, 3, 4});
}

FailureOr<Value> kiln::createConvolution(NodeImporter &node, Value input,
                                         Value filter,
                                         const WindowAttrs &window,
                                         int64_t groups) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t spatial = inputType.getRank() - 2;
  if (spatial == 3)
    return createConvolution3D(node, input, filter, window, groups);
  auto filterType = cast<RankedTensorType>(filter.getType());
  bool dynamic = !inputType.hasStaticShape() || !filterType.hasStaticShape();
  if (dynamic && (spatial != 2 || inputType.isDynamicDim(1) ||
                  filterType.isDynamicDim(0) || filterType.isDynamicDim(1) ||
                  (groups != 1 && !(filterType.getDimSize(0) == groups &&
                                    filterType.getDimSize(1) == 1))))
    return node.emitError()
           << "a convolution with dynamic sizes must be 2-D, with static "
              "channel counts and one group or one per channel; the input is "
           << inputType << " and the filter " << filterType;
  SmallVector<int64_t> strides = window.strides, dilations = window.dilations,
                       pads = window.pads;
  Value x = input, w = filter;
  if (spatial == 1) {
    auto addHeight = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      return createReshape(
          node, v,
          {type.getDimSize(0), type.getDimSize(1), 1, type.getDimSize(2)});
    };
    x = addHeight(x);
    w = addHeight(w);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  Conv2DOp::Properties props;
  props.strides = node.b.getDenseI64ArrayAttr(strides);
  props.dilations = node.b.getDenseI64ArrayAttr(dilations);
  // ONNX orders 2-D pads as [top, left, bottom, right], as kiln.conv2d does.
  props.pads = node.b.getDenseI64ArrayAttr(pads);
  props.groups = node.b.getI64IntegerAttr(groups);
  FailureOr<Value> conv = createInferred<Conv2DOp>(node, {x, w}, props);
  if (failed(conv))
    return failure();
  Value result = *conv;
  if (spatial == 1) {
    auto type = cast<RankedTensorType>(result.getType());
    result = createReshape(
        node, result,
        {type.getDimSize(0), type.getDimSize(1), type.getDimSize(3)});
  }
  return result;
}

/// The 1-D, 2-D or 3-D convolution of `input` by `filter` (f32 or i32) with the
/// node's strides, dilations, pads, auto_pad and group.
FailureOr<Value> kiln::createConvolution(NodeImporter &node, Value input,
                                         Value filter) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  int64_t spatial = inputType.getRank() - 2;
  if (filterType.getRank() != inputType.getRank())
    return node.emitError() << "the weights have rank " << filterType.getRank()
                            << " and the input rank " << inputType.getRank()
                            << "; they must be equal";
  if (spatial < 1 || spatial > 3)
    return node.emitError() << "only 1-D, 2-D and 3-D convolutions are "
                               "supported; the input has rank "
                            << inputType.getRank();
  FailureOr<WindowAttrs> window =
      getWindowAttrs(node, inputType.getShape().drop_front(2),
                     filterType.getShape().drop_front(2));
  if (failed(window))
    return failure();
  return createConvolution(node, input, filter, *window,
                           node.getIntAttr("group", 1));
}

/// 1-D, 2-D and 3-D Conv, grouped or not; the bias becomes an add broadcast
/// over the spatial dimensions.
LogicalResult kiln::importConv(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), filter = node.getOperand(1);
  if (failed(input) || failed(filter) || failed(requireFloat(node, *input)) ||
      failed(requireFloat(node, *filter)))
    return failure();
  FailureOr<Value> conv = createConvolution(node, *input, *filter);
  if (failed(conv))
    return failure();
  Value result = *conv;
  int64_t spatial = node.getOperandType(0).getRank() - 2;
  if (node.operands.size() > 2 && node.operands[2]) {
    Value bias = node.operands[2];
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1)
      return node.emitError() << "the bias must be 1-D";
    SmallVector<int64_t> biasShape(spatial + 1, 1);
    biasShape[0] = biasType.getDimSize(0);
    FailureOr<Value> sum = createInferred<AddOp>(
        node, {result, createReshape(node, bias, biasShape)});
    if (failed(sum))
      return failure();
    result = *sum;
  }
  node.results.push_back(result);
  return success();
}

/// Opset-17 LayerNormalization. When the Mean and InvStdDev outputs are
/// used it is spelled out in kiln ops, which produce them; otherwise it is
/// one kiln.layer_norm.
namespace {

/// What LayerNormalization and RMSNormalization read: the f32 input and
/// scale, and the first of the normalized axes.
struct NormalizationOperands {
  Value input, scale;
  int64_t axis;
};

FailureOr<NormalizationOperands> getNormalizationOperands(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), scale = node.getOperand(1);
  if (failed(input) || failed(scale) || failed(requireFloat(node, *input)) ||
      failed(requireFloat(node, *scale)))
    return failure();
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", -1), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  return NormalizationOperands{*input, *scale, *axis};
}

} // namespace

LogicalResult kiln::importLayerNormalization(NodeImporter &node) {
  FailureOr<NormalizationOperands> operands = getNormalizationOperands(node);
  if (failed(operands))
    return failure();
  Value input = operands->input, scale = operands->scale;
  int64_t axis = operands->axis;
  RankedTensorType type = node.getOperandType(0);
  float epsilon = node.getFloatAttr("epsilon", 1e-5f);
  Value bias = node.operands.size() > 2 ? node.operands[2] : Value();
  if (!bias)
    bias = createScalar(node, type.getElementType(), 0);

  bool wantsStatistics = false;
  for (int i = 1; i < node.node.output_size(); ++i)
    wantsStatistics |= !node.node.output(i).empty();
  if (!wantsStatistics) {
    if (cast<RankedTensorType>(bias.getType()).getRank() == 0)
      bias = BroadcastOp::create(node.b, node.loc, scale.getType(), bias);
    LayerNormOp op = LayerNormOp::create(node.b, node.loc, type, input, scale,
                                         bias, node.b.getI64IntegerAttr(axis),
                                         node.b.getF32FloatAttr(epsilon));
    if (failed(op.verify()))
      return failure();
    node.results.push_back(op);
    return success();
  }

  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < type.getRank(); ++d)
    axes.push_back(d);
  ReduceMeanOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(axes);
  props.keep_dims = node.b.getUnitAttr();
  FailureOr<Value> mean = createInferred<ReduceMeanOp>(node, input, props);
  if (failed(mean))
    return failure();
  Value centered = SubOp::create(node.b, node.loc, input, *mean);
  Value squares = MulOp::create(node.b, node.loc, centered, centered);
  FailureOr<Value> variance =
      createInferred<ReduceMeanOp>(node, squares, props);
  if (failed(variance))
    return failure();
  Type f32 = type.getElementType();
  Value invStdDev = DivOp::create(
      node.b, node.loc, createScalar(node, f32, 1),
      SqrtOp::create(node.b, node.loc,
                     AddOp::create(node.b, node.loc, *variance,
                                   createScalar(node, f32, epsilon))));
  Value normalized = MulOp::create(node.b, node.loc, centered, invStdDev);
  FailureOr<Value> scaled = createInferred<MulOp>(node, {normalized, scale});
  if (failed(scaled))
    return failure();
  FailureOr<Value> shifted = createInferred<AddOp>(node, {*scaled, bias});
  if (failed(shifted))
    return failure();
  if (shifted->getType() != type)
    return node.emitError() << "scale and bias must broadcast to the input";
  node.results.append({*shifted, *mean, invStdDev});
  return success();
}

/// X / sqrt(mean(X^2) + epsilon) * scale, the mean over the axes from
/// `axis` on.
LogicalResult kiln::importRMSNormalization(NodeImporter &node) {
  FailureOr<NormalizationOperands> operands = getNormalizationOperands(node);
  if (failed(operands))
    return failure();
  Value input = operands->input, scale = operands->scale;
  RankedTensorType type = node.getOperandType(0);
  ReduceMeanOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(operands->axis, type.getRank())));
  props.keep_dims = node.b.getUnitAttr();
  Formula f(node, input);
  FailureOr<Value> squares = f.apply<MulOp>(input, input);
  if (failed(squares))
    return failure();
  FailureOr<Value> meanSquare =
      createInferred<ReduceMeanOp>(node, *squares, props);
  FailureOr<Value> rms = f.apply<SqrtOp>(f.apply<AddOp>(
      meanSquare, f.constant(node.getFloatAttr("epsilon", 1e-5f))));
  FailureOr<Value> result = f.apply<MulOp>(f.apply<DivOp>(input, rms), scale);
  if (succeeded(result) && result->getType() != type)
    return node.emitError() << "scale must broadcast to the input";
  return f.result(result);
}

namespace {

/// `input` [N, C, spatial...] normalized over each of `groups` groups of
/// channels (with their spatial dims), then scaled and shifted per channel
/// by `scale` and `bias` [C].
FailureOr<Value> createGroupNorm(NodeImporter &node, Value input, Value scale,
                                 Value bias, int64_t groups, float epsilon) {
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 3 || !type.hasStaticShape())
    return node.emitError() << "the input must be statically shaped [N, C, "
                               "spatial...]; it is "
                            << type;
  int64_t channels = type.getDimSize(1);
  if (groups <= 0 || channels % groups != 0)
    return node.emitError()
           << channels << " channels do not split into " << groups << " groups";
  for (Value affine : {scale, bias}) {
    auto affineType = cast<RankedTensorType>(affine.getType());
    if (affineType.getRank() != 1 || affineType.getDimSize(0) != channels)
      return node.emitError() << "scale and bias must be [" << channels
                              << "]; one is " << affineType;
  }
  return GroupNormOp::create(node.b, node.loc, type, input, scale, bias,
                             node.b.getI64IntegerAttr(groups),
                             node.b.getF32FloatAttr(epsilon))
      .getResult();
}

/// Whether the node has its input (float), scale and bias.
LogicalResult checkNormalizationOperands(NodeImporter &node) {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(node.getOperand(i)))
      return failure();
  return requireFloat(node, node.operands[0]);
}

/// Per-group scale or bias [G] (GroupNormalization before opset 21) as the
/// per-channel one [C] it stands for.
Value expandPerGroup(NodeImporter &node, Value perGroup, int64_t channels) {
  auto type = cast<RankedTensorType>(perGroup.getType());
  int64_t groups = type.getDimSize(0);
  if (type.getRank() != 1 || groups == channels || groups <= 0 ||
      channels % groups != 0)
    return perGroup;
  Value column = createReshape(node, perGroup, {groups, 1});
  Value repeated = BroadcastOp::create(
      node.b, node.loc,
      RankedTensorType::get({groups, channels / groups}, type.getElementType()),
      column);
  return createReshape(node, repeated, {channels});
}

} // namespace

/// InstanceNormalization: each channel of each item normalized over its
/// spatial dims (a group norm with one channel per group).
LogicalResult kiln::importInstanceNormalization(NodeImporter &node) {
  if (failed(checkNormalizationOperands(node)))
    return failure();
  auto [input, scale, bias] = std::make_tuple(
      node.operands[0], node.operands[1], node.operands[2]);
  RankedTensorType type = node.getOperandType(0);
  FailureOr<Value> result =
      createGroupNorm(node, input, scale, bias,
                      type.getRank() > 1 ? type.getDimSize(1) : 0,
                      node.getFloatAttr("epsilon", 1e-5f));
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// GroupNormalization (opset 18: scale and bias per group; opset 21: per
/// channel).
LogicalResult kiln::importGroupNormalization(NodeImporter &node) {
  if (failed(checkNormalizationOperands(node)))
    return failure();
  auto [input, scale, bias] = std::make_tuple(
      node.operands[0], node.operands[1], node.operands[2]);
  const onnx::AttributeProto *groups = node.getAttr("num_groups");
  if (!groups)
    return node.emitError() << "GroupNormalization needs num_groups";
  RankedTensorType type = node.getOperandType(0);
  int64_t channels = type.getRank() > 1 ? type.getDimSize(1) : 0;
  Value perChannelScale = scale, perChannelBias = bias;
  if (node.getOpset() < 21) {
    perChannelScale = expandPerGroup(node, scale, channels);
    perChannelBias = expandPerGroup(node, bias, channels);
  }
  FailureOr<Value> result =
      createGroupNorm(node, input, perChannelScale, perChannelBias,
                      groups->i(), node.getFloatAttr("epsilon", 1e-5f));
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// MeanVarianceNormalization as ONNX's function defines it:
/// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), the means over `axes`.
LogicalResult kiln::importMeanVarianceNormalization(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireReal(node, *x)))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  SmallVector<int64_t> axes =
      node.getIntsAttr("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();
  llvm::sort(*normalized);
  ReduceMeanOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(*normalized);
  props.keep_dims = node.b.getUnitAttr();
  auto mean = [&](FailureOr<Value> value) -> FailureOr<Value> {
    if (failed(value))
      return failure();
    return createInferred<ReduceMeanOp>(node, *value, props);
  };
  Formula f(node, *x);
  FailureOr<Value> average = mean(*x);
  FailureOr<Value> variance = f.apply<SubOp>(mean(f.apply<MulOp>(*x, *x)),
                                             f.apply<MulOp>(average, average));
  return f.result(f.apply<DivOp>(
      f.apply<SubOp>(*x, average),
      f.apply<AddOp>(f.apply<SqrtOp>(variance), f.constant(1e-9))));
}

/// LpNormalization: x divided by its L1 or L2 norm along `axis`.
LogicalResult kiln::importLpNormalization(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireReal(node, *x)))
    return failure();
  int64_t p = node.getIntAttr("p", 2);
  if (p != 1 && p != 2)
    return node.emitError() << "p must be 1 or 2, not " << p;
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", -1), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  Formula f(node, *x);
  FailureOr<Value> terms = p == 1 ? f.apply<AbsOp>(*x) : f.apply<MulOp>(*x, *x);
  if (failed(terms))
    return failure();
  ReduceSumOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr({*axis});
  props.keep_dims = node.b.getUnitAttr();
  FailureOr<Value> sum = createInferred<ReduceSumOp>(node, *terms, props);
  FailureOr<Value> norm = p == 1 ? sum : f.apply<SqrtOp>(sum);
  return f.result(f.apply<DivOp>(*x, norm));
}
