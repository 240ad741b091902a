//===- FuseInt4WeightProducts.cpp - blocked 4-bit QDQ weights, int4 kernel ===//
//
// ONNX opset 21 writes weight-only 4-bit quantization without a custom op:
// DequantizeLinear of constant INT4/UINT4 weights in blocks along K (what
// ONNX Runtime's MatMulNBitsQuantizer writes in QDQ format) feeding a
// MatMul. Run as written, the weights are dequantized to f32 once and the
// model reads 8 times their bytes on every step; here the chain becomes
// kiln.int4_matmul on the model's own integers and scales.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantMatch.h"
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "dialects/Kiln/IR/Int4Weights.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSEINT4WEIGHTPRODUCTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The constants of a blocked 4-bit dequantization of a `[k, n]` matrix.
struct BlockedWeights {
  SmallVector<int64_t> integers, zeroPoints;
  SmallVector<float> scales;
  int64_t k, n, blockSize;
  /// What the kernel's unsigned nibbles are offset by: 0 for UINT4, 8 for
  /// INT4 (its [-8, 7] shifted into [0, 15]).
  int offset;
};

bool inFourBitRange(ArrayRef<int64_t> values, bool isUnsigned) {
  int64_t low = isUnsigned ? 0 : -8, high = isUnsigned ? 15 : 7;
  return llvm::all_of(values,
                      [&](int64_t v) { return v >= low && v <= high; });
}

/// The weights `dequantize` computes if they are constant 4-bit integers
/// of a 2-D matrix, blocked along its rows in blocks the int4 kernel can
/// take (a multiple of 8 rows).
std::optional<BlockedWeights> matchBlockedWeights(DequantizeOp dequantize) {
  std::optional<int64_t> blockSize = dequantize.getBlockSize();
  RankedTensorType type = dequantize.getType();
  if (!blockSize || *blockSize % 8 != 0 || dequantize.getAxis() != 0 ||
      type.getRank() != 2 || !type.hasStaticShape())
    return std::nullopt;
  auto input = dequantize.getInput().getDefiningOp<ConstantOp>();
  auto scale = dequantize.getScale().getDefiningOp<ConstantOp>();
  auto zeroPoint = dequantize.getZeroPoint().getDefiningOp<ConstantOp>();
  if (!input || !scale || !zeroPoint ||
      !input.getType().getElementType().isInteger(8))
    return std::nullopt;
  bool isUnsigned = dequantize.getInputUnsigned();
  std::optional<SmallVector<int64_t>> integers =
      getIntegers(input.getValue(), isUnsigned);
  std::optional<SmallVector<int64_t>> zeroPoints =
      getIntegers(zeroPoint.getValue(), isUnsigned);
  std::optional<SmallVector<float>> scales = getFloats(scale.getValue());
  if (!integers || !zeroPoints || !scales ||
      !inFourBitRange(*integers, isUnsigned) ||
      !inFourBitRange(*zeroPoints, isUnsigned))
    return std::nullopt;
  return BlockedWeights{std::move(*integers), std::move(*zeroPoints),
                        std::move(*scales),   type.getDimSize(0),
                        type.getDimSize(1),   *blockSize,
                        isUnsigned ? 0 : 8};
}

struct FuseBlockedInt4Product : OpRewritePattern<MatMulOp> {
  FuseBlockedInt4Product(MLIRContext *ctx, int64_t width)
      : OpRewritePattern(ctx), width(width) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto dequantize = op.getRhs().getDefiningOp<DequantizeOp>();
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    if (!dequantize || !lhsType.getElementType().isF32() ||
        lhsType.getRank() < 2)
      return failure();
    std::optional<BlockedWeights> weights = matchBlockedWeights(dequantize);
    if (!weights)
      return rewriter.notifyMatchFailure(op, "not blocked 4-bit weights");
    int64_t n = weights->n, blockSize = weights->blockSize;
    auto param = [&](int64_t block, int64_t col) { return block * n + col; };
    auto zeroPoint = [&](int64_t block, int64_t col) {
      return int(weights->zeroPoints[param(block, col)]) + weights->offset;
    };
    auto integer = [&](int64_t row, int64_t col) {
      return int(weights->integers[row * n + col] -
                 weights->zeroPoints[param(row / blockSize, col)]);
    };
    auto scale = [&](int64_t block, int64_t col) {
      return weights->scales[param(block, col)];
    };
    bool symmetric = llvm::all_of(weights->zeroPoints, [&](int64_t z) {
      return z + weights->offset == 8;
    });
    double weightSquares = 0;
    for (int64_t row = 0; row < weights->k; ++row)
      for (int64_t col = 0; col < n; ++col) {
        double value = integer(row, col) * double(scale(row / blockSize, col));
        weightSquares += value * value;
      }

    rewriter.setInsertionPoint(op);
    Int4Weights packed = createInt4Weights(
        rewriter, dequantize.getLoc(), weights->k, n, blockSize, width,
        integer, scale,
        symmetric ? function_ref<int(int64_t, int64_t)>() : zeroPoint);
    auto product = Int4MatMulOp::create(
        rewriter, op.getLoc(), op.getType(), op.getLhs(), packed.panels,
        packed.scales, packed.columnSums, packed.zeroPoints);
    // The model's own integers: nothing is lost against its dequantized
    // weights.
    setWeightError(product, 0.0, weightSquares, nullptr);
    rewriter.replaceOp(op, product);
    if (dequantize->use_empty()) {
      SmallVector<ConstantOp> constants;
      for (Value operand : dequantize->getOperands())
        constants.push_back(operand.getDefiningOp<ConstantOp>());
      rewriter.eraseOp(dequantize);
      for (ConstantOp constant : constants)
        eraseIfUnused(rewriter, constant, constant.getValue());
    }
    return success();
  }

  int64_t width;
};

struct FuseInt4WeightProductsPass
    : kiln::impl::FuseInt4WeightProductsPassBase<FuseInt4WeightProductsPass> {
  using FuseInt4WeightProductsPassBase::FuseInt4WeightProductsPassBase;

  void runOnOperation() override {
    if (failed(checkPanelWidth(getOperation(), getArgument(), panelWidth)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseBlockedInt4Product>(&getContext(), panelWidth);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
