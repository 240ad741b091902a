//===- WinogradConvolutions.cpp - 3x3 convolutions by Winograd F(2,3) -----===//
//
// A 3x3 convolution at stride 1 spends 9 multiplications per output and
// input channel; Winograd's F(2x2, 3x3) spends 16 per 2x2 outputs, 2.25x
// fewer, in 16 matrix products over the channels. The filter's transform
// is constant, so it is computed here once, at compile time.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Panels.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_WINOGRADCONVOLUTIONSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// `filter` ([F, C, 3, 3], f32 bytes) as G g G^T per (f, c): [16, F, C],
/// element (a, b) of the 4x4 transform at 4 * a + b. In double, so the
/// transform rounds once.
ElementsAttr transformFilter(MLIRContext *ctx, ArrayRef<char> filter,
                             int64_t filters, int64_t channels) {
  static const double g[4][3] = {
      {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  auto type = RankedTensorType::get({16, filters, channels},
                                    Float32Type::get(ctx));
  return createElements(type, [&](MutableArrayRef<char> bytes) {
    int64_t pairs = filters * channels;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float taps[9];
      std::memcpy(taps, filter.data() + pair * sizeof(taps), sizeof(taps));
      for (int a = 0; a < 4; ++a) {
        for (int b = 0; b < 4; ++b) {
          double sum = 0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
              sum += g[a][i] * taps[3 * i + j] * g[b][j];
          float value = static_cast<float>(sum);
          std::memcpy(bytes.data() + ((4 * a + b) * pairs + pair) *
                                         sizeof(float),
                      &value, sizeof(float));
        }
      }
    }
  });
}

/// Each filter's transform, so convolutions sharing a filter share it too.
using TransformedFilters = llvm::DenseMap<Attribute, ElementsAttr>;

struct ConvToWinograd : OpRewritePattern<Conv2DOp> {
  ConvToWinograd(MLIRContext *ctx, int64_t panelWidth, int64_t minChannels,
                 TransformedFilters &transformed)
      : OpRewritePattern(ctx), panelWidth(panelWidth),
        minChannels(minChannels), transformed(transformed) {}

  LogicalResult matchAndRewrite(Conv2DOp op,
                                PatternRewriter &rewriter) const override {
    ConstantOp filter = matchConstantFilter(op);
    if (!filter)
      return rewriter.notifyMatchFailure(op, "not a static f32 convolution "
                                             "with a constant filter");
    auto resultType = cast<RankedTensorType>(op.getType());
    auto filterType = cast<RankedTensorType>(filter.getType());
    ArrayRef<int64_t> kernel = filterType.getShape().drop_front(2);
    if (kernel != ArrayRef<int64_t>{3, 3} ||
        llvm::any_of(op.getStrides(), [](int64_t s) { return s != 1; }) ||
        llvm::any_of(op.getDilations(), [](int64_t d) { return d != 1; }))
      return rewriter.notifyMatchFailure(op, "not 3x3 at stride 1");
    int64_t filters = filterType.getDimSize(0),
            channels = filterType.getDimSize(1);
    // Products over a few channels, or for a few filters, are too small
    // for the matmul kernel to beat the direct convolution's one product.
    if (filters < minChannels || channels < minChannels)
      return rewriter.notifyMatchFailure(op, "too few channels");
    int64_t height = resultType.getDimSize(2), width = resultType.getDimSize(3);
    if (height % 2 != 0 || width % 2 != 0 ||
        !splitRowsIntoPanels(height / 2, width / 2, panelWidth))
      return rewriter.notifyMatchFailure(op, "tiles don't fill the panels");
    ArrayRef<char> bytes = *getRawBytes(filter.getValue());
    ElementsAttr &value = transformed[filter.getValue()];
    if (!value)
      value = transformFilter(getContext(), bytes, filters, channels);
    rewriter.setInsertionPoint(filter);
    auto transform = ConstantOp::create(rewriter, filter.getLoc(), value);
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<WinogradConv2DOp>(
        op, resultType, op.getInput(), transform, op.getPadsAttr());
    eraseIfUnused(rewriter, filter, filter.getValue());
    return success();
  }

  int64_t panelWidth, minChannels;
  TransformedFilters &transformed;
};

struct WinogradConvolutionsPass
    : kiln::impl::WinogradConvolutionsPassBase<WinogradConvolutionsPass> {
  using WinogradConvolutionsPassBase::WinogradConvolutionsPassBase;

  void runOnOperation() override {
    if (panelWidth <= 0) {
      getOperation()->emitError("kiln-winograd-convolutions: panel-width "
                                "must be positive");
      return signalPassFailure();
    }
    TransformedFilters transformed;
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvToWinograd>(&getContext(), panelWidth, minChannels,
                                 transformed);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
