//===- OnnxResize.cpp - importers of ONNX Resize and Upsample -------------===//
//
// Nearest, linear and cubic resizing are separable: each resized axis
// reads, for every output index, one source index (nearest), two (linear)
// or four (cubic) with weights, all known at compile time from the static
// sizes. So each axis becomes kiln.gather ops with constant indices and a
// weighted sum; no run-time coordinate arithmetic is left.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

struct ResizeAttrs {
  std::string mode = "nearest";
  std::string transform = "half_pixel";
  std::string rounding = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
};

/// The source coordinate of output index `out` along an axis of `in`
/// elements resized to `resizedLength` (in * scale, not rounded) at `scale`,
/// or nullopt for a transform Kiln does not support.
std::optional<double> sourceCoordinate(StringRef transform, int64_t out,
                                       int64_t in, double resizedLength,
                                       double scale) {
  double x = static_cast<double>(out);
  if (transform == "half_pixel")
    return (x + 0.5) / scale - 0.5;
  if (transform == "pytorch_half_pixel")
    return resizedLength > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (transform == "align_corners")
    return resizedLength > 1
               ? x * static_cast<double>(in - 1) / (resizedLength - 1)
               : 0.0;
  if (transform == "asymmetric")
    return x / scale;
  // The second name is the mode's spelling before opset 13.
  if (transform == "tf_half_pixel_for_nearest" ||
      transform == "tf_half_pixel_for_nn")
    return (x + 0.5) / scale;
  return std::nullopt;
}

/// ONNX's nearest_mode rounding of a source coordinate, or nullopt for an
/// unknown mode.
std::optional<int64_t> roundNearest(StringRef rounding, double x) {
  double below = std::floor(x);
  bool half = x - below == 0.5;
  if (rounding == "round_prefer_floor")
    return static_cast<int64_t>(half ? below : std::round(x));
  if (rounding == "round_prefer_ceil")
    return static_cast<int64_t>(half ? below + 1 : std::round(x));
  if (rounding == "floor")
    return static_cast<int64_t>(below);
  if (rounding == "ceil")
    return static_cast<int64_t>(std::ceil(x));
  return std::nullopt;
}

/// The source indices and weights one output element reads.
using Taps = SmallVector<std::pair<int64_t, double>, 4>;

/// The taps of source coordinate `x` on an axis of `in` elements: the
/// nearest element, two linear neighbours, or four cubic ones (Keys'
/// kernel with a = cubicA). Indices outside the axis read its edge, as
/// ONNX pads; with exclude_outside they are dropped and the weights
/// renormalized.
FailureOr<Taps> getTaps(NodeImporter &node, const ResizeAttrs &attrs,
                        double x, int64_t in) {
  Taps taps;
  if (attrs.mode == "nearest") {
    std::optional<int64_t> index = roundNearest(attrs.rounding, x);
    if (!index)
      return node.emitError()
             << "unknown nearest_mode '" << attrs.rounding << "'";
    taps.push_back({*index, 1.0});
  } else if (attrs.mode == "linear") {
    double below = std::floor(x), s = x - below;
    taps.push_back({static_cast<int64_t>(below), 1 - s});
    taps.push_back({static_cast<int64_t>(below) + 1, s});
  } else {
    double below = std::floor(x), s = x - below, a = attrs.cubicA;
    auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
    auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
    int64_t first = static_cast<int64_t>(below) - 1;
    double weights[] = {far(s + 1), near(s), near(1 - s), far(2 - s)};
    for (int k = 0; k < 4; ++k)
      taps.push_back({first + k, weights[k]});
  }
  if (attrs.excludeOutside && attrs.mode == "cubic") {
    double total = 0;
    for (auto &[index, weight] : taps) {
      if (index < 0 || index >= in)
        weight = 0;
      total += weight;
    }
    for (auto &tap : taps)
      tap.second /= total;
  }
  for (auto &tap : taps)
    tap.first = std::clamp<int64_t>(tap.first, 0, in - 1);
  return taps;
}

Value createIndices(NodeImporter &node, ArrayRef<int64_t> indices) {
  auto type = RankedTensorType::get({static_cast<int64_t>(indices.size())},
                                    node.b.getI64Type());
  return ConstantOp::create(node.b, node.loc,
                            DenseElementsAttr::get(type, indices));
}

