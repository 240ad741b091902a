//===- KilnCanonicalization.cpp - rewrites that simplify kiln ops ---------===//
//
// A gather at one constant index takes a slice. Exporters split a fused
// projection (q, k, v of attention) by reshaping it, transposing the parts
// to the front and gathering each: the transpose moves the whole tensor and
// the gathers copy it again, where slices of the projection, transposed
// each, cost one copy that the attention's own layout options absorb.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The index of a gather whose indices are one constant integer (rank 0),
/// within [0, size) after negative indices wrap; nullopt otherwise (an
/// index out of range stays a gather, which reports it at run time).
std::optional<int64_t> getConstantIndex(GatherOp op) {
  auto constant = op.getIndices().getDefiningOp<ConstantOp>();
  auto elements =
      constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue()) : nullptr;
  if (!elements || elements.getType().getRank() != 0)
    return std::nullopt;
  int64_t index = (*elements.begin()).getSExtValue();
  auto dataType = cast<RankedTensorType>(op.getData().getType());
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (dataType.isDynamicDim(axis))
    return std::nullopt;
  int64_t size = dataType.getDimSize(axis);
  if (index < 0)
    index += size;
  if (index < 0 || index >= size)
    return std::nullopt;
  return index;
}

/// gather(transpose(x, perm), i, axis a) = transpose(gather(x, i, axis
/// perm[a]), perm without a): the transpose moves only what is gathered.
struct GatherOfTranspose : OpRewritePattern<GatherOp> {
  GatherOfTranspose(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto transpose = op.getData().getDefiningOp<TransposeOp>();
    if (!transpose || !getConstantIndex(op))
      return failure();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    ArrayRef<int64_t> perm = transpose.getPerm();
    int64_t inputAxis = perm[axis];
    SmallVector<int64_t> remaining;
    for (int64_t d = 0; d < static_cast<int64_t>(perm.size()); ++d)
      if (d != axis)
        remaining.push_back(perm[d] > inputAxis ? perm[d] - 1 : perm[d]);
    auto gathered = GatherOp::create(rewriter, op.getLoc(),
                                     transpose.getInput(), op.getIndices(),
                                     rewriter.getI64IntegerAttr(inputAxis));
    rewriter.replaceOpWithNewOp<TransposeOp>(op, op.getType(), gathered,
                                             remaining);
    return success();
  }
};

/// gather(x, i, axis a) at a constant index i: the slice [i, i + 1) along
/// a, reshaped without it.
struct GatherAtConstantIndex : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> index = getConstantIndex(op);
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    if (!index || !dataType.hasStaticShape())
      return failure();
    int64_t rank = dataType.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    SmallVector<int64_t> offsets(rank, 0), sizes(dataType.getShape()),
        strides(rank, 1);
    offsets[axis] = *index;
    sizes[axis] = 1;
    auto slice = SliceOp::create(rewriter, op.getLoc(), op.getData(), offsets,
                                 sizes, strides);
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), slice,
                                           ValueRange{});
    return success();
  }
};

} // namespace

void GatherOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<GatherOfTranspose, GatherAtConstantIndex>(context);
}
