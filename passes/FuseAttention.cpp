//===- FuseAttention.cpp - MatMul, scale, mask, Softmax, MatMul as one op -===//
//
// Exporters spell attention as five to eight ops whose middle tensor, the
// scores, is as large as sequence length squared times heads. As one
// kiln.attention the scores are computed a block at a time and never stored.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// If `value` is `x * c`, `c * x` or `x / c` for a splat f32 constant `c`,
/// used only here and of `x`'s shape, returns `x` and multiplies `scale` by
/// the factor; otherwise returns `value`.
Value peelScale(Value value, float &scale) {
  Operation *op = value.getDefiningOp();
  if (!op || !op->hasOneUse())
    return value;
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())}) {
      std::optional<float> factor = getSplatF32(c);
      if (factor && x.getType() == value.getType()) {
        scale *= *factor;
        return x;
      }
    }
  }
  if (auto div = dyn_cast<DivOp>(op)) {
    std::optional<float> divisor = getSplatF32(div.getRhs());
    if (divisor && *divisor != 0 && div.getLhs().getType() == value.getType()) {
      scale /= *divisor;
      return div.getLhs();
    }
  }
  return value;
}

/// True if `mask`'s shape broadcasts to `scores` without growing it.
bool broadcastsTo(Value mask, RankedTensorType scores) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(mask.getType()).getShape();
  SmallVector<int64_t> broadcast;
  return shape.size() <= scores.getShape().size() &&
         OpTrait::util::getBroadcastedShape(scores.getShape(), shape,
                                            broadcast) &&
         ArrayRef<int64_t>(broadcast) == scores.getShape();
}

/// How the scores are masked before the softmax.
struct Mask {
  Value value;
  std::optional<float> fill; // i1 masks: the value where the mask is true
  bool inverted = false;     // i1 masks: fill where the mask is false
};

/// The scores before masking: `add(scores, mask)` (an f32 mask) or
/// `select(mask, fill, scores)` / `select(keep, scores, fill)` with a splat
/// fill. Returns `value` unchanged, and `mask` empty, if it is neither.
Value peelMask(Value value, Mask &mask) {
  Operation *op = value.getDefiningOp();
  if (!op || !op->hasOneUse())
    return value;
  auto scoresType = cast<RankedTensorType>(value.getType());
  if (auto add = dyn_cast<AddOp>(op)) {
    for (auto [x, m] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
      // The scores come from a product; the other side is the mask.
      float unused = 1;
      if (x.getType() != scoresType || !broadcastsTo(m, scoresType) ||
          !peelScale(x, unused).getDefiningOp<MatMulOp>())
        continue;
      mask.value = m;
      return x;
    }
    return value;
  }
  auto select = dyn_cast<SelectOp>(op);
  if (!select || !broadcastsTo(select.getCondition(), scoresType))
    return value;
  for (bool inverted : {false, true}) {
    Value fill = inverted ? select.getFalseValue() : select.getTrueValue();
    Value scores = inverted ? select.getTrueValue() : select.getFalseValue();
    std::optional<float> f = getSplatF32(fill);
    if (!f || scores.getType() != scoresType)
      continue;
    mask = {select.getCondition(), *f, inverted};
    return scores;
  }
  return value;
}

/// Rooted at the second product: matmul(softmax(mask(scale(matmul(q, kt)))),
/// v), with every op in between used once.
struct FuseAttentionPattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp output,
                                PatternRewriter &rewriter) const override {
    auto softmax = output.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return failure();
    auto scoresType = cast<RankedTensorType>(softmax.getType());
    int64_t rank = scoresType.getRank();
    if (rank < 2 || static_cast<int64_t>(softmax.getAxis()) != rank - 1)
      return failure();

    Mask mask;
    float scale = 1;
    Value scores = peelMask(softmax.getInput(), mask);
    scores = peelScale(scores, scale);
    auto product = scores.getDefiningOp<MatMulOp>();
    if (!product || !product->hasOneUse())
      return rewriter.notifyMatchFailure(output, "no Q x K^T product");
    Value query = peelScale(product.getLhs(), scale);
    Value keyT = peelScale(product.getRhs(), scale);
    Value value = output.getRhs();
    auto queryType = cast<RankedTensorType>(query.getType());
    auto keyTType = cast<RankedTensorType>(keyT.getType());
    auto valueType = cast<RankedTensorType>(value.getType());
    ArrayRef<int64_t> batch = scoresType.getShape().drop_back(2);
    // The kernel blocks over queries and keys, which may be dynamic; batch
    // dimensions (batch, heads) and depths must be static.
    if (ShapedType::isDynamicShape(batch))
      return rewriter.notifyMatchFailure(output, "dynamic batch dimensions");
    for (RankedTensorType type : {queryType, keyTType, valueType})
      if (type.getRank() != rank || type.getShape().drop_back(2) != batch ||
          !type.getElementType().isF32())
        return rewriter.notifyMatchFailure(output, "batch dimensions differ");
    if (queryType.isDynamicDim(rank - 1) || valueType.isDynamicDim(rank - 1))
      return rewriter.notifyMatchFailure(output, "dynamic depth");
    // Empty tensors have nothing to compute; the unfused ops handle them.
    for (RankedTensorType type :
         {queryType, keyTType, valueType, output.getType()})
      if (llvm::is_contained(type.getShape(), 0))
        return rewriter.notifyMatchFailure(output, "empty operand");

    rewriter.setInsertionPoint(output);
    Location loc = rewriter.getFusedLoc(
        {product.getLoc(), softmax.getLoc(), output.getLoc()});
    if (mask.inverted) {
      // The attention op fills where its mask is true.
      auto type = cast<RankedTensorType>(mask.value.getType());
      Value no = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(
              RankedTensorType::get({}, type.getElementType()), false));
      mask.value = EqualOp::create(rewriter, loc, mask.value, no);
    }
    Value attention = AttentionOp::create(
        rewriter, loc, output.getType(), query, keyT, value, mask.value,
        rewriter.getF32FloatAttr(scale),
        mask.fill ? rewriter.getF32FloatAttr(*mask.fill) : FloatAttr(),
        UnitAttr(), UnitAttr(), UnitAttr());
    rewriter.replaceOp(output, attention);
    return success();
  }
};

struct FuseAttentionPass
    : kiln::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
