//===- FoldAttentionTransposes.cpp - heads split and merge in the kernel --===//
//
// Exporters split a projection `[B, S, H*D]` into heads with a Reshape to
// `[B, S, H, D]` and a Transpose to `[B, H, S, D]`, and merge the attention's
// result back with the inverse Transpose. Each transpose is a copy of the
// whole tensor; the attention kernel can instead read query and value rows,
// and write result rows, where they lie in the sequence-first layout.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDATTENTIONTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// True if `perm` swaps the two dimensions before the last and keeps the
/// others: `[..., S, H, D]` <-> `[..., H, S, D]`.
bool swapsSequenceAndHeads(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 3)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t expected = i == rank - 3 ? rank - 2 : i == rank - 2 ? rank - 3 : i;
    if (perm[i] != expected)
      return false;
  }
  return true;
}

/// The transpose's input if `value` is such a transpose, else null.
Value getSequenceFirstSource(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  return transpose && swapsSequenceAndHeads(transpose.getPerm())
             ? transpose.getInput()
             : Value();
}

struct FoldAttentionTransposesPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value query = op.getQuery(), value = op.getValue();
    bool querySeqFirst = op.getQuerySeqFirst();
    bool valueSeqFirst = op.getValueSeqFirst();
    if (!querySeqFirst)
      if (Value source = getSequenceFirstSource(query)) {
        query = source;
        querySeqFirst = true;
      }
    if (!valueSeqFirst)
      if (Value source = getSequenceFirstSource(value)) {
        value = source;
        valueSeqFirst = true;
      }
    // The result's only user transposing it back to sequence first.
    TransposeOp merge;
    if (!op.getResultSeqFirst() && op->hasOneUse()) {
      merge = dyn_cast<TransposeOp>(*op->getUsers().begin());
      if (merge && !swapsSequenceAndHeads(merge.getPerm()))
        merge = nullptr;
    }
    if (query == op.getQuery() && value == op.getValue() && !merge)
      return failure();

    Operation *replaced = merge ? merge.getOperation() : op.getOperation();
    rewriter.setInsertionPoint(replaced);
    auto attention = AttentionOp::create(
        rewriter, op.getLoc(), replaced->getResult(0).getType(), query,
        op.getKeyT(), value, op.getMask(), op.getScaleAttr(),
        op.getMaskFillAttr(),
        querySeqFirst ? rewriter.getUnitAttr() : UnitAttr(),
        valueSeqFirst ? rewriter.getUnitAttr() : UnitAttr(),
        merge || op.getResultSeqFirst() ? rewriter.getUnitAttr() : UnitAttr());
    rewriter.replaceOp(replaced, attention);
    if (merge)
      rewriter.eraseOp(op);
    return success();
  }
};

struct FoldAttentionTransposesPass
    : kiln::impl::FoldAttentionTransposesPassBase<FoldAttentionTransposesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldAttentionTransposesPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
