//===- GraphImporter.cpp - values, constants and node attributes ----------===//
#include "lib/Import/GraphImporter.h"

#include "dialects/Kiln/IR/ConstantEvaluation.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/Support/MathExtras.h"

#include <cstring>

using namespace mlir;
using namespace kiln;

Type kiln::getElementType(MLIRContext *ctx, int32_t onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case onnx::TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case onnx::TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case onnx::TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  // Signless: the graph's value types tell int8 from uint8.
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return IntegerType::get(ctx, 64);
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return IntegerType::get(ctx, 32);
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return IntegerType::get(ctx, 8);
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return IntegerType::get(ctx, 16);
  case onnx::TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  default:
    return nullptr;
  }
}

int32_t kiln::getOnnxType(Type elementType, bool isUnsigned) {
  if (elementType.isF32())
    return onnx::TensorProto::FLOAT;
  if (elementType.isF64())
    return onnx::TensorProto::DOUBLE;
  if (elementType.isF16())
    return onnx::TensorProto::FLOAT16;
  if (elementType.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (elementType.isInteger(64))
    return isUnsigned ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
  if (elementType.isInteger(32))
    return isUnsigned ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
  if (elementType.isInteger(16))
    return isUnsigned ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
  if (elementType.isInteger(8))
    return isUnsigned ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
  if (elementType.isInteger(1))
    return onnx::TensorProto::BOOL;
  return onnx::TensorProto::UNDEFINED;
}

std::string kiln::getOnnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnxType));
  static constexpr const char *newer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",        "INT4",           "FLOAT4E2M1"};
  if (onnxType >= kOnnxFloat8E4M3FN && onnxType <= kOnnxFloat4E2M1)
    return newer[onnxType - kOnnxFloat8E4M3FN];
  return "type #" + std::to_string(onnxType);
}

namespace {

bool isFourBit(int32_t onnxType) {
  return onnxType == kOnnxInt4 || onnxType == kOnnxUint4;
}

/// The tensor type `tensor` declares, with its element count checked so a
/// hostile file can't overflow it. 4-bit constants (opset 21's blocked
/// weights) are held one per byte, as i8.
FailureOr<RankedTensorType> getTensorType(const onnx::TensorProto &tensor,
                                          MLIRContext *ctx, Location loc) {
  Type elementType = isFourBit(tensor.data_type())
                         ? IntegerType::get(ctx, 8)
                         : getElementType(ctx, tensor.data_type());
  if (!elementType)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "' has element type "
                          << getOnnxTypeName(tensor.data_type())
                          << "; Kiln supports " << kSupportedTypes;
  int64_t numElements = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      return emitError(loc) << "tensor '" << tensor.name()
                            << "' has the negative dimension " << dim;
    if (llvm::MulOverflow(numElements, dim, numElements) ||
        numElements > (int64_t(1) << 40))
      return emitError(loc) << "tensor '" << tensor.name()
                            << "' has an invalid or oversized shape";
  }
  return RankedTensorType::get(
      SmallVector<int64_t>(tensor.dims().begin(), tensor.dims().end()),
      elementType);
}

/// Whether `tensor`'s raw data has the size its `type` needs, one byte per
/// bool.
LogicalResult checkRawSize(const onnx::TensorProto &tensor,
                           RankedTensorType type, Location loc) {
  uint64_t elementSize = type.getElementType().isInteger(1)
                             ? 1
                             : getElementBytes(type.getElementType());
  uint64_t needed = type.getNumElements() * elementSize;
  if (tensor.raw_data().size() == needed)
    return success();
  return emitError(loc) << "tensor '" << tensor.name() << "' holds "
                        << tensor.raw_data().size()
                        << " bytes of data but its shape needs " << needed;
}

