//===- FuseElementwise.cpp - one loop per elementwise chain ---------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The ops in `op`'s body.
int64_t countBodyOps(Operation *op) {
  int64_t count = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      count += static_cast<int64_t>(block.getOperations().size());
  return count;
}

struct FuseElementwisePass
    : kiln::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;

  void runOnOperation() override {
    // Fuse only into all-parallel consumers, only producers used once, and
    // only while the fused body stays within maxFusedOps.
    int64_t limit = maxFusedOps;
    auto shouldFuse = [limit](OpOperand *fusedOperand) {
      Operation *producer = fusedOperand->get().getDefiningOp();
      auto consumer = dyn_cast<linalg::LinalgOp>(fusedOperand->getOwner());
      if (!producer || !consumer || !producer->hasOneUse() ||
          consumer.getNumLoops() != consumer.getNumParallelLoops())
        return false;
      return countBodyOps(producer) + countBodyOps(consumer) <= limit;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
