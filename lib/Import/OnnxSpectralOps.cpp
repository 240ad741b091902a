//===- OnnxSpectralOps.cpp - importers of ONNX DFT and STFT ---------------===//
//
// A DFT of static length is a matrix product with a constant matrix of
// cosines and sines: the transformed axis is moved innermost, its real and
// imaginary parts (interleaved, as ONNX lays them out) flattened into one
// row, and multiplied by a [used inputs x 2, outputs x 2] matrix, so the
// packed matrix-product kernels do the work. Zero padding to dft_length is
// the rows left out; a one-sided output the columns left out. STFT frames
// the signal with a constant gather, applies the window, and takes the
// same product.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

/// What one DFT computes along its axis.
struct DftKind {
  int64_t length; // n, the transform length
  bool inverse;   // scaled by 1/n, exp(+i...)
  bool onesided;  // forward: outputs 0..n/2; inverse: a real output
};

/// The [rows, columns] matrix of a DFT reading `used` positions with
/// `inParts` parts each (1: real, 2: interleaved real and imaginary) and
/// writing `outputs` positions with `outParts` parts each.
SmallVector<double> getDftMatrix(const DftKind &kind, int64_t used,
                                 int64_t inParts, int64_t outputs,
                                 int64_t outParts) {
  int64_t n = kind.length;
  int64_t columns = outputs * outParts;
  SmallVector<double> matrix(used * inParts * columns, 0.0);
  double sign = kind.inverse ? 1.0 : -1.0;
  double scale = kind.inverse ? 1.0 / static_cast<double>(n) : 1.0;
  for (int64_t j = 0; j < used; ++j) {
    for (int64_t k = 0; k < outputs; ++k) {
      // j * k reduced mod n keeps the angle small, so large transforms
      // lose no precision to the argument of cos and sin.
      double angle = sign * 2 * M_PI * static_cast<double>((j * k) % n) /
                     static_cast<double>(n);
      double c = std::cos(angle), s = std::sin(angle);
      // A one-sided inverse input holds bins 0..n/2 of a Hermitian
      // spectrum: every other bin stands for itself and its mirror.
      double weight = scale;
      if (kind.inverse && kind.onesided && j != 0 && 2 * j != n)
        weight *= 2;
      double *row = &matrix[(j * inParts) * columns + k * outParts];
      row[0] = weight * c;
      if (outParts == 2)
        row[1] = weight * s;
      if (inParts == 2) {
        double *imagRow = row + columns;
        imagRow[0] = -weight * s;
        if (outParts == 2)
          imagRow[1] = weight * c;
      }
    }
  }
  return matrix;
}

/// The DFT of `x` ([..., L, ..., parts], `parts` 1 or 2) along `axis`
/// (not the last), ONNX's layout: [..., outputs, ..., 2], or 1 for a
/// one-sided inverse.
FailureOr<Value> createDft(NodeImporter &node, Value x, int64_t axis,
                           const DftKind &kind) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  int64_t inParts = type.getDimSize(rank - 1);
  if (inParts != 1 && inParts != 2)
    return node.emitError() << "the last dimension must be 1 (real) or 2 "
                               "(complex); it is "
                            << inParts;
  int64_t n = kind.length;
  // The input positions that reach the transform: a one-sided inverse
  // reads bins 0..n/2; the others read n samples; the rest are zeros.
  int64_t wanted = kind.inverse && kind.onesided ? n / 2 + 1 : n;
  int64_t used = std::min(type.getDimSize(axis), wanted);
  int64_t outputs = !kind.inverse && kind.onesided ? n / 2 + 1 : n;
  int64_t outParts = kind.inverse && kind.onesided ? 1 : 2;

  // [others..., used, parts] with the axis moved before the parts.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(rank - 1);
  Value moved = createTranspose(node, x, perm);
  moved = createAxisSlice(node, moved, rank - 2, 0, used);
  auto movedType = cast<RankedTensorType>(moved.getType());
  ArrayRef<int64_t> others = movedType.getShape().drop_back(2);
  int64_t batch = std::accumulate(others.begin(), others.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  Value rows =
      createReshape(node, moved, ArrayRef<int64_t>{batch, used * inParts});

  Type elementType = type.getElementType();
  SmallVector<double> values =
      getDftMatrix(kind, used, inParts, outputs, outParts);
  auto matrixType =
      RankedTensorType::get({used * inParts, outputs * outParts}, elementType);
  DenseElementsAttr matrix;
  if (elementType.isF64()) {
    matrix = DenseElementsAttr::get(matrixType, ArrayRef<double>(values));
  } else {
    SmallVector<float> narrow(values.begin(), values.end());
    matrix = DenseElementsAttr::get(matrixType, ArrayRef<float>(narrow));
  }
  FailureOr<Value> product = createInferred<MatMulOp>(
      node, {rows, ConstantOp::create(node.b, node.loc, matrix)});
  if (failed(product))
    return failure();

  SmallVector<int64_t> shape(others);
  shape.push_back(outputs);
  shape.push_back(outParts);
  Value result = createReshape(node, *product, shape);
  SmallVector<int64_t> inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  return createTranspose(node, result, inverse);
}

