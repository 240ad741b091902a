//===- OnnxGridSample.cpp - importer of ONNX GridSample -------------------===//
//
// GridSample reads its input at coordinates given at run time, so unlike
// Resize its taps are computed in the graph. Per spatial axis, the grid's
// normalized coordinate is unnormalized and padded, and each tap's index
// and weight are elementwise formulas; the input, flattened to [N, C, S],
// is read with one kiln.gather_elements per combination of taps (1, 2^r
// or 4^r of them), weighted and summed. The arithmetic follows ONNX's
// reference implementation step by step (which follows PyTorch's
// grid_sampler), including where padding applies to the coordinate and
// where to each tap.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

namespace {

enum class Interpolation { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

/// One tap along one axis: the (integral, float) index it reads before
/// padding, and its weight (null for nearest sampling).
struct Tap {
  Value index;
  Value weight;
};

/// Builds the elementwise formulas of one GridSample node.
class GridSampler {
public:
  GridSampler(NodeImporter &node, Interpolation mode, Padding padding,
              bool alignCorners, Type elementType)
      : node(node), mode(mode), padding(padding), alignCorners(alignCorners),
        elementType(elementType) {}

  Value constant(double value) {
    return createScalar(node, elementType, value);
  }

  template <typename OpTy> Value apply(Value lhs, Value rhs) {
    return createMatching<OpTy>(node, {lhs, rhs});
  }
  template <typename OpTy> Value apply(Value input) {
    return OpTy::create(node.b, node.loc, input).getResult();
  }
  Value select(Value condition, Value yes, Value no) {
    return createMatching<SelectOp>(node, {condition, yes, no});
  }
  Value clamp(Value x, double low, double high) {
    return apply<MaxOp>(apply<MinOp>(x, constant(high)), constant(low));
  }

  /// The smallest and largest coordinate that lies inside an axis of
  /// `size` elements.
  std::pair<double, double> getBorders(int64_t size) const {
    if (alignCorners)
      return {0.0, static_cast<double>(size - 1)};
    return {-0.5, static_cast<double>(size) - 0.5};
  }

  /// `x` reflected off the nearer border, repeatedly, until it lies in
  /// [low, high].
  Value reflect(Value x, double low, double high) {
    double range = high - low;
    if (range <= 0)
      return apply<AddOp>(apply<MulOp>(x, constant(0)), constant(low));
    Value below = apply<LessOp>(x, constant(low));
    Value above = apply<LessOp>(constant(high), x);
    Value distance = select(below, apply<SubOp>(constant(low), x),
                            apply<SubOp>(x, constant(high)));
    Value folds = apply<FloorOp>(apply<DivOp>(distance, constant(range)));
    Value rest = apply<SubOp>(distance, apply<MulOp>(folds, constant(range)));
    Value halfFolds = apply<FloorOp>(apply<MulOp>(folds, constant(0.5)));
    Value even = apply<EqualOp>(apply<MulOp>(halfFolds, constant(2)), folds);
    Value fromLow = apply<AddOp>(constant(low), rest);
    Value fromHigh = apply<SubOp>(constant(high), rest);
    return select(below, select(even, fromLow, fromHigh),
                  select(above, select(even, fromHigh, fromLow), x));
  }

  /// The coordinate along an axis of `size` elements that the normalized
  /// grid value `g` names, rounded for nearest sampling, then padded if
  /// it lies outside the axis.
  Value getCoordinate(Value g, int64_t size) {
    double length = static_cast<double>(size);
    Value x = alignCorners
                  ? apply<MulOp>(apply<AddOp>(g, constant(1)),
                                 constant((length - 1) / 2))
                  : apply<MulOp>(
                        apply<SubOp>(apply<MulOp>(apply<AddOp>(g, constant(1)),
                                                  constant(length)),
                                     constant(1)),
                        constant(0.5));
    if (mode == Interpolation::Nearest)
      x = apply<RoundOp>(x);
    auto [low, high] = getBorders(size);
    if (padding == Padding::Reflection)
      return reflect(x, low, high);
    if (padding == Padding::Border) {
      Value outside = apply<OrOp>(apply<LessOp>(x, constant(low)),
                                  apply<LessOp>(constant(high), x));
      return select(outside, clamp(x, 0, length - 1), x);
    }
    return x;
  }