/// `input` resized along `axis` from `in` to `outSize` elements: for each
/// tap k, the elements gathered at the k-th tap's indices, weighted by a
/// constant broadcast from [outSize, 1, ...], summed over the taps.
FailureOr<Value> resizeAxis(NodeImporter &node, const ResizeAttrs &attrs,
                            Value input, int64_t axis, int64_t in,
                            int64_t outSize, double scale) {
  SmallVector<Taps> outputs;
  for (int64_t out = 0; out < outSize; ++out) {
    std::optional<double> x =
        sourceCoordinate(attrs.transform, out, in, in * scale, scale);
    if (!x)
      return node.emitError() << "coordinate_transformation_mode '"
                              << attrs.transform << "' is not supported";
    FailureOr<Taps> taps = getTaps(node, attrs, *x, in);
    if (failed(taps))
      return failure();
    outputs.push_back(*taps);
  }
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> weightShape(inputType.getRank() - axis, 1);
  weightShape[0] = outSize;
  auto weightType =
      RankedTensorType::get(weightShape, inputType.getElementType());
  Value sum;
  for (size_t k = 0; k < outputs.front().size(); ++k) {
    SmallVector<int64_t> indices;
    SmallVector<float> weights;
    for (const Taps &taps : outputs) {
      indices.push_back(taps[k].first);
      weights.push_back(static_cast<float>(taps[k].second));
    }
    GatherOp::Properties props;
    props.axis = node.b.getI64IntegerAttr(axis);
    FailureOr<Value> gathered = createInferred<GatherOp>(
        node, {input, createIndices(node, indices)}, props);
    if (failed(gathered))
      return failure();
    Value term = *gathered;
    if (attrs.mode != "nearest") {
      Value weight = ConstantOp::create(
          node.b, node.loc,
          DenseElementsAttr::get(weightType, ArrayRef<float>(weights)));
      FailureOr<Value> weighted = createInferred<MulOp>(node, {term, weight});
      if (failed(weighted))
        return failure();
      term = *weighted;
    }
    if (sum) {
      FailureOr<Value> added = createInferred<AddOp>(node, {sum, term});
      if (failed(added))
        return failure();
      term = *added;
    }
    sum = term;
  }
  return sum;
}

/// Floats of the compile-time constant `value`, or nullopt.
std::optional<SmallVector<double>> getConstantFloats(Value value) {
  DenseFPElementsAttr dense;
  if (!value || !matchPattern(value, m_Constant(&dense)))
    return std::nullopt;
  SmallVector<double> result;
  for (const APFloat &element : dense.getValues<APFloat>())
    result.push_back(element.convertToDouble());
  return result;
}

/// Resizes `input` to `sizes` (one per dimension) with `scales` for the
/// coordinate transform.
LogicalResult resize(NodeImporter &node, const ResizeAttrs &attrs, Value input,
                     ArrayRef<int64_t> sizes, ArrayRef<double> scales) {
  if (attrs.mode != "nearest" && attrs.mode != "linear" &&
      attrs.mode != "cubic")
    return node.emitError() << "unknown mode '" << attrs.mode << "'";
  if (failed(requireFloat(node, input)))
    return failure();
  auto type = cast<RankedTensorType>(input.getType());
  Value result = input;
  for (int64_t axis = 0; axis < type.getRank(); ++axis) {
    int64_t in = type.getDimSize(axis);
    if (sizes[axis] == in && scales[axis] == 1.0)
      continue;
    if (sizes[axis] <= 0)
      return node.emitError() << "axis " << axis << " would resize to "
                              << sizes[axis] << " elements";
    FailureOr<Value> resized =
        resizeAxis(node, attrs, result, axis, in, sizes[axis], scales[axis]);
    if (failed(resized))
      return failure();
    result = *resized;
  }
  node.results.push_back(result);
  return success();
}

/// The input's static shape, or an error.
FailureOr<RankedTensorType> getStaticInput(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  if (!type.hasStaticShape())
    return node.emitError() << "the input must be statically shaped; it is "
                            << type;
  return type;
}

