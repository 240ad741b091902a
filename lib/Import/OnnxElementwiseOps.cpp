//===- OnnxElementwiseOps.cpp - ONNX comparisons, logic and activations ---===//
//
// Rounding, minimum and maximum, comparisons and logic map onto kiln ops one
// to one. The activations ONNX defines as formulas (LeakyRelu, Elu, Selu,
// HardSigmoid, Softplus, Mish, Clip, ...) are imported as those formulas over
// the elementwise kiln ops, which the lowering fuses back into one loop.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

/// The node's one input, which must hold f32 or f64.
FailureOr<Value> getFloatInput(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireReal(node, *input)))
    return failure();
  return input;
}

/// The node's result as `formula` of its one float input.
template <typename Build>
LogicalResult importFloatFormula(NodeImporter &node, Build formula) {
  FailureOr<Value> x = getFloatInput(node);
  if (failed(x))
    return failure();
  Formula f(node, *x);
  return f.result(formula(f, *x));
}

LogicalResult requireBool(NodeImporter &node, Value value) {
  if (getElementTypeOrSelf(value.getType()).isInteger(1))
    return success();
  return node.emitError() << "input of type "
                          << getElementTypeOrSelf(value.getType())
                          << " is not supported; the op takes booleans";
}

template <typename OpTy> LogicalResult importFloatUnary(NodeImporter &node) {
  FailureOr<Value> x = getFloatInput(node);
  if (failed(x))
    return failure();
  node.results.push_back(OpTy::create(node.b, node.loc, *x));
  return success();
}

LogicalResult importNot(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireBool(node, *x)))
    return failure();
  node.results.push_back(NotOp::create(node.b, node.loc, *x));
  return success();
}

/// Less, LessOrEqual, and Greater and GreaterOrEqual with swapped operands.
template <typename OpTy, bool swapped>
LogicalResult importOrder(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs) || failed(requireNumeric(node, *lhs)) ||
      failed(requireSameElementType(node, *lhs, *rhs)))
    return failure();
  if (swapped)
    std::swap(lhs, rhs);
  return addInferredResult<OpTy>(node, {*lhs, *rhs});
}

template <typename OpTy> LogicalResult importLogical(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs) || failed(requireBool(node, *lhs)) ||
      failed(requireBool(node, *rhs)))
    return failure();
  return addInferredResult<OpTy>(node, {*lhs, *rhs});
}

/// Min, Max, Sum and Mean: the op folded over any number of inputs, all
/// broadcast together; Mean divides the sum by their count.
template <typename OpTy, bool mean = false>
LogicalResult importVariadic(NodeImporter &node) {
  if (node.operands.empty())
    return node.emitError() << "needs at least one input";
  FailureOr<Value> result = node.getOperand(0);
  if (failed(result) || failed(requireNumeric(node, *result)))
    return failure();
  if (mean && !isa<FloatType>(getElementTypeOrSelf(result->getType())))
    return node.emitError() << "Mean is supported on floats only";
  Formula f(node, *result);
  for (unsigned i = 1; i < node.operands.size(); ++i) {
    FailureOr<Value> next = node.getOperand(i);
    if (failed(next) || failed(requireSameElementType(node, *result, *next)))
      return failure();
    // A step that failed (inputs that don't broadcast) has no value to
    // check the next input against (found by fuzz-import).
    result = f.apply<OpTy>(result, next);
    if (failed(result))
      return failure();
  }
  if (mean && node.operands.size() > 1)
    result = f.apply<DivOp>(result, f.constant(node.operands.size()));
  return f.result(result);
}

LogicalResult importReciprocal(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<DivOp>(f.constant(1), x);
  });
}

/// -1, 0 or 1; x * 0 where x is neither positive nor negative keeps a NaN.
LogicalResult importSign(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireNumeric(node, *x)))
    return failure();
  Formula f(node, *x);
  FailureOr<Value> zero = f.constant(0);
  return f.result(f.select(f.apply<LessOp>(zero, *x), f.constant(1),
                           f.select(f.apply<LessOp>(*x, zero), f.constant(-1),
                                    f.apply<MulOp>(*x, zero))));
}

/// x where x >= 0, else `negative` (which may read x).
template <typename Negative>
LogicalResult importPiecewise(NodeImporter &node, Negative negative) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.select(f.apply<LessOp>(x, f.constant(0)), negative(f, x), x);
  });
}

LogicalResult importLeakyRelu(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 0.01f);
  return importPiecewise(node, [&](Formula &f, Value x) {
    return f.apply<MulOp>(x, f.constant(alpha));
  });
}

