//===- OnnxQuantOps.cpp - importers of the ONNX quantization ops ----------===//
//
// QuantizeLinear / DequantizeLinear (the QDQ format), DynamicQuantizeLinear,
// and the integer products of the QOperator format. Kiln's 8-bit tensors
// are signless: whether a value is uint8 comes from the graph's types.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/Int4Weights.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

using namespace mlir;
using namespace kiln;

namespace {

/// A scale or zero point as the kiln ops take it: a one-element 1-D tensor
/// (what exporters write for per-tensor parameters, and ONNX Runtime reads
/// as such) becomes 0-D.
Value getPerTensorIfSingle(NodeImporter &node, Value param) {
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getRank() == 1 && type.getDimSize(0) == 1)
    return createReshape(node, param, ArrayRef<int64_t>{});
  return param;
}

/// The zero point input `index`, or the constant 0 (of `like`'s shape,
/// `elementType`) ONNX defaults it to.
Value getZeroPoint(NodeImporter &node, unsigned index, Value like,
                   Type elementType) {
  if (index < node.operands.size() && node.operands[index])
    return getPerTensorIfSingle(node, node.operands[index]);
  auto type = RankedTensorType::get(
      cast<RankedTensorType>(like.getType()).getShape(), elementType);
  return ConstantOp::create(
      node.b, node.loc, type,
      DenseElementsAttr::get(type, node.b.getIntegerAttr(elementType, 0)));
}

/// The axis of a per-axis scale (normalized), or nullopt for a 0-D one.
FailureOr<std::optional<int64_t>> getQuantAxis(NodeImporter &node, Value scale,
                                               int64_t rank) {
  auto scaleType = cast<RankedTensorType>(scale.getType());
  if (scaleType.getRank() == 0)
    return std::optional<int64_t>();
  if (scaleType.getRank() != 1)
    return node.emitError() << "the scale must be a scalar or 1-D, not "
                            << scaleType;
  FailureOr<int64_t> axis = node.normalizeAxis(node.getIntAttr("axis", 1), rank);
  if (failed(axis))
    return failure();
  return std::optional<int64_t>(*axis);
}

/// The axis of opset 21's blocked quantization (normalized), with the
/// scale checked: `input`'s shape but `ceil(size / blockSize)` along it.
FailureOr<std::optional<int64_t>> getBlockedAxis(NodeImporter &node,
                                                 Value input, Value scale,
                                                 int64_t blockSize) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto scaleType = cast<RankedTensorType>(scale.getType());
  if (blockSize < 0)
    return node.emitError() << "block_size must be positive, not "
                            << blockSize;
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", 1), inputType.getRank());
  if (failed(axis))
    return failure();
  bool matches = scaleType.getRank() == inputType.getRank();
  for (int64_t d = 0; matches && d < inputType.getRank(); ++d) {
    int64_t size = inputType.getDimSize(d);
    if (!ShapedType::isDynamic(size) && d == *axis)
      size = llvm::divideCeil(size, blockSize);
    matches = size == scaleType.getDimSize(d);
  }
  if (!matches)
    return node.emitError() << "the scale " << scaleType
                            << " does not block the input " << inputType
                            << " in blocks of " << blockSize << " along axis "
                            << *axis;
  return std::optional<int64_t>(*axis);
}

LogicalResult requireByteOperand(NodeImporter &node, unsigned index,
                                 StringRef what) {
  if (node.getOperandType(index).getElementType().isInteger(8))
    return success();
  return node.emitError() << what << " must be INT8 or UINT8, not "
                          << getOnnxTypeName(
                                 node.graph.getValueType(node.node.input(index)));
}

/// Records that output `index` holds uint8 or int8.
void setByteOutputType(NodeImporter &node, unsigned index, bool isUnsigned) {
  node.graph.setValueType(node.node.output(index),
                          isUnsigned ? onnx::TensorProto::UINT8
                                     : onnx::TensorProto::INT8);
}

