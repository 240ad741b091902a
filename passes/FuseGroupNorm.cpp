//===- FuseGroupNorm.cpp - decomposed group norms into kiln.group_norm ----===//
//
// PyTorch exports GroupNorm as Reshape to [N, G, -1], InstanceNormalization
// with unit scale and zero bias, Reshape back, Mul by the weight and Add of
// the bias per channel. Lowered as written, that is an instance norm over
// the reshaped maps and two more passes over them; as one kiln.group_norm
// the statistics and the per-channel affine make one pass that writes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEGROUPNORMPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// A splat of `value` with one element per channel of `type` ([N, C, ...]).
Value createPerChannelSplat(PatternRewriter &rewriter, Location loc,
                            RankedTensorType type, float value) {
  auto channelType =
      RankedTensorType::get({type.getDimSize(1)}, type.getElementType());
  return ConstantOp::create(rewriter, loc,
                            DenseElementsAttr::get(channelType, value));
}

/// `reshape(group_norm(reshape(x)))` back to x's shape, where the inner
/// norm's groups are whole groups of x's channels and its scale and bias are
/// splats: a group norm of x with as many groups.
struct RegroupNormPattern : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto norm = reshape.getInput().getDefiningOp<GroupNormOp>();
    if (!norm || !norm->hasOneUse())
      return failure();
    auto grouped = norm.getInput().getDefiningOp<ReshapeOp>();
    if (!grouped)
      return failure();
    Value input = grouped.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    auto groupedType = cast<RankedTensorType>(grouped.getType());
    if (reshape.getType() != type || type.getRank() < 2 ||
        !type.hasStaticShape() || !groupedType.hasStaticShape() ||
        groupedType.getDimSize(0) != type.getDimSize(0))
      return failure();
    // Items keep their extent, so the inner norm's groups are equal runs of
    // an item's elements; they are x's channel groups where they split its
    // channels evenly.
    int64_t groups = static_cast<int64_t>(norm.getGroups());
    if (type.getDimSize(1) % groups != 0)
      return failure();
    std::optional<float> scale = getSplatF32(norm.getScale());
    std::optional<float> bias = getSplatF32(norm.getBias());
    if (!scale || !bias)
      return failure();
    Location loc = reshape.getLoc();
    rewriter.replaceOpWithNewOp<GroupNormOp>(
        reshape, type, input,
        createPerChannelSplat(rewriter, loc, type, *scale),
        createPerChannelSplat(rewriter, loc, type, *bias),
        rewriter.getI64IntegerAttr(groups), norm.getEpsilonAttr());
    return success();
  }
};

/// `param` as one value per channel of `type` ([N, C, ...]) when it
/// broadcasts along every other dimension (a [C, 1, 1] weight), else null.
Value getPerChannel(PatternRewriter &rewriter, Location loc, Value param,
                    RankedTensorType type) {
  auto paramType = cast<RankedTensorType>(param.getType());
  int64_t rank = type.getRank(), offset = rank - paramType.getRank();
  if (offset < 0 || paramType.getElementType() != type.getElementType())
    return {};
  int64_t channels = type.getDimSize(1), size = 1;
  for (int64_t d = 0; d < paramType.getRank(); ++d) {
    int64_t dimSize = paramType.getDimSize(d);
    if (d + offset == 1 && (dimSize == channels || dimSize == 1))
      size = dimSize;
    else if (dimSize != 1)
      return {};
  }
  Value column = ReshapeOp::create(
      rewriter, loc, RankedTensorType::get({size}, type.getElementType()),
      param);
  if (size == channels)
    return column;
  return BroadcastOp::create(
      rewriter, loc, RankedTensorType::get({channels}, type.getElementType()),
      column);
}

/// `group_norm * w` and `group_norm + b` per channel, where the product or
/// sum is the norm's only use: the norm's scale and bias absorb them.
template <typename OpTy> struct AbsorbAffinePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    for (auto [operand, other] : {std::pair(op.getLhs(), op.getRhs()),
                                  std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = operand.template getDefiningOp<GroupNormOp>();
      if (!norm || !norm->hasOneUse() || op.getType() != norm.getType())
        continue;
      Location loc = op.getLoc();
      auto type = cast<RankedTensorType>(norm.getType());
      Value param = getPerChannel(rewriter, loc, other, type);
      if (!param)
        continue;
      Value scale = norm.getScale(), bias = norm.getBias();
      if constexpr (std::is_same_v<OpTy, MulOp>) {
        scale =
            rewriter.createOrFold<MulOp>(loc, scale.getType(), scale, param);
        // A zero bias stays zero, as the product by a weight left it.
        if (getSplatF32(bias) != 0.0f)
          bias = rewriter.createOrFold<MulOp>(loc, bias.getType(), bias, param);
      } else {
        bias = rewriter.createOrFold<AddOp>(loc, bias.getType(), bias, param);
      }
      rewriter.replaceOpWithNewOp<GroupNormOp>(op, type, norm.getInput(), scale,
                                               bias, norm.getGroupsAttr(),
                                               norm.getEpsilonAttr());
      rewriter.eraseOp(norm);
      return success();
    }
    return failure();
  }
};

struct FuseGroupNormPass
    : kiln::impl::FuseGroupNormPassBase<FuseGroupNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RegroupNormPattern, AbsorbAffinePattern<MulOp>,
                 AbsorbAffinePattern<AddOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