LogicalResult importPRelu(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), slope = node.getOperand(1);
  if (failed(input) || failed(slope) ||
      failed(requireSameElementType(node, *input, *slope)))
    return failure();
  // Before opset 7 a 1-D slope holds one value per channel (axis 1), the
  // broadcast PyTorch's exporter relied on.
  auto xType = cast<RankedTensorType>(input->getType());
  auto slopeType = cast<RankedTensorType>(slope->getType());
  if (node.getOpset() < 7 && slopeType.getRank() == 1 && xType.getRank() > 2 &&
      slopeType.getDimSize(0) == xType.getDimSize(1) &&
      slopeType.getDimSize(0) != xType.getShape().back()) {
    SmallVector<int64_t> perChannel(xType.getRank() - 1, 1);
    perChannel[0] = slopeType.getDimSize(0);
    slope = createReshape(node, *slope, perChannel);
  }
  return importPiecewise(
      node, [&](Formula &f, Value x) { return f.apply<MulOp>(x, slope); });
}

LogicalResult importElu(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 1.0f);
  return importPiecewise(node, [&](Formula &f, Value x) {
    return f.apply<MulOp>(f.constant(alpha),
                          f.apply<SubOp>(f.apply<ExpOp>(x), f.constant(1)));
  });
}

LogicalResult importSelu(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 1.67326319217681884765625f);
  float gamma = node.getFloatAttr("gamma", 1.05070102214813232421875f);
  return importFloatFormula(node, [&](Formula &f, Value x) {
    FailureOr<Value> negative =
        f.apply<SubOp>(f.apply<MulOp>(f.constant(alpha), f.apply<ExpOp>(x)),
                       f.constant(alpha));
    return f.apply<MulOp>(
        f.constant(gamma),
        f.select(f.apply<LessEqualOp>(x, f.constant(0)), negative, x));
  });
}

/// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
LogicalResult importCelu(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 1.0f);
  return importFloatFormula(node, [&](Formula &f, Value x) {
    FailureOr<Value> zero = f.constant(0);
    FailureOr<Value> expm1 = f.apply<SubOp>(
        f.apply<ExpOp>(f.apply<DivOp>(x, f.constant(alpha))), f.constant(1));
    return f.apply<AddOp>(
        f.apply<MaxOp>(zero, x),
        f.apply<MinOp>(zero, f.apply<MulOp>(f.constant(alpha), expm1)));
  });
}

LogicalResult importThresholdedRelu(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 1.0f);
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.select(f.apply<LessOp>(f.constant(alpha), x), x, f.constant(0));
  });
}

/// max(0, min(1, alpha * x + beta)).
FailureOr<Value> hardSigmoid(Formula &f, Value x, float alpha, float beta) {
  FailureOr<Value> linear =
      f.apply<AddOp>(f.apply<MulOp>(x, f.constant(alpha)), f.constant(beta));
  return f.apply<MaxOp>(f.constant(0), f.apply<MinOp>(f.constant(1), linear));
}

LogicalResult importHardSigmoid(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return hardSigmoid(f, x, node.getFloatAttr("alpha", 0.2f),
                       node.getFloatAttr("beta", 0.5f));
  });
}

LogicalResult importHardSwish(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<MulOp>(x, hardSigmoid(f, x, 1.0f / 6.0f, 0.5f));
  });
}

/// log(exp(x) + 1), as ONNX defines it.
FailureOr<Value> softplus(Formula &f, Value x) {
  return f.apply<LogOp>(f.apply<AddOp>(f.apply<ExpOp>(x), f.constant(1)));
}

LogicalResult importSoftplus(NodeImporter &node) {
  return importFloatFormula(
      node, [&](Formula &f, Value x) { return softplus(f, x); });
}

LogicalResult importSoftsign(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<DivOp>(x, f.apply<AddOp>(f.constant(1), f.apply<AbsOp>(x)));
  });
}

LogicalResult importMish(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<MulOp>(x, f.apply<TanhOp>(softplus(f, x)));
  });
}

/// min(max(x, low), high): bounds from attributes before opset 11, from
/// optional scalar inputs since.
LogicalResult importClip(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireNumeric(node, *x)))
    return failure();
  Formula f(node, *x);
  FailureOr<Value> result = *x;
  auto bound = [&](unsigned input, StringRef attr) -> FailureOr<Value> {
    if (node.getOpset() < 11) {
      if (!node.getAttr(attr))
        return Value();
      return f.constant(node.getFloatAttr(attr, 0));
    }
    if (input >= node.operands.size() || !node.operands[input])
      return Value();
    Value value = node.operands[input];
    if (cast<RankedTensorType>(value.getType()).getRank() != 0)
      return node.emitError() << "the " << attr << " bound must be a scalar";
    if (failed(requireSameElementType(node, *x, value)))
      return failure();
    return value;
  };
  FailureOr<Value> low = bound(1, "min"), high = bound(2, "max");
  if (failed(low) || failed(high))
    return failure();
  if (*low)
    result = f.apply<MaxOp>(result, low);
  if (*high)
    result = f.apply<MinOp>(result, high);
  return f.result(result);
}