/// The integers QuantizeLinear makes: its zero point's type, or without
/// one output_dtype (opset 21), by default uint8. Sets `bits` (8 or 16)
/// and `isUnsigned`.
LogicalResult getQuantizedType(NodeImporter &node, unsigned &bits,
                               bool &isUnsigned) {
  bool hasZeroPoint = node.operands.size() > 2 && node.operands[2];
  int32_t onnxType =
      hasZeroPoint ? node.graph.getValueType(node.node.input(2))
                   : node.getIntAttr("output_dtype", onnx::TensorProto::UINT8);
  if (hasZeroPoint && !onnxType) {
    // A computed zero point shape inference did not type: its own width.
    unsigned width =
        node.getOperandType(2).getElementType().getIntOrFloatBitWidth();
    bool isUnsignedZero = node.isUnsignedOperand(2);
    onnxType = width == 8    ? (isUnsignedZero ? onnx::TensorProto::UINT8
                                               : onnx::TensorProto::INT8)
               : width == 16 ? (isUnsignedZero ? onnx::TensorProto::UINT16
                                               : onnx::TensorProto::INT16)
                             : onnx::TensorProto::UNDEFINED;
  }
  switch (onnxType) {
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
    bits = 8;
    break;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
    bits = 16;
    break;
  default:
    return node.emitError()
           << (hasZeroPoint ? "the zero point's type " : "output_dtype ")
           << getOnnxTypeName(onnxType)
           << " is not supported; Kiln quantizes to INT8, UINT8, INT16 and "
              "UINT16";
  }
  isUnsigned = onnxType == onnx::TensorProto::UINT8 ||
               onnxType == onnx::TensorProto::UINT16;
  return success();
}

} // namespace

LogicalResult kiln::importQuantizeLinear(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), scale = node.getOperand(1);
  if (failed(input) || failed(scale) || failed(requireFloat(node, *input)) ||
      failed(requireFloat(node, *scale)))
    return failure();
  unsigned bits;
  bool isUnsigned;
  if (failed(getQuantizedType(node, bits, isUnsigned)))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  int64_t blockSize = node.getIntAttr("block_size", 0);
  Value params = blockSize ? *scale : getPerTensorIfSingle(node, *scale);
  FailureOr<std::optional<int64_t>> axis =
      blockSize ? getBlockedAxis(node, *input, params, blockSize)
                : getQuantAxis(node, params, rank);
  if (failed(axis))
    return failure();
  Type integer = node.b.getIntegerType(bits);
  Value zeroPoint = getZeroPoint(node, 2, params, integer);
  if (blockSize && cast<RankedTensorType>(zeroPoint.getType()).getShape() !=
                       cast<RankedTensorType>(params.getType()).getShape())
    return node.emitError() << "the zero point must have the scale's shape";
  auto type = RankedTensorType::get(node.getOperandType(0).getShape(), integer);
  auto op = QuantizeOp::create(
      node.b, node.loc, type, *input, params, zeroPoint,
      *axis ? node.b.getI64IntegerAttr(**axis) : IntegerAttr(),
      blockSize ? node.b.getI64IntegerAttr(blockSize) : IntegerAttr(),
      isUnsigned);
  node.graph.setValueType(node.node.output(0),
                          bits == 16 ? (isUnsigned ? onnx::TensorProto::UINT16
                                                   : onnx::TensorProto::INT16)
                                     : (isUnsigned ? onnx::TensorProto::UINT8
                                                   : onnx::TensorProto::INT8));
  node.results.push_back(op);
  return success();
}

LogicalResult kiln::importDequantizeLinear(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), scale = node.getOperand(1);
  if (failed(input) || failed(scale) || failed(requireFloat(node, *scale)))
    return failure();
  Type inputElement = node.getOperandType(0).getElementType();
  if (!inputElement.isInteger(8) && !inputElement.isInteger(16) &&
      !inputElement.isInteger(32))
    return node.emitError() << "the input must be INT4, UINT4, INT8, UINT8, "
                               "INT16, UINT16 or INT32, not "
                            << getOnnxTypeName(
                                   node.graph.getValueType(node.node.input(0)));
  bool hasZeroPoint = node.operands.size() > 2 && node.operands[2];
  if (hasZeroPoint &&
      node.getOperandType(2).getElementType() != inputElement)
    return node.emitError() << "the zero point must have the input's type";
  int64_t rank = node.getOperandType(0).getRank();
  int64_t blockSize = node.getIntAttr("block_size", 0);
  Value params = blockSize ? *scale : getPerTensorIfSingle(node, *scale);
  FailureOr<std::optional<int64_t>> axis =
      blockSize ? getBlockedAxis(node, *input, params, blockSize)
                : getQuantAxis(node, params, rank);
  if (failed(axis))
    return failure();
  Value zeroPoint = getZeroPoint(node, 2, params, inputElement);
  if (blockSize && cast<RankedTensorType>(zeroPoint.getType()).getShape() !=
                       cast<RankedTensorType>(params.getType()).getShape())
    return node.emitError() << "the zero point must have the scale's shape";
  auto type = RankedTensorType::get(node.getOperandType(0).getShape(),
                                    node.b.getF32Type());
  bool isUnsigned = !inputElement.isInteger(32) && node.isUnsignedOperand(0);
  node.results.push_back(DequantizeOp::create(
      node.b, node.loc, type, *input, params, zeroPoint,
      *axis ? node.b.getI64IntegerAttr(**axis) : IntegerAttr(),
      blockSize ? node.b.getI64IntegerAttr(blockSize) : IntegerAttr(),
      isUnsigned));
  return success();
}

