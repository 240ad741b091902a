//===- LowerDynamicExpandShapes.cpp - expand_shapes LLVM 22 can't expand --===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERDYNAMICEXPANDSHAPESPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

bool hasGroupWithDynamicSizes(memref::ExpandShapeOp op) {
  MemRefType type = op.getResultType();
  return llvm::any_of(op.getReassociationIndices(),
                      [&](const ReassociationIndices &group) {
                        return llvm::count_if(group, [&](int64_t d) {
                                 return type.isDynamicDim(d);
                               }) > 1;
                      });
}

struct ReinterpretExpandShape : OpRewritePattern<memref::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(memref::ExpandShapeOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasGroupWithDynamicSizes(op))
      return failure();
    Location loc = op.getLoc();
    auto metadata =
        memref::ExtractStridedMetadataOp::create(rewriter, loc, op.getSrc());
    SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
    SmallVector<OpFoldResult> strides(sizes.size());
    auto multiply = [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
      std::optional<int64_t> x = getConstantIntValue(a),
                             y = getConstantIntValue(b);
      if (x && y)
        return rewriter.getIndexAttr(*x * *y);
      auto value = [&](OpFoldResult v) {
        return getValueOrCreateConstantIndexOp(rewriter, loc, v);
      };
      return arith::MulIOp::create(rewriter, loc, value(a), value(b))
          .getResult();
    };
    // Row-major within each group, the innermost dim taking its source
    // dimension's stride.
    for (auto [source, group] : llvm::enumerate(op.getReassociationIndices())) {
      OpFoldResult stride = metadata.getConstifiedMixedStrides()[source];
      for (int64_t d : llvm::reverse(group)) {
        strides[d] = stride;
        stride = multiply(stride, sizes[d]);
      }
    }
    rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
        op, op.getResultType(), metadata.getBaseBuffer(),
        metadata.getConstifiedMixedOffset(), sizes, strides);
    return success();
  }
};

struct LowerDynamicExpandShapesPass
    : kiln::impl::LowerDynamicExpandShapesPassBase<
          LowerDynamicExpandShapesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ReinterpretExpandShape>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
