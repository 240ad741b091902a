//===- MergeTokens.cpp - token merging between attention and MLP ----------===//
//
// ToMe: after each block's attention, the r most similar pairs of tokens
// (by their keys, averaged over heads) merge; TokenReduction.h does the
// rest.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/TokenReduction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_MERGETOKENSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

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
    SmallVector<AttentionOp> attentions(func.getBody().getOps<AttentionOp>());
    SmallVector<int64_t> merges = scheduleFor(attentions.size());
    if (llvm::all_of(merges, [](int64_t r) { return r <= 0; }))
      return;
    if (!sameMasks(attentions, "tokens not merged"))
      return;
    TokenSet set;
    for (auto [k, attention] : llvm::enumerate(attentions))
      if (merges[k] > 0 && failed(mergeBlock(attention, merges[k], set)))
        return signalPassFailure();
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
    auto indices = [&](int64_t n) {
      return RankedTensorType::get({batch, n}, b.getI64Type());
    };
    auto match = TokenMatchOp::create(
        b, loc, indices(count), indices(count - r), getKeyMetric(b, attention),
        set.keyMask, b.getI64IntegerAttr(r), b.getI64IntegerAttr(1));
    return reduceTokens(b, loc, *block, match.getDestination(), match.getKept(),
                        count - r, set);
  }
};

} // namespace
