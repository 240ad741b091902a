//===- FuseMatMulResidual.cpp - skip connections as a product's epilogue --===//
//
// Every transformer block ends with `x + Linear(...)`. Added separately, the
// skip connection costs a pass over the product's result; as the product's
// epilogue it is added to each block while the block is still in cache.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEMATMULRESIDUALPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct FuseResidualAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [product, other] : {std::pair(add.getLhs(), add.getRhs()),
                                  std::pair(add.getRhs(), add.getLhs())}) {
      auto matmul = product.getDefiningOp<PackedMatMulOp>();
      // The residual has the product's shape: an add that broadcasts is a
      // bias (or something else), not a skip connection.
      if (!matmul || matmul.getResidual() || !matmul->hasOneUse() ||
          other.getType() != matmul.getType() ||
          add.getType() != matmul.getType())
        continue;
      rewriter.replaceOpWithNewOp<PackedMatMulOp>(
          add, add.getType(), matmul.getLhs(), matmul.getRhs(),
          matmul.getBias(), other, matmul.getActivationAttr());
      rewriter.eraseOp(matmul);
      return success();
    }
    return failure();
  }
};

struct FuseMatMulResidualPass
    : kiln::impl::FuseMatMulResidualPassBase<FuseMatMulResidualPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseResidualAdd>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
