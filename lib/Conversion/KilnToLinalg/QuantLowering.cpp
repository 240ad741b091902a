//===- QuantLowering.cpp - quantization ops to linalg ---------------------===//
//
// Quantize and dequantize are elementwise generics reading their scale and
// zero point per tensor or per index of the axis; an integer product is a
// product of the operands widened to i32 with their zero points taken off.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

/// How a loop nest of `rank` dimensions reads a scale or zero point: the
/// one value (`axis` empty), or the one of its index along `axis`.
AffineMap getParamMap(MLIRContext *ctx, unsigned rank,
                      std::optional<int64_t> axis) {
  if (!axis)
    return AffineMap::get(rank, 0, {}, ctx);
  return AffineMap::get(rank, 0, getAffineDimExpr(*axis, ctx));
}

/// How a loop nest of `rank` dimensions reads a blocked scale or zero
/// point: its own index along every dimension but `axis`, that one's
/// block.
AffineMap getBlockedParamMap(MLIRContext *ctx, unsigned rank, int64_t axis,
                             int64_t blockSize) {
  SmallVector<AffineExpr> results;
  for (unsigned d = 0; d < rank; ++d) {
    AffineExpr index = getAffineDimExpr(d, ctx);
    results.push_back(d == axis ? index.floorDiv(blockSize) : index);
  }
  return AffineMap::get(rank, 0, results, ctx);
}

/// How a quantization's loop nest of `rank` dimensions reads its scale and
/// zero point: per tensor, per `axis`, or in blocks along it.
AffineMap getQuantParamMap(MLIRContext *ctx, unsigned rank,
                           std::optional<int64_t> axis,
                           std::optional<int64_t> blockSize) {
  if (blockSize)
    return getBlockedParamMap(ctx, rank, *axis, *blockSize);
  return getParamMap(ctx, rank, axis);
}

/// `value - zeroPoint` as i32, both read with the same signedness.
Value createWidenedSub(OpBuilder &b, Location loc, Value value,
                       Value zeroPoint, bool isUnsigned) {
  Type i32 = b.getI32Type();
  return arith::SubIOp::create(b, loc,
                               createCast(b, loc, value, i32, isUnsigned),
                               createCast(b, loc, zeroPoint, i32, isUnsigned));
}

/// `saturate(round_half_even(x / scale) + zeroPoint)` for the range of
/// `resultType`, 8 or 16 bits (signed, or unsigned with `isUnsigned`). A
/// NaN saturates to the range's low end, so no input makes the conversion
/// undefined.
Value createQuantizeScalar(OpBuilder &b, Location loc, Value x, Value scale,
                           Value zeroPoint, Type resultType, bool isUnsigned) {
  Type f32 = x.getType();
  Value rounded = math::RoundEvenOp::create(
      b, loc, arith::DivFOp::create(b, loc, x, scale));
  Value shifted = arith::AddFOp::create(
      b, loc, rounded, createCast(b, loc, zeroPoint, f32, isUnsigned));
  unsigned bits = resultType.getIntOrFloatBitWidth();
  double levels = double(int64_t(1) << bits);
  Value low = createScalarConstant(b, loc, f32, isUnsigned ? 0 : -levels / 2);
  Value high =
      createScalarConstant(b, loc, f32, isUnsigned ? levels - 1 : levels / 2 - 1);
  Value clamped = arith::MinNumFOp::create(
      b, loc, arith::MaxNumFOp::create(b, loc, shifted, low), high);
  return createCast(b, loc, clamped, resultType, false, isUnsigned);
}

/// The elementwise generic quantizing `input`.
Value createQuantize(OpBuilder &b, Location loc, Value input, Value scale,
                     Value zeroPoint, std::optional<int64_t> axis,
                     std::optional<int64_t> blockSize, bool isUnsigned,
                     RankedTensorType resultType, ValueRange dynamicSizes) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultType.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap param = getQuantParamMap(ctx, rank, axis, blockSize);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{input, scale, zeroPoint},
             createEmptyTensor(b, loc, resultType, dynamicSizes),
             ArrayRef<AffineMap>{identity, param, param, identity}, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   createQuantizeScalar(nb, l, args[0], args[1], args[2],
                                        resultType.getElementType(),
                                        isUnsigned));
             })
      .getResult(0);
}