LogicalResult kiln::importDynamicQuantizeLinear(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireFloat(node, *input)))
    return failure();
  Type i8 = node.b.getI8Type();
  auto op = DynamicQuantizeOp::create(
      node.b, node.loc,
      RankedTensorType::get(node.getOperandType(0).getShape(), i8),
      RankedTensorType::get({}, node.b.getF32Type()),
      RankedTensorType::get({}, i8), *input);
  node.graph.setShape(op.getResult(), node.graph.getShape(*input));
  setByteOutputType(node, 0, true);
  setByteOutputType(node, 2, true);
  node.results.append({op.getResult(), op.getScale(), op.getZeroPoint()});
  return success();
}

namespace {

/// The zero point of MatMulInteger's left operand broadcasting to it: a
/// per-row vector `[M]` of a matrix becomes `[M, 1]`.
Value getLhsZeroPoint(NodeImporter &node, unsigned index, Value lhs) {
  Value zeroPoint = getPerTensorIfSingle(node, node.operands[index]);
  auto type = cast<RankedTensorType>(zeroPoint.getType());
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  if (type.getRank() == 1 && lhsType.getRank() >= 2)
    return createReshape(node, zeroPoint,
                         ArrayRef<int64_t>{type.getDimSize(0), 1});
  return zeroPoint;
}

/// `matmul_integer` of operands `lhsIndex` and `rhsIndex` with the zero
/// points at `lhsZeroIndex` and `rhsZeroIndex` (absent: 0).
FailureOr<Value> createMatMulInteger(NodeImporter &node, unsigned lhsIndex,
                                     unsigned rhsIndex, unsigned lhsZeroIndex,
                                     unsigned rhsZeroIndex) {
  FailureOr<Value> lhs = node.getOperand(lhsIndex),
                   rhs = node.getOperand(rhsIndex);
  if (failed(lhs) || failed(rhs) ||
      failed(requireByteOperand(node, lhsIndex, "the left operand")) ||
      failed(requireByteOperand(node, rhsIndex, "the right operand")))
    return failure();
  Type i8 = node.b.getI8Type();
  auto scalarZero = [&]() {
    auto type = RankedTensorType::get({}, i8);
    return ConstantOp::create(
               node.b, node.loc, type,
               DenseElementsAttr::get(type, node.b.getIntegerAttr(i8, 0)))
        .getResult();
  };
  auto present = [&](unsigned index) {
    return index < node.operands.size() && node.operands[index];
  };
  Value lhsZero = present(lhsZeroIndex)
                      ? getLhsZeroPoint(node, lhsZeroIndex, *lhs)
                      : scalarZero();
  Value rhsZero = present(rhsZeroIndex)
                      ? getPerTensorIfSingle(node, node.operands[rhsZeroIndex])
                      : scalarZero();
  for (Value zero : {lhsZero, rhsZero})
    if (!cast<RankedTensorType>(zero.getType()).getElementType().isInteger(8))
      return node.emitError() << "zero points must be INT8 or UINT8";
  SmallVector<Type> types;
  if (failed(inferMatMulResultType(node.loc, lhs->getType(), rhs->getType(),
                                   node.b.getI32Type(), types)))
    return failure();
  auto op = MatMulIntegerOp::create(node.b, node.loc, types[0], *lhs, *rhs,
                                    lhsZero, rhsZero,
                                    node.isUnsignedOperand(lhsIndex),
                                    node.isUnsignedOperand(rhsIndex));
  if (failed(mlir::verify(op)))
    return failure();
  return op.getResult();
}

/// The node's result from the int32 `product` of a QLinear op:
/// `round(product * multiplier) + zero_point`, saturated, computed as ONNX's
/// reference does (the zero point, operand `zeroIndex`, per tensor).
LogicalResult requantize(NodeImporter &node, Value product, Value multiplier,
                         unsigned zeroIndex) {
  auto productType = cast<RankedTensorType>(product.getType());
  Type f32 = node.b.getF32Type();
  Value real = CastOp::create(
      node.b, node.loc, RankedTensorType::get(productType.getShape(), f32),
      product);
  FailureOr<Value> scaled = createInferred<MulOp>(node, {real, multiplier});
  if (failed(scaled))
    return failure();
  Value zeroPoint = getPerTensorIfSingle(node, node.operands[zeroIndex]);
  if (cast<RankedTensorType>(zeroPoint.getType()).getRank() != 0)
    return node.emitError() << "the result's zero point must be per tensor";
  bool isUnsigned = node.isUnsignedOperand(zeroIndex);
  auto type = RankedTensorType::get(
      cast<RankedTensorType>(scaled->getType()).getShape(), node.b.getI8Type());
  node.results.push_back(QuantizeOp::create(node.b, node.loc, type, *scaled,
                                            createScalar(node, f32, 1.0),
                                            zeroPoint, IntegerAttr(),
                                            IntegerAttr(), isUnsigned));
  setByteOutputType(node, 0, isUnsigned);
  return success();
}

} // namespace

