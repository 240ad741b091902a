//===- CompositeLowering.cpp - layer_norm and conv2d to linalg ------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Two reductions (sum, then sum of squared deviations) and one elementwise
/// pass that normalizes, scales and shifts.
struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Type f32 = type.getElementType();
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    SmallVector<int64_t> axes;
    int64_t count = 1;
    for (int64_t d = axis; d < rank; ++d) {
      if (type.isDynamicDim(d))
        return rewriter.notifyMatchFailure(
            op, "normalizing over a dynamic dimension");
      axes.push_back(d);
      count *= type.getDimSize(d);
    }
    auto add = [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
      return createSumStep(b, l, x, acc);
    };
    Value zero = createScalarConstant(rewriter, loc, f32, 0);
    Value sum =
        createReduction(rewriter, loc, adaptor.getInput(), axes, zero, add);
    Value centered = createBroadcastCombine(
        rewriter, loc, adaptor.getInput(), sum, axes,
        [&](OpBuilder &b, Location l, Value x, Value s) -> Value {
          Value n = createScalarConstant(b, l, f32, static_cast<double>(count));
          return arith::SubFOp::create(b, l, x,
                                       arith::DivFOp::create(b, l, s, n));
        });
    Value squares = createReduction(
        rewriter, loc, centered, axes, zero,
        [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
          return createSumStep(b, l, arith::MulFOp::create(b, l, x, x), acc);
        });

    SmallVector<AffineExpr> reducedExprs;
    for (int64_t d = 0; d < axis; ++d)
      reducedExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
    auto paramMap = [&](Value param) {
      return getBroadcastMap(ctx,
                             cast<RankedTensorType>(param.getType()).getShape(),
                             type.getShape(), rank);
    };
    SmallVector<AffineMap> maps = {
        identity, AffineMap::get(rank, 0, reducedExprs, ctx),
        paramMap(adaptor.getScale()), paramMap(adaptor.getBias()), identity};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    float epsilon = op.getEpsilon().convertToFloat();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type,
        ValueRange{centered, squares, adaptor.getScale(), adaptor.getBias()},
        createEmptyTensor(rewriter, loc, type,
                          getDynamicSizes(rewriter, loc, adaptor.getInput())),
        maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value n = createScalarConstant(b, l, f32, static_cast<double>(count));
          Value eps = createScalarConstant(b, l, f32, epsilon);
          Value variance = arith::DivFOp::create(b, l, args[1], n);
          Value invStd = math::RsqrtOp::create(
              b, l, arith::AddFOp::create(b, l, variance, eps));
          Value normalized = arith::MulFOp::create(b, l, args[0], invStd);
          Value scaled = arith::MulFOp::create(b, l, normalized, args[2]);
          linalg::YieldOp::create(
              b, l, arith::AddFOp::create(b, l, scaled, args[3]).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// The patches in panels of `panelColumns` pixels, where every panel holds
/// whole output rows or an equal part of one: per filter tap (i, j), the
/// strided slice of the input the tap reads, split into panel rows and
/// lanes, copied into the panels' (c, i, j) rows by a copy that reads its
/// innermost dimension contiguously, which kiln-vectorize-generics turns
/// into SIMD loads (a gather with a division per element stays scalar).
/// Null where the rows do not tile the panels.
Value createRowPanels(OpBuilder &b, Location loc, Value input, int64_t kh,
                      int64_t kw, RankedTensorType resultType,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                      int64_t panelColumns) {
  MLIRContext *ctx = b.getContext();
  Type f32 = resultType.getElementType();
  int64_t channels = cast<RankedTensorType>(input.getType()).getDimSize(1);
  int64_t images = resultType.getDimSize(0), outH = resultType.getDimSize(2),
          outW = resultType.getDimSize(3);
  // A tap's [N, C, Ho, Wo] split as [N, C, A, B, lanes]: rows and parts of
  // rows (A = Ho, B = Wo / lanes), or groups of rows and rows in a group
  // (A = Ho / B, B = lanes / Wo).
  int64_t a, split;
  if (outW % panelColumns == 0) {
    a = outH;
    split = outW / panelColumns;
  } else if (panelColumns % outW == 0 && outH % (panelColumns / outW) == 0) {
    split = panelColumns / outW;
    a = outH / split;
  } else {
    return Value();
  }
  bool rowParts = outW % panelColumns == 0;
  // Panels as [N, A, B, C, kh, kw, lanes] (row parts) or
  // [N, A, C, kh, kw, B, lanes] (row groups).
  SmallVector<int64_t> panelShape =
      rowParts ? SmallVector<int64_t>{images, a, split, channels, kh, kw,
                                      panelColumns}
               : SmallVector<int64_t>{images, a, channels, kh, kw, split,
                                      panelColumns / split};
  auto panelType = RankedTensorType::get(panelShape, f32);
  auto tapType = RankedTensorType::get({images, channels, outH, outW}, f32);
  auto splitType = RankedTensorType::get(
      {images, channels, a, split,
       rowParts ? panelColumns : panelColumns / split},
      f32);
  // The copy's dims are the panels' without (i, j): (n, a, b, c, lane)
  // or (n, a, c, b, lane); it reads the split tap as (n, c, a, b, lane).
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  AffineMap readMap =
      rowParts ? AffineMap::get(5, 0, {d0, d3, d1, d2, d4}, ctx)
               : AffineMap::get(5, 0, {d0, d2, d1, d3, d4}, ctx);
  SmallVector<int64_t> copyShape(panelShape);
  unsigned tapDim = rowParts ? 4 : 3;
  copyShape.erase(copyShape.begin() + tapDim, copyShape.begin() + tapDim + 2);
  auto copyType = RankedTensorType::get(copyShape, f32);
  SmallVector<utils::IteratorType> parallel(5, utils::IteratorType::parallel);

  Value panels = createEmptyTensor(b, loc, panelType);
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      Value tap = tensor::ExtractSliceOp::create(
          b, loc, tapType, input,
          ValueRange(), ValueRange(), ValueRange(),
          b.getDenseI64ArrayAttr({0, 0, i * dilations[0], j * dilations[1]}),
          b.getDenseI64ArrayAttr({images, channels, outH, outW}),
          b.getDenseI64ArrayAttr({1, 1, strides[0], strides[1]}));
      Value splitTap = tensor::ExpandShapeOp::create(
          b, loc, splitType, tap,
          rowParts
              ? SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}}
              : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
      SmallVector<int64_t> offsets(7, 0), sizes(panelShape), unit(7, 1);
      offsets[tapDim] = i;
      offsets[tapDim + 1] = j;
      sizes[tapDim] = sizes[tapDim + 1] = 1;
      Value destination = tensor::ExtractSliceOp::create(
          b, loc, copyType, panels, ValueRange(), ValueRange(), ValueRange(),
          b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes),
          b.getDenseI64ArrayAttr(unit));
      Value copied =
          linalg::GenericOp::create(
              b, loc, copyType, splitTap, destination,
              SmallVector<AffineMap>{
                  readMap, AffineMap::getMultiDimIdentityMap(5, ctx)},
              parallel,
              [](OpBuilder &nb, Location l, ValueRange args) {
                linalg::YieldOp::create(nb, l, args[0]);
              })
              .getResult(0);
      panels = tensor::InsertSliceOp::create(
          b, loc, copied, panels, ValueRange(), ValueRange(), ValueRange(),
          b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes),
          b.getDenseI64ArrayAttr(unit));
    }
  }
  int64_t panelCount = images * outH * outW / panelColumns;
  SmallVector<ReassociationIndices> groups =
      rowParts ? SmallVector<ReassociationIndices>{{0, 1, 2}, {3, 4, 5}, {6}}
               : SmallVector<ReassociationIndices>{{0, 1}, {2, 3, 4}, {5, 6}};
  return tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({panelCount, channels * kh * kw, panelColumns},
                            f32),
      panels, groups);
}

