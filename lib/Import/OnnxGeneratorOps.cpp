//===- OnnxGeneratorOps.cpp - tensors made from a few scalars ------------===//
//
// Range, the window functions (HannWindow, HammingWindow,
// BlackmanWindow) and MelWeightMatrix. Their output shapes depend on input
// values: constants (or values computed from the inputs' shapes, for Range) at
// compile time.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

/// Range of three constants, of any numeric type and either sign of delta:
/// nullopt unless all three are constants.
std::optional<LogicalResult>
importConstantRange(NodeImporter &node, Value start, Value limit, Value delta) {
  DenseElementsAttr first, last, step;
  if (!matchPattern(start, m_Constant(&first)) ||
      !matchPattern(limit, m_Constant(&last)) ||
      !matchPattern(delta, m_Constant(&step)))
    return std::nullopt;
  Type elementType = first.getElementType();
  bool isFloat = isa<FloatType>(elementType);
  // ONNX: max(ceil((limit - start) / delta), 0) elements.
  double count;
  if (isFloat) {
    double from = first.getSplatValue<APFloat>().convertToDouble();
    double to = last.getSplatValue<APFloat>().convertToDouble();
    double by = step.getSplatValue<APFloat>().convertToDouble();
    if (by == 0)
      return node.emitError() << "delta must not be 0";
    count = std::max(std::ceil((to - from) / by), 0.0);
  } else {
    int64_t from = first.getSplatValue<APInt>().getSExtValue();
    int64_t to = last.getSplatValue<APInt>().getSExtValue();
    int64_t by = step.getSplatValue<APInt>().getSExtValue();
    int64_t span;
    if (by == 0)
      return node.emitError() << "delta must not be 0";
    if (llvm::SubOverflow(to, from, span))
      return node.emitError() << "limit - start overflows int64";
    count = std::max<double>(llvm::divideCeilSigned(span, by), 0);
  }
  // A constant this large would not belong in a compiled model.
  if (!(count <= double(1 << 24)))
    return node.emitError() << "Range would have " << count
                            << " elements; Kiln folds at most 2^24";
  auto type = RankedTensorType::get({static_cast<int64_t>(count)}, elementType);
  if (!isFloat) {
    SmallVector<APInt> values;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      values.push_back(first.getSplatValue<APInt>() +
                       step.getSplatValue<APInt>() *
                           APInt(elementType.getIntOrFloatBitWidth(), i));
    node.results.push_back(ConstantOp::create(
        node.b, node.loc, DenseElementsAttr::get(type, values)));
    return success();
  }
  // start + i * delta, rounded in the element type as the reference
  // computes it.
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    APFloat value = first.getSplatValue<APFloat>();
    APFloat increment = step.getSplatValue<APFloat>();
    APFloat index(static_cast<double>(i));
    bool lost;
    index.convert(value.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
    increment.multiply(index, APFloat::rmNearestTiesToEven);
    value.add(increment, APFloat::rmNearestTiesToEven);
    values.push_back(value);
  }
  node.results.push_back(ConstantOp::create(
      node.b, node.loc, DenseElementsAttr::get(type, values)));
  return success();
}

