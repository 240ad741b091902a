//===- FewPixelConvolutions.cpp - convolutions with few outputs per filter ===//
//
// A convolution lowers to a matrix product with the filters as rows and
// the output pixels as columns, in vector-wide column panels. When there
// are only a few pixels (a squeeze-excitation block's 1x1 map, a speech
// model's four frames) most of each panel is padding: one pixel of a
// 16-wide panel does 1/16 useful work. With the product transposed, the
// pixels are the rows and the filters the vector columns, so the panels
// are full: [P, C*kh*kw] patches gathered from the input times the filter
// transposed to [C*kh*kw, F], which is constant and so transposed here,
// once. The product is then a kiln.matmul that kiln-pack-weights stores
// in panels like any other weight.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_FEWPIXELCONVOLUTIONSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// `filter` ([F, depth], f32 bytes) transposed to [depth, F].
ElementsAttr transposeFilter(MLIRContext *ctx, ArrayRef<char> filter,
                             int64_t filters, int64_t depth) {
  auto type = RankedTensorType::get({depth, filters}, Float32Type::get(ctx));
  return createElements(type, [&](MutableArrayRef<char> bytes) {
    for (int64_t f = 0; f < filters; ++f)
      for (int64_t q = 0; q < depth; ++q)
        std::memcpy(bytes.data() + (q * filters + f) * sizeof(float),
                    filter.data() + (f * depth + q) * sizeof(float),
                    sizeof(float));
  });
}

struct ConvToTransposedProduct : OpRewritePattern<Conv2DOp> {
  ConvToTransposedProduct(MLIRContext *ctx, int64_t maxPixels)
      : OpRewritePattern(ctx), maxPixels(maxPixels) {}

  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rewriter) const override {
    ConstantOp filter = matchConstantFilter(op);
    if (!filter)
      return rewriter.notifyMatchFailure(op, "not a static f32 convolution "
                                             "with a constant filter");
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> in = inputType.getShape(), out = resultType.getShape();
    int64_t images = out[0], filters = out[1], imagePixels = out[2] * out[3];
    int64_t pixels = images * imagePixels;
    if (pixels > maxPixels)
      return rewriter.notifyMatchFailure(op, "enough pixels to fill panels");
    ArrayRef<char> bytes = *getRawBytes(filter.getValue());
    auto filterType = cast<RankedTensorType>(filter.getType());
    int64_t channels = in[1], kh = filterType.getDimSize(2),
            kw = filterType.getDimSize(3);
    int64_t depth = channels * kh * kw;
    int64_t length = inputType.getNumElements();
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations(),
                      pads = op.getPads();

    // Patch element (p, q) is the input's flat index, or `length` (a zero
    // appended to the input) where the tap reads the padding.
    SmallVector<int64_t> indices;
    indices.reserve(pixels * depth);
    bool readsPadding = false;
    for (int64_t p = 0; p < pixels; ++p) {
      int64_t n = p / imagePixels, oy = p % imagePixels / out[3],
              ox = p % out[3];
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            int64_t y = oy * strides[0] - pads[0] + i * dilations[0];
            int64_t x = ox * strides[1] - pads[1] + j * dilations[1];
            bool inside = y >= 0 && y < in[2] && x >= 0 && x < in[3];
            readsPadding |= !inside;
            indices.push_back(
                inside ? ((n * channels + c) * in[2] + y) * in[3] + x : length);
          }
        }
      }
    }

    Location loc = op.getLoc();
    Type f32 = inputType.getElementType();
    Value data =
        ReshapeOp::create(rewriter, loc, RankedTensorType::get({length}, f32),
                          op.getInput(), ValueRange());
    if (readsPadding) {
      auto zeroType = RankedTensorType::get({1}, f32);
      Value zero = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(zeroType, rewriter.getZeroAttr(f32)));
      data = ConcatOp::create(rewriter, loc,
                              RankedTensorType::get({length + 1}, f32),
                              ValueRange{data, zero}, 0);
    }
    auto indexType =
        RankedTensorType::get({pixels, depth}, rewriter.getI64Type());
    Value table = ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(indexType, ArrayRef<int64_t>(indices)));
    Value patches = GatherOp::create(
        rewriter, loc, RankedTensorType::get({pixels, depth}, f32), data, table,
        0);

    rewriter.setInsertionPoint(filter);
    Value weights = ConstantOp::create(
        rewriter, filter.getLoc(),
        transposeFilter(getContext(), bytes, filters, depth));
    rewriter.setInsertionPoint(op);
    Value product = MatMulOp::create(
        rewriter, loc, RankedTensorType::get({pixels, filters}, f32), patches,
        weights);
    // [N * Ho * Wo, F] to NCHW: a reshape when each image has one pixel.
    if (imagePixels != 1) {
      Value byImage = ReshapeOp::create(
          rewriter, loc,
          RankedTensorType::get({images, imagePixels, filters}, f32), product,
          ValueRange());
      product = TransposeOp::create(
          rewriter, loc,
          RankedTensorType::get({images, filters, imagePixels}, f32), byImage,
          rewriter.getDenseI64ArrayAttr({0, 2, 1}));
    }
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, resultType, product,
                                           ValueRange());
    eraseIfUnused(rewriter, filter, filter.getValue());
    return success();
  }

  int64_t maxPixels;
};

struct FewPixelConvolutionsPass
    : kiln::impl::FewPixelConvolutionsPassBase<FewPixelConvolutionsPass> {
  using FewPixelConvolutionsPassBase::FewPixelConvolutionsPassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvToTransposedProduct>(&getContext(), maxPixels);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
