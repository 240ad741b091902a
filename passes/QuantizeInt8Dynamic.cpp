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
    auto weight = op.getRhs().getDefiningOp<ConstantOp>();
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    if (!weight || lhsType.getRank() < 2 ||
        ShapedType::isDynamic(lhsType.getShape().back()) ||
        !lhsType.getElementType().isF32())
      return failure();
    std::optional<ArrayRef<char>> bytes = getRawBytes(weight.getValue());
    auto type = cast<RankedTensorType>(weight.getType());
    if (!bytes || !type.getElementType().isF32() || type.getRank() != 2 ||
        type.getDimSize(1) == 0)
      return failure();
    if (type.getDimSize(0) < minDepth)
      return failure();
    int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    int64_t panels = llvm::divideCeil(n, width), groups = llvm::divideCeil(k, 4);
    int64_t padded = panels * width;
    const float *w = reinterpret_cast<const float *>(bytes->data());

    std::vector<float> scales(padded, 0.0f);
    std::vector<int32_t> sums(padded, 0);
    for (int64_t col = 0; col < n; ++col) {
      float largest = 0;
      for (int64_t row = 0; row < k; ++row)
        largest = std::max(largest, std::fabs(w[row * n + col]));
      scales[col] = largest / kMaxWeight;
    }
    auto quantized = [&](int64_t row, int64_t col) -> int8_t {
      if (row >= k || col >= n || scales[col] == 0)
        return 0;
      float q = std::nearbyint(w[row * n + col] / scales[col]);
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
                double value = w[row * n + col];
                double error = value - double(q) * scales[col];
                errorSquares += error * error;
                weightSquares += value * value;
              }
            }
    });
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
    product->setAttr(kWeightErrorAttr,
                     rewriter.getF32FloatAttr(
                         weightSquares > 0
                             ? std::sqrt(errorSquares / weightSquares)
                             : 0.0));
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
    getOperation()->walk([&](MatMulOp op) {
      auto weight = op.getRhs().getDefiningOp<ConstantOp>();
      auto type = weight ? dyn_cast<RankedTensorType>(weight.getType())
                         : RankedTensorType();
      if (!type || type.getRank() != 2)
        return;
      std::string reason;
      if (type.getDimSize(0) < minDepth)
        reason = "depth " + std::to_string(type.getDimSize(0)) +
                 " is below min-depth " + std::to_string(minDepth);
      else if (ShapedType::isDynamic(op.getLhs().getType().getShape().back()))
        reason = "its depth is a dynamic dimension";
      else if (!type.getElementType().isF32())
        reason = "its weights are not f32";
      else if (op.getLhs().getType().getRank() < 2)
        reason = "its input is a vector";
      if (!reason.empty())
        op->setAttr(kKeptFloatAttr, StringAttr::get(&getContext(), reason));
    });
  }
};

} // namespace