/// `start, start + delta, ...` up to `limit`: a constant when all three
/// are, otherwise a kiln.range whose length may depend on named dimensions
/// (torch's `arange(seq)` for position ids).
LogicalResult importRange(NodeImporter &node) {
  FailureOr<Value> start = node.getOperand(0), limit = node.getOperand(1),
                   delta = node.getOperand(2);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  // Exporters (ONNX's own AffineGrid function among them) pass [1]-shaped
  // tensors, which other runtimes take as the scalars they hold.
  for (FailureOr<Value> *operand : {&start, &limit, &delta}) {
    auto type = cast<RankedTensorType>((*operand)->getType());
    if (type.getRank() == 1 && type.getDimSize(0) == 1)
      *operand = createReshape(node, **operand, ArrayRef<int64_t>{});
    else if (type.getRank() != 0)
      return node.emitError() << "start, limit and delta must be scalars";
  }
  if (failed(requireSameElementType(node, *start, *limit)) ||
      failed(requireSameElementType(node, *start, *delta)))
    return failure();
  if (std::optional<LogicalResult> constant =
          importConstantRange(node, *start, *limit, *delta))
    return *constant;
  std::optional<SymbolicInts> first = node.graph.getContents(*start),
                              last = node.graph.getContents(*limit),
                              step = node.graph.getContents(*delta);
  auto constantStep =
      step ? dyn_cast<AffineConstantExpr>((*step)[0]) : AffineConstantExpr();
  if (!first || !last || !constantStep || constantStep.getValue() <= 0)
    return node.emitError() << "Kiln needs start and limit computed from "
                               "constants and the inputs' shapes, and a "
                               "positive constant delta";
  // The length ceil((limit - start) / delta); a named dimension is never
  // below its lower bound, which the model's own shapes make >= start.
  AffineExpr length =
      simplify(((*last)[0] - (*first)[0]).ceilDiv(constantStep.getValue()));
  if (auto constant = dyn_cast<AffineConstantExpr>(length);
      constant && constant.getValue() < 0)
    length = getAffineConstantExpr(0, node.b.getContext());
  Type elementType = node.getOperandType(0).getElementType();
  if (!elementType.isInteger(64))
    return node.emitError() << "Kiln computes Range in int64 only";
  auto type = RankedTensorType::get(getStaticSizes({length}), elementType);
  Value size;
  if (!type.hasStaticShape()) {
    FailureOr<Value> materialized = node.graph.materialize(length, node.loc);
    if (failed(materialized))
      return failure();
    size = *materialized;
  }
  Value result = RangeOp::create(node.b, node.loc, type, *start, *delta, size);
  if (!type.hasStaticShape())
    node.graph.setShape(result, {length});
  node.results.push_back(result);
  return success();
}

/// The window function `formula(n, N)` of the constant `size` input, in
/// `output_datatype`; N is size when periodic, size - 1 when symmetric.
template <typename Formula>
LogicalResult importWindow(NodeImporter &node, Formula formula) {
  FailureOr<Value> size = node.getOperand(0);
  if (failed(size))
    return failure();
  DenseElementsAttr sizeAttr;
  if (!matchPattern(*size, m_Constant(&sizeAttr)) ||
      !isa<IntegerType>(sizeAttr.getElementType()) ||
      sizeAttr.getNumElements() != 1)
    return node.emitError()
           << "size must be a constant integer scalar (Kiln fixes the "
              "window's length at compile time)";
  int64_t length = sizeAttr.getSplatValue<APInt>().getSExtValue();
  if (length < 0 || length > (int64_t(1) << 24))
    return node.emitError() << "size " << length << " is out of range";
  int64_t dataType = node.getIntAttr("output_datatype", 1);
  Type elementType = getElementType(node.b.getContext(), dataType);
  if (!elementType || elementType.isInteger(1))
    return node.emitError() << "output_datatype " << getOnnxTypeName(dataType)
                            << " is not supported";
  double period =
      node.getIntAttr("periodic", 1) ? double(length) : double(length - 1);
  SmallVector<Attribute> values;
  for (int64_t n = 0; n < length; ++n) {
    double value = formula(2 * M_PI * double(n) / period);
    if (auto floatType = dyn_cast<FloatType>(elementType)) {
      APFloat element(value);
      bool lost;
      element.convert(floatType.getFloatSemantics(),
                      APFloat::rmNearestTiesToEven, &lost);
      values.push_back(FloatAttr::get(elementType, element));
    } else {
      values.push_back(
          IntegerAttr::get(elementType, static_cast<int64_t>(value)));
    }
  }
  node.results.push_back(ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(RankedTensorType::get({length}, elementType),
                             values)));
  return success();
}

// The windows as ONNX defines them, of the phase x = 2 pi n / N.
LogicalResult importHannWindow(NodeImporter &node) {
  return importWindow(node, [](double x) { return 0.5 - 0.5 * std::cos(x); });
}
LogicalResult importHammingWindow(NodeImporter &node) {
  return importWindow(
      node, [](double x) { return 25.0 / 46.0 - 21.0 / 46.0 * std::cos(x); });
}
LogicalResult importBlackmanWindow(NodeImporter &node) {
  return importWindow(node, [](double x) {
    return 0.42 - 0.5 * std::cos(x) + 0.08 * std::cos(2 * x);
  });
}