/// The elements of a 4-bit tensor, one per byte: packed two per byte, low
/// nibble first, in raw_data or in the low byte of each int32_data entry;
/// INT4 sign-extended, UINT4 in [0, 15].
FailureOr<std::string> unpackFourBit(const onnx::TensorProto &tensor,
                                     int64_t numElements, Location loc) {
  uint64_t packedBytes = static_cast<uint64_t>(numElements + 1) / 2;
  std::string packed;
  if (tensor.has_raw_data()) {
    packed = tensor.raw_data();
  } else {
    for (int32_t entry : tensor.int32_data())
      packed.push_back(static_cast<char>(entry & 0xff));
  }
  if (packed.size() != packedBytes)
    return emitError(loc) << "tensor '" << tensor.name() << "' holds "
                          << packed.size()
                          << " bytes of 4-bit data but its shape needs "
                          << packedBytes;
  bool isSigned = tensor.data_type() == kOnnxInt4;
  std::string values(numElements, '\0');
  for (int64_t i = 0; i < numElements; ++i) {
    int nibble = (static_cast<uint8_t>(packed[i / 2]) >> (4 * (i % 2))) & 0xf;
    values[i] = static_cast<char>(isSigned && nibble >= 8 ? nibble - 16
                                                          : nibble);
  }
  return values;
}

} // namespace

DenseElementsAttr kiln::convertTensorProto(const onnx::TensorProto &tensor,
                                           MLIRContext *ctx, Location loc) {
  FailureOr<RankedTensorType> tensorType = getTensorType(tensor, ctx, loc);
  if (failed(tensorType))
    return {};
  RankedTensorType type = *tensorType;
  Type elementType = type.getElementType();
  int64_t numElements = type.getNumElements();
  if (isFourBit(tensor.data_type())) {
    FailureOr<std::string> values = unpackFourBit(tensor, numElements, loc);
    if (failed(values))
      return {};
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(values->data(), values->size()));
  }
  if (tensor.has_raw_data()) {
    if (failed(checkRawSize(tensor, type, loc)))
      return {};
    const std::string &raw = tensor.raw_data();
    if (elementType.isInteger(1)) {
      SmallVector<bool> flags;
      for (char byte : raw)
        flags.push_back(byte != 0);
      return DenseElementsAttr::get(type, ArrayRef<bool>(flags));
    }
    // Little-endian hosts store f32 and i64 exactly as ONNX's raw_data.
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(raw.data(), raw.size()));
  }
  int64_t stored = elementType.isF32()         ? tensor.float_data_size()
                   : elementType.isInteger(64) ? tensor.int64_data_size()
                                               : tensor.int32_data_size();
  if (stored != numElements) {
    emitError(loc) << "tensor '" << tensor.name() << "' holds " << stored
                   << " elements but its shape needs " << numElements;
    return {};
  }
  if (elementType.isF32())
    return DenseElementsAttr::get(
        type, ArrayRef<float>(tensor.float_data().data(), numElements));
  if (elementType.isInteger(64))
    return DenseElementsAttr::get(
        type, ArrayRef<int64_t>(tensor.int64_data().data(), numElements));
  if (elementType.isInteger(1)) {
    SmallVector<bool> flags;
    for (int32_t value : tensor.int32_data())
      flags.push_back(value != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(flags));
  }
  // The narrower types sit one per int32_data entry (halves as their bit
  // patterns); their low bytes, little-endian, are the elements.
  int64_t size = getElementBytes(elementType);
  std::string bytes(numElements * size, '\0');
  for (int64_t i = 0; i < numElements; ++i) {
    auto value = static_cast<uint32_t>(tensor.int32_data(i));
    std::memcpy(bytes.data() + i * size, &value, size);
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(bytes.data(), bytes.size()));
}

ElementsAttr kiln::takeTensorProto(onnx::TensorProto &tensor,
                                   MLIRContext *ctx, Location loc) {
  if (isFourBit(tensor.data_type())) {
    FailureOr<RankedTensorType> type = getTensorType(tensor, ctx, loc);
    if (failed(type))
      return {};
    FailureOr<std::string> values =
        unpackFourBit(tensor, type->getNumElements(), loc);
    if (failed(values))
      return {};
    return createElements(*type,
                          std::make_unique<std::string>(std::move(*values)));
  }
  Type elementType = getElementType(ctx, tensor.data_type());
  if (!tensor.has_raw_data() || !elementType ||
      getElementBytes(elementType) == 0 ||
      static_cast<int64_t>(tensor.raw_data().size()) < kResourceBytes)
    return convertTensorProto(tensor, ctx, loc);
  FailureOr<RankedTensorType> type = getTensorType(tensor, ctx, loc);
  if (failed(type) || failed(checkRawSize(tensor, *type, loc)))
    return {};
  return createElements(*type, std::make_unique<std::string>(
                                   std::move(*tensor.mutable_raw_data())));
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

FailureOr<Value> GraphImporter::lookup(StringRef name, Location loc) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto constant = constants.find(name);
  if (constant == constants.end())
    return emitError(loc) << "value '" << name << "' is not defined";
  ElementsAttr attr =
      takeTensorProto(*constant->second, builder.getContext(), loc);
  if (!attr)
    return failure();
  Value value = ConstantOp::create(builder, loc, attr);
  values[name] = value;
  // The tensor may have given its bytes away; the value stands for it now.
  constants.erase(constant);
  return value;
}