  /// The taps of coordinate `x`: the nearest element, two linear
  /// neighbours, or four cubic ones (Keys' kernel, a = -0.75).
  SmallVector<Tap, 4> getTaps(Value x) {
    if (mode == Interpolation::Nearest)
      return {{x, Value()}};
    Value first = apply<FloorOp>(x);
    Value t = apply<SubOp>(x, first);
    auto offset = [&](double k) { return apply<AddOp>(first, constant(k)); };
    if (mode == Interpolation::Linear)
      return {{first, apply<SubOp>(constant(1), t)}, {offset(1), t}};
    const double a = -0.75;
    // far(d) for distances 1..2, near(d) for distances 0..1.
    auto far = [&](Value d) {
      Value v = apply<SubOp>(apply<MulOp>(d, constant(a)), constant(5 * a));
      v = apply<AddOp>(apply<MulOp>(v, d), constant(8 * a));
      return apply<SubOp>(apply<MulOp>(v, d), constant(4 * a));
    };
    auto near = [&](Value d) {
      Value v = apply<SubOp>(apply<MulOp>(d, constant(a + 2)), constant(a + 3));
      return apply<AddOp>(apply<MulOp>(apply<MulOp>(v, d), d), constant(1));
    };
    Value oneMinusT = apply<SubOp>(constant(1), t);
    return {{offset(-1), far(apply<AddOp>(t, constant(1)))},
            {first, near(t)},
            {offset(1), near(oneMinusT)},
            {offset(2), far(apply<AddOp>(oneMinusT, constant(1)))}};
  }

  /// The element index a tap at (float, integral) `index` reads along an
  /// axis of `size` elements, as int64, and for zero padding whether it
  /// lies inside the axis (else null).
  std::pair<Value, Value> padTap(Value index, int64_t size) {
    double last = static_cast<double>(size - 1);
    Value inside;
    if (padding == Padding::Zeros)
      inside = apply<AndOp>(apply<LessEqualOp>(constant(0), index),
                            apply<LessEqualOp>(index, constant(last)));
    if (padding == Padding::Reflection) {
      auto [low, high] = getBorders(size);
      index = reflect(index, low, high);
    } else {
      index = clamp(index, 0, last);
    }
    auto type = cast<RankedTensorType>(index.getType());
    Value integral = CastOp::create(node.b, node.loc,
                                    type.clone(node.b.getI64Type()), index);
    return {integral, inside};
  }

private:
  NodeImporter &node;
  Interpolation mode;
  Padding padding;
  bool alignCorners;
  Type elementType;
};

FailureOr<Interpolation> getInterpolation(NodeImporter &node) {
  std::string name = node.getStringAttr("mode", "bilinear");
  // Opset 20 renamed bilinear and bicubic to linear and cubic.
  if (name == "nearest")
    return Interpolation::Nearest;
  if (name == "bilinear" || name == "linear")
    return Interpolation::Linear;
  if (name == "bicubic" || name == "cubic")
    return Interpolation::Cubic;
  return node.emitError() << "unknown mode '" << name << "'";
}

FailureOr<Padding> getPadding(NodeImporter &node) {
  std::string name = node.getStringAttr("padding_mode", "zeros");
  if (name == "zeros")
    return Padding::Zeros;
  if (name == "border")
    return Padding::Border;
  if (name == "reflection")
    return Padding::Reflection;
  return node.emitError() << "unknown padding_mode '" << name << "'";
}

} // namespace

LogicalResult kiln::importGridSample(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), grid = node.getOperand(1);
  FailureOr<Interpolation> mode = getInterpolation(node);
  FailureOr<Padding> padding = getPadding(node);
  if (failed(input) || failed(grid) || failed(mode) || failed(padding) ||
      failed(requireReal(node, *input)) || failed(requireReal(node, *grid)))
    return failure();
  auto inputType = cast<RankedTensorType>(input->getType());
  auto gridType = cast<RankedTensorType>(grid->getType());
  if (!inputType.hasStaticShape() || !gridType.hasStaticShape())
    return node.emitError() << "the input and grid must be statically "
                               "shaped; they are "
                            << inputType << " and " << gridType;
  int64_t rank = inputType.getRank() - 2;
  if (rank < 1 || gridType.getRank() != rank + 2 ||
      gridType.getDimSize(0) != inputType.getDimSize(0) ||
      gridType.getDimSize(rank + 1) != rank)
    return node.emitError()
           << "the grid must have shape [N, D1_out, ..., Dr_out, r] for an "
              "input [N, C, D1, ..., Dr]; they are "
           << gridType << " and " << inputType;
  if (*mode == Interpolation::Cubic && rank != 2)
    return node.emitError() << "cubic sampling needs a 4-D input; it has rank "
                            << inputType.getRank();
  Type elementType = inputType.getElementType();
  Value coordinates = *grid;
  if (gridType.getElementType() != elementType)
    coordinates = CastOp::create(node.b, node.loc, gridType.clone(elementType),
                                 coordinates);

