//===- WinogradConvolutions.cpp - 3x3 convolutions by Winograd ------------===//
//
// A 3x3 convolution at stride 1 spends 9 multiplications per output and
// input channel; Winograd's F(m x m, 3x3) spends (m + 2)^2 per m x m
// outputs, in as many matrix products over the channels: 2.25x fewer for
// F(2x2, 3x3), 4x fewer for F(4x4, 3x3). The filter's transform is
// constant, so it is computed here once, at compile time.
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

/// G of F(2x2, 3x3) (interpolation points 0, 1, -1 and infinity) and of
/// F(4x4, 3x3) (0, 1, -1, 2, -2 and infinity).
constexpr double kFilterTransform2[4][3] = {
    {1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kFilterTransform4[6][3] = {{1.0 / 4, 0, 0},
                                            {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                            {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                            {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                            {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                            {0, 0, 1}};

/// `filter` ([F, C, 3, 3], f32 bytes) as G g G^T per (f, c) for output
/// tiles of `tile` x `tile`: [t * t, F, C] with t = tile + 2, element
/// (a, b) of the transform at t * a + b. In double, so the transform rounds
/// once.
ElementsAttr transformFilter(MLIRContext *ctx, ArrayRef<char> filter,
                             int64_t filters, int64_t channels, int64_t tile) {
  int64_t t = tile + 2;
  auto g = [&](int64_t row, int64_t column) {
    return tile == 2 ? kFilterTransform2[row][column]
                     : kFilterTransform4[row][column];
  };
  auto type =
      RankedTensorType::get({t * t, filters, channels}, Float32Type::get(ctx));
  return createElements(type, [&](MutableArrayRef<char> bytes) {
    int64_t pairs = filters * channels;
    for (int64_t pair = 0; pair < pairs; ++pair) {
      float taps[9];
      std::memcpy(taps, filter.data() + pair * sizeof(taps), sizeof(taps));
      for (int64_t a = 0; a < t; ++a) {
        for (int64_t b = 0; b < t; ++b) {
          double sum = 0;
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j)
              sum += g(a, i) * taps[3 * i + j] * g(b, j);
          float value = static_cast<float>(sum);
          std::memcpy(bytes.data() +
                          ((t * a + b) * pairs + pair) * sizeof(float),
                      &value, sizeof(float));
        }
      }
    }
  });
}

/// Each filter's transform per tile size, so convolutions sharing a filter
/// share it too.
using TransformedFilters =
    llvm::DenseMap<std::pair<Attribute, int64_t>, ElementsAttr>;

struct ConvToWinograd : OpRewritePattern<Conv2DOp> {
  ConvToWinograd(MLIRContext *ctx, int64_t panelWidth, int64_t minChannels,
                 int64_t largestTile, TransformedFilters &transformed)
      : OpRewritePattern(ctx), panelWidth(panelWidth), minChannels(minChannels),
        largestTile(largestTile), transformed(transformed) {}

  /// The largest output tile, at most `largestTile`, whose tiles fill the
  /// panels, else whose tiles fill panels half as wide (the lowering's
  /// rule: 2x2 tiles of 8x8 maps, with two panels where one would leave a
  /// thread idle, are 9% faster than the direct convolution at 2 threads);
  /// 0 if none does.
  int64_t chooseTile(int64_t height, int64_t width) const {
    for (int64_t tilesPerPanel : {panelWidth, panelWidth / 2})
      for (int64_t tile : {4, 2})
        if (tile <= largestTile && height % tile == 0 && width % tile == 0 &&
            splitRowsIntoPanels(height / tile, width / tile, tilesPerPanel))
          return tile;
    return 0;
  }

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
    int64_t tile =
        chooseTile(resultType.getDimSize(2), resultType.getDimSize(3));
    if (!tile)
      return rewriter.notifyMatchFailure(op, "tiles don't fill the panels");
    ArrayRef<char> bytes = *getRawBytes(filter.getValue());
    ElementsAttr &value = transformed[{filter.getValue(), tile}];
    if (!value)
      value = transformFilter(getContext(), bytes, filters, channels, tile);
    rewriter.setInsertionPoint(filter);
    auto transform = ConstantOp::create(rewriter, filter.getLoc(), value);
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<WinogradConv2DOp>(
        op, resultType, op.getInput(), transform, op.getPadsAttr());
    eraseIfUnused(rewriter, filter, filter.getValue());
    return success();
  }

  int64_t panelWidth, minChannels, largestTile;
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
    if (largestTile != 2 && largestTile != 4) {
      getOperation()->emitError("kiln-winograd-convolutions: largest-tile "
                                "must be 2 or 4");
      return signalPassFailure();
    }
    TransformedFilters transformed;
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvToWinograd>(&getContext(), panelWidth, minChannels,
                                 largestTile, transformed);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