/// x * sigmoid(alpha * x).
LogicalResult importSwish(NodeImporter &node) {
  float alpha = node.getFloatAttr("alpha", 1.0f);
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<MulOp>(
        x, f.apply<SigmoidOp>(alpha == 1.0f
                                  ? FailureOr<Value>(x)
                                  : f.apply<MulOp>(x, f.constant(alpha))));
  });
}

/// Gelu: x * Phi(x) with the normal CDF by erf, or ONNX's tanh
/// approximation.
LogicalResult importGelu(NodeImporter &node) {
  std::string approximate = node.getStringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return node.emitError()
           << "approximate must be none or tanh, not '" << approximate << "'";
  return importFloatFormula(node, [&](Formula &f, Value x) {
    FailureOr<Value> inner =
        approximate == "tanh"
            ? f.apply<TanhOp>(f.apply<MulOp>(
                  f.constant(std::sqrt(2 / M_PI)),
                  f.apply<AddOp>(
                      x,
                      f.apply<MulOp>(f.constant(0.044715),
                                     f.apply<MulOp>(x, f.apply<MulOp>(x, x))))))
            : f.apply<ErfOp>(f.apply<MulOp>(x, f.constant(M_SQRT1_2)));
    return f.apply<MulOp>(f.apply<MulOp>(x, f.constant(0.5)),
                          f.apply<AddOp>(f.constant(1), inner));
  });
}

/// x != x holds for NaN only.
LogicalResult importIsNaN(NodeImporter &node) {
  return importFloatFormula(node, [&](Formula &f, Value x) {
    return f.apply<NotOp>(f.apply<EqualOp>(x, x));
  });
}

LogicalResult importIsInf(NodeImporter &node) {
  bool positive = node.getIntAttr("detect_positive", 1) != 0;
  bool negative = node.getIntAttr("detect_negative", 1) != 0;
  return importFloatFormula(node, [&](Formula &f, Value x) {
    double inf = std::numeric_limits<double>::infinity();
    FailureOr<Value> isPositive = f.apply<EqualOp>(x, f.constant(inf));
    FailureOr<Value> isNegative = f.apply<EqualOp>(x, f.constant(-inf));
    if (positive && negative)
      return f.apply<OrOp>(isPositive, isNegative);
    if (positive)
      return isPositive;
    if (negative)
      return isNegative;
    // Detecting neither: false everywhere (x < x never holds).
    return f.apply<LessOp>(x, x);
  });
}

/// x + bias below -lambd, x - bias above lambd, else 0.
LogicalResult importShrink(NodeImporter &node) {
  float lambd = node.getFloatAttr("lambd", 0.5f);
  float bias = node.getFloatAttr("bias", 0.0f);
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireNumeric(node, *x)))
    return failure();
  Formula f(node, *x);
  return f.result(
      f.select(f.apply<LessOp>(*x, f.constant(-lambd)),
               f.apply<AddOp>(*x, f.constant(bias)),
               f.select(f.apply<LessOp>(f.constant(lambd), *x),
                        f.apply<SubOp>(*x, f.constant(bias)), f.constant(0))));
}

/// fmod = 1: C's fmod, with the dividend's sign; fmod = 0: the divisor's
/// sign, as Python's %, by adding the divisor to a non-zero remainder of the
/// other sign.
LogicalResult importMod(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs) || failed(requireNumeric(node, *lhs)) ||
      failed(requireSameElementType(node, *lhs, *rhs)))
    return failure();
  bool fmod = node.getIntAttr("fmod", 0) != 0;
  Formula f(node, *lhs);
  FailureOr<Value> remainder = f.apply<RemOp>(*lhs, *rhs);
  if (fmod)
    return f.result(remainder);
  FailureOr<Value> zero = f.constant(0);
  FailureOr<Value> otherSign = f.apply<XorOp>(f.apply<LessOp>(remainder, zero),
                                              f.apply<LessOp>(*rhs, zero));
  FailureOr<Value> nonZero = f.apply<NotOp>(f.apply<EqualOp>(remainder, zero));
  return f.result(f.select(f.apply<AndOp>(otherSign, nonZero),
                           f.apply<AddOp>(remainder, *rhs), remainder));
}