LogicalResult kiln::importMatMulInteger(NodeImporter &node) {
  FailureOr<Value> product = createMatMulInteger(node, 0, 1, 2, 3);
  if (failed(product))
    return failure();
  node.results.push_back(*product);
  return success();
}

/// The integer product, then `round(product * a_scale * b_scale / y_scale)
/// + y_zero_point` saturated, as ONNX's reference computes it.
LogicalResult kiln::importQLinearMatMul(NodeImporter &node) {
  FailureOr<Value> product = createMatMulInteger(node, 0, 3, 2, 5);
  FailureOr<Value> lhsScale = node.getOperand(1), rhsScale = node.getOperand(4),
                   resultScale = node.getOperand(6),
                   resultZero = node.getOperand(7);
  if (failed(product) || failed(lhsScale) || failed(rhsScale) ||
      failed(resultScale) || failed(resultZero) ||
      failed(requireFloat(node, *lhsScale)) ||
      failed(requireFloat(node, *rhsScale)) ||
      failed(requireFloat(node, *resultScale)) ||
      failed(requireByteOperand(node, 7, "the result's zero point")))
    return failure();
  // A per-row scale of the left operand applies along the rows.
  Value rowScale = getPerTensorIfSingle(node, *lhsScale);
  auto rowType = cast<RankedTensorType>(rowScale.getType());
  if (rowType.getRank() == 1)
    rowScale = createReshape(node, rowScale,
                             ArrayRef<int64_t>{rowType.getDimSize(0), 1});
  FailureOr<Value> scales = createInferred<MulOp>(
      node, {rowScale, getPerTensorIfSingle(node, *rhsScale)});
  if (failed(scales))
    return failure();
  FailureOr<Value> multiplier = createInferred<DivOp>(
      node, {*scales, getPerTensorIfSingle(node, *resultScale)});
  if (failed(multiplier))
    return failure();
  return requantize(node, *product, *multiplier, 7);
}

namespace {

/// The elements of the compile-time constant `value` as `T` (uint8_t for
/// 8-bit integers, float for f32), or nullopt if it is not one.
template <typename T>
std::optional<std::vector<T>> getConstantValues(Value value) {
  auto constant = value ? value.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return std::nullopt;
  ElementsAttr elements = constant.getValue();
  Type element = elements.getElementType();
  if (std::is_same_v<T, float> ? !element.isF32() : !element.isInteger(8))
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(elements)) {
    std::vector<T> values;
    if constexpr (std::is_same_v<T, float>) {
      for (float value : dense.getValues<float>())
        values.push_back(value);
    } else {
      for (const APInt &value : dense.getValues<APInt>())
        values.push_back(static_cast<T>(value.getZExtValue()));
    }
    return values;
  }
  std::optional<ArrayRef<char>> bytes = getRawBytes(elements);
  if (!bytes)
    return std::nullopt;
  std::vector<T> values(bytes->size() / sizeof(T));
  std::memcpy(values.data(), bytes->data(), values.size() * sizeof(T));
  return values;
}