/// The scalar constant input `i` as a double, or nullopt.
std::optional<double> getConstantScalar(NodeImporter &node, unsigned i) {
  DenseElementsAttr attr;
  if (node.operands.size() <= i || !node.operands[i] ||
      !matchPattern(node.operands[i], m_Constant(&attr)) ||
      attr.getNumElements() != 1)
    return std::nullopt;
  if (isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  return static_cast<double>(attr.getSplatValue<APInt>().getSExtValue());
}

/// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters
/// between mel-spaced frequencies, computed as ONNX's reference does
/// (including its division of the mel range into num_mel_bins + 2 steps and
/// its integer bin edges), from constant inputs.
LogicalResult importMelWeightMatrix(NodeImporter &node) {
  SmallVector<double> inputs;
  for (unsigned i = 0; i < 5; ++i) {
    std::optional<double> value = getConstantScalar(node, i);
    if (!value)
      return node.emitError() << "every input must be a compile-time "
                                 "constant scalar";
    inputs.push_back(*value);
  }
  int64_t bins = static_cast<int64_t>(inputs[0]);
  int64_t dftLength = static_cast<int64_t>(inputs[1]);
  int64_t sampleRate = static_cast<int64_t>(inputs[2]);
  double lower = inputs[3], upper = inputs[4];
  if (bins < 1 || dftLength < 1 || sampleRate < 1 || bins > (1 << 16) ||
      dftLength > (1 << 24) || !(lower >= 0 && lower < upper))
    return node.emitError() << "needs positive sizes and 0 <= "
                               "lower_edge_hertz < upper_edge_hertz";
  int64_t dataType = node.getIntAttr("output_datatype", 1);
  Type elementType = getElementType(node.b.getContext(), dataType);
  if (!elementType || !isa<FloatType>(elementType))
    return node.emitError() << "output_datatype " << getOnnxTypeName(dataType)
                            << " is not supported";
  auto toMel = [](double hertz) {
    return 2595 * std::log1p(hertz / 700) / std::log(10.0);
  };
  double low = toMel(lower);
  double step = (toMel(upper) - low) / static_cast<double>(bins + 2);
  SmallVector<int64_t> edges;
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hertz = 700 * std::expm1((i * step + low) / 2595 * std::log(10.0));
    edges.push_back(static_cast<int64_t>(
        std::floor((dftLength + 1) * hertz / static_cast<double>(sampleRate))));
  }
  int64_t rows = dftLength / 2 + 1;
  SmallVector<double> matrix(rows * bins, 0.0);
  auto at = [&](int64_t row, int64_t bin) -> double * {
    return row >= 0 && row < rows ? &matrix[row * bins + bin] : nullptr;
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = edges[i], center = edges[i + 1], right = edges[i + 2];
    if (center == left) {
      if (double *cell = at(center, i))
        *cell = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        if (double *cell = at(j, i))
          *cell = static_cast<double>(j - left) / (center - left);
    }
    for (int64_t j = center; j < right; ++j)
      if (double *cell = at(j, i))
        *cell = static_cast<double>(right - j) / (right - center);
  }
  auto floatType = cast<FloatType>(elementType);
  SmallVector<APFloat> values;
  for (double value : matrix) {
    APFloat element(value);
    bool lost;
    element.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
    values.push_back(element);
  }
  node.results.push_back(ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(RankedTensorType::get({rows, bins}, elementType),
                             values)));
  return success();
}

} // namespace

OpImportFn kiln::lookupGeneratorOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("Range", importRange)
      .Case("HannWindow", importHannWindow)
      .Case("HammingWindow", importHammingWindow)
      .Case("BlackmanWindow", importBlackmanWindow)
      .Case("MelWeightMatrix", importMelWeightMatrix)
      .Default(nullptr);
}
