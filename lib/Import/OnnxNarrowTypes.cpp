//===- OnnxNarrowTypes.cpp - elementwise ops on other element types -------===//
//
// Kiln computes on f32, f64, i32 and i64. ONNX's elementwise ops (and
// Softmax, MatMul, Einsum, TopK and the reductions) also take int8, int16
// (signed or not), uint32, float16 and bfloat16: their operands are
// widened (i32 or i64, zero-extended where unsigned; f32), the op is
// imported as usual, and its results of the wide type are narrowed back.
// Integer results wrap, as ONNX's do; float16 results are rounded once,
// from f32. uint64 is computed in i64, where only ordering and division
// tell unsigned numbers from signed ones: ordering ops compare values
// shifted by 2^63, division divides as unsigned.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The type kiln computes `narrow` in, or null if it computes in `narrow`.
Type getComputeType(Type narrow, bool isUnsigned) {
  MLIRContext *context = narrow.getContext();
  if (narrow.isInteger(8) || narrow.isInteger(16))
    return IntegerType::get(context, 32);
  // uint32 has no room in i32 for its upper half.
  if (narrow.isInteger(32) && isUnsigned)
    return IntegerType::get(context, 64);
  if (narrow.isF16() || narrow.isBF16())
    return Float32Type::get(context);
  return nullptr;
}

Value castElements(NodeImporter &node, Value value, Type elementType,
                   bool isUnsigned) {
  auto type = cast<RankedTensorType>(value.getType());
  auto cast = CastOp::create(
      node.b, node.loc, RankedTensorType::get(type.getShape(), elementType),
      value);
  if (isUnsigned)
    cast.setInputUnsigned(true);
  // A dynamic shape is inferred with the node's other new ops, once the
  // op computing `value` has its own.
  return cast;
}

} // namespace

bool kiln::computesInWideTypes(StringRef opType) {
  static const llvm::StringSet<> ops = {"Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Pow",
                                        "Mod",
                                        "Neg",
                                        "Abs",
                                        "Relu",
                                        "Sign",
                                        "Min",
                                        "Max",
                                        "Sum",
                                        "Mean",
                                        "Clip",
                                        "Less",
                                        "LessOrEqual",
                                        "Greater",
                                        "GreaterOrEqual",
                                        "Equal",
                                        "Where",
                                        "Exp",
                                        "Log",
                                        "Sqrt",
                                        "Reciprocal",
                                        "Tanh",
                                        "Sigmoid",
                                        "Erf",
                                        "Sin",
                                        "Cos",
                                        "Tan",
                                        "Floor",
                                        "Ceil",
                                        "Round",
                                        "LeakyRelu",
                                        "PRelu",
                                        "Elu",
                                        "Selu",
                                        "Celu",
                                        "ThresholdedRelu",
                                        "HardSigmoid",
                                        "HardSwish",
                                        "Softplus",
                                        "Softsign",
                                        "Mish",
                                        "Swish",
                                        "Gelu",
                                        "Shrink",
                                        "IsNaN",
                                        "IsInf",
                                        "BitShift",
                                        "BitwiseAnd",
                                        "BitwiseOr",
                                        "BitwiseXor",
                                        "BitwiseNot",
                                        "Softmax",
                                        "LogSoftmax",
                                        "MatMul",
                                        "Einsum",
                                        "RotaryEmbedding",
                                        "RNN",
                                        "GRU",
                                        "LSTM",
                                        "TopK",
                                        "CumSum",
                                        "CumProd",
                                        "ReduceSum",
                                        "ReduceMean",
                                        "ReduceMax",
                                        "ReduceMin",
                                        "ReduceProd",
                                        "ReduceL1",
                                        "ReduceL2",
                                        "ReduceSumSquare",
                                        "ReduceLogSum",
                                        "ReduceLogSumExp"};
  return ops.contains(opType);
}