/// Bits `[index * bits, (index + 1) * bits)` of `bytes`, least significant
/// first (ONNX Runtime packs 4-bit values low nibble first).
unsigned extractBits(const uint8_t *bytes, int64_t index, int64_t bits) {
  unsigned value = 0;
  for (int64_t b = 0; b < bits; ++b) {
    int64_t bit = index * bits + b;
    value |= ((bytes[bit / 8] >> (bit % 8)) & 1u) << b;
  }
  return value;
}

/// MatMulNBits' product on its weights dequantized to a float [K, N]
/// matrix.
FailureOr<Value>
createDequantizedProduct(NodeImporter &node, Value input, int64_t k, int64_t n,
                         int64_t blocks, int64_t blockSize, int64_t bits,
                         ArrayRef<uint8_t> packed, ArrayRef<float> scales,
                         function_ref<float(int64_t, int64_t)> zeroPoint) {
  int64_t blob = blockSize * bits / 8;
  auto type = RankedTensorType::get({k, n}, node.b.getF32Type());
  ElementsAttr weights = createElements(type, [&](MutableArrayRef<char> out) {
    float *w = reinterpret_cast<float *>(out.data());
    for (int64_t col = 0; col < n; ++col)
      for (int64_t block = 0; block < blocks; ++block) {
        const uint8_t *bytes = packed.data() + (col * blocks + block) * blob;
        float scale = scales[col * blocks + block];
        float zero = zeroPoint(col, block);
        for (int64_t i = 0; i < blockSize && block * blockSize + i < k; ++i)
          w[(block * blockSize + i) * n + col] =
              (float(extractBits(bytes, i, bits)) - zero) * scale;
      }
  });
  Value matrix = ConstantOp::create(node.b, node.loc, weights);
  return createInferred<MatMulOp>(node, {input, matrix});
}

/// Columns per panel of the 4-bit products MatMulNBits imports as: the
/// AVX2 kernel's block width, as kiln-quantize-int4-weight's default.
constexpr int64_t kInt4PanelWidth = 16;

} // namespace

