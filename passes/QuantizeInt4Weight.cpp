//===- QuantizeInt4Weight.cpp - 4-bit weights with one scale per block ----===//
//
// Weight-only quantization for memory-bound products: a decoder's step
// multiplies one row by every weight, so its time is the weights' bytes
// over memory bandwidth, and 4 bits halve int8's bytes. Four bits are too
// few for one scale per column, so each block of `block-size` rows of a
// column gets its own (as ONNX Runtime's MatMulNBits and GPTQ do).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/Int4Weights.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEINT4WEIGHTPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct QuantizeConstantRhs : OpRewritePattern<MatMulOp> {
  QuantizeConstantRhs(MLIRContext *ctx, int64_t width, int64_t blockSize,
                      int64_t minDepth, bool zeroPoints)
      : OpRewritePattern(ctx), width(width), blockSize(blockSize),
        minDepth(minDepth), zeroPoints(zeroPoints) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ConstantWeights> weights =
        matchQuantizableProduct(op, minDepth);
    if (!weights)
      return failure();
    int64_t k = weights->k, n = weights->n;

    // Each block of each column: its scale (and zero point), and its rows'
    // integers.
    Int4Quantization quantization(*weights, blockSize, zeroPoints);
    auto scale = [&](int64_t block, int64_t col) {
      return quantization.scale(block, col);
    };
    auto quantized = [&](int64_t row, int64_t col) {
      return quantization.integer(row, col);
    };
    double errorSquares = 0, weightSquares = 0;
    for (int64_t row = 0; row < k; ++row)
      for (int64_t col = 0; col < n; ++col) {
        double value = weights->at(row, col);
        double error =
            value - quantized(row, col) * double(scale(row / blockSize, col));
        errorSquares += error * error;
        weightSquares += value * value;
      }

    ConstantOp weight = weights->op;
    rewriter.setInsertionPoint(weight);
    auto zeroPoint = [&](int64_t block, int64_t col) {
      return quantization.zeroPoint(block, col);
    };
    Int4Weights packed = createInt4Weights(
        rewriter, weight.getLoc(), k, n, blockSize, width, quantized, scale,
        zeroPoints ? function_ref<int(int64_t, int64_t)>(zeroPoint) : nullptr);
    rewriter.setInsertionPoint(op);
    auto product = Int4MatMulOp::create(
        rewriter, op.getLoc(), op.getType(), op.getLhs(), packed.panels,
        packed.scales, packed.columnSums, packed.zeroPoints);
    setWeightError(product, errorSquares, weightSquares, op);
    rewriter.replaceOp(op, product);
    eraseIfUnused(rewriter, weight, weight.getValue());
    return success();
  }

  int64_t width, blockSize, minDepth;
  bool zeroPoints;
};

struct QuantizeInt4WeightPass
    : kiln::impl::QuantizeInt4WeightPassBase<QuantizeInt4WeightPass> {
  using QuantizeInt4WeightPassBase::QuantizeInt4WeightPassBase;

  void runOnOperation() override {
    if (failed(checkPanelWidth(getOperation(), getArgument(), panelWidth)))
      return signalPassFailure();
    if (blockSize <= 0 || blockSize % 8 != 0) {
      getOperation()->emitError(getArgument())
          << ": block-size must be a positive multiple of 8, not "
          << int64_t(blockSize);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<QuantizeConstantRhs>(&getContext(), panelWidth, blockSize,
                                      minDepth, zeroPoints);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    markProductsKeptInFloat(getOperation(), minDepth);
  }
};

} // namespace
