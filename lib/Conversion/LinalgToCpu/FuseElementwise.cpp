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

/// Fuse only into all-parallel consumers, and only producers used once.
bool shouldFuse(OpOperand *fusedOperand) {
  Operation *producer = fusedOperand->get().getDefiningOp();
  auto consumer = dyn_cast<linalg::LinalgOp>(fusedOperand->getOwner());
  if (!producer || !consumer || !producer->hasOneUse())
    return false;
  return consumer.getNumLoops() == consumer.getNumParallelLoops();
}

struct FuseElementwisePass
    : kiln::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