/// The elements of an i32 or i64 constant as int64.
static SmallVector<int64_t> getSignExtendedInts(DenseIntElementsAttr dense) {
  SmallVector<int64_t> ints;
  for (const APInt &element : dense.getValues<APInt>())
    ints.push_back(element.getSExtValue());
  return ints;
}

std::optional<SmallVector<int64_t>>
GraphImporter::getConstantInts(StringRef name) {
  auto constant = constants.find(name);
  if (constant == constants.end()) {
    // A value the importer folded while importing an earlier node.
    auto value = values.find(name);
    auto op = value == values.end() ? ConstantOp()
                                    : value->second.getDefiningOp<ConstantOp>();
    auto dense = op ? dyn_cast<DenseIntElementsAttr>(op.getValue())
                    : DenseIntElementsAttr();
    if (!dense || !isShapeElementType(dense.getElementType()))
      return std::nullopt;
    return getSignExtendedInts(dense);
  }
  // ONNX lets int32 stand for int64 in axes, pads, repeats, sizes and the
  // like (tf2onnx writes them so).
  const onnx::TensorProto &tensor = *constant->second;
  if (tensor.data_type() == onnx::TensorProto::INT32) {
    if (!tensor.has_raw_data())
      return SmallVector<int64_t>(tensor.int32_data().begin(),
                                  tensor.int32_data().end());
    const std::string &raw = tensor.raw_data();
    if (raw.size() % sizeof(int32_t) != 0)
      return std::nullopt;
    SmallVector<int64_t> result;
    for (size_t offset = 0; offset < raw.size(); offset += sizeof(int32_t)) {
      int32_t element;
      std::memcpy(&element, raw.data() + offset, sizeof(int32_t));
      result.push_back(element);
    }
    return result;
  }
  if (tensor.data_type() != onnx::TensorProto::INT64)
    return std::nullopt;
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() % sizeof(int64_t) != 0)
      return std::nullopt;
    SmallVector<int64_t> result(raw.size() / sizeof(int64_t));
    if (!result.empty())
      std::memcpy(result.data(), raw.data(), raw.size());
    return result;
  }
  return SmallVector<int64_t>(tensor.int64_data().begin(),
                              tensor.int64_data().end());
}

SymbolicInts GraphImporter::getShape(Value value) const {
  auto it = shapes.find(value);
  if (it != shapes.end())
    return it->second;
  auto type = cast<RankedTensorType>(value.getType());
  assert(type.hasStaticShape() && "a dynamic value without a shape");
  return kiln::getConstantInts(value.getContext(), type.getShape());
}

std::optional<SymbolicInts> GraphImporter::getContents(Value value) const {
  auto it = contents.find(value);
  if (it != contents.end())
    return it->second;
  auto constant = value.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                        : DenseIntElementsAttr();
  if (!dense || !isShapeElementType(dense.getElementType()) ||
      dense.getNumElements() > kFoldElementLimit)
    return std::nullopt;
  return kiln::getConstantInts(value.getContext(), getSignExtendedInts(dense));
}

std::optional<SymbolicInts> GraphImporter::getSymbolicInts(StringRef name) {
  if (std::optional<SmallVector<int64_t>> ints = getConstantInts(name))
    return kiln::getConstantInts(builder.getContext(), *ints);
  auto value = values.find(name);
  if (value == values.end())
    return std::nullopt;
  return getContents(value->second);
}

std::string GraphImporter::describe(AffineExpr expr) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  expr.print(os);
  // Symbols print as s<k>; name them, longest index first so s1 doesn't
  // match the start of s10.
  for (int64_t k = static_cast<int64_t>(symbols.size()) - 1; k >= 0; --k) {
    std::string token = "s" + std::to_string(k);
    for (size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + symbols[k].name.size()))
      text.replace(at, token.size(), symbols[k].name);
  }
  return text;
}

