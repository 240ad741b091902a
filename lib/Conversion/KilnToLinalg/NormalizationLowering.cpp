//===- NormalizationLowering.cpp - layer_norm and group_norm to linalg ----===//
//
// Both norms read their input three times (its sum, the squares of its
// deviations from the mean, the normalized result) and write it once; the
// deviations are recomputed rather than stored, since a write costs more
// than a subtraction.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The maps of a generic over `rank` loops that reads `reduced`, a tensor
/// without the dimensions in `axes`: a projection onto the others.
AffineMap getReducedMap(MLIRContext *ctx, unsigned rank,
                        ArrayRef<int64_t> axes) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// The sum of `input` over `axes`.
Value createSum(OpBuilder &b, Location loc, Value input,
                ArrayRef<int64_t> axes) {
  Type elementType = cast<RankedTensorType>(input.getType()).getElementType();
  return createReduction(
      b, loc, input, axes, createScalarConstant(b, loc, elementType, 0),
      [](OpBuilder &nb, Location l, Value x, Value acc) -> Value {
        return createSumStep(nb, l, x, acc);
      });
}

/// The sum over `axes` of `(input - sum / count)^2`, where `sum` is
/// `input`'s sum over them.
Value createSquaredDeviations(OpBuilder &b, Location loc, Value input,
                              Value sum, ArrayRef<int64_t> axes,
                              int64_t count) {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto sumType = cast<RankedTensorType>(sum.getType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = inputType.getRank();
  Type elementType = inputType.getElementType();
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (int64_t axis : axes)
    iterators[axis] = utils::IteratorType::reduction;
  AffineMap reduced = getReducedMap(ctx, rank, axes);
  Value init = createFilledTensor(b, loc, sumType,
                                  createScalarConstant(b, loc, elementType, 0),
                                  getDynamicSizes(b, loc, sum));
  auto generic = linalg::GenericOp::create(
      b, loc, sumType, ValueRange{input, sum}, init,
      {AffineMap::getMultiDimIdentityMap(rank, ctx), reduced, reduced},
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value n = createScalarConstant(nb, l, elementType,
                                       static_cast<double>(count));
        Value deviation = arith::SubFOp::create(
            nb, l, args[0], arith::DivFOp::create(nb, l, args[1], n));
        Value square = arith::MulFOp::create(nb, l, deviation, deviation);
        linalg::YieldOp::create(nb, l, createSumStep(nb, l, square, args[2]));
      });
  return generic.getResult(0);
}

