//===- FoldConvolutionScales.cpp - per-filter scales into the filter ------===//
//
// An inference batch normalization after a convolution imports as
// `conv * a + b`, with `a = gamma / sqrt(var + eps)` and `b` per channel;
// once kiln-fold-constants has computed them, the multiplication by `a`
// is the convolution with each filter scaled by its channel's `a`, so the
// filter is scaled here, once, and the product runs with one operation
// less per output element. The shift stays as the convolution's bias.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_FOLDCONVOLUTIONSCALESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The per-output-channel factors of `scale` for a [N, F, ...] result:
/// F values when its shape, aligned to the result's from the right, is 1
/// everywhere but (optionally) at the channel axis. Nullopt otherwise.
std::optional<SmallVector<float>> getChannelFactors(ConstantOp scale,
                                                    RankedTensorType result) {
  auto type = cast<RankedTensorType>(scale.getType());
  int64_t filters = result.getDimSize(1);
  int64_t offset = result.getRank() - type.getRank();
  if (offset < 0 || !type.getElementType().isF32())
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) != 1 &&
        (d + offset != 1 || type.getDimSize(d) != filters))
      return std::nullopt;
  std::optional<SmallVector<float>> values = getFloats(scale.getValue());
  if (!values || values->empty())
    return std::nullopt;
  if (values->size() == 1)
    values->resize(filters, values->front());
  return values;
}

struct FoldScaleIntoFilter : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto conv = op.getLhs().getDefiningOp<Conv2DOp>();
    auto scale = op.getRhs().getDefiningOp<ConstantOp>();
    if (!conv || !scale) {
      conv = op.getRhs().getDefiningOp<Conv2DOp>();
      scale = op.getLhs().getDefiningOp<ConstantOp>();
    }
    if (!conv || !scale || !conv->hasOneUse() || conv.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not a convolution times a "
                                             "constant");
    auto filter = conv.getFilter().getDefiningOp<ConstantOp>();
    auto filterType = cast<RankedTensorType>(conv.getFilter().getType());
    if (!filter || !filterType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "filter is not an f32 constant");
    std::optional<SmallVector<float>> factors =
        getChannelFactors(scale, conv.getType());
    std::optional<SmallVector<float>> weights = getFloats(filter.getValue());
    if (!factors || !weights)
      return rewriter.notifyMatchFailure(op, "not one factor per filter");
    int64_t perFilter = filterType.getNumElements() / filterType.getDimSize(0);
    ElementsAttr scaled =
        createElements(filterType, [&](MutableArrayRef<char> bytes) {
          for (int64_t i = 0, e = weights->size(); i < e; ++i) {
            float value = (*weights)[i] * (*factors)[i / perFilter];
            std::memcpy(bytes.data() + i * sizeof(float), &value,
                        sizeof(float));
          }
        });
    rewriter.setInsertionPoint(filter);
    Value newFilter = ConstantOp::create(rewriter, filter.getLoc(), scaled);
    rewriter.modifyOpInPlace(
        conv, [&] { conv.getFilterMutable().assign(newFilter); });
    rewriter.replaceOp(op, conv.getResult());
    eraseIfUnused(rewriter, filter, filter.getValue());
    return success();
  }
};

struct FoldConvolutionScalesPass
    : kiln::impl::FoldConvolutionScalesPassBase<FoldConvolutionScalesPass> {
  using FoldConvolutionScalesPassBase::FoldConvolutionScalesPassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldScaleIntoFilter>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
