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
    rewriter.setInsertionPoint(weight);
    Int8Weights packed =
        createInt8Weights(rewriter, weight.getLoc(), *weights, width);
    Attribute calibrationError = op->getAttr(kCalibrationErrorAttr);
    rewriter.setInsertionPoint(op);
    // A static input quantization calibration chose (int8-static), as
    // 0-D constants.
    Value inputScale, inputZeroPoint;
    auto scale = op->getAttrOfType<FloatAttr>(kInputScaleAttr);
    auto zeroPoint = op->getAttrOfType<IntegerAttr>(kInputZeroPointAttr);
    if (scale && zeroPoint) {
      inputScale = ConstantOp::create(
          rewriter, op.getLoc(),
          DenseElementsAttr::get(
              RankedTensorType::get({}, rewriter.getF32Type()),
              rewriter.getF32FloatAttr(scale.getValueAsDouble())));
      inputZeroPoint =
          createUnsignedZeroPoint(rewriter, op.getLoc(), zeroPoint.getInt());
    }
    auto product = rewriter.replaceOpWithNewOp<QuantizedMatMulOp>(
        op, op.getType(), op.getLhs(), packed.panels, packed.scales,
        packed.columnSums, inputScale, inputZeroPoint);
    setWeightError(product, packed.errorSquares, packed.weightSquares,
                   calibrationError);
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
