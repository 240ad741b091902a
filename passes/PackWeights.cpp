//===- PackWeights.cpp - constant matmul weights in column panels ---------===//
//
// A row-major [K, N] weight is read by a matmul kernel one block of columns
// at a time, so each of the block's K rows is a separate stride through
// memory. Weights are read from DRAM on every run (a model's weights don't
// fit in cache), and strided streams defeat the prefetchers; stored as
// contiguous panels, a block is one sequential stream.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_PACKWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// `weight` ([K, N], f32 bytes) as ceil(N / width) panels of [K, width],
/// the last one padded with zeros.
ElementsAttr packPanels(ArrayRef<char> weight, RankedTensorType type,
                        int64_t width) {
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  int64_t panels = llvm::divideCeil(columns, width);
  auto packedType =
      RankedTensorType::get({panels, rows, width}, type.getElementType());
  return createElements(packedType, [&](MutableArrayRef<char> packed) {
    std::fill(packed.begin(), packed.end(), 0);
    for (int64_t p = 0; p < panels; ++p) {
      int64_t count = std::min(width, columns - p * width);
      for (int64_t k = 0; k < rows; ++k)
        std::memcpy(packed.data() + (p * rows + k) * width * sizeof(float),
                    weight.data() + (k * columns + p * width) * sizeof(float),
                    count * sizeof(float));
    }
  });
}

/// Each weight's panels, so that entries sharing a weight (a decoder's
/// decode and draft) share its packed copy too.
using PackedWeights = llvm::DenseMap<Attribute, ElementsAttr>;

struct PackConstantRhs : OpRewritePattern<MatMulOp> {
  PackConstantRhs(MLIRContext *ctx, int64_t width, PackedWeights &packed)
      : OpRewritePattern(ctx), width(width), packed(packed) {}

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto weight = op.getRhs().getDefiningOp<ConstantOp>();
    auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
    if (!weight || lhsType.getRank() < 2)
      return failure();
    std::optional<ArrayRef<char>> bytes = getRawBytes(weight.getValue());
    auto type = cast<RankedTensorType>(weight.getType());
    if (!bytes || !type.getElementType().isF32() || type.getRank() != 2 ||
        type.getDimSize(1) == 0 || type.getDimSize(0) == 0)
      return failure();
    ElementsAttr &panelsValue = packed[weight.getValue()];
    if (!panelsValue)
      panelsValue = packPanels(*bytes, type, width);
    rewriter.setInsertionPoint(weight);
    auto panels = ConstantOp::create(rewriter, weight.getLoc(), panelsValue);
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<PackedMatMulOp>(
        op, op.getType(), op.getLhs(), panels, Value(), Value(), ActivationAttr());
    // The unpacked weight goes as soon as nothing uses it, so a model's
    // weights are in memory about once while they are packed.
    eraseIfUnused(rewriter, weight, weight.getValue());
    return success();
  }

  int64_t width;
  PackedWeights &packed;
};

struct PackWeightsPass : kiln::impl::PackWeightsPassBase<PackWeightsPass> {
  using PackWeightsPassBase::PackWeightsPassBase;

  void runOnOperation() override {
    if (panelWidth <= 0) {
      getOperation()->emitError("kiln-pack-weights: panel-width must be "
                                "positive");
      return signalPassFailure();
    }
    PackedWeights packed;
    RewritePatternSet patterns(&getContext());
    patterns.add<PackConstantRhs>(&getContext(), panelWidth, packed);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