  int64_t batch = inputType.getDimSize(0), channels = inputType.getDimSize(1);
  ArrayRef<int64_t> sizes = inputType.getShape().drop_front(2);
  ArrayRef<int64_t> outSizes = gridType.getShape().drop_front().drop_back();
  int64_t points = 1, elements = 1;
  for (int64_t size : outSizes)
    points *= size;
  for (int64_t size : sizes)
    elements *= size;
  if (points == 0 || elements == 0 || batch == 0 || channels == 0)
    return node.emitError() << "empty inputs are not supported";

  GridSampler sampler(node, *mode, *padding,
                      node.getIntAttr("align_corners", 0) != 0, elementType);
  // Per axis, the taps over [N, 1, P]; the grid's last dimension lists the
  // coordinates innermost axis first.
  SmallVector<SmallVector<Tap, 4>> axisTaps;
  for (int64_t axis = 0; axis < rank; ++axis) {
    Value g = createAxisSlice(node, coordinates, rank + 1, rank - 1 - axis,
                              rank - axis);
    g = createReshape(node, g, ArrayRef<int64_t>{batch, 1, points});
    Value x = sampler.getCoordinate(g, sizes[axis]);
    axisTaps.push_back(sampler.getTaps(x));
  }

  Value table =
      createReshape(node, *input, ArrayRef<int64_t>{batch, channels, elements});
  MLIRContext *context = node.b.getContext();
  SymbolicInts gatheredShape = {getAffineConstantExpr(batch, context),
                                getAffineConstantExpr(channels, context),
                                getAffineConstantExpr(points, context)};
  int64_t combinations = 1;
  for (auto &taps : axisTaps)
    combinations *= static_cast<int64_t>(taps.size());
  Value sum;
  for (int64_t combination = 0; combination < combinations; ++combination) {
    Value flat, weight, inside;
    int64_t rest = combination, stride = elements;
    for (int64_t axis = 0; axis < rank; ++axis) {
      auto &taps = axisTaps[axis];
      const Tap &tap = taps[rest % taps.size()];
      rest /= static_cast<int64_t>(taps.size());
      stride /= sizes[axis];
      auto [index, valid] = sampler.padTap(tap.index, sizes[axis]);
      Value scaled = sampler.apply<MulOp>(
          index, createScalar(node, node.b.getI64Type(), stride));
      flat = flat ? sampler.apply<AddOp>(flat, scaled) : scaled;
      if (tap.weight)
        weight = weight ? sampler.apply<MulOp>(weight, tap.weight) : tap.weight;
      if (valid)
        inside = inside ? sampler.apply<AndOp>(inside, valid) : valid;
    }
    FailureOr<Value> indices = createBroadcast(node, flat, gatheredShape);
    if (failed(indices))
      return failure();
    GatherElementsOp::Properties props;
    props.axis = node.b.getI64IntegerAttr(2);
    FailureOr<Value> gathered =
        createInferred<GatherElementsOp>(node, {table, *indices}, props);
    if (failed(gathered))
      return failure();
    Value term = *gathered;
    if (weight)
      term = sampler.apply<MulOp>(term, weight);
    if (inside)
      term = sampler.select(inside, term, sampler.constant(0));
    sum = sum ? sampler.apply<AddOp>(sum, term) : term;
  }
  SmallVector<int64_t> outShape = {batch, channels};
  outShape.append(outSizes.begin(), outSizes.end());
  node.results.push_back(createReshape(node, sum, outShape));
  return success();
}