/// The node's operands, `count` of them, of one integer type (i32 or i64,
/// narrower ones widened).
FailureOr<SmallVector<Value>> getIntegerOperands(NodeImporter &node,
                                                 unsigned count) {
  SmallVector<Value> operands;
  for (unsigned i = 0; i < count; ++i) {
    FailureOr<Value> operand = node.getOperand(i);
    if (failed(operand) ||
        (i > 0 && failed(requireSameElementType(node, operands[0], *operand))))
      return failure();
    operands.push_back(*operand);
  }
  Type element = getElementTypeOrSelf(operands[0].getType());
  if (!element.isInteger(32) && !element.isInteger(64))
    return node.emitError() << "input of type " << element
                            << " is not supported; the op takes integers";
  return operands;
}

/// BitwiseAnd, BitwiseOr and BitwiseXor: kiln's logical ops, which work
/// bit by bit on integers.
template <typename OpTy> LogicalResult importBitwise(NodeImporter &node) {
  FailureOr<SmallVector<Value>> operands = getIntegerOperands(node, 2);
  if (failed(operands))
    return failure();
  return addInferredResult<OpTy>(node, *operands);
}

LogicalResult importBitwiseNot(NodeImporter &node) {
  FailureOr<SmallVector<Value>> operands = getIntegerOperands(node, 1);
  if (failed(operands))
    return failure();
  node.results.push_back(NotOp::create(node.b, node.loc, (*operands)[0]));
  return success();
}

/// BitShift on integers, narrower ones widened (so a left shift wraps when
/// narrowed back, and a shift by their own width or more leaves what
/// shifting every bit out does); a signed right shift is arithmetic.
LogicalResult importBitShift(NodeImporter &node) {
  FailureOr<SmallVector<Value>> operands = getIntegerOperands(node, 2);
  if (failed(operands))
    return failure();
  std::string direction = node.getStringAttr("direction", "");
  if (direction == "LEFT")
    return addInferredResult<ShiftLeftOp>(node, *operands);
  if (direction == "RIGHT") {
    ShiftRightOp::Properties props;
    if (!node.isUnsignedOperand(0))
      props.arithmetic = node.b.getUnitAttr();
    return addInferredResult<ShiftRightOp>(node, *operands, props);
  }
  return node.emitError() << "direction must be LEFT or RIGHT, not '"
                          << direction << "'";
}

} // namespace

OpImportFn kiln::lookupElementwiseOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("Floor", importFloatUnary<FloorOp>)
      .Case("Ceil", importFloatUnary<CeilOp>)
      .Case("Round", importFloatUnary<RoundOp>)
      .Case("Not", importNot)
      .Case("BitShift", importBitShift)
      .Case("BitwiseAnd", importBitwise<AndOp>)
      .Case("BitwiseOr", importBitwise<OrOp>)
      .Case("BitwiseXor", importBitwise<XorOp>)
      .Case("BitwiseNot", importBitwiseNot)
      .Case("And", importLogical<AndOp>)
      .Case("Or", importLogical<OrOp>)
      .Case("Xor", importLogical<XorOp>)
      .Case("Less", importOrder<LessOp, false>)
      .Case("LessOrEqual", importOrder<LessEqualOp, false>)
      .Case("Greater", importOrder<LessOp, true>)
      .Case("GreaterOrEqual", importOrder<LessEqualOp, true>)
      .Case("Min", importVariadic<MinOp>)
      .Case("Max", importVariadic<MaxOp>)
      .Case("Sum", importVariadic<AddOp>)
      .Case("Mean", importVariadic<AddOp, /*mean=*/true>)
      .Case("Reciprocal", importReciprocal)
      .Case("Sign", importSign)
      .Case("LeakyRelu", importLeakyRelu)
      .Case("PRelu", importPRelu)
      .Case("Elu", importElu)
      .Case("Selu", importSelu)
      .Case("Celu", importCelu)
      .Case("ThresholdedRelu", importThresholdedRelu)
      .Case("HardSigmoid", importHardSigmoid)
      .Case("HardSwish", importHardSwish)
      .Case("Softplus", importSoftplus)
      .Case("Softsign", importSoftsign)
      .Case("Mish", importMish)
      .Case("Clip", importClip)
      .Case("IsNaN", importIsNaN)
      .Case("IsInf", importIsInf)
      .Case("Shrink", importShrink)
      .Case("Mod", importMod)
      .Case("Swish", importSwish)
      .Case("Gelu", importGelu)
      .Default(nullptr);
}
