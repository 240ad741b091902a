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

/// The one value of a 0-D constant `value`, as a double (8-bit integers
/// read as unsigned with `isUnsigned`).
std::optional<double> getScalar(Value value, bool isUnsigned) {
  DenseElementsAttr elements = getConstantElements(value);
  if (!elements || elements.getType().getRank() != 0)
    return std::nullopt;
  if (elements.getElementType().isF32())
    return *elements.getValues<float>().begin();
  std::optional<SmallVector<int64_t>> integers =
      getIntegers(elements, isUnsigned);
  if (!integers || integers->size() != 1)
    return std::nullopt;
  return double((*integers)[0]);
}

/// Whether `a` and `b` are the same value or equal 0-D constants.
bool sameScalar(Value a, Value b, bool isUnsigned) {
  if (a == b)
    return true;
  std::optional<double> x = getScalar(a, isUnsigned),
                        y = getScalar(b, isUnsigned);
  return x && y && *x == *y;
}

struct FuseQdqProduct : OpRewritePattern<MatMulOp> {
  FuseQdqProduct(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), width(width) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto dequantize = op.getLhs().getDefiningOp<DequantizeOp>();
    auto quantize =
        dequantize ? dequantize.getInput().getDefiningOp<QuantizeOp>()
                   : QuantizeOp();
    if (!quantize || dequantize.getAxis() || quantize.getAxis() ||
        dequantize.getInputUnsigned() != quantize.getResultUnsigned())
      return failure();
    bool isUnsigned = quantize.getResultUnsigned();
    std::optional<double> zeroPoint =
        getScalar(quantize.getZeroPoint(), isUnsigned);
    if (!zeroPoint || !getScalar(quantize.getScale(), false) ||
        !sameScalar(quantize.getScale(), dequantize.getScale(), false) ||
        !sameScalar(quantize.getZeroPoint(), dequantize.getZeroPoint(),
                    isUnsigned))
      return failure();
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