/// AffineGrid: the normalized coordinates (x, y[, z], 1) of every output
/// position, a constant [P, r + 1] matrix, times each batch's transposed
/// theta [r + 1, r], giving the [N, D1..Dr, r] grid GridSample reads.
LogicalResult kiln::importAffineGrid(NodeImporter &node) {
  FailureOr<Value> theta = node.getOperand(0);
  if (failed(theta) || failed(requireReal(node, *theta)))
    return failure();
  auto thetaType = cast<RankedTensorType>(theta->getType());
  std::optional<SmallVector<int64_t>> size =
      node.node.input_size() > 1
          ? node.graph.getConstantInts(node.node.input(1))
          : std::nullopt;
  if (!size || (size->size() != 4 && size->size() != 5))
    return node.emitError() << "size must be a compile-time constant "
                               "[N, C, H, W] or [N, C, D, H, W]";
  int64_t rank = static_cast<int64_t>(size->size()) - 2;
  if (!thetaType.hasStaticShape() || thetaType.getRank() != 3 ||
      thetaType.getDimSize(0) != (*size)[0] ||
      thetaType.getDimSize(1) != rank || thetaType.getDimSize(2) != rank + 1)
    return node.emitError() << "theta must be [N, " << rank << ", " << rank + 1
                            << "]; it is " << thetaType;
  ArrayRef<int64_t> sizes = ArrayRef<int64_t>(*size).drop_front(2);
  if (llvm::any_of(sizes, [](int64_t s) { return s < 1; }))
    return node.emitError() << "the spatial sizes must be positive";
  bool alignCorners = node.getIntAttr("align_corners", 0) != 0;
  auto coordinate = [&](int64_t i, int64_t length) {
    if (alignCorners)
      return length == 1 ? -1.0 : -1.0 + 2.0 * i / (length - 1);
    return -1.0 + (2.0 * i + 1.0) / length;
  };
  int64_t points = 1;
  for (int64_t s : sizes)
    points *= s;
  SmallVector<double> base;
  for (int64_t p = 0; p < points; ++p) {
    SmallVector<int64_t> position(rank);
    for (int64_t d = rank - 1, rest = p; d >= 0; --d) {
      position[d] = rest % sizes[d];
      rest /= sizes[d];
    }
    // Innermost axis first: x, y, z.
    for (int64_t d = rank - 1; d >= 0; --d)
      base.push_back(coordinate(position[d], sizes[d]));
    base.push_back(1.0);
  }
  Type elementType = thetaType.getElementType();
  auto baseType = RankedTensorType::get({points, rank + 1}, elementType);
  DenseElementsAttr attr;
  if (elementType.isF64()) {
    attr = DenseElementsAttr::get(baseType, ArrayRef<double>(base));
  } else {
    SmallVector<float> narrow(base.begin(), base.end());
    attr = DenseElementsAttr::get(baseType, ArrayRef<float>(narrow));
  }
  Value transposed = createTranspose(node, *theta, {0, 2, 1});
  FailureOr<Value> grid = createInferred<MatMulOp>(
      node, {ConstantOp::create(node.b, node.loc, attr), transposed});
  if (failed(grid))
    return failure();
  SmallVector<int64_t> shape = {(*size)[0]};
  shape.append(sizes.begin(), sizes.end());
  shape.push_back(rank);
  node.results.push_back(createReshape(node, *grid, shape));
  return success();
}