/// Output sizes floor(in * scale).
SmallVector<int64_t> scaledSizes(RankedTensorType type,
                                 ArrayRef<double> scales) {
  SmallVector<int64_t> sizes;
  for (auto [in, scale] : llvm::zip(type.getShape(), scales))
    sizes.push_back(static_cast<int64_t>(std::floor(in * scale)));
  return sizes;
}

} // namespace

/// Upsample (opsets 7-9) and Resize before opset 11: scales only, the
/// asymmetric transform, nearest rounding down.
LogicalResult kiln::importUpsample(NodeImporter &node) {
  FailureOr<RankedTensorType> type = getStaticInput(node);
  if (failed(type))
    return failure();
  ResizeAttrs attrs;
  attrs.mode = node.getStringAttr("mode", "nearest");
  attrs.transform = "asymmetric";
  attrs.rounding = "floor";
  std::optional<SmallVector<double>> scales;
  if (const onnx::AttributeProto *attr = node.getAttr("scales"))
    scales = SmallVector<double>(attr->floats().begin(), attr->floats().end());
  else if (node.operands.size() > 1)
    scales = getConstantFloats(node.operands[1]);
  if (!scales || static_cast<int64_t>(scales->size()) != type->getRank())
    return node.emitError() << "scales must be constant, one per dimension";
  return resize(node, attrs, node.operands[0], scaledSizes(*type, *scales),
                *scales);
}

/// Resize from opset 11 on: roi (unused but by tf_crop_and_resize, which is
/// not supported), scales or sizes, optionally for some axes only.
LogicalResult kiln::importResize(NodeImporter &node) {
  if (node.getOpset() < 11)
    return importUpsample(node);
  FailureOr<RankedTensorType> type = getStaticInput(node);
  if (failed(type))
    return failure();
  ResizeAttrs attrs;
  if (const onnx::AttributeProto *attr = node.getAttr("mode"))
    attrs.mode = attr->s();
  if (const onnx::AttributeProto *attr =
          node.getAttr("coordinate_transformation_mode"))
    attrs.transform = attr->s();
  if (const onnx::AttributeProto *attr = node.getAttr("nearest_mode"))
    attrs.rounding = attr->s();
  attrs.cubicA = node.getFloatAttr("cubic_coeff_a", -0.75f);
  attrs.excludeOutside = node.getIntAttr("exclude_outside", 0) != 0;
  if (node.getIntAttr("antialias", 0) != 0 && attrs.mode != "nearest")
    return node.emitError() << "antialias is not supported";
  if (const onnx::AttributeProto *attr =
          node.getAttr("keep_aspect_ratio_policy");
      attr && attr->s() != "stretch")
    return node.emitError() << "keep_aspect_ratio_policy '" << attr->s()
                            << "' is not supported";
  int64_t rank = type->getRank();
  SmallVector<int64_t> axes;
  for (int64_t axis : node.getIntsAttr("axes").value_or(
           llvm::to_vector(llvm::seq<int64_t>(0, rank)))) {
    FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    axes.push_back(*normalized);
  }
  auto operand = [&](unsigned i) {
    return node.operands.size() > i ? node.operands[i] : Value();
  };
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> sizes(type->getShape());
  std::optional<SmallVector<int64_t>> givenSizes;
  if (operand(3) && node.node.input_size() > 3)
    givenSizes = node.graph.getConstantInts(node.node.input(3));
  std::optional<SmallVector<double>> givenScales =
      getConstantFloats(operand(2));
  if (givenSizes && !givenSizes->empty()) {
    if (givenSizes->size() != axes.size())
      return node.emitError() << "sizes must give one size per resized axis";
    for (auto [axis, size] : llvm::zip(axes, *givenSizes)) {
      sizes[axis] = size;
      scales[axis] = static_cast<double>(size) / type->getDimSize(axis);
    }
  } else if (givenScales && !givenScales->empty()) {
    if (givenScales->size() != axes.size())
      return node.emitError() << "scales must give one scale per resized axis";
    for (auto [axis, scale] : llvm::zip(axes, *givenScales))
      scales[axis] = scale;
    sizes = scaledSizes(*type, scales);
  } else {
    return node.emitError() << "needs constant scales or sizes";
  }
  return resize(node, attrs, node.operands[0], sizes, scales);
}
