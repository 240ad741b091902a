//===- KilnQuantOps.cpp - quantize, dequantize, integer products ----------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Checks a quantization's scale and zero point against its `data`: both
/// 0-D (per tensor), or both 1-D with one value per index of `axis`.
LogicalResult verifyQuantParams(Operation *op, Value data, Value scale,
                                Value zeroPoint, std::optional<int64_t> axis) {
  auto dataType = cast<RankedTensorType>(data.getType());
  auto scaleType = cast<RankedTensorType>(scale.getType());
  auto zeroType = cast<RankedTensorType>(zeroPoint.getType());
  if (scaleType.getShape() != zeroType.getShape())
    return op->emitOpError("scale ")
           << scaleType << " and zero point " << zeroType
           << " must have one shape";
  if (scaleType.getRank() == 0) {
    if (axis)
      return op->emitOpError("has an axis but a per-tensor (0-D) scale");
    return success();
  }
  if (scaleType.getRank() != 1)
    return op->emitOpError("scale must be 0-D (per tensor) or 1-D (per axis)");
  if (!axis)
    return op->emitOpError("has a 1-D scale but no axis");
  int64_t rank = dataType.getRank();
  if (*axis < 0 || *axis >= rank)
    return op->emitOpError("axis ")
           << *axis << " is out of range for rank " << rank;
  if (failed(verifyCompatibleShape({dataType.getDimSize(*axis)},
                                   {scaleType.getDimSize(0)})))
    return op->emitOpError("has ")
           << scaleType.getDimSize(0) << " scales for the "
           << dataType.getDimSize(*axis) << " indices of axis " << *axis;
  return success();
}

/// Whether `zeroPoint`'s shape broadcasts to `operand`'s without changing
/// it (ONNX rules).
bool broadcastsTo(Value zeroPoint, Value operand) {
  ArrayRef<int64_t> target =
      cast<RankedTensorType>(operand.getType()).getShape();
  SmallVector<int64_t> shape;
  return OpTrait::util::getBroadcastedShape(
             target, cast<RankedTensorType>(zeroPoint.getType()).getShape(),
             shape) &&
         ArrayRef<int64_t>(shape) == target;
}

} // namespace

/// Checks blocked quantization's scale and zero point: `data`'s shape but
/// `ceil(size / blockSize)` along `axis`.
static LogicalResult verifyBlockedParams(Operation *op, Value data,
                                         Value scale, Value zeroPoint,
                                         std::optional<int64_t> axis,
                                         int64_t blockSize) {
  auto dataType = cast<RankedTensorType>(data.getType());
  auto scaleType = cast<RankedTensorType>(scale.getType());
  if (scaleType.getShape() !=
      cast<RankedTensorType>(zeroPoint.getType()).getShape())
    return op->emitOpError("scale and zero point must have one shape");
  if (blockSize <= 0)
    return op->emitOpError("block_size must be positive, not ") << blockSize;
  int64_t rank = dataType.getRank();
  if (!axis || *axis < 0 || *axis >= rank)
    return op->emitOpError("blocked quantization needs an axis in [0, ")
           << rank << ")";
  if (scaleType.getRank() != rank)
    return op->emitOpError("blocked scale must have the input's rank ")
           << rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = dataType.getDimSize(d);
    int64_t expected = ShapedType::isDynamic(size) ? size
                       : d == *axis ? llvm::divideCeil(size, blockSize)
                                    : size;
    if (failed(verifyCompatibleShape({expected}, {scaleType.getDimSize(d)})))
      return op->emitOpError("blocked scale ")
             << scaleType << " does not match input " << dataType
             << " in blocks of " << blockSize << " along axis " << *axis;
  }
  return success();
}

/// Checks a quantization's scale and zero point against its `data`: per
/// tensor, per axis, or in blocks of `blockSize`.
static LogicalResult verifyParams(Operation *op, Value data, Value scale,
                                  Value zeroPoint, std::optional<int64_t> axis,
                                  std::optional<int64_t> blockSize) {
  if (blockSize)
    return verifyBlockedParams(op, data, scale, zeroPoint, axis, *blockSize);
  return verifyQuantParams(op, data, scale, zeroPoint, axis);
}

LogicalResult QuantizeOp::verify() {
  return verifyParams(*this, getInput(), getScale(), getZeroPoint(), getAxis(),
                      getBlockSize());
}

LogicalResult DequantizeOp::verify() {
  if (getInput().getType().getElementType() !=
      getZeroPoint().getType().getElementType())
    return emitOpError("zero point must have the input's element type");
  if (getInputUnsigned() && getInput().getType().getElementType().isInteger(32))
    return emitOpError("32-bit input must be signed");
  return verifyParams(*this, getInput(), getScale(), getZeroPoint(), getAxis(),
                      getBlockSize());
}