/// A single-group convolution as one matrix product, so it runs on the
/// tiled and vectorized matmul path: the filter [F, C*kh*kw] times the
/// patches [C*kh*kw, N*Ho*Wo] gathered from the (padded) images is the
/// result as [F, N, Ho, Wo]: NCHW for one image, transposed to it for
/// several (one product over all images keeps the filter's panels in
/// cache across them).
Value createIm2ColConv(OpBuilder &b, Location loc, Value input, Value filter,
                       Conv2DOp op, RankedTensorType resultType,
                       int64_t panelColumns) {
  MLIRContext *ctx = b.getContext();
  auto filterType = cast<RankedTensorType>(filter.getType());
  Type f32 = resultType.getElementType();
  int64_t channels = filterType.getDimSize(1), kh = filterType.getDimSize(2),
          kw = filterType.getDimSize(3), outW = resultType.getDimSize(3);
  int64_t depth = channels * kh * kw;
  int64_t images = resultType.getDimSize(0), filters = resultType.getDimSize(1);
  int64_t imagePixels = resultType.getDimSize(2) * outW;
  int64_t pixels = images * imagePixels;
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();

  // Plain: [depth, pixels]. In panels: [panels, depth, panelColumns], the
  // columns past the last pixel zero.
  int64_t panels = panelColumns > 0 ? llvm::divideCeil(pixels, panelColumns)
                                    : 0;
  auto patchesType =
      panelColumns > 0
          ? RankedTensorType::get({panels, depth, panelColumns}, f32)
          : RankedTensorType::get({depth, pixels}, f32);
  int64_t rank = patchesType.getRank();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
  Value patches;
  if (panelColumns > 0 && pixels % panelColumns == 0)
    patches = createRowPanels(b, loc, input, kh, kw, resultType, strides,
                              dilations, panelColumns);
  if (!patches)
    patches =
      linalg::GenericOp::create(
          b, loc, patchesType, ValueRange(),
          createEmptyTensor(b, loc, patchesType),
          SmallVector<AffineMap>{identity}, parallel,
          [&](OpBuilder &nb, Location l, ValueRange) {
            auto index = [&](int64_t v) {
              return arith::ConstantIndexOp::create(nb, l, v).getResult();
            };
            Value q = linalg::IndexOp::create(nb, l, rank - 2);
            Value column = linalg::IndexOp::create(nb, l, rank - 1);
            Value outside;
            if (panelColumns > 0) {
              column = arith::AddIOp::create(
                  nb, l,
                  arith::MulIOp::create(nb, l, linalg::IndexOp::create(nb, l, 0),
                                        index(panelColumns)),
                  column);
              if (pixels % panelColumns != 0) {
                outside = arith::CmpIOp::create(
                    nb, l, arith::CmpIPredicate::uge, column, index(pixels));
                column = arith::MinUIOp::create(nb, l, column,
                                                index(pixels - 1));
              }
            }
            Value n = arith::DivUIOp::create(nb, l, column, index(imagePixels));
            Value p = arith::RemUIOp::create(nb, l, column, index(imagePixels));
            Value c = arith::DivUIOp::create(nb, l, q, index(kh * kw));
            Value i = arith::RemUIOp::create(
                nb, l, arith::DivUIOp::create(nb, l, q, index(kw)), index(kh));
            Value j = arith::RemUIOp::create(nb, l, q, index(kw));
            Value oy = arith::DivUIOp::create(nb, l, p, index(outW));
            Value ox = arith::RemUIOp::create(nb, l, p, index(outW));
            auto coord = [&](Value out, Value tap, int64_t stride,
                             int64_t dilation) {
              return arith::AddIOp::create(
                  nb, l, arith::MulIOp::create(nb, l, out, index(stride)),
                  arith::MulIOp::create(nb, l, tap, index(dilation)));
            };
            Value y = coord(oy, i, strides[0], dilations[0]);
            Value x = coord(ox, j, strides[1], dilations[1]);
            Value element = tensor::ExtractOp::create(
                nb, l, input, ValueRange{n, c, y, x});
            if (outside)
              element = arith::SelectOp::create(
                  nb, l, outside, createScalarConstant(nb, l, f32, 0), element);
            linalg::YieldOp::create(nb, l, element);
          })
          .getResult(0);
  auto flatFilterType = RankedTensorType::get({filters, depth}, f32);
  auto productType = RankedTensorType::get({filters, pixels}, f32);
  Value flatFilter = reshapeTensor(b, loc, filter, flatFilterType);
  Value product;
  if (panelColumns > 0) {
    product = PackedMatMulOp::create(b, loc, productType, flatFilter, patches,
                                     Value(), Value(), nullptr);
  } else {
    Value zero = createScalarConstant(b, loc, f32, 0);
    product = linalg::MatmulOp::create(
                  b, loc, productType, ValueRange{flatFilter, patches},
                  createFilledTensor(b, loc, productType, zero))
                  .getResult(0);
  }
  if (images == 1)
    return reshapeTensor(b, loc, product, resultType);
  auto byFilterType = RankedTensorType::get(
      {filters, images, resultType.getDimSize(2), outW}, f32);
  return linalg::TransposeOp::create(
             b, loc, reshapeTensor(b, loc, product, byFilterType),
             createEmptyTensor(b, loc, resultType),
             SmallVector<int64_t>{1, 0, 2, 3})
      .getResult()[0];
}