FailureOr<AffineExpr>
GraphImporter::getElementSymbol(Value source, unsigned element, StringRef name,
                                int64_t min, int64_t max, Location loc) {
  for (auto [k, symbol] : llvm::enumerate(symbols)) {
    if (symbol.fromElement && symbol.source == source &&
        symbol.sourceDim == element)
      return getAffineSymbolExpr(k, builder.getContext());
    if (symbol.name == name)
      return emitError(loc) << "declares the dimension '" << name
                            << "', which the graph already names";
  }
  symbols.push_back({name.str(), min, max, source, element,
                     /*fromElement=*/true});
  return getAffineSymbolExpr(symbols.size() - 1, builder.getContext());
}

Value GraphImporter::readSymbol(const DimSymbol &symbol, Location loc) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(entryBlock);
  if (!symbol.fromElement)
    return tensor::DimOp::create(builder, loc, symbol.source, symbol.sourceDim);
  Value element =
      tensor::ExtractOp::create(builder, loc, symbol.source,
                                ValueRange{arith::ConstantIndexOp::create(
                                    builder, loc, symbol.sourceDim)});
  return arith::IndexCastOp::create(builder, loc, builder.getIndexType(),
                                    element);
}

FailureOr<Value> GraphImporter::materialize(AffineExpr expr, Location loc) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr))
    return Value(arith::ConstantIndexOp::create(builder, loc, constant.getValue()));
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr)) {
    unsigned k = symbol.getPosition();
    if (symbolValues.size() < symbols.size())
      symbolValues.resize(symbols.size());
    if (!symbolValues[k])
      symbolValues[k] = readSymbol(symbols[k], loc);
    return symbolValues[k];
  }
  auto binary = cast<AffineBinaryOpExpr>(expr);
  FailureOr<Value> lhs = materialize(binary.getLHS(), loc);
  FailureOr<Value> rhs = materialize(binary.getRHS(), loc);
  if (failed(lhs) || failed(rhs))
    return failure();
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    return Value(arith::AddIOp::create(builder, loc, *lhs, *rhs));
  case AffineExprKind::Mul:
    return Value(arith::MulIOp::create(builder, loc, *lhs, *rhs));
  case AffineExprKind::FloorDiv:
    return Value(arith::FloorDivSIOp::create(builder, loc, *lhs, *rhs));
  case AffineExprKind::CeilDiv:
    return Value(arith::CeilDivSIOp::create(builder, loc, *lhs, *rhs));
  case AffineExprKind::Mod:
    return Value(arith::RemSIOp::create(builder, loc, *lhs, *rhs));
  default:
    return emitError(loc) << "cannot compute the size " << describe(expr);
  }
}

FailureOr<SmallVector<Value>>
GraphImporter::materializeDynamicSizes(ArrayRef<AffineExpr> shape,
                                       Location loc) {
  SmallVector<Value> sizes;
  for (AffineExpr dim : shape) {
    if (isa<AffineConstantExpr>(dim))
      continue;
    FailureOr<Value> size = materialize(dim, loc);
    if (failed(size))
      return failure();
    sizes.push_back(*size);
  }
  return sizes;
}

//===----------------------------------------------------------------------===//
// NodeImporter
//===----------------------------------------------------------------------===//

InFlightDiagnostic NodeImporter::emitError() const {
  return mlir::emitError(loc) << node.op_type() << ": ";
}

std::string NodeImporter::describe() const {
  auto name = dyn_cast<NameLoc>(loc);
  return "node '" + (name ? name.getName().str() : node.op_type()) + "'";
}

const onnx::AttributeProto *NodeImporter::getAttr(StringRef name) const {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t NodeImporter::getIntAttr(StringRef name, int64_t defaultValue) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->i() : defaultValue;
}

float NodeImporter::getFloatAttr(StringRef name, float defaultValue) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->f() : defaultValue;
}

std::string NodeImporter::getStringAttr(StringRef name,
                                        StringRef defaultValue) const {
  const onnx::AttributeProto *attr = getAttr(name);
  return attr ? attr->s() : defaultValue.str();
}