LogicalResult MatMulIntegerOp::verify() {
  if (!broadcastsTo(getLhsZeroPoint(), getLhs()))
    return emitOpError("lhs zero point ")
           << getLhsZeroPoint().getType() << " does not broadcast to "
           << getLhs().getType();
  if (!broadcastsTo(getRhsZeroPoint(), getRhs()))
    return emitOpError("rhs zero point ")
           << getRhsZeroPoint().getType() << " does not broadcast to "
           << getRhs().getType();
  SmallVector<Type> inferred;
  if (failed(inferMatMulResultType(getLoc(), getLhs().getType(),
                                   getRhs().getType(),
                                   getType().getElementType(), inferred)))
    return failure();
  if (failed(verifyCompatibleShape(inferred[0], getType())))
    return emitOpError("result type ")
           << getType() << " is not the product's " << inferred[0];
  return success();
}

/// A product on weight panels `width` columns wide, `padded` columns in
/// all, has the input's rows and the real columns of its last panel.
static LogicalResult verifyPanelResult(Operation *op,
                                       RankedTensorType inputType,
                                       RankedTensorType resultType,
                                       int64_t padded, int64_t width) {
  int64_t columns = resultType.getShape().back();
  if (resultType.getRank() != inputType.getRank() ||
      failed(verifyCompatibleShape(resultType.getShape().drop_back(),
                                   inputType.getShape().drop_back())) ||
      columns > padded || columns <= padded - width)
    return op->emitOpError("result ")
           << resultType << " must have the input's rows and between "
           << padded - width + 1 << " and " << padded << " columns";
  return success();
}

LogicalResult QuantizedMatMulOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> weights = getWeights().getType().getShape();
  RankedTensorType resultType = getType();
  if (inputType.getRank() < 2 || weights.size() != 4 || weights[3] != 4)
    return emitOpError("takes an input of rank 2 or more and weights "
                       "[panels, K / 4, W, 4]");
  int64_t k = inputType.getShape().back();
  if (!ShapedType::isDynamic(k) && (k + 3) / 4 != weights[1])
    return emitOpError("input has ")
           << k << " columns but the weights hold " << weights[1]
           << " groups of 4 rows";
  if (bool(getInputScale()) != bool(getInputZeroPoint()))
    return emitOpError("takes a static input scale and zero point together");
  if (Value smoothing = getSmoothing()) {
    auto smoothingType = cast<RankedTensorType>(smoothing.getType());
    if (!getInputScale())
      return emitOpError("smooths only a static input quantization");
    if (!ShapedType::isDynamic(k) && smoothingType.getDimSize(0) != k)
      return emitOpError("smoothing has ")
             << smoothingType.getDimSize(0) << " factors for an input of " << k
             << " columns";
  }
  int64_t padded = weights[0] * weights[2];
  for (Value perColumn : {getScales(), getColumnSums()}) {
    auto type = cast<RankedTensorType>(perColumn.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != padded)
      return emitOpError("scales and column sums must have one entry per "
                         "padded column (")
             << padded << ")";
  }
  return verifyPanelResult(*this, inputType, resultType, padded, weights[2]);
}

LogicalResult Int4MatMulOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> weights = getWeights().getType().getShape();
  auto scalesType = cast<RankedTensorType>(getScales().getType());
  auto sumsType = cast<RankedTensorType>(getColumnSums().getType());
  RankedTensorType resultType = getType();
  if (inputType.getRank() < 2 || weights.size() != 4 || weights[3] != 4)
    return emitOpError("takes an input of rank 2 or more and weights "
                       "[panels, K / 8, W, 4]");
  int64_t padded = weights[0] * weights[2], depth = weights[1] * 8;
  if (scalesType.getRank() != 3 || scalesType.getDimSize(0) != weights[0] ||
      scalesType.getDimSize(2) != weights[2] || scalesType.getDimSize(1) <= 0 ||
      depth % scalesType.getDimSize(1) != 0 || getBlockSize() % 8 != 0)
    return emitOpError("scales ")
           << scalesType << " must be [" << weights[0] << ", blocks, "
           << weights[2] << "] with blocks dividing " << depth
           << " rows into multiples of 8";
  int64_t k = inputType.getShape().back();
  if (!ShapedType::isDynamic(k) &&
      (k > depth || k <= depth - getBlockSize()))
    return emitOpError("input has ")
           << k << " columns but the weights hold " << depth
           << " rows in blocks of " << getBlockSize();
  if (sumsType.getRank() != 1 || sumsType.getDimSize(0) != padded)
    return emitOpError("column sums must have one entry per padded column (")
           << padded << ")";
  if (Value zeroPoints = getZeroPoints())
    if (cast<RankedTensorType>(zeroPoints.getType()).getShape() !=
        scalesType.getShape())
      return emitOpError("zero points ")
             << zeroPoints.getType() << " must have the scales' shape";
  return verifyPanelResult(*this, inputType, resultType, padded, weights[2]);
}
