//===- PoolLowering.cpp - kiln.pool to linalg
//------------------------------===//
//
// A pool is a linalg.generic over [N, C, windows..., window elements...]
// reading the input padded with the reduction's neutral element; an average
// then divides each window by its element count, a constant computed here
// (the spatial dimensions are static).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

/// The number of elements of each window inside the counted range: the
/// input, or with `count_include_pad` the padded input (never the ceil-mode
/// overhang), as a tensor of the result's spatial shape.
DenseElementsAttr getWindowSizes(PoolOp op) {
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  auto resultType = cast<RankedTensorType>(op.getResult().getType());
  ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                    dilations = op.getDilations(), pads = op.getPads();
  size_t spatial = kernel.size();
  // Per dimension, how many elements each window position counts.
  SmallVector<SmallVector<int64_t>> counts(spatial);
  for (size_t d = 0; d < spatial; ++d) {
    int64_t begin = 0, end = inputType.getDimSize(2 + d);
    if (op.getCountIncludePad()) {
      begin -= pads[d];
      end += pads[spatial + d];
    }
    for (int64_t w = 0; w < resultType.getDimSize(2 + d); ++w) {
      int64_t count = 0;
      for (int64_t k = 0; k < kernel[d]; ++k) {
        int64_t at = w * strides[d] - pads[d] + k * dilations[d];
        count += at >= begin && at < end;
      }
      counts[d].push_back(count);
    }
  }
  ArrayRef<int64_t> shape = resultType.getShape().drop_front(2);
  SmallVector<float> sizes;
  SmallVector<int64_t> position(spatial, 0);
  int64_t total = ShapedType::getNumElements(shape);
  for (int64_t i = 0; i < total; ++i) {
    float size = 1;
    for (size_t d = 0; d < spatial; ++d)
      size *= static_cast<float>(counts[d][position[d]]);
    sizes.push_back(size);
    for (int64_t d = spatial - 1; d >= 0; --d) {
      if (++position[d] < shape[d])
        break;
      position[d] = 0;
    }
  }
  return DenseElementsAttr::get(
      RankedTensorType::get(shape, resultType.getElementType()),
      ArrayRef<float>(sizes));
}

struct PoolLowering : OpConversionPattern<PoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    unsigned spatial = kernel.size();
    bool isMax = op.getKind() == PoolKind::Max;
    Value neutral = createScalarConstant(
        rewriter, loc, elementType,
        isMax ? -std::numeric_limits<double>::infinity() : 0.0);

    // The input padded with the neutral element, the ceil-mode overhang
    // included, so every window reads inside it.
    SmallVector<OpFoldResult> low(2, rewriter.getIndexAttr(0)),
        high(2, rewriter.getIndexAttr(0));
    SmallVector<int64_t> paddedShape(inputType.getShape());
    for (unsigned d = 0; d < spatial; ++d) {
      int64_t end = pads[spatial + d] + op.getOverhang(d);
      low.push_back(rewriter.getIndexAttr(pads[d]));
      high.push_back(rewriter.getIndexAttr(end));
      paddedShape[2 + d] += pads[d] + end;
    }
    Value input = adaptor.getInput();
    if (paddedShape != inputType.getShape())
      input = tensor::PadOp::create(
          rewriter, loc, RankedTensorType::get(paddedShape, elementType), input,
          low, high, neutral);

    // Loops: N, C, the windows, then the window's elements (reductions),
    // whose extents come from an uninitialized tensor of the kernel's shape.
    unsigned numLoops = 2 + 2 * spatial;
    SmallVector<AffineExpr> inputExprs = {getAffineDimExpr(0, ctx),
                                          getAffineDimExpr(1, ctx)};
    SmallVector<AffineExpr> windowExprs, resultExprs = inputExprs;
    for (unsigned d = 0; d < spatial; ++d) {
      AffineExpr window = getAffineDimExpr(2 + d, ctx);
      AffineExpr element = getAffineDimExpr(2 + spatial + d, ctx);
      inputExprs.push_back(window * strides[d] + element * dilations[d]);
      windowExprs.push_back(element);
      resultExprs.push_back(window);
    }
    SmallVector<AffineMap> maps = {
        AffineMap::get(numLoops, 0, inputExprs, ctx),
        AffineMap::get(numLoops, 0, windowExprs, ctx),
        AffineMap::get(numLoops, 0, resultExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(2 + spatial,
                                               utils::IteratorType::parallel);
    iterators.append(spatial, utils::IteratorType::reduction);
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, elementType);
    SmallVector<Value> dynamicSizes = getDynamicResultSizes(rewriter, op);
    Value init =
        createFilledTensor(rewriter, loc, resultType, neutral, dynamicSizes);
    Value pooled =
        linalg::GenericOp::create(
            rewriter, loc, resultType, ValueRange{input, window}, init, maps,
            iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value combined =
                  isMax ? arith::MaximumFOp::create(b, l, args[0], args[2])
                              .getResult()
                        : createSumStep(b, l, args[0], args[2]);
              linalg::YieldOp::create(b, l, combined);
            })
            .getResult(0);
    if (op.getKind() != PoolKind::Average) {
      rewriter.replaceOp(op, pooled);
      return success();
    }

    // Divide each window by its element count, read broadcast over N, C.
    Value sizes = arith::ConstantOp::create(rewriter, loc, getWindowSizes(op));
    unsigned rank = resultType.getRank();
    SmallVector<AffineExpr> spatialExprs;
    for (unsigned d = 2; d < rank; ++d)
      spatialExprs.push_back(getAffineDimExpr(d, ctx));
    SmallVector<AffineMap> divideMaps = {
        AffineMap::getMultiDimIdentityMap(rank, ctx),
        AffineMap::get(rank, 0, spatialExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value average =
        linalg::GenericOp::create(
            rewriter, loc, resultType, ValueRange{pooled, sizes},
            createEmptyTensor(rewriter, loc, resultType, dynamicSizes),
            divideMaps,
            SmallVector<utils::IteratorType>(rank,
                                             utils::IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value quotient = arith::DivFOp::create(b, l, args[0], args[1]);
              linalg::YieldOp::create(b, l, quotient);
            })
            .getResult(0);
    rewriter.replaceOp(op, average);
    return success();
  }
};

} // namespace

void kiln::populatePoolLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<PoolLowering>(patterns.getContext());
}