/// com.microsoft MatMulNBits: a float product with block-quantized
/// constant weights (4-bit for ONNX Runtime's int4 models):
/// `(q - zero_point) * scale` per block of `block_size` rows of a column,
/// zero points packed like the weights, given as floats, or by default
/// 2^(bits - 1). 4-bit weights with whole zero points become
/// kiln.int4_matmul on the same integers (its zero points stored unless all
/// are 8), its rows quantized to uint8 if the model allows int8 activations
/// (accuracy_level 4, as ONNX Runtime then computes) and float otherwise;
/// all others are dequantized here, at compile time, into a float [K, N]
/// matrix.
LogicalResult kiln::importMatMulNBits(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireFloat(node, *input)))
    return failure();
  int64_t k = node.getIntAttr("K", 0), n = node.getIntAttr("N", 0);
  int64_t bits = node.getIntAttr("bits", 4);
  int64_t blockSize = node.getIntAttr("block_size", 0);
  if (k <= 0 || n <= 0 || blockSize < 16 || !llvm::isPowerOf2_64(blockSize))
    return node.emitError() << "K and N must be positive and block_size a "
                               "power of 2 of at least 16";
  if (bits != 2 && bits != 4 && bits != 8)
    return node.emitError() << bits << "-bit weights are not supported; "
                                       "Kiln reads 2, 4 and 8 bits";
  if (node.operands.size() > 4 && node.operands[4])
    return node.emitError() << "g_idx (reordered rows) is not supported";
  if (node.getOperandType(0).getShape().back() != k)
    return node.emitError() << "the input has "
                            << node.getOperandType(0).getShape().back()
                            << " columns but K is " << k;
  int64_t blocks = llvm::divideCeil(k, blockSize);
  int64_t blob = blockSize * bits / 8;
  std::optional<std::vector<uint8_t>> packed =
      getConstantValues<uint8_t>(node.operands[1]);
  std::optional<std::vector<float>> scales =
      getConstantValues<float>(node.operands.size() > 2 ? node.operands[2]
                                                          : Value());
  if (!packed || static_cast<int64_t>(packed->size()) != n * blocks * blob)
    return node.emitError() << "the weights must be a constant uint8 tensor "
                               "of N * ceil(K / block_size) * "
                               "(block_size * bits / 8) = "
                            << n * blocks * blob << " bytes";
  if (!scales || static_cast<int64_t>(scales->size()) != n * blocks)
    return node.emitError() << "the scales must be a constant float tensor "
                               "of N * ceil(K / block_size) = "
                            << n * blocks << " values";
  Value zeroInput = node.operands.size() > 3 ? node.operands[3] : Value();
  std::optional<std::vector<uint8_t>> packedZeros =
      getConstantValues<uint8_t>(zeroInput);
  std::optional<std::vector<float>> floatZeros =
      getConstantValues<float>(zeroInput);
  int64_t zeroStride = llvm::divideCeil(blocks * bits, 8);
  if (zeroInput &&
      !(packedZeros && static_cast<int64_t>(packedZeros->size()) ==
                           n * zeroStride) &&
      !(floatZeros && static_cast<int64_t>(floatZeros->size()) == n * blocks))
    return node.emitError() << "the zero points must be constant: "
                            << n * zeroStride << " packed uint8 or "
                            << n * blocks << " floats";
  auto zeroPoint = [&](int64_t col, int64_t block) -> float {
    if (floatZeros)
      return (*floatZeros)[col * blocks + block];
    if (packedZeros)
      return extractBits(packedZeros->data() + col * zeroStride, block, bits);
    return float(1 << (bits - 1));
  };
  auto inputType = node.getOperandType(0);
  // Whole zero points in [0, 15] keep the integers exact on the int4
  // kernel; all 8 (symmetric weights) need none stored.
  bool whole = true, symmetric = true;
  for (int64_t col = 0; col < n && whole; ++col)
    for (int64_t block = 0; block < blocks && whole; ++block) {
      float zero = zeroPoint(col, block);
      whole = zero >= 0 && zero <= 15 && zero == std::nearbyint(zero);
      symmetric = symmetric && zero == 8.0f;
    }
  FailureOr<Value> product;
  if (bits == 4 && whole && inputType.getRank() >= 2) {
    auto blockZero = [&](int64_t block, int64_t col) {
      return int(zeroPoint(col, block));
    };
    Int4Weights int4 = createInt4Weights(
        node.b, node.loc, k, n, blockSize, kInt4PanelWidth,
        [&](int64_t row, int64_t col) {
          int64_t block = row / blockSize;
          return int(extractBits(packed->data() + (col * blocks + block) * blob,
                                 row % blockSize, bits)) -
                 blockZero(block, col);
        },
        [&](int64_t block, int64_t col) {
          return (*scales)[col * blocks + block];
        },
        symmetric ? function_ref<int(int64_t, int64_t)>() : blockZero);
    SmallVector<int64_t> shape(inputType.getShape());
    shape.back() = n;
    // Below accuracy level 4 the activations stay float.
    bool floatInput = node.getIntAttr("accuracy_level", 0) != 4;
    product = Int4MatMulOp::create(
                  node.b, node.loc,
                  RankedTensorType::get(shape, node.b.getF32Type()), *input,
                  int4.panels, int4.scales, int4.columnSums, int4.zeroPoints,
                  floatInput)
                  .getResult();
  } else {
    product = createDequantizedProduct(node, *input, k, n, blocks, blockSize,
                                       bits, *packed, *scales, zeroPoint);
  }
  if (failed(product))
    return failure();
  if (node.operands.size() > 5 && node.operands[5])
    product = createInferred<AddOp>(node, {*product, node.operands[5]});
  if (failed(product))
    return failure();
  node.results.push_back(*product);
  return success();
}


OpImportFn kiln::lookupMicrosoftOpImporter(StringRef opType) {
  return opType == "MatMulNBits" ? importMatMulNBits : nullptr;
}

