//===- StripFloatQdq.cpp - drop fake quantization around float ops -------===//
//
// A QDQ model wraps most activations in QuantizeLinear -> DequantizeLinear,
// also around ops that have no integer kernel here (Softmax, LayerNorm,
// GELU, residual adds, attention's activation x activation products).
// Kiln runs those in fp32, so such a pair changes nothing but adding its
// rounding error, costs two passes over the activation, and hides the
// chains that the LayerNorm and attention fusions match. The pairs whose
// result feeds a product with constant weights stay: they are the ones
// kiln-fuse-quantized-products turns into int8 kernels.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantMatch.h"
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_STRIPFLOATQDQPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Whether `use` is the input of a product with constant weights: an int8
/// kernel once kiln-fuse-quantized-products has run.
bool feedsIntegerProduct(OpOperand &use) {
  auto product = dyn_cast<MatMulOp>(use.getOwner());
  return product && use.getOperandNumber() == 0 &&
         matchQuantizableProduct(product, /*minDepth=*/1);
}

struct StripPair : OpRewritePattern<DequantizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    QuantizeOp quantize = matchActivationQdq(op);
    if (!quantize || quantize.getInput().getType() != op.getType() ||
        llvm::all_of(op->getUses(), feedsIntegerProduct))
      return failure();
    // A layer's normalized activation feeds its query, key and value
    // products and also its residual add: only the add's use goes.
    rewriter.replaceUsesWithIf(op, quantize.getInput(), [](OpOperand &use) {
      return !feedsIntegerProduct(use);
    });
    return success();
  }
};

struct StripFloatQdqPass
    : kiln::impl::StripFloatQdqPassBase<StripFloatQdqPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StripPair>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
