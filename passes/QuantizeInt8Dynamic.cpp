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

struct QuantizeConstantRhs : OpRewritePattern<MatMulOp> {
  QuantizeConstantRhs(MLIRContext *ctx, int64_t width, int64_t minDepth)
      : OpRewritePattern(ctx), width(width), minDepth(minDepth) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ConstantWeights> weights = matchQuantizableProduct(op, minDepth);
    if (!weights)
      return failure();
    ConstantOp weight = weights->op;
    // A static input quantization calibration chose (int8-static): a scale
    // and zero point, and possibly per-column smoothing factors, which
    // multiply the weights' rows before they are quantized.
    auto scale = op->getAttrOfType<FloatAttr>(kInputScaleAttr);
    auto zeroPoint = op->getAttrOfType<IntegerAttr>(kInputZeroPointAttr);
    auto smoothing = op->getAttrOfType<DenseElementsAttr>(kInputSmoothingAttr);
    if (smoothing && (!scale || !zeroPoint ||
                      smoothing.getNumElements() != weights->k ||
                      !smoothing.getElementType().isF32()))
      return rewriter.notifyMatchFailure(op, "smoothing of the wrong shape");
    std::vector<float> smoothed;
    ConstantWeights quantized = *weights;
    if (smoothing) {
      smoothed.assign(weights->values, weights->values + weights->k * weights->n);
      int64_t row = 0;
      for (float factor : smoothing.getValues<float>()) {
        for (int64_t col = 0; col < weights->n; ++col)
          smoothed[row * weights->n + col] *= factor;
        ++row;
      }
      quantized.values = smoothed.data();
    }
    rewriter.setInsertionPoint(weight);
    Int8Weights packed =
        createInt8Weights(rewriter, weight.getLoc(), quantized, width);
    rewriter.setInsertionPoint(op);
    Value inputScale, inputZeroPoint, inputSmoothing;
    if (scale && zeroPoint) {
      inputScale = ConstantOp::create(
          rewriter, op.getLoc(),
          DenseElementsAttr::get(
              RankedTensorType::get({}, rewriter.getF32Type()),
              rewriter.getF32FloatAttr(scale.getValueAsDouble())));
      inputZeroPoint =
          createUnsignedZeroPoint(rewriter, op.getLoc(), zeroPoint.getInt());
    }
    if (smoothing)
      inputSmoothing = ConstantOp::create(
          rewriter, op.getLoc(),
          smoothing.reshape(RankedTensorType::get({weights->k},
                                                  rewriter.getF32Type())));
    auto product = QuantizedMatMulOp::create(
        rewriter, op.getLoc(), op.getType(), op.getLhs(), packed.panels,
        packed.scales, packed.columnSums, inputScale, inputZeroPoint,
        inputSmoothing);
    setWeightError(product, packed.errorSquares, packed.weightSquares, op);
    if (Attribute alpha = op->getAttr(kSmoothingAlphaAttr))
      product->setAttr(kSmoothingAlphaAttr, alpha);
    rewriter.replaceOp(op, product);
    eraseIfUnused(rewriter, weight, weight.getValue());
    return success();
  }

  int64_t width, minDepth;
};

struct QuantizeInt8DynamicPass
    : kiln::impl::QuantizeInt8DynamicPassBase<QuantizeInt8DynamicPass> {
  using QuantizeInt8DynamicPassBase::QuantizeInt8DynamicPassBase;

  void runOnOperation() override {
    if (failed(checkPanelWidth(getOperation(), getArgument(), panelWidth)))
      return signalPassFailure();
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
