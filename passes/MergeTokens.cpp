//===- MergeTokens.cpp - token merging between attention and MLP ----------===//
//
// ToMe: after each block's attention, the r most similar pairs of tokens
// (by their keys, averaged over heads) merge; TokenReduction.h does the
// rest. With scope=attention (ToMe-SD, for denoisers) the tokens merge
// around each attention only, by the similarity of the attention's input
// rows, and the residual stream keeps every token.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TokenReduction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_MERGETOKENSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// kiln.token_match of `count` tokens' `metric` rows, `r` merged.
TokenMatchOp createMatch(OpBuilder &b, Location loc, Value metric,
                         Value keyMask, int64_t batch, int64_t count, int64_t r,
                         int64_t protectedPrefix) {
  auto indices = [&](int64_t n) {
    return RankedTensorType::get({batch, n}, b.getI64Type());
  };
  return TokenMatchOp::create(b, loc, indices(count), indices(count - r),
                              metric, keyMask, b.getI64IntegerAttr(r),
                              b.getI64IntegerAttr(protectedPrefix));
}

struct MergeTokensPass : kiln::impl::MergeTokensPassBase<MergeTokensPass> {
  using MergeTokensPassBase::MergeTokensPassBase;

  /// r for each of `blocks` blocks.
  SmallVector<int64_t> scheduleFor(int64_t blocks) {
    if (!perBlock.empty()) {
      SmallVector<int64_t> merges(perBlock.begin(), perBlock.end());
      merges.resize(blocks, 0);
      return merges;
    }
    SmallVector<int64_t> merges;
    for (int64_t k = 0; k < blocks; ++k) {
      if (schedule == MergeSchedule::Constant || blocks == 1)
        merges.push_back(tokens);
      else
        merges.push_back(2 * tokens * (blocks - 1 - k) / (blocks - 1));
    }
    return merges;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // Each block of ops holding attentions is a model of its own: the
    // function's body, or the region of a captured sampler's loop.
    llvm::MapVector<Block *, SmallVector<AttentionOp>> models;
    func.walk([&](AttentionOp attention) {
      models[attention->getBlock()].push_back(attention);
    });
    for (auto &[block, attentions] : models)
      if (failed(mergeModel(attentions)))
        return signalPassFailure();
  }

  LogicalResult mergeModel(ArrayRef<AttentionOp> attentions) {
    SmallVector<int64_t> merges = scheduleFor(attentions.size());
    if (llvm::all_of(merges, [](int64_t r) { return r <= 0; }))
      return success();
    if (scope == MergeScope::Attention) {
      for (auto [k, attention] : llvm::enumerate(attentions))
        if (merges[k] > 0 && failed(mergeBranch(attention, merges[k])))
          return failure();
      return success();
    }
    if (!sameMasks(attentions, "tokens not merged"))
      return success();
    TokenSet set;
    for (auto [k, attention] : llvm::enumerate(attentions))
      if (merges[k] > 0 && failed(mergeBlock(attention, merges[k], set)))
        return failure();
    return success();
  }

  /// Merges `r` tokens around `attention` alone (ToMe-SD): its branch's
  /// input merges by the similarity of its rows, and its output unmerges
  /// at the residual add. No token is protected (denoisers have no class
  /// token).
  LogicalResult mergeBranch(AttentionOp attention, int64_t r) {
    OpBuilder b(attention.getContext());
    FailureOr<ReducibleBranch> branch =
        prepareBranch(b, attention, "tokens not merged");
    if (failed(branch))
      return success();
    int64_t batch = branch->batch, count = branch->tokens;
    r = std::min(r, count / 2);
    if (r <= 0)
      return success();
    Location loc = attention.getLoc();
    TokenMatchOp match = createMatch(b, loc, branch->input, branch->keyMask,
                                     batch, count, r, /*protectedPrefix=*/0);
    return reduceBranch(b, loc, *branch, match.getDestination(),
                        match.getKept(), count - r);
  }

  /// Merges `r` tokens after `attention`, updating `set`; a block that
  /// cannot merge is left as it is, with a warning.
  LogicalResult mergeBlock(AttentionOp attention, int64_t r, TokenSet &set) {
    OpBuilder b(attention.getContext());
    FailureOr<ReducibleBlock> block =
        prepareBlock(b, attention, set, "tokens not merged");
    if (failed(block))
      return success();
    int64_t batch = block->batch, count = block->tokens;
    r = std::min(r, (count - 1) / 2);
    if (r <= 0)
      return success();
    Location loc = attention.getLoc();
    TokenMatchOp match =
        createMatch(b, loc, getKeyMetric(b, attention), set.keyMask, batch,
                    count, r, /*protectedPrefix=*/1);
    return reduceTokens(b, loc, *block, match.getDestination(), match.getKept(),
                        count - r, set);
  }
};

} // namespace