struct QuantizeLowering : OpConversionPattern<QuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, createQuantize(rewriter, op.getLoc(), adaptor.getInput(),
                           adaptor.getScale(), adaptor.getZeroPoint(),
                           op.getAxis(), op.getBlockSize(),
                           op.getResultUnsigned(), op.getType(),
                           getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

/// `(q - zeroPoint) * scale`, the difference exact in i32.
struct DequantizeLowering : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RankedTensorType resultType = op.getType();
    unsigned rank = resultType.getRank();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap param =
        getQuantParamMap(ctx, rank, op.getAxis(), op.getBlockSize());
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    bool isUnsigned = op.getInputUnsigned();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType,
        ValueRange{adaptor.getInput(), adaptor.getScale(),
                   adaptor.getZeroPoint()},
        createEmptyTensor(rewriter, loc, resultType,
                          getDynamicResultSizes(rewriter, op)),
        ArrayRef<AffineMap>{identity, param, param, identity}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value difference =
              createWidenedSub(b, l, args[0], args[2], isUnsigned);
          Value real = createCast(b, l, difference, args[1].getType());
          Value product = arith::MulFOp::create(b, l, real, args[1]);
          linalg::YieldOp::create(b, l, product);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// The range's minimum and maximum (each widened to include 0) in two
/// reductions, the scale and zero point from them on scalars, then the
/// quantizing generic.
struct DynamicQuantizeLowering : OpConversionPattern<DynamicQuantizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DynamicQuantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputType = cast<RankedTensorType>(input.getType());
    Type f32 = inputType.getElementType();
    SmallVector<int64_t> all(inputType.getRank());
    std::iota(all.begin(), all.end(), 0);
    Value zero = createScalarConstant(rewriter, loc, f32, 0);
    auto reduce = [&](bool isMax) {
      Value reduced = createReduction(
          rewriter, loc, input, all, zero,
          [&](OpBuilder &b, Location l, Value x, Value acc) -> Value {
            if (isMax)
              return arith::MaxNumFOp::create(b, l, x, acc);
            return arith::MinNumFOp::create(b, l, x, acc);
          });
      return tensor::ExtractOp::create(rewriter, loc, reduced, ValueRange{})
          .getResult();
    };
    Value minimum = reduce(false), maximum = reduce(true);
    Value scale = arith::DivFOp::create(
        rewriter, loc, arith::SubFOp::create(rewriter, loc, maximum, minimum),
        createScalarConstant(rewriter, loc, f32, 255));
    // round(0 - min / scale), saturated: the quantization of 0.
    Type i8 = rewriter.getI8Type();
    Value zeroPoint = createQuantizeScalar(
        rewriter, loc, arith::NegFOp::create(rewriter, loc, minimum), scale,
        createScalarConstant(rewriter, loc, i8, 0), i8, /*isUnsigned=*/true);
    auto scalar = [&](Value value) {
      return tensor::FromElementsOp::create(
                 rewriter, loc, RankedTensorType::get({}, value.getType()),
                 value)
          .getResult();
    };
    Value scaleTensor = scalar(scale), zeroPointTensor = scalar(zeroPoint);
    Value quantized = createQuantize(
        rewriter, loc, input, scaleTensor, zeroPointTensor, std::nullopt,
        std::nullopt,
        /*isUnsigned=*/true, cast<RankedTensorType>(op.getResult().getType()),
        getDynamicSizes(rewriter, loc, input));
    rewriter.replaceOp(op, {quantized, scaleTensor, zeroPointTensor});
    return success();
  }
};

/// `value - zeroPoint` widened to i32, the zero point broadcast.
Value createWidenedDifference(OpBuilder &b, Location loc, Value value,
                              Value zeroPoint, bool isUnsigned) {
  auto type = cast<RankedTensorType>(value.getType());
  auto resultType = RankedTensorType::get(type.getShape(), b.getI32Type());
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  AffineMap zeroMap = getBroadcastMap(
      ctx, cast<RankedTensorType>(zeroPoint.getType()).getShape(),
      type.getShape(), rank);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{value, zeroPoint},
             createEmptyTensor(b, loc, resultType,
                               getDynamicSizes(b, loc, value)),
             ArrayRef<AffineMap>{identity, zeroMap, identity}, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l, createWidenedSub(nb, l, args[0], args[1], isUnsigned));
             })
      .getResult(0);
}

struct MatMulIntegerLowering : OpConversionPattern<MatMulIntegerOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulIntegerOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value lhs = createWidenedDifference(rewriter, loc, adaptor.getLhs(),
                                        adaptor.getLhsZeroPoint(),
                                        op.getLhsUnsigned());
    Value rhs = createWidenedDifference(rewriter, loc, adaptor.getRhs(),
                                        adaptor.getRhsZeroPoint(),
                                        op.getRhsUnsigned());
    rewriter.replaceOp(op, createMatMul(rewriter, loc, lhs, rhs, op.getType(),
                                        getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

} // namespace

void kiln::populateQuantLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<QuantizeLowering, DequantizeLowering, DynamicQuantizeLowering,
               MatMulIntegerLowering>(patterns.getContext());
}
