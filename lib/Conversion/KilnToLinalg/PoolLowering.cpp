//===- PoolLowering.cpp - kiln.pool to linalg -----------------------------===//
//
// A pool is a linalg.generic over [N, C, windows..., window elements...]
// reading the input padded with the reduction's neutral element; an average
// then divides each window by its element count, a constant computed here
// when the spatial dimensions are static, the same window sums over ones
// when they are not.
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

/// The reduction (max, or else sum) of each window of `padded`, whose
/// first `lead` dimensions are kept as they are, into `init`: loops over
/// those, the windows, then the window's elements, whose extents come from
/// an uninitialized tensor of the kernel's shape.
Value reduceWindows(OpBuilder &b, Location loc, PoolOp op, Value padded,
                    Value init, unsigned lead, bool isMax) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                    dilations = op.getDilations();
  unsigned spatial = kernel.size();
  unsigned numLoops = lead + 2 * spatial;
  SmallVector<AffineExpr> inputExprs;
  for (unsigned d = 0; d < lead; ++d)
    inputExprs.push_back(getAffineDimExpr(d, ctx));
  SmallVector<AffineExpr> windowExprs, resultExprs = inputExprs;
  for (unsigned d = 0; d < spatial; ++d) {
    AffineExpr window = getAffineDimExpr(lead + d, ctx);
    AffineExpr element = getAffineDimExpr(lead + spatial + d, ctx);
    inputExprs.push_back(window * strides[d] + element * dilations[d]);
    windowExprs.push_back(element);
    resultExprs.push_back(window);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inputExprs, ctx),
                                 AffineMap::get(numLoops, 0, windowExprs, ctx),
                                 AffineMap::get(numLoops, 0, resultExprs, ctx)};
  SmallVector<utils::IteratorType> iterators(lead + spatial,
                                             utils::IteratorType::parallel);
  iterators.append(spatial, utils::IteratorType::reduction);
  auto type = cast<RankedTensorType>(init.getType());
  Value window = tensor::EmptyOp::create(b, loc, kernel, type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{padded, window}, init, maps, iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value combined =
                   isMax ? arith::MaximumFOp::create(nb, l, args[0], args[2])
                               .getResult()
                         : createSumStep(nb, l, args[0], args[2]);
               linalg::YieldOp::create(nb, l, combined);
             })
      .getResult(0);
}

/// `input` padded on its last dimensions by `pads` (begin pads, then end
/// pads) and the ceil-mode overhang, with `value`.
Value padSpatial(OpBuilder &b, Location loc, PoolOp op, Value input,
                 Value value) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned spatial = op.getKernel().size();
  unsigned lead = type.getRank() - spatial;
  ArrayRef<int64_t> pads = op.getPads();
  SmallVector<OpFoldResult> low(lead, b.getIndexAttr(0)),
      high(lead, b.getIndexAttr(0));
  SmallVector<int64_t> paddedShape(type.getShape());
  bool padded = false;
  for (unsigned d = 0; d < spatial; ++d) {
    int64_t end = pads[spatial + d] + op.getOverhang(d);
    low.push_back(b.getIndexAttr(pads[d]));
    high.push_back(b.getIndexAttr(end));
    padded |= pads[d] + end > 0;
    if (!type.isDynamicDim(lead + d))
      paddedShape[lead + d] += pads[d] + end;
  }
  if (!padded)
    return input;
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(paddedShape, type.getElementType()), input,
      low, high, value);
}

/// How many elements each window of an average counts, as a tensor of the
/// result's spatial shape: a constant when the sizes are static, else the
/// window sums of ones over the input padded with ones (count_include_pad)
/// or zeros (no ceil-mode overhang with dynamic sizes).
Value getWindowCounts(OpBuilder &b, Location loc, PoolOp op, Value pooled) {
  auto resultType = cast<RankedTensorType>(op.getType());
  if (!llvm::any_of(resultType.getShape().drop_front(2), ShapedType::isDynamic))
    return arith::ConstantOp::create(b, loc, getWindowSizes(op));
  Type elementType = resultType.getElementType();
  unsigned rank = resultType.getRank();
  SmallVector<OpFoldResult> inputSizes, countSizes;
  for (unsigned d = 2; d < rank; ++d) {
    inputSizes.push_back(tensor::getMixedSize(b, loc, op.getInput(), d));
    countSizes.push_back(tensor::getMixedSize(b, loc, pooled, d));
  }
  auto filled = [&](Value value, ArrayRef<OpFoldResult> sizes) {
    Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
    return linalg::FillOp::create(b, loc, value, empty).getResult(0);
  };
  Value one = createScalarConstant(b, loc, elementType, 1.0);
  Value zero = createScalarConstant(b, loc, elementType, 0.0);
  Value ones = filled(one, inputSizes);
  Value padding = op.getCountIncludePad() ? one : zero;
  Value init = filled(zero, countSizes);
  return reduceWindows(b, loc, op, padSpatial(b, loc, op, ones, padding), init,
                       /*lead=*/0, /*isMax=*/false);
}

struct PoolLowering : OpConversionPattern<PoolOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    bool isMax = op.getKind() == PoolKind::Max;
    Value neutral = createScalarConstant(
        rewriter, loc, elementType,
        isMax ? -std::numeric_limits<double>::infinity() : 0.0);

    // The input padded with the neutral element, the ceil-mode overhang
    // included, so every window reads inside it.
    Value input = padSpatial(rewriter, loc, op, adaptor.getInput(), neutral);
    SmallVector<Value> dynamicSizes = getDynamicResultSizes(rewriter, op);
    Value init =
        createFilledTensor(rewriter, loc, resultType, neutral, dynamicSizes);
    Value pooled =
        reduceWindows(rewriter, loc, op, input, init, /*lead=*/2, isMax);
    if (op.getKind() != PoolKind::Average) {
      rewriter.replaceOp(op, pooled);
      return success();
    }

    // Divide each window by its element count, read broadcast over N, C.
    Value sizes = getWindowCounts(rewriter, loc, op, pooled);
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