/// The scalar constant integer input `i`, nullopt if absent, failure
/// (with an error) if it is not a compile-time constant.
FailureOr<std::optional<int64_t>> getScalarInput(NodeImporter &node, unsigned i,
                                                 StringRef what) {
  if (static_cast<int>(i) >= node.node.input_size() ||
      node.node.input(i).empty())
    return std::optional<int64_t>();
  std::optional<SmallVector<int64_t>> values =
      node.graph.getConstantInts(node.node.input(i));
  if (!values || values->size() != 1)
    return node.emitError() << what
                            << " must be a compile-time constant "
                               "integer scalar";
  return std::optional<int64_t>(values->front());
}

} // namespace

LogicalResult kiln::importDFT(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireReal(node, *x)))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (!type.hasStaticShape() || type.getRank() < 2)
    return node.emitError() << "the input must be statically shaped with "
                               "rank 2 or more; it is "
                            << type;
  FailureOr<std::optional<int64_t>> length =
      getScalarInput(node, 1, "dft_length");
  // Opset 20 made the axis an input (default -2); before, an attribute.
  FailureOr<std::optional<int64_t>> axisInput =
      node.getOpset() >= 20 ? getScalarInput(node, 2, "axis")
                            : FailureOr<std::optional<int64_t>>(std::nullopt);
  if (failed(length) || failed(axisInput))
    return failure();
  int64_t rank = type.getRank();
  int64_t axis = axisInput->value_or(
      node.getOpset() >= 20 ? -2 : node.getIntAttr("axis", 1));
  FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
  if (failed(normalized))
    return failure();
  if (*normalized == rank - 1)
    return node.emitError()
           << "axis " << axis << " is the real/imaginary dimension";
  DftKind kind;
  kind.inverse = node.getIntAttr("inverse", 0) != 0;
  kind.onesided = node.getIntAttr("onesided", 0) != 0;
  int64_t size = type.getDimSize(*normalized);
  kind.length =
      length->value_or(kind.inverse && kind.onesided ? 2 * (size - 1) : size);
  if (kind.length < 1)
    return node.emitError()
           << "the transform length must be positive; it is " << kind.length;
  return addResult(node, createDft(node, *x, *normalized, kind));
}

LogicalResult kiln::importSTFT(NodeImporter &node) {
  FailureOr<Value> signal = node.getOperand(0);
  if (failed(signal) || failed(requireReal(node, *signal)))
    return failure();
  auto type = cast<RankedTensorType>(signal->getType());
  if (!type.hasStaticShape() || type.getRank() != 3)
    return node.emitError() << "the signal must be statically shaped "
                               "[batch, length, 1 or 2]; it is "
                            << type;
  FailureOr<std::optional<int64_t>> step =
      getScalarInput(node, 1, "frame_step");
  FailureOr<std::optional<int64_t>> frameLength =
      getScalarInput(node, 3, "frame_length");
  if (failed(step) || failed(frameLength))
    return failure();
  if (!*step || **step < 1)
    return node.emitError() << "frame_step must be a positive constant";
  Value window;
  if (node.operands.size() > 2 && node.operands[2]) {
    window = node.operands[2];
    auto windowType = cast<RankedTensorType>(window.getType());
    if (!windowType.hasStaticShape() || windowType.getRank() != 1 ||
        windowType.getElementType() != type.getElementType())
      return node.emitError() << "the window must be a static 1-D tensor of "
                                 "the signal's type; it is "
                              << windowType;
  }
  int64_t length = type.getDimSize(1);
  int64_t windowSize =
      window ? cast<RankedTensorType>(window.getType()).getDimSize(0)
             : frameLength->value_or(length);
  if (window && *frameLength && **frameLength != windowSize)
    return node.emitError()
           << "frame_length " << **frameLength
           << " differs from the window's length " << windowSize;
  DftKind kind;
  kind.inverse = false;
  kind.onesided = node.getIntAttr("onesided", 1) != 0;
  kind.length = windowSize;
  if (windowSize < 1 || windowSize > length)
    return node.emitError() << "frames of " << windowSize
                            << " samples do not fit a signal of " << length;
  int64_t frames = 1 + (length - kind.length) / **step;
  SmallVector<int64_t> indices;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t w = 0; w < windowSize; ++w)
      indices.push_back(f * **step + w);
  auto indexType =
      RankedTensorType::get({frames, windowSize}, node.b.getI64Type());
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(1);
  FailureOr<Value> framed = createInferred<GatherOp>(
      node,
      {*signal, ConstantOp::create(node.b, node.loc,
                                   DenseElementsAttr::get(
                                       indexType, ArrayRef<int64_t>(indices)))},
      props);
  if (failed(framed))
    return failure();
  Value weighted = *framed;
  if (window) {
    FailureOr<Value> product = createInferred<MulOp>(
        node, {weighted,
               createReshape(node, window, ArrayRef<int64_t>{windowSize, 1})});
    if (failed(product))
      return failure();
    weighted = *product;
  }
  return addResult(node, createDft(node, weighted, 2, kind));
}
