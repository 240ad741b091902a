//===- CullSplatsExactly.cpp - bin splats only where they can blend -------===//
//
// The square of a splat's 3-sigma radius holds many tiles it never blends
// into; kiln.splat_rasterize's exact culling drops them without changing
// the image (the op's description says how). Exact culling costs a few
// dozen flops per tile of the square, against a 256-pixel blend step for
// each pair it drops, so -O2 always takes it; -O0 keeps the reference
// binning.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_CULLSPLATSEXACTLYPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct CullSplatsExactlyPass
    : kiln::impl::CullSplatsExactlyPassBase<CullSplatsExactlyPass> {
  void runOnOperation() override {
    getOperation().walk([](Operation *op) {
      if (auto rasterize = dyn_cast<SplatRasterizeOp>(op))
        rasterize.setCulling(SplatCulling::Exact);
      else if (auto contributions = dyn_cast<SplatContributionsOp>(op))
        contributions.setCulling(SplatCulling::Exact);
    });
  }
};

} // namespace
