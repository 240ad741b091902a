//===- OnnxNarrowTypes.cpp - elementwise ops on narrow element types ------===//
//
// Kiln computes on f32, i32 and i64. ONNX's elementwise ops also take int8,
// int16 (signed or not), float16 and bfloat16: their operands are widened
// (i32, zero-extended where unsigned; f32), the op is imported as usual, and
// its results of the wide type are narrowed back. Integer results wrap, as
// ONNX's do; float16 results are rounded once, from f32.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The type kiln computes `narrow` in, or null if it computes in `narrow`.
Type getComputeType(Type narrow) {
  MLIRContext *context = narrow.getContext();
  if (narrow.isInteger(8) || narrow.isInteger(16))
    return IntegerType::get(context, 32);
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
  if (!type.hasStaticShape())
    node.graph.setShape(cast, node.graph.getShape(value));
  return cast;
}

} // namespace

bool kiln::isElementwiseOnnxOp(StringRef opType) {
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
                                        "Shrink",
                                        "IsNaN",
                                        "IsInf"};
  return ops.contains(opType);
}

LogicalResult kiln::importInComputeTypes(NodeImporter &node,
                                         OpImportFn importFn) {
  Type narrow, wide;
  for (auto [i, operand] : llvm::enumerate(node.operands)) {
    if (!operand)
      continue;
    Type element = getElementTypeOrSelf(operand.getType());
    Type compute = getComputeType(element);
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
