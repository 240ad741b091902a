//===- ElementwiseLowering.cpp - kiln elementwise ops to linalg.generic ---===//
//
// Each elementwise kiln op becomes one linalg.generic whose indexing maps
// express ONNX broadcasting, so no broadcast is ever materialized.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Integer division that never traps: x / 0 gives 0 and INT64_MIN / -1 wraps
/// to INT64_MIN, where LLVM's sdiv would be undefined.
Value createSafeSignedDiv(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  Type type = lhs.getType();
  Value zero = createScalarConstant(b, loc, type, 0);
  Value one = createScalarConstant(b, loc, type, 1);
  Value minusOne = createScalarConstant(b, loc, type, -1);
  Value isZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, zero);
  Value isMinusOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, minusOne);
  Value unsafe = arith::OrIOp::create(b, loc, isZero, isMinusOne);
  Value divisor = arith::SelectOp::create(b, loc, unsafe, one, rhs);
  Value quotient = arith::DivSIOp::create(b, loc, lhs, divisor);
  // x / -1 == 0 - x, which wraps for INT64_MIN as two's complement does.
  Value negated = arith::SubIOp::create(b, loc, zero, lhs);
  Value special = arith::SelectOp::create(b, loc, isZero, zero, negated);
  return arith::SelectOp::create(b, loc, unsafe, special, quotient);
}

/// lhs % rhs (truncated), 0 where rhs is 0 or -1 (where remsi traps or
/// has nothing to take).
Value createSafeSignedRem(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  Type type = lhs.getType();
  Value zero = createScalarConstant(b, loc, type, 0);
  Value one = createScalarConstant(b, loc, type, 1);
  Value minusOne = createScalarConstant(b, loc, type, -1);
  Value unsafe = arith::OrIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, minusOne));
  Value divisor = arith::SelectOp::create(b, loc, unsafe, one, rhs);
  Value remainder = arith::RemSIOp::create(b, loc, lhs, divisor);
  return arith::SelectOp::create(b, loc, unsafe, zero, remainder);
}

/// Unsigned lhs / rhs, or lhs % rhs with `remainder`; 0 where rhs is 0.
Value createSafeUnsignedDivision(OpBuilder &b, Location loc, Value lhs,
                                 Value rhs, bool remainder) {
  Type type = lhs.getType();
  Value zero = createScalarConstant(b, loc, type, 0);
  Value one = createScalarConstant(b, loc, type, 1);
  Value isZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, zero);
  Value divisor = arith::SelectOp::create(b, loc, isZero, one, rhs);
  Value result = remainder
                     ? arith::RemUIOp::create(b, loc, lhs, divisor).getResult()
                     : arith::DivUIOp::create(b, loc, lhs, divisor).getResult();
  return arith::SelectOp::create(b, loc, isZero, zero, result);
}

enum class Shift { Left, LogicalRight, ArithmeticRight };

/// lhs shifted by rhs; a shift out of [0, bit width), where LLVM's shifts
/// give poison, shifts every bit out (the sign fills an arithmetic one).
Value createSafeShift(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      Shift shift) {
  Type type = lhs.getType();
  int64_t bits = type.getIntOrFloatBitWidth();
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rhs,
                            createScalarConstant(b, loc, type, bits));
  // An arithmetic shift by width - 1 is what shifting every bit out leaves.
  Value amount = arith::SelectOp::create(
      b, loc, inRange, rhs,
      createScalarConstant(b, loc, type,
                           shift == Shift::ArithmeticRight ? bits - 1 : 0));
  Value zero = createScalarConstant(b, loc, type, 0);
  switch (shift) {
  case Shift::Left:
    return arith::SelectOp::create(
        b, loc, inRange, arith::ShLIOp::create(b, loc, lhs, amount), zero);
  case Shift::LogicalRight:
    return arith::SelectOp::create(
        b, loc, inRange, arith::ShRUIOp::create(b, loc, lhs, amount), zero);
  case Shift::ArithmeticRight:
    return arith::ShRSIOp::create(b, loc, lhs, amount);
  }
  llvm_unreachable("unknown shift");
}