namespace {

/// Operand `index` (8-bit) widened to i32, less the zero point at
/// `zeroIndex` (absent: 0). A per-channel zero point of a filter
/// (`[M]`) applies along its first dimension.
FailureOr<Value> widenLessZeroPoint(NodeImporter &node, unsigned index,
                                    unsigned zeroIndex) {
  if (failed(requireByteOperand(node, index, "the operand")))
    return failure();
  Type i32 = node.b.getI32Type();
  auto widen = [&](Value value, bool isUnsigned) {
    auto type = cast<RankedTensorType>(value.getType());
    auto cast = CastOp::create(node.b, node.loc,
                               RankedTensorType::get(type.getShape(), i32), value);
    cast.setInputUnsigned(isUnsigned);
    return cast.getResult();
  };
  Value value = node.operands[index];
  Value result = widen(value, node.isUnsignedOperand(index));
  if (zeroIndex >= node.operands.size() || !node.operands[zeroIndex])
    return result;
  if (failed(requireByteOperand(node, zeroIndex, "the zero point")))
    return failure();
  Value zero = getPerTensorIfSingle(node, node.operands[zeroIndex]);
  auto zeroType = cast<RankedTensorType>(zero.getType());
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  if (zeroType.getRank() == 1) {
    SmallVector<int64_t> shape(rank, 1);
    shape[0] = zeroType.getDimSize(0);
    zero = createReshape(node, zero, shape);
  }
  return createInferred<SubOp>(
      node, {result, widen(zero, node.isUnsignedOperand(zeroIndex))});
}

/// `values` (one per output channel, or one) shaped to broadcast along the
/// channels of a convolution's `[N, M, spatial...]` result.
Value alongChannels(NodeImporter &node, Value values, int64_t resultRank) {
  Value perTensor = getPerTensorIfSingle(node, values);
  auto type = cast<RankedTensorType>(perTensor.getType());
  if (type.getRank() != 1)
    return perTensor;
  SmallVector<int64_t> shape(resultRank - 1, 1);
  shape[0] = type.getDimSize(0);
  return createReshape(node, perTensor, shape);
}

/// The convolution, exact in i32, of operands `input` and `filter` less the
/// zero points at `inputZero` and `filterZero`.
FailureOr<Value> createIntegerConvolution(NodeImporter &node, unsigned input,
                                          unsigned inputZero, unsigned filter,
                                          unsigned filterZero) {
  FailureOr<Value> x = widenLessZeroPoint(node, input, inputZero);
  FailureOr<Value> w = widenLessZeroPoint(node, filter, filterZero);
  if (failed(x) || failed(w))
    return failure();
  return createConvolution(node, *x, *w);
}

} // namespace

/// ConvInteger: the convolution of the operands less their zero points,
/// exact in i32.
LogicalResult kiln::importConvInteger(NodeImporter &node) {
  if (failed(node.getOperand(0)) || failed(node.getOperand(1)))
    return failure();
  FailureOr<Value> conv = createIntegerConvolution(node, 0, 2, 1, 3);
  if (failed(conv))
    return failure();
  node.results.push_back(*conv);
  return success();
}

/// QLinearConv: the integer convolution plus the int32 bias, scaled by
/// `x_scale * w_scale / y_scale` (w_scale per output channel or not) and
/// quantized with unit scale around `y_zero_point`, as ONNX's reference
/// computes it.
LogicalResult kiln::importQLinearConv(NodeImporter &node) {
  for (unsigned i : {0u, 1u, 3u, 4u, 6u, 7u})
    if (failed(node.getOperand(i)))
      return failure();
  for (unsigned i : {1u, 4u, 6u})
    if (failed(requireFloat(node, node.operands[i])))
      return failure();
  if (failed(requireByteOperand(node, 7, "the result's zero point")))
    return failure();
  FailureOr<Value> conv = createIntegerConvolution(node, 0, 2, 3, 5);
  if (failed(conv))
    return failure();
  int64_t rank = cast<RankedTensorType>(conv->getType()).getRank();
  if (node.operands.size() > 8 && node.operands[8]) {
    if (!node.getOperandType(8).getElementType().isInteger(32))
      return node.emitError() << "the bias must be INT32";
    conv = createInferred<AddOp>(node,
                                 {*conv, alongChannels(node, node.operands[8], rank)});
    if (failed(conv))
      return failure();
  }
  FailureOr<Value> scales = createInferred<MulOp>(
      node, {getPerTensorIfSingle(node, node.operands[1]),
             alongChannels(node, node.operands[4], rank)});
  if (failed(scales))
    return failure();
  FailureOr<Value> multiplier = createInferred<DivOp>(
      node, {*scales, getPerTensorIfSingle(node, node.operands[6])});
  if (failed(multiplier))
    return failure();
  return requantize(node, *conv, *multiplier, 7);
}
