//===- DepthwiseConvLowering.cpp - depthwise convolutions as SIMD rows ----===//
//
// A depthwise convolution (one filter per channel, MobileNet's 3x3 and 5x5
// layers) has too little work per output for a matrix product: im2col
// would copy every input element kh*kw times for a product of depth kh*kw.
// Each output is instead the sum over the taps (i, j) of the channel's
// weight times the input shifted by (i, j): one elementwise linalg.generic
// whose operands are the kh*kw shifted windows of the padded input (strided
// slices) and the taps' per-channel weights. Elementwise, it is vectorized
// along the output rows like any other, and the bias, normalization and
// activation that follow fuse into it, so the result is written once.
//
// With a stride of 2 the windows' columns are two apart, which vector loads
// can't read; the padded input is first split into its even and odd
// columns (one pass), and each tap reads a contiguous window of one half.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace kiln;

namespace {

/// `source[.., offsets..., ...]` with the given static offsets, sizes and
/// strides, as a tensor of `type` (which may drop unit dimensions).
Value createSlice(OpBuilder &b, Location loc, RankedTensorType type,
                  Value source, ArrayRef<int64_t> offsets,
                  ArrayRef<int64_t> sizes, ArrayRef<int64_t> strides) {
  return tensor::ExtractSliceOp::create(
      b, loc, type, source, ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes),
      b.getDenseI64ArrayAttr(strides));
}

struct DepthwiseConv2DLowering : OpConversionPattern<Conv2DOp> {
  DepthwiseConv2DLowering(MLIRContext *context)
      : OpConversionPattern(context, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(Conv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto filterType = cast<RankedTensorType>(op.getFilter().getType());
    int64_t channels = filterType.getDimSize(0);
    if (!resultType.hasStaticShape() || !inputType.hasStaticShape() ||
        !resultType.getElementType().isF32() || op.getGroups() < 2 ||
        static_cast<int64_t>(op.getGroups()) != channels ||
        inputType.getDimSize(1) != channels || filterType.getDimSize(1) != 1)
      return rewriter.notifyMatchFailure(op, "not a depthwise f32 convolution");
    Location loc = op.getLoc();
    Type f32 = resultType.getElementType();
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
    ArrayRef<int64_t> shape = resultType.getShape();
    int64_t kh = filterType.getDimSize(2), kw = filterType.getDimSize(3);

    Value padded = padImages(rewriter, loc, adaptor.getInput(), op.getPads());
    auto paddedShape = cast<RankedTensorType>(padded.getType()).getShape();
    // With stride 2, the even and odd columns of the input.
    bool split = strides[1] == 2;
    SmallVector<Value> halves;
    if (split) {
      for (int64_t phase = 0; phase < 2; ++phase) {
        int64_t columns = (paddedShape[3] - phase + 1) / 2;
        auto halfType = RankedTensorType::get(
            {paddedShape[0], paddedShape[1], paddedShape[2], columns}, f32);
        Value half = createSlice(
            rewriter, loc, halfType, padded, {0, 0, 0, phase},
            {paddedShape[0], paddedShape[1], paddedShape[2], columns},
            {1, 1, 1, 2});
        // Copied, so that the taps read it contiguously.
        halves.push_back(
            linalg::CopyOp::create(rewriter, loc, half,
                                   createEmptyTensor(rewriter, loc, halfType))
                .getResult(0));
      }
    }

    Value weights =
        reshapeTensor(rewriter, loc, adaptor.getFilter(),
                      RankedTensorType::get({channels, kh * kw}, f32));
    auto windowType = RankedTensorType::get(shape, f32);
    auto weightType = RankedTensorType::get({channels}, f32);
    MLIRContext *ctx = rewriter.getContext();
    AffineMap identity = AffineMap::getMultiDimIdentityMap(4, ctx);
    AffineMap perChannel = AffineMap::get(4, 0, getAffineDimExpr(1, ctx), ctx);
    SmallVector<Value> operands;
    SmallVector<AffineMap> maps;
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        int64_t column = j * dilations[1];
        Value source = split ? halves[column % 2] : padded;
        int64_t columnOffset = split ? column / 2 : column;
        int64_t columnStride = split ? 1 : strides[1];
        operands.push_back(createSlice(rewriter, loc, windowType, source,
                                       {0, 0, i * dilations[0], columnOffset},
                                       shape,
                                       {1, 1, strides[0], columnStride}));
        operands.push_back(createSlice(rewriter, loc, weightType, weights,
                                       {0, i * kw + j}, {channels, 1}, {1, 1}));
        maps.append({identity, perChannel});
      }
    }
    maps.push_back(identity);
    SmallVector<utils::IteratorType> parallel(4, utils::IteratorType::parallel);
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, resultType, operands, createEmptyTensor(rewriter, loc, resultType),
        maps, parallel, [&](OpBuilder &b, Location l, ValueRange args) {
          Value sum = arith::MulFOp::create(b, l, args[0], args[1]);
          for (size_t k = 2; k + 1 < args.size(); k += 2)
            sum = math::FmaOp::create(b, l, args[k], args[k + 1], sum);
          linalg::YieldOp::create(b, l, sum);
        });
    return success();
  }
};

} // namespace

void kiln::populateDepthwiseConvLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<DepthwiseConv2DLowering>(patterns.getContext());
}