/// f64 `value` rounded to f32 with round-to-odd: an inexact result has its
/// last bit set. Rounding that to 16 bits gives the correctly rounded f64
/// value, where two round-to-nearest steps could round twice. (LLVM has no
/// instruction for f64 to f16 and would call a runtime library that
/// artifacts do not link.)
Value createRoundToOddF32(OpBuilder &b, Location loc, Value value) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value nearest = arith::TruncFOp::create(b, loc, f32, value);
  Value back = arith::ExtFOp::create(b, loc, value.getType(), nearest);
  Value inexact =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, back, value);
  Value roundedAway = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OGT, math::AbsFOp::create(b, loc, back),
      math::AbsFOp::create(b, loc, value));
  Value bits = arith::BitcastOp::create(b, loc, i32, nearest);
  Value towardZero =
      arith::SubIOp::create(b, loc, bits, createScalarConstant(b, loc, i32, 1));
  bits = arith::SelectOp::create(b, loc, roundedAway, towardZero, bits);
  Value odd =
      arith::OrIOp::create(b, loc, bits, createScalarConstant(b, loc, i32, 1));
  bits = arith::SelectOp::create(b, loc, inexact, odd, bits);
  return arith::BitcastOp::create(b, loc, f32, bits);
}

/// The scalar computation of one elementwise kiln op on its block arguments.
Value createScalarOp(Operation *op, OpBuilder &b, Location loc, ValueRange args,
                     Type resultElementType) {
  Type type = args[0].getType();
  bool isFloat = isa<FloatType>(type);
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) -> Value {
        return isFloat
                   ? arith::AddFOp::create(b, loc, args[0], args[1]).getResult()
                   : arith::AddIOp::create(b, loc, args[0], args[1])
                         .getResult();
      })
      .Case([&](SubOp) -> Value {
        return isFloat
                   ? arith::SubFOp::create(b, loc, args[0], args[1]).getResult()
                   : arith::SubIOp::create(b, loc, args[0], args[1])
                         .getResult();
      })
      .Case([&](MulOp) -> Value {
        return isFloat
                   ? arith::MulFOp::create(b, loc, args[0], args[1]).getResult()
                   : arith::MulIOp::create(b, loc, args[0], args[1])
                         .getResult();
      })
      .Case([&](DivOp div) -> Value {
        if (isFloat)
          return arith::DivFOp::create(b, loc, args[0], args[1]);
        if (div.getIsUnsigned())
          return createSafeUnsignedDivision(b, loc, args[0], args[1],
                                            /*remainder=*/false);
        return createSafeSignedDiv(b, loc, args[0], args[1]);
      })
      .Case([&](RemOp rem) -> Value {
        if (isFloat)
          return arith::RemFOp::create(b, loc, args[0], args[1]);
        if (rem.getIsUnsigned())
          return createSafeUnsignedDivision(b, loc, args[0], args[1],
                                            /*remainder=*/true);
        return createSafeSignedRem(b, loc, args[0], args[1]);
      })
      .Case([&](PowOp) -> Value {
        return isFloat
                   ? math::PowFOp::create(b, loc, args[0], args[1]).getResult()
                   : math::IPowIOp::create(b, loc, args[0], args[1])
                         .getResult();
      })
      .Case([&](ShiftLeftOp) -> Value {
        return createSafeShift(b, loc, args[0], args[1], Shift::Left);
      })
      .Case([&](ShiftRightOp shift) -> Value {
        return createSafeShift(b, loc, args[0], args[1],
                               shift.getArithmetic() ? Shift::ArithmeticRight
                                                     : Shift::LogicalRight);
      })
      .Case([&](NegOp) -> Value {
        if (isFloat)
          return arith::NegFOp::create(b, loc, args[0]);
        return arith::SubIOp::create(
            b, loc, createScalarConstant(b, loc, type, 0), args[0]);
      })
      .Case([&](AbsOp) -> Value {
        return isFloat ? math::AbsFOp::create(b, loc, args[0]).getResult()
                       : math::AbsIOp::create(b, loc, args[0]).getResult();
      })
      .Case([&](ReluOp) -> Value {
        Value zero = createScalarConstant(b, loc, type, 0);
        // maximumf keeps NaN, as ONNX Relu does.
        return isFloat
                   ? arith::MaximumFOp::create(b, loc, args[0], zero)
                         .getResult()
                   : arith::MaxSIOp::create(b, loc, args[0], zero).getResult();
      })
      .Case([&](ExpOp) { return math::ExpOp::create(b, loc, args[0]); })
      .Case([&](LogOp) { return math::LogOp::create(b, loc, args[0]); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, args[0]); })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, args[0]); })
      .Case([&](ErfOp) { return math::ErfOp::create(b, loc, args[0]); })
      .Case([&](SinOp) { return math::SinOp::create(b, loc, args[0]); })
      .Case([&](CosOp) { return math::CosOp::create(b, loc, args[0]); })
      .Case([&](TanOp) { return math::TanOp::create(b, loc, args[0]); })
      .Case([&](AsinOp) { return math::AsinOp::create(b, loc, args[0]); })
      .Case([&](AcosOp) { return math::AcosOp::create(b, loc, args[0]); })
      .Case([&](AtanOp) { return math::AtanOp::create(b, loc, args[0]); })
      .Case([&](SinhOp) { return math::SinhOp::create(b, loc, args[0]); })
      .Case([&](CoshOp) { return math::CoshOp::create(b, loc, args[0]); })
      .Case([&](AsinhOp) { return math::AsinhOp::create(b, loc, args[0]); })
      .Case([&](AcoshOp) { return math::AcoshOp::create(b, loc, args[0]); })
      .Case([&](AtanhOp) { return math::AtanhOp::create(b, loc, args[0]); })
      .Case([&](FloorOp) { return math::FloorOp::create(b, loc, args[0]); })
      .Case([&](CeilOp) { return math::CeilOp::create(b, loc, args[0]); })
      .Case([&](RoundOp) { return math::RoundEvenOp::create(b, loc, args[0]); })
      .Case([&](NotOp) {
        // All ones: true for a boolean, ~x for an integer.
        return arith::XOrIOp::create(
            b, loc, args[0],
            createScalarConstant(b, loc, type, type.isInteger(1) ? 1 : -1));
      })
      .Case([&](MinOp) -> Value {
        // minimumf returns NaN if either operand is one, as ONNX Min does.
        return isFloat ? arith::MinimumFOp::create(b, loc, args[0], args[1])
                             .getResult()
                       : arith::MinSIOp::create(b, loc, args[0], args[1])
                             .getResult();
      })
      .Case([&](MaxOp) -> Value {
        return isFloat ? arith::MaximumFOp::create(b, loc, args[0], args[1])
                             .getResult()
                       : arith::MaxSIOp::create(b, loc, args[0], args[1])
                             .getResult();
      })
      .Case([&](AndOp) {
        return arith::AndIOp::create(b, loc, args[0], args[1]);
      })
      .Case(
          [&](OrOp) { return arith::OrIOp::create(b, loc, args[0], args[1]); })
      .Case([&](XorOp) {
        return arith::XOrIOp::create(b, loc, args[0], args[1]);
      })
      .Case([&](LessOp) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                       args[0], args[1]);
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                     args[0], args[1]);
      })
      .Case([&](LessEqualOp) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                       args[0], args[1]);
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                     args[0], args[1]);
      })
      .Case([&](SigmoidOp) -> Value {
        Value one = createScalarConstant(b, loc, type, 1);
        Value negated = arith::NegFOp::create(b, loc, args[0]);
        Value denominator = arith::AddFOp::create(
            b, loc, one, math::ExpOp::create(b, loc, negated));
        return arith::DivFOp::create(b, loc, one, denominator);
      })
      .Case([&](EqualOp) -> Value {
        if (isFloat)
          return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       args[0], args[1]);
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, args[0],
                                     args[1]);
      })
      .Case([&](SelectOp) -> Value {
        return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
      })
      .Case([&](BroadcastOp) { return args[0]; })
      .Case([&](CastOp cast) {
        return createCast(b, loc, args[0], resultElementType,
                          cast.getInputUnsigned(), cast.getResultUnsigned());
      });
}