/// Zero padding as tensor.pad, then im2col and a matrix product without
/// groups, and with groups the grouped NGCHW/GFCHW form on expanded views.
struct Conv2DLowering : OpConversionPattern<Conv2DOp> {
  Conv2DLowering(MLIRContext *context, int64_t patchColumns)
      : OpConversionPattern(context), patchColumns(patchColumns) {}

  LogicalResult
  matchAndRewrite(Conv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    if (!resultType.hasStaticShape() ||
        !cast<RankedTensorType>(op.getInput().getType()).hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic convolution");
    Type f32 = resultType.getElementType();
    Value zero = createScalarConstant(rewriter, loc, f32, 0);
    Value input = adaptor.getInput();
    ArrayRef<int64_t> pads = op.getPads();
    if (llvm::any_of(pads, [](int64_t p) { return p != 0; })) {
      auto inputType = cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> low, high;
      for (int64_t p : {int64_t(0), int64_t(0), pads[0], pads[1]})
        low.push_back(rewriter.getIndexAttr(p));
      for (int64_t p : {int64_t(0), int64_t(0), pads[2], pads[3]})
        high.push_back(rewriter.getIndexAttr(p));
      SmallVector<int64_t> shape(inputType.getShape());
      for (int d = 0; d < 2; ++d)
        shape[2 + d] += pads[d] + pads[d + 2];
      input = tensor::PadOp::create(rewriter, loc,
                                    RankedTensorType::get(shape, f32), input,
                                    low, high, zero);
    }
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    int64_t groups = static_cast<int64_t>(op.getGroups());
    if (groups == 1) {
      rewriter.replaceOp(op,
                         createIm2ColConv(rewriter, loc, input,
                                          adaptor.getFilter(), op, resultType,
                                          patchColumns));
      return success();
    }
    // Split the channel dimensions into (group, channel-in-group).
    auto split = [&](Value value, int64_t dim, bool groupFirst) {
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      int64_t size = shape[dim];
      shape[dim] = groupFirst ? groups : size / groups;
      shape.insert(shape.begin() + dim + 1,
                   groupFirst ? size / groups : groups);
      SmallVector<ReassociationIndices> groupsOfDims;
      for (int64_t d = 0, r = 0; d < type.getRank(); ++d, ++r)
        groupsOfDims.push_back(d == dim ? ReassociationIndices{r, ++r}
                                        : ReassociationIndices{r});
      return std::make_pair(
          tensor::ExpandShapeOp::create(rewriter, loc,
                                        RankedTensorType::get(shape, f32),
                                        value, groupsOfDims)
              .getResult(),
          groupsOfDims);
    };
    Value groupedInput = split(input, 1, true).first;
    Value groupedFilter = split(adaptor.getFilter(), 0, true).first;
    auto [groupedInit, outputGroups] =
        split(createFilledTensor(rewriter, loc, resultType, zero), 1, true);
    auto conv = linalg::Conv2DNgchwGfchwOp::create(
        rewriter, loc, groupedInit.getType(),
        ValueRange{groupedInput, groupedFilter}, groupedInit, strides,
        dilations);
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, resultType, conv.getResult(0), outputGroups);
    return success();
  }

private:
  int64_t patchColumns;
};

} // namespace

void kiln::populateCompositeLoweringPatterns(RewritePatternSet &patterns,
                                             int64_t patchColumns) {
  patterns.add<LayerNormLowering>(patterns.getContext());
  patterns.add<Conv2DLowering>(patterns.getContext(), patchColumns);
}
