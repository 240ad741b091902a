//===- QuantizeInt8Dynamic.cpp - int8 weights, rows quantized at run time -===//
//
// Weights are quantized here, once; activations row by row when the model
// runs (kiln.quantized_matmul), so no calibration data is needed. Weight
// columns get their own scales: a transformer's columns differ in range by
// an order of magnitude, and one scale for all would spend the 7 bits on
// the widest.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEINT8DYNAMICPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The largest magnitude of the weights' integers: 7 bits, symmetric.
constexpr int kMaxWeight = 63;

struct QuantizeConstantRhs : OpRewritePattern<MatMulOp> {
  QuantizeConstantRhs(MLIRContext *ctx, int64_t width, int64_t minDepth)
      : OpRewritePattern(ctx), width(width), minDepth(minDepth) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ConstantWeights> weights = matchQuantizableProduct(op, minDepth);
    if (!weights)
      return failure();
    int64_t k = weights->k, n = weights->n;
    int64_t panels = llvm::divideCeil(n, width), groups = llvm::divideCeil(k, 4);
    int64_t padded = panels * width;
    auto w = [&](int64_t row, int64_t col) { return weights->at(row, col); };

    std::vector<float> scales(padded, 0.0f);
    std::vector<int32_t> sums(padded, 0);
    for (int64_t col = 0; col < n; ++col) {
      float largest = 0;
      for (int64_t row = 0; row < k; ++row)
        largest = std::max(largest, std::fabs(w(row, col)));
      scales[col] = largest / kMaxWeight;
    }
    auto quantized = [&](int64_t row, int64_t col) -> int8_t {
      if (row >= k || col >= n || scales[col] == 0)
        return 0;
      float q = std::nearbyint(w(row, col) / scales[col]);
      return static_cast<int8_t>(
          std::clamp(q, float(-kMaxWeight), float(kMaxWeight)));
    };
    auto packedType = RankedTensorType::get({panels, groups, width, 4},
                                            rewriter.getI8Type());
    double errorSquares = 0, weightSquares = 0;
    ElementsAttr packed = createElements(packedType, [&](MutableArrayRef<char> out) {
      char *next = out.data();
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t j = 0; j < width; ++j)
            for (int64_t lane = 0; lane < 4; ++lane) {
              int64_t row = g * 4 + lane, col = p * width + j;
              int8_t q = quantized(row, col);
              sums[col] += q;
              *next++ = static_cast<char>(q);
              if (row < k && col < n) {
                double value = w(row, col);
                double error = value - double(q) * scales[col];
                errorSquares += error * error;
                weightSquares += value * value;
              }
            }
    });
    ConstantOp weight = weights->op;
    Location loc = weight.getLoc();
    rewriter.setInsertionPoint(weight);
    Value panelsValue = ConstantOp::create(rewriter, loc, packed);
    auto scaleType = RankedTensorType::get({padded}, rewriter.getF32Type());
    Value scaleValue = ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(scaleType, ArrayRef<float>(scales)));
    auto sumType = RankedTensorType::get({padded}, rewriter.getI32Type());
    Value sumValue = ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(sumType, ArrayRef<int32_t>(sums)));
    rewriter.setInsertionPoint(op);
    auto product = rewriter.replaceOpWithNewOp<QuantizedMatMulOp>(
        op, op.getType(), op.getLhs(), panelsValue, scaleValue, sumValue);
    setWeightError(product, errorSquares, weightSquares);
    eraseIfUnused(rewriter, weight, weight.getValue());
    return success();
  }

  int64_t width, minDepth;
};

struct QuantizeInt8DynamicPass
    : kiln::impl::QuantizeInt8DynamicPassBase<QuantizeInt8DynamicPass> {
  using QuantizeInt8DynamicPassBase::QuantizeInt8DynamicPassBase;

  void runOnOperation() override {
    if (panelWidth <= 0 || panelWidth % 8 != 0) {
      getOperation()->emitError("kiln-quantize-int8-dynamic: panel-width must "
                                "be a positive multiple of 8");
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<QuantizeConstantRhs>(&getContext(), panelWidth, minDepth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // The products with constant weights left in float, and why, for the
    // report.
    markProductsKeptInFloat(getOperation(), minDepth);
  }
};

} // namespace
