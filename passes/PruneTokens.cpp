//===- PruneTokens.cpp - token pruning between attention and MLP ----------===//
//
// EViT: after a block's attention, the tokens the class token attends to
// least (or, without a class token, those with the smallest keys) are fused
// into one token, so the MLP and the later blocks run on fewer;
// TokenReduction.h does the rest.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TokenReduction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_PRUNETOKENSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// How much the class token (token 0) attends to each token in
/// `attention`, averaged over heads, [B, N]: its row of the attention's
/// probabilities, recomputed (one query row) since the fused kernel keeps
/// none. `bias` is what the attention adds to its scores, [B, 1, 1, N], or
/// null.
Value getClassAttention(OpBuilder &b, AttentionOp attention, Value bias) {
  Location loc = attention.getLoc();
  Value query = attention.getQuery();
  RankedTensorType queryType = tensorType(query);
  ArrayRef<int64_t> keyShape = tensorType(attention.getKeyT()).getShape();
  int64_t batch = keyShape[0], heads = keyShape[1], tokens = keyShape[3];
  SmallVector<int64_t> sizes(queryType.getShape());
  sizes[attention.getQuerySeqFirst() ? 1 : 2] = 1;
  Value classQuery = SliceOp::create(b, loc, queryType.clone(sizes), query,
                                     SmallVector<int64_t>(4, 0), sizes,
                                     SmallVector<int64_t>(4, 1));
  // [B, 1, H, D] and [B, H, 1, D] hold the same elements in the same order.
  Type f32 = b.getF32Type();
  classQuery = ReshapeOp::create(
      b, loc, RankedTensorType::get({batch, heads, 1, keyShape[2]}, f32),
      classQuery, ValueRange());
  auto scoresType = RankedTensorType::get({batch, heads, 1, tokens}, f32);
  Value scores =
      MatMulOp::create(b, loc, scoresType, classQuery, attention.getKeyT());
  Value scale =
      ConstantOp::create(b, loc,
                         DenseElementsAttr::get(RankedTensorType::get({}, f32),
                                                attention.getScaleAttr()));
  scores = MulOp::create(b, loc, scores, scale);
  if (bias)
    scores = AddOp::create(b, loc, scores, bias);
  Value probabilities =
      SoftmaxOp::create(b, loc, scoresType, scores, b.getI64IntegerAttr(3));
  return ReduceMeanOp::create(
      b, loc, RankedTensorType::get({batch, tokens}, f32), probabilities,
      b.getDenseI64ArrayAttr({1, 2}), UnitAttr());
}

/// The squared norm of each token's key averaged over heads, [B, N].
Value getKeyNorms(OpBuilder &b, AttentionOp attention) {
  Location loc = attention.getLoc();
  Value metric = getKeyMetric(b, attention);
  ArrayRef<int64_t> shape = tensorType(metric).getShape();
  Value squares = MulOp::create(b, loc, metric, metric);
  return ReduceSumOp::create(
      b, loc, RankedTensorType::get({shape[0], shape[1]}, b.getF32Type()),
      squares, b.getDenseI64ArrayAttr({2}), UnitAttr());
}

struct PruneTokensPass : kiln::impl::PruneTokensPassBase<PruneTokensPass> {
  using PruneTokensPassBase::PruneTokensPassBase;

  /// Whether block `k` prunes at `keep-rate`: one of `blocks`, or by
  /// default every third block from the fourth (EViT's 4th, 7th and 10th
  /// of 12).
  bool prunesAtRate(int64_t k) {
    if (!blocks.empty())
      return llvm::is_contained(blocks, k);
    return k >= 3 && k % 3 == 0;
  }

  /// Whether block `k` prunes.
  bool prunes(int64_t k) {
    if (!perBlock.empty())
      return k < static_cast<int64_t>(perBlock.size()) && perBlock[k] >= 0;
    return keepRate < 1.0 && prunesAtRate(k);
  }

  /// The tokens block `k`, which prunes, keeps besides the protected ones,
  /// out of `candidates`.
  int64_t keepFor(int64_t k, int64_t candidates) {
    if (!perBlock.empty())
      return perBlock[k];
    return static_cast<int64_t>(
        std::ceil(keepRate * static_cast<double>(candidates)));
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!(keepRate > 0.0 && keepRate <= 1.0)) {
      func.emitError("keep-rate must be in (0, 1], not ") << keepRate;
      return signalPassFailure();
    }
    if (keepRate >= 1.0 && perBlock.empty())
      return;
    SmallVector<AttentionOp> attentions(func.getBody().getOps<AttentionOp>());
    if (attentions.empty() || !sameMasks(attentions, "tokens not pruned"))
      return;
    TokenSet set;
    for (auto [k, attention] : llvm::enumerate(attentions))
      if (failed(pruneBlock(attention, k, set)))
        return signalPassFailure();
  }

  /// Prunes the tokens after `attention`, block `k`, updating `set`; a
  /// block that cannot prune is left as it is, with a warning.
  LogicalResult pruneBlock(AttentionOp attention, int64_t k, TokenSet &set) {
    int64_t protectedPrefix =
        importance == PruneImportance::ClassAttention ? 1 : 0;
    // Decided before prepareBlock, which builds ops.
    if (!prunes(k))
      return success();
    OpBuilder b(attention.getContext());
    FailureOr<ReducibleBlock> block =
        prepareBlock(b, attention, set, "tokens not pruned");
    if (failed(block))
      return success();
    int64_t batch = block->batch, count = block->tokens;
    int64_t keep = keepFor(k, count - protectedPrefix);
    int64_t slots = protectedPrefix + keep + (set.keyMask ? 2 : 1);
    if (slots >= count)
      return success();
    Location loc = attention.getLoc();
    Value scores;
    if (importance == PruneImportance::ClassAttention) {
      Value bias = set.scoreBias;
      if (!bias && set.keyMask)
        bias = ReshapeOp::create(
            b, loc, RankedTensorType::get({batch, 1, 1, count}, b.getF32Type()),
            set.keyMask, ValueRange());
      scores = getClassAttention(b, attention, bias);
    } else {
      scores = getKeyNorms(b, attention);
    }
    auto indices = [&](int64_t n) {
      return RankedTensorType::get({batch, n}, b.getI64Type());
    };
    auto select = TokenSelectOp::create(
        b, loc, indices(count), indices(slots), scores, set.keyMask,
        b.getI64IntegerAttr(keep), b.getI64IntegerAttr(protectedPrefix));
    return reduceTokens(b, loc, *block, select.getDestination(),
                        select.getKeptTokens(), slots, set);
  }
};

} // namespace