/// `1 / sqrt(squares / count + epsilon)`, the inverse standard deviation
/// from the sum of squared deviations of `count` elements.
Value createInverseDeviation(OpBuilder &b, Location loc, Value squares,
                             int64_t count, float epsilon) {
  Type elementType = squares.getType();
  Value n =
      createScalarConstant(b, loc, elementType, static_cast<double>(count));
  Value variance = arith::DivFOp::create(b, loc, squares, n);
  return math::RsqrtOp::create(
      b, loc,
      arith::AddFOp::create(
          b, loc, variance,
          createScalarConstant(b, loc, elementType, epsilon)));
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Type elementType = type.getElementType();
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    SmallVector<int64_t> axes;
    int64_t count = 1;
    for (int64_t d = axis; d < rank; ++d) {
      if (type.isDynamicDim(d))
        return rewriter.notifyMatchFailure(
            op, "normalizing over a dynamic dimension");
      axes.push_back(d);
      count *= type.getDimSize(d);
    }
    Value input = adaptor.getInput();
    Value sum = createSum(rewriter, loc, input, axes);
    Value squares =
        createSquaredDeviations(rewriter, loc, input, sum, axes, count);

    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap reduced = getReducedMap(ctx, rank, axes);
    auto paramMap = [&](Value param) {
      return getBroadcastMap(ctx,
                             cast<RankedTensorType>(param.getType()).getShape(),
                             type.getShape(), rank);
    };
    SmallVector<AffineMap> maps = {identity,
                                   reduced,
                                   reduced,
                                   paramMap(adaptor.getScale()),
                                   paramMap(adaptor.getBias()),
                                   identity};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    float epsilon = op.getEpsilon().convertToFloat();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type,
        ValueRange{input, sum, squares, adaptor.getScale(), adaptor.getBias()},
        createEmptyTensor(rewriter, loc, type,
                          getDynamicSizes(rewriter, loc, input)),
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value n = createScalarConstant(b, l, elementType,
                                         static_cast<double>(count));
          Value deviation = arith::SubFOp::create(
              b, l, args[0], arith::DivFOp::create(b, l, args[1], n));
          Value normalized = arith::MulFOp::create(
              b, l, deviation,
              createInverseDeviation(b, l, args[2], count, epsilon));
          Value scaled = arith::MulFOp::create(b, l, normalized, args[3]);
          linalg::YieldOp::create(
              b, l, arith::AddFOp::create(b, l, scaled, args[4]).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// The statistics over rows of the input viewed as [N * groups, C / groups *
/// spatial], then per (item, channel) its group's mean and its inverse
/// deviation times the channel's scale, so the result is one elementwise
/// generic over the input's own shape that later elementwise ops (a SiLU)
/// fuse into.
struct GroupNormLowering : OpConversionPattern<GroupNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GroupNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    if (!type.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamically shaped feature maps");
    // No items or no pixels: nothing to normalize (and no group to count).
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, createEmptyTensor(rewriter, loc, type));
      return success();
    }
    Type elementType = type.getElementType();
    int64_t rank = type.getRank();
    int64_t items = type.getDimSize(0), channels = type.getDimSize(1);
    int64_t groups = static_cast<int64_t>(op.getGroups());
    int64_t perGroup = channels / groups;
    int64_t count = type.getNumElements() / (items * groups);
    Value input = adaptor.getInput();
    Value rows = reshapeTensor(
        rewriter, loc, input,
        RankedTensorType::get({items * groups, count}, elementType));
    Value sum = createSum(rewriter, loc, rows, {1});
    Value squares =
        createSquaredDeviations(rewriter, loc, rows, sum, {1}, count);

    // Per (item, group, channel in group), collapsed to [items, channels].
    auto expandGroups = [&](Value stat) {
      return tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({items, groups}, elementType),
          stat, ArrayRef<ReassociationIndices>{{0, 1}});
    };
    Value groupScale = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({groups, perGroup}, elementType),
        adaptor.getScale(), ArrayRef<ReassociationIndices>{{0, 1}});
    auto channelType =
        RankedTensorType::get({items, groups, perGroup}, elementType);
    AffineExpr d0, d1, d2;
    bindDims(ctx, d0, d1, d2);
    AffineMap perItemGroup = AffineMap::get(3, 0, {d0, d1}, ctx);
    AffineMap identity3 = AffineMap::getMultiDimIdentityMap(3, ctx);
    SmallVector<utils::IteratorType> parallel3(3,
                                               utils::IteratorType::parallel);
    auto perChannel = [&](Value value) {
      return tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({items, channels}, elementType),
          value, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    };
    Value means = perChannel(
        linalg::GenericOp::create(
            rewriter, loc, channelType, ValueRange{expandGroups(sum)},
            createEmptyTensor(rewriter, loc, channelType),
            {perItemGroup, identity3}, parallel3,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value n = createScalarConstant(b, l, elementType,
                                             static_cast<double>(count));
              linalg::YieldOp::create(
                  b, l, arith::DivFOp::create(b, l, args[0], n).getResult());
            })
            .getResult(0));
    float epsilon = op.getEpsilon().convertToFloat();
    Value factors = perChannel(
        linalg::GenericOp::create(
            rewriter, loc, channelType,
            ValueRange{expandGroups(squares), groupScale},
            createEmptyTensor(rewriter, loc, channelType),
            {perItemGroup, AffineMap::get(3, 0, {d1, d2}, ctx), identity3},
            parallel3,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value inverse =
                  createInverseDeviation(b, l, args[0], count, epsilon);
              linalg::YieldOp::create(
                  b, l,
                  arith::MulFOp::create(b, l, inverse, args[1]).getResult());
            })
            .getResult(0));

    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap itemChannel = AffineMap::get(
        rank, 0, {getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx)}, ctx);
    AffineMap channel = AffineMap::get(rank, 0, getAffineDimExpr(1, ctx));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type,
        ValueRange{input, means, factors, adaptor.getBias()},
        createEmptyTensor(rewriter, loc, type),
        {identity, itemChannel, itemChannel, channel, identity}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value deviation = arith::SubFOp::create(b, l, args[0], args[1]);
          Value scaled = arith::MulFOp::create(b, l, deviation, args[2]);
          linalg::YieldOp::create(
              b, l, arith::AddFOp::create(b, l, scaled, args[3]).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void kiln::populateNormalizationLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<LayerNormLowering, GroupNormLowering>(patterns.getContext());
}
