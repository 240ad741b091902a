//===- FuseMatMulBias.cpp - biases start a packed product's accumulators --===//
//
// Linear layers export as MatMul followed by Add of a constant row. Added
// separately, the bias costs a pass over the product's result; folded into
// the product, it is the value the accumulators start from.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_FUSEMATMULBIASPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The N values of a constant `[..., 1, N]` row, as `panels` x `width`
/// panels padded with zeros; null if `value` isn't such a constant.
DenseElementsAttr packBias(Value value, int64_t columns, int64_t panels,
                           int64_t width) {
  DenseElementsAttr dense = getConstantElements(value);
  if (!dense || !dense.getElementType().isF32())
    return nullptr;
  auto type = cast<RankedTensorType>(dense.getType());
  if (type.getRank() == 0 || type.getShape().back() != columns ||
      type.getNumElements() != columns)
    return nullptr;
  std::vector<float> packed(panels * width, 0.0f);
  auto values = dense.getValues<float>();
  std::copy(values.begin(), values.end(), packed.begin());
  return DenseElementsAttr::get(
      RankedTensorType::get({panels, width}, type.getElementType()),
      ArrayRef<float>(packed));
}

struct FuseBiasAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [product, other] : {std::pair(add.getLhs(), add.getRhs()),
                                  std::pair(add.getRhs(), add.getLhs())}) {
      auto matmul = product.getDefiningOp<PackedMatMulOp>();
      // The sum must have the product's shape: a bias that broadcasts the
      // product to more rows isn't a per-row bias.
      // An activation or residual comes after the bias; a bias can't join
      // them later.
      if (!matmul || matmul.getBias() || matmul.getActivation() ||
          matmul.getResidual() || !matmul->hasOneUse() ||
          add.getType() != matmul.getType())
        continue;
      auto panelsType = cast<RankedTensorType>(matmul.getRhs().getType());
      DenseElementsAttr bias =
          packBias(other, matmul.getType().getShape().back(),
                   panelsType.getDimSize(0), panelsType.getDimSize(2));
      if (!bias)
        continue;
      rewriter.setInsertionPoint(matmul);
      Value packed = ConstantOp::create(rewriter, other.getLoc(), bias);
      rewriter.replaceOpWithNewOp<PackedMatMulOp>(
          add, add.getType(), matmul.getLhs(), matmul.getRhs(), packed, Value(),
          matmul.getActivationAttr());
      rewriter.eraseOp(matmul);
      return success();
    }
    return failure();
  }
};

struct FuseMatMulBiasPass
    : kiln::impl::FuseMatMulBiasPassBase<FuseMatMulBiasPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseBiasAdd>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