std::optional<SmallVector<int64_t>>
NodeImporter::getIntsAttr(StringRef name) const {
  const onnx::AttributeProto *attr = getAttr(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

FailureOr<Value> NodeImporter::getOperand(unsigned i) const {
  if (i >= operands.size() || !operands[i])
    return emitError() << "missing input #" << i;
  return operands[i];
}

FailureOr<std::optional<SmallVector<int64_t>>>
NodeImporter::getIntsFromAttrOrInput(StringRef attrName,
                                     unsigned inputIndex) const {
  if (std::optional<SmallVector<int64_t>> ints = getIntsAttr(attrName))
    return ints;
  if (inputIndex >= operands.size() || !operands[inputIndex])
    return std::optional<SmallVector<int64_t>>();
  const std::string &name = node.input(inputIndex);
  if (std::optional<SmallVector<int64_t>> ints = graph.getConstantInts(name))
    return ints;
  return emitError() << "input '" << name << "' (" << attrName
                     << ") must be a constant integer tensor";
}

FailureOr<std::optional<SymbolicInts>>
NodeImporter::getSymbolicIntsFromAttrOrInput(StringRef attrName,
                                             unsigned inputIndex) const {
  if (std::optional<SmallVector<int64_t>> ints = getIntsAttr(attrName))
    return std::optional<SymbolicInts>(
        kiln::getConstantInts(b.getContext(), *ints));
  if (inputIndex >= operands.size() || !operands[inputIndex])
    return std::optional<SymbolicInts>();
  const std::string &name = node.input(inputIndex);
  if (std::optional<SymbolicInts> ints = graph.getSymbolicInts(name))
    return ints;
  return emitError() << "input '" << name << "' (" << attrName
                     << ") must be computed from constants and the inputs' "
                        "shapes; Kiln does not take it from tensor data";
}

FailureOr<int64_t> NodeImporter::normalizeAxis(int64_t axis,
                                               int64_t rank) const {
  if (axis < -rank || axis >= rank)
    return emitError() << "axis " << axis << " is out of range for rank "
                       << rank;
  return axis < 0 ? axis + rank : axis;
}

/// The constant `op` folds to (through its op folder) when all its operands
/// are constants; null if none.
static DenseElementsAttr foldToConstant(Operation *op) {
  SmallVector<Attribute> operands;
  for (Value operand : op->getOperands()) {
    auto constant = operand.getDefiningOp<ConstantOp>();
    if (!constant)
      return {};
    operands.push_back(constant.getValue());
  }
  SmallVector<OpFoldResult> results;
  // Ops without a folder of their own (Floor, Relu, ...) still evaluate.
  if (failed(op->fold(operands, results)) || results.size() != 1)
    return dyn_cast_if_present<DenseElementsAttr>(
        dyn_cast_if_present<Attribute>(foldConstantOperands(op, operands)));
  // A fold to an operand (a cast to the same type) is that constant.
  if (auto value = dyn_cast<Value>(results[0]))
    if (auto constant = value.getDefiningOp<ConstantOp>())
      return dyn_cast<DenseElementsAttr>(constant.getValue());
  return dyn_cast_if_present<DenseElementsAttr>(
      dyn_cast_if_present<Attribute>(results[0]));
}

LogicalResult GraphImporter::checkNewShapes(Operation *lastBefore,
                                            Location loc) {
  Block *block = builder.getInsertionBlock();
  if (block->empty())
    return success();
  Operation *first = lastBefore ? lastBefore->getNextNode() : &block->front();
  for (Operation *op = first; op; op = op->getNextNode()) {
    WalkResult walk = op->walk([&](Operation *nested) {
      for (Type type : nested->getResultTypes()) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor)
          continue;
        // Sizes multiplied in int64 wrapped: [2^63-1, 2^63-1] passed a
        // Reshape of one element and read far outside it at run time.
        int64_t elements = 1;
        for (int64_t dim : tensor.getShape())
          if (!ShapedType::isDynamic(dim) &&
              llvm::MulOverflow(elements, dim, elements)) {
            emitError(loc) << "a result of shape " << tensor
                           << " has more elements than an int64 can count";
            return WalkResult::interrupt();
          }
        // A dynamic size counts as 1 here: its bound is checked per call.
        int64_t bytes = 0;
        int64_t elementBytes =
            std::max<int64_t>(getElementBytes(tensor.getElementType()), 1);
        if (llvm::MulOverflow(elements, elementBytes, bytes) ||
            static_cast<uint64_t>(bytes) > maxTensorBytes) {
          emitError(loc) << "a result of shape " << tensor
                         << " takes more than the " << maxTensorBytes
                         << " bytes a tensor may take (--max-tensor-size)";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

LogicalResult GraphImporter::foldNewOps(Operation *lastBefore,
                                        SmallVectorImpl<Value> &results) {
  Block *block = builder.getInsertionBlock();
  if (block->empty())
    return success();
  Operation *op = lastBefore ? lastBefore->getNextNode() : &block->front();
  auto replace = [&](Operation *op, DenseElementsAttr folded) {
    builder.setInsertionPoint(op);
    Value constant = ConstantOp::create(builder, op->getLoc(), folded);
    op->getResult(0).replaceAllUsesWith(constant);
    llvm::replace(results, Value(op->getResult(0)), constant);
    op->erase();
  };
  while (op) {
    Operation *next = op->getNextNode();
    auto type = op->getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
    bool folded = false;
    if (type && !isa<ConstantOp>(op)) {
      if (DenseElementsAttr value = foldToConstant(op)) {
        replace(op, value);
        folded = true;
      }
    }
    if (!folded && type) {
      if (std::optional<SymbolicInts> elements = evaluateSymbolicInts(
              op, [&](Value v) { return getContents(v); })) {
        SmallVector<int64_t> sizes = getStaticSizes(*elements);
        if (!llvm::is_contained(sizes, ShapedType::kDynamic))
          replace(op, getShapeElementsAttr(type, sizes));
        else
          contents[op->getResult(0)] = std::move(*elements);
        folded = !llvm::is_contained(sizes, ShapedType::kDynamic);
      }
    }
    if (!folded && type && !type.hasStaticShape() &&
        !shapes.count(op->getResult(0))) {
      FailureOr<SymbolicInts> shape =
          inferSymbolicShape(op, [&](Value v) { return getShape(v); });
      if (failed(shape))
        return op->emitError()
               << "cannot tell how the dynamic dimensions of "
               << op->getName() << " follow from its inputs' "
               << "(named dimensions that broadcast against each other?)";
      shapes[op->getResult(0)] = std::move(*shape);
    }
    op = next;
  }
  builder.setInsertionPointToEnd(block);
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        Location loc) {
  const std::string &domain = node.domain();
  OpImportFn importFn = nullptr;
  if (domain.empty() || domain == "ai.onnx")
    importFn = lookupOpImporter(node.op_type());
  else if (domain == "com.microsoft")
    importFn = lookupMicrosoftOpImporter(node.op_type());
  else if (domain == "ai.onnx.preview.training")
    importFn = lookupTrainingOpImporter(node.op_type());
  else if (domain == kKilnOnnxDomain)
    importFn = lookupKilnOpImporter(node.op_type());
  // The location names the node; the message names the rest.
  if (!importFn)
    return emitError(loc) << "unsupported ONNX op '" << node.op_type()
                          << "' (domain '"
                          << (domain.empty() ? "ai.onnx" : domain)
                          << "', opset " << getOpset(domain) << ")";

  NodeImporter importer(*this, node, loc);
  for (const std::string &input : node.input()) {
    if (input.empty() || lookupSequence(input)) {
      importer.operands.push_back(Value());
      continue;
    }
    FailureOr<Value> value = lookup(input, loc);
    if (failed(value))
      return failure();
    importer.operands.push_back(*value);
  }
  Block *block = builder.getInsertionBlock();
  Operation *lastBefore = block->empty() ? nullptr : &block->back();
  bool widen = (domain.empty() || domain == "ai.onnx") &&
               computesInWideTypes(node.op_type());
  if (failed(widen ? importInComputeTypes(importer, importFn)
                   : importFn(importer)))
    return failure();
  if (failed(checkNewShapes(lastBefore, loc)) ||
      failed(foldNewOps(lastBefore, importer.results)))
    return failure();
  assert(importer.results.size() <= static_cast<size_t>(node.output_size()) &&
         "op importer produced more results than the node has");
  for (auto [name, value] : llvm::zip(node.output(), importer.results)) {
    if (name.empty())
      continue;
    producers[name] = &node;
    bindValue(name, value);
    // Shape inference types every output it can; for the rest an integer
    // result as wide as the node's first input has that input's signedness.
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    bool isUnsigned = importer.isUnsignedOperand(0) &&
                      getElementType(element.getContext(),
                                     getValueType(node.input(0))) == element;
    if (!getValueType(name) && isa<IntegerType>(element))
      setValueType(name, getOnnxType(element, isUnsigned));
  }
  return success();
}
