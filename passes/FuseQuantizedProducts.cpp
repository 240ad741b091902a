//===- FuseQuantizedProducts.cpp - QDQ products onto the int8 kernel ------===//
//
// A QDQ model (ONNX Runtime's quantize_static, TensorRT's explicit
// quantization) marks an int8 product as QuantizeLinear -> DequantizeLinear
// on the activation and DequantizeLinear on constant int8 weights around a
// float MatMul. Run as written, that is a float product plus two
// elementwise passes: slower than the float model. Here the chain becomes
// one kiln.quantized_matmul that quantizes the activation with the model's
// own scale and zero point and multiplies on int8 panels.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantMatch.h"
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEQUANTIZEDPRODUCTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct FuseQdqProduct : OpRewritePattern<MatMulOp> {
  FuseQdqProduct(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), width(width) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto dequantize = op.getLhs().getDefiningOp<DequantizeOp>();
    QuantizeOp quantize =
        dequantize ? matchActivationQdq(dequantize) : QuantizeOp();
    // 16-bit activations (ONNX Runtime's QInt16) stay float products.
    if (!quantize || !quantize.getType().getElementType().isInteger(8))
      return failure();
    bool isUnsigned = quantize.getResultUnsigned();
    std::optional<double> zeroPoint =
        getScalar(quantize.getZeroPoint(), isUnsigned);
    // The activation, not its quantization, is what the product reads.
    auto lhsType = cast<RankedTensorType>(quantize.getInput().getType());
    if (lhsType.getRank() < 2 || ShapedType::isDynamic(lhsType.getShape().back()))
      return failure();
    std::optional<ConstantWeights> weights =
        matchQuantizableProduct(op, /*minDepth=*/1);
    if (!weights)
      return failure();

    ConstantOp weight = weights->op;
    rewriter.setInsertionPoint(weight);
    Int8Weights packed =
        createInt8Weights(rewriter, weight.getLoc(), *weights, width);
    // The kernel reads uint8: an int8 quantization is the same shifted by
    // 128, its zero point with it.
    int64_t unsignedZero = int64_t(*zeroPoint) + (isUnsigned ? 0 : 128);
    rewriter.setInsertionPoint(op);
    Value zero = createUnsignedZeroPoint(rewriter, op.getLoc(), unsignedZero);
    auto product = rewriter.replaceOpWithNewOp<QuantizedMatMulOp>(
        op, op.getType(), quantize.getInput(), packed.panels, packed.scales,
        packed.columnSums, quantize.getScale(), zero, Value());
    setWeightError(product, packed.errorSquares, packed.weightSquares,
                   nullptr);
    eraseIfUnused(rewriter, weight, weight.getValue());
    return success();
  }

  int64_t width;
};

struct FuseQuantizedProductsPass
    : kiln::impl::FuseQuantizedProductsPassBase<FuseQuantizedProductsPass> {
  using FuseQuantizedProductsPassBase::FuseQuantizedProductsPassBase;

  void runOnOperation() override {
    if (failed(checkPanelWidth(getOperation(), getArgument(), panelWidth)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseQdqProduct>(&getContext(), panelWidth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