template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    unsigned rank = resultType.getRank();
    MLIRContext *ctx = op.getContext();
    // The tensors: a broadcast's result sizes are index operands besides.
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (Value operand : adaptor.getOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        continue;
      inputs.push_back(operand);
      maps.push_back(getBroadcastMap(ctx, type.getShape(),
                                     resultType.getShape(), rank));
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Type resultElementType = resultType.getElementType();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, inputs,
        createEmptyTensor(rewriter, loc, resultType,
                          getDynamicResultSizes(rewriter, op)),
        maps, iterators,
        [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
          Value result = createScalarOp(op, b, bodyLoc, args.drop_back(),
                                        resultElementType);
          linalg::YieldOp::create(b, bodyLoc, result);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

Value kiln::createCast(OpBuilder &b, Location loc, Value value, Type to,
                       bool fromUnsigned, bool toUnsigned) {
  Type from = value.getType();
  if (from == to)
    return value;
  if (to.isInteger(1)) {
    Value zero = createScalarConstant(b, loc, from, 0);
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
  }
  // A bool is 0 or 1, an unsigned number.
  fromUnsigned |= from.isInteger(1);
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    if (from.isF64() && to.getIntOrFloatBitWidth() == 16)
      return arith::TruncFOp::create(b, loc, to,
                                     createRoundToOddF32(b, loc, value));
    if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
      return arith::ExtFOp::create(b, loc, to, value);
    if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      return arith::TruncFOp::create(b, loc, to, value);
    // f16 <-> bf16: exactly through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
    return arith::TruncFOp::create(b, loc, to, wide);
  }
  if (isa<FloatType>(from))
    return toUnsigned ? arith::FPToUIOp::create(b, loc, to, value).getResult()
                      : arith::FPToSIOp::create(b, loc, to, value).getResult();
  if (isa<FloatType>(to))
    return fromUnsigned
               ? arith::UIToFPOp::create(b, loc, to, value).getResult()
               : arith::SIToFPOp::create(b, loc, to, value).getResult();
  unsigned fromBits = from.getIntOrFloatBitWidth(),
           toBits = to.getIntOrFloatBitWidth();
  if (fromBits > toBits)
    return arith::TruncIOp::create(b, loc, to, value);
  if (fromBits == toBits)
    return value;
  return fromUnsigned ? arith::ExtUIOp::create(b, loc, to, value).getResult()
                      : arith::ExtSIOp::create(b, loc, to, value).getResult();
}

void kiln::populateElementwiseLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
               ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
               ElementwiseLowering<PowOp>, ElementwiseLowering<RemOp>,
               ElementwiseLowering<NegOp>, ElementwiseLowering<AbsOp>,
               ElementwiseLowering<ShiftLeftOp>,
               ElementwiseLowering<ShiftRightOp>, ElementwiseLowering<ReluOp>,
               ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
               ElementwiseLowering<SqrtOp>, ElementwiseLowering<TanhOp>,
               ElementwiseLowering<ErfOp>, ElementwiseLowering<SigmoidOp>,
               ElementwiseLowering<SinOp>, ElementwiseLowering<CosOp>,
               ElementwiseLowering<TanOp>, ElementwiseLowering<AsinOp>,
               ElementwiseLowering<AcosOp>, ElementwiseLowering<AtanOp>,
               ElementwiseLowering<SinhOp>, ElementwiseLowering<CoshOp>,
               ElementwiseLowering<AsinhOp>, ElementwiseLowering<AcoshOp>,
               ElementwiseLowering<AtanhOp>, ElementwiseLowering<FloorOp>,
               ElementwiseLowering<CeilOp>, ElementwiseLowering<RoundOp>,
               ElementwiseLowering<NotOp>, ElementwiseLowering<MinOp>,
               ElementwiseLowering<MaxOp>, ElementwiseLowering<AndOp>,
               ElementwiseLowering<OrOp>, ElementwiseLowering<XorOp>,
               ElementwiseLowering<LessOp>, ElementwiseLowering<LessEqualOp>,
               ElementwiseLowering<CastOp>, ElementwiseLowering<EqualOp>,
               ElementwiseLowering<SelectOp>, ElementwiseLowering<BroadcastOp>>(
      patterns.getContext());
}