namespace {

bool isUint64Operand(NodeImporter &node, unsigned i) {
  return node.operands[i] &&
         getElementTypeOrSelf(node.operands[i].getType()).isInteger(64) &&
         node.isUnsignedOperand(i);
}

/// `value` + 2^63, which maps the unsigned order of 64-bit integers onto
/// the signed one (and back: adding it twice wraps to the identity).
FailureOr<Value> flipSignBit(NodeImporter &node, Value value) {
  Type i64 = getElementTypeOrSelf(value.getType());
  return createInferred<AddOp>(
      node, {value, createScalar(node, i64, static_cast<double>(INT64_MIN))});
}

/// Imports an elementwise node on uint64 operands.
LogicalResult importOnUint64(NodeImporter &node, OpImportFn importFn) {
  StringRef opType = node.node.op_type();
  if (opType == "Div" || opType == "Mod") {
    // Unsigned remainders are never negative: both Mod forms agree.
    if (failed(
            requireSameElementType(node, node.operands[0], node.operands[1])))
      return failure();
    DivOp::Properties props;
    props.is_unsigned = node.b.getUnitAttr();
    FailureOr<Value> result =
        opType == "Div"
            ? createInferred<DivOp>(node, {node.operands[0], node.operands[1]},
                                    props)
            : createInferred<RemOp>(node, {node.operands[0], node.operands[1]},
                                    {props.is_unsigned});
    if (failed(result))
      return failure();
    node.results.push_back(*result);
    return success();
  }
  static const llvm::StringSet<> ordering = {
      "Min", "Max", "Clip", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
  // TopK orders uint64 itself.
  static const llvm::StringSet<> signless = {
      "Add",       "Sub",        "Mul",        "Sum",
      "Equal",     "Where",      "BitShift",   "MatMul",
      "Einsum",    "CumSum",     "CumProd",    "BitwiseAnd",
      "BitwiseOr", "BitwiseXor", "BitwiseNot", "TopK"};
  // A uint64 exponent of a float base is cast to the base's type, as
  // unsigned.
  bool isExponent = opType == "Pow" && !isUint64Operand(node, 0);
  if (signless.contains(opType) || isExponent)
    return importFn(node);
  if (!ordering.contains(opType))
    return node.emitError() << opType << " of UINT64 operands is not supported";
  for (Value &operand : node.operands) {
    if (!operand || !getElementTypeOrSelf(operand.getType()).isInteger(64))
      continue;
    FailureOr<Value> flipped = flipSignBit(node, operand);
    if (failed(flipped))
      return failure();
    operand = *flipped;
  }
  if (failed(importFn(node)))
    return failure();
  for (Value &result : node.results) {
    if (!getElementTypeOrSelf(result.getType()).isInteger(64))
      continue;
    FailureOr<Value> flipped = flipSignBit(node, result);
    if (failed(flipped))
      return failure();
    result = *flipped;
  }
  return success();
}

} // namespace

LogicalResult kiln::importInComputeTypes(NodeImporter &node,
                                         OpImportFn importFn) {
  for (unsigned i = 0; i < node.operands.size(); ++i)
    if (isUint64Operand(node, i))
      return importOnUint64(node, importFn);
  Type narrow, wide;
  for (auto [i, operand] : llvm::enumerate(node.operands)) {
    if (!operand)
      continue;
    Type element = getElementTypeOrSelf(operand.getType());
    Type compute = getComputeType(element, node.isUnsignedOperand(i));
    if (!compute)
      continue;
    operand = castElements(node, operand, compute, node.isUnsignedOperand(i));
    if (!narrow) {
      narrow = element;
      wide = compute;
    }
  }
  if (failed(importFn(node)))
    return failure();
  if (!narrow)
    return success();
  for (Value &result : node.results)
    if (getElementTypeOrSelf(result.getType()) == wide)
      result = castElements(node, result, narrow, /*isUnsigned=*/false);
  return success();
}
