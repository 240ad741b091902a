//===- CompositeLowering.cpp - conv2d to linalg ---------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace kiln;

namespace {

/// How a copy writes [N, C, R, S] pixel maps into matmul column panels of
/// `width` pixels as `split` lays them out: the source expanded by
/// `sourceGroups` to `sourceType` ([N, C, A, B, lanes]) is read by
/// `readMap` from the panels' iteration space, `panelShape` ([N, A, B, C,
/// lanes] for row parts, [N, A, C, B, lanes] for row groups), whose
/// `collapseGroups` give [N * R * S / width, C, width].
struct PanelCopy {
  RankedTensorType sourceType;
  SmallVector<ReassociationIndices> sourceGroups;
  SmallVector<int64_t> panelShape;
  AffineMap readMap;
  unsigned channelDim;
  SmallVector<ReassociationIndices> collapseGroups;
};

PanelCopy getPanelCopy(MLIRContext *ctx, Type elementType,
                       ArrayRef<int64_t> pixelMapShape, RowPanelSplit split,
                       int64_t width) {
  int64_t images = pixelMapShape[0], channels = pixelMapShape[1];
  int64_t lanes = split.rowParts ? width : width / split.split;
  PanelCopy copy;
  copy.sourceType = RankedTensorType::get(
      {images, channels, split.groups, split.split, lanes}, elementType);
  // Row parts split a row (S) into (B, lanes); row groups split the rows
  // (R) into (A, B).
  copy.sourceGroups =
      split.rowParts
          ? SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}}
          : SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4}};
  AffineExpr d0, d1, d2, d3, d4;
  bindDims(ctx, d0, d1, d2, d3, d4);
  if (split.rowParts) {
    copy.panelShape = {images, split.groups, split.split, channels, lanes};
    copy.readMap = AffineMap::get(5, 0, {d0, d3, d1, d2, d4}, ctx);
    copy.channelDim = 3;
    copy.collapseGroups = {{0, 1, 2}, {3}, {4}};
  } else {
    copy.panelShape = {images, split.groups, channels, split.split, lanes};
    copy.readMap = AffineMap::get(5, 0, {d0, d2, d1, d3, d4}, ctx);
    copy.channelDim = 2;
    copy.collapseGroups = {{0, 1}, {2}, {3, 4}};
  }
  return copy;
}

/// The patches in panels of `panelColumns` pixels, where every panel holds
/// whole rows of the [N, C, rows, rowLength] maps `getTap(i, j)` gives for
/// each filter tap (i, j), or an equal part of one: each map, split into
/// panel rows and lanes, is copied into the panels' (c, i, j) rows by a copy
/// that reads its innermost dimension contiguously, which
/// kiln-vectorize-generics turns into SIMD loads (a gather with a division
/// per element stays scalar). Null where the rows do not tile the panels.
Value createTapPanels(OpBuilder &b, Location loc, int64_t images,
                      int64_t channels, int64_t rows, int64_t rowLength,
                      int64_t kh, int64_t kw, Type f32, int64_t panelColumns,
                      function_ref<Value(int64_t, int64_t)> getTap) {
  MLIRContext *ctx = b.getContext();
  std::optional<RowPanelSplit> split =
      splitRowsIntoPanels(rows, rowLength, panelColumns);
  if (!split)
    return Value();
  PanelCopy copy = getPanelCopy(ctx, f32, {images, channels, rows, rowLength},
                                *split, panelColumns);
  // Panels as the copy's with the taps (kh, kw) after the channels.
  unsigned tapDim = copy.channelDim + 1;
  SmallVector<int64_t> panelShape(copy.panelShape);
  panelShape.insert(panelShape.begin() + tapDim, {kh, kw});
  auto panelType = RankedTensorType::get(panelShape, f32);
  auto copyType = RankedTensorType::get(copy.panelShape, f32);
  SmallVector<utils::IteratorType> parallel(5, utils::IteratorType::parallel);

  Value panels = createEmptyTensor(b, loc, panelType);
  for (int64_t i = 0; i < kh; ++i) {
    for (int64_t j = 0; j < kw; ++j) {
      Value splitTap = tensor::ExpandShapeOp::create(
          b, loc, copy.sourceType, getTap(i, j), copy.sourceGroups);
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
                  copy.readMap, AffineMap::getMultiDimIdentityMap(5, ctx)},
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
  int64_t panelCount = images * rows * rowLength / panelColumns;
  // The taps join the channels in the panels' depth.
  SmallVector<ReassociationIndices> groups;
  for (ReassociationIndices group : copy.collapseGroups) {
    for (int64_t &d : group)
      d += d > static_cast<int64_t>(copy.channelDim) ? 2 : 0;
    if (group.front() == static_cast<int64_t>(copy.channelDim))
      group.append({group.front() + 1, group.front() + 2});
    groups.push_back(group);
  }
  return tensor::CollapseShapeOp::create(
      b, loc,
      RankedTensorType::get({panelCount, channels * kh * kw, panelColumns},
                            f32),
      panels, groups);
}

/// The patches of output rows that tile the panels: per tap, the strided
/// slice of the input it reads.
Value createRowPanels(OpBuilder &b, Location loc, Value input, int64_t kh,
                      int64_t kw, RankedTensorType resultType,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                      int64_t panelColumns) {
  int64_t channels = cast<RankedTensorType>(input.getType()).getDimSize(1);
  int64_t images = resultType.getDimSize(0), outH = resultType.getDimSize(2),
          outW = resultType.getDimSize(3);
  Type f32 = resultType.getElementType();
  auto tapType = RankedTensorType::get({images, channels, outH, outW}, f32);
  return createTapPanels(
      b, loc, images, channels, outH, outW, kh, kw, f32, panelColumns,
      [&](int64_t i, int64_t j) -> Value {
        return tensor::ExtractSliceOp::create(
            b, loc, tapType, input, ValueRange(), ValueRange(), ValueRange(),
            b.getDenseI64ArrayAttr({0, 0, i * dilations[0], j * dilations[1]}),
            b.getDenseI64ArrayAttr({images, channels, outH, outW}),
            b.getDenseI64ArrayAttr({1, 1, strides[0], strides[1]}));
      });
}

/// A convolution whose output rows do not tile the panels, computed over
/// whole rows of the padded input instead. For tap row i, the input rows
/// it reads (i * dh, then every s-th) flattened to one sequence of rows
/// `width` long (width a multiple of s): output pixel q of an image's
/// flattened output rows (width / s per row) reads element q * s + j * dw
/// of it for tap (i, j), so every tap is one strided slice and its copy
/// into the panels stays contiguous. The width / s - Wo extra columns per
/// row (the kernel's overhang, a few percent) are computed and dropped.
/// Null for unequal strides and strides above 2: those copies read every
/// s-th element, no better than the gather, and a patch embedding's many
/// taps (16 x 16 at stride 16) would make minutes of copies to compile.
Value createFlatRowConv(OpBuilder &b, Location loc, Value input, Value filter,
                        RankedTensorType resultType, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations, int64_t panelColumns) {
  if (strides[0] != strides[1] || strides[0] > 2)
    return Value();
  auto inputType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  Type f32 = resultType.getElementType();
  int64_t stride = strides[0];
  int64_t images = resultType.getDimSize(0), filters = resultType.getDimSize(1),
          outH = resultType.getDimSize(2), outW = resultType.getDimSize(3);
  int64_t channels = inputType.getDimSize(1), height = inputType.getDimSize(2);
  int64_t kh = filterType.getDimSize(2), kw = filterType.getDimSize(3);
  int64_t width = llvm::alignTo(inputType.getDimSize(3), stride);
  int64_t rowLength = width / stride;
  // Each image's pixels fill whole panels, the last padded with columns
  // that read zeros below the image.
  int64_t pixels = llvm::alignTo(outH * rowLength, panelColumns);
  int64_t lastRead = (pixels - 1) * stride + (kw - 1) * dilations[1];
  int64_t tapRows = lastRead / width + 1;
  int64_t rows =
      std::max(height, (kh - 1) * dilations[0] + (tapRows - 1) * stride + 1);
  Value padded = padImages(
      b, loc, input, {0, 0, rows - height, width - inputType.getDimSize(3)});
  auto tapType = RankedTensorType::get({images, channels, pixels}, f32);
  auto tapMapType = RankedTensorType::get({images, channels, 1, pixels}, f32);
  SmallVector<Value> flatRows;
  for (int64_t i = 0; i < kh; ++i) {
    Value selected = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({images, channels, tapRows, width}, f32),
        padded, ValueRange(), ValueRange(), ValueRange(),
        b.getDenseI64ArrayAttr({0, 0, i * dilations[0], 0}),
        b.getDenseI64ArrayAttr({images, channels, tapRows, width}),
        b.getDenseI64ArrayAttr({1, 1, stride, 1}));
    flatRows.push_back(tensor::CollapseShapeOp::create(
        b, loc, RankedTensorType::get({images, channels, tapRows * width}, f32),
        selected, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}));
  }
  Value patches = createTapPanels(
      b, loc, images, channels, 1, pixels, kh, kw, f32, panelColumns,
      [&](int64_t i, int64_t j) -> Value {
        Value tap = tensor::ExtractSliceOp::create(
            b, loc, tapType, flatRows[i], ValueRange(), ValueRange(),
            ValueRange(), b.getDenseI64ArrayAttr({0, 0, j * dilations[1]}),
            b.getDenseI64ArrayAttr({images, channels, pixels}),
            b.getDenseI64ArrayAttr({1, 1, stride}));
        return tensor::ExpandShapeOp::create(
            b, loc, tapMapType, tap,
            SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
      });
  assert(patches && "one row of whole panels always tiles them");
  int64_t depth = channels * kh * kw;
  Value product = PackedMatMulOp::create(
      b, loc, RankedTensorType::get({filters, images * pixels}, f32),
      reshapeTensor(b, loc, filter,
                    RankedTensorType::get({filters, depth}, f32)),
      patches, Value(), Value(), nullptr);
  Value byImage = reshapeTensor(
      b, loc, product, RankedTensorType::get({filters, images, pixels}, f32));
  Value rowsOnly = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get({filters, images, outH * rowLength}, f32),
      byImage, ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr({0, 0, 0}),
      b.getDenseI64ArrayAttr({filters, images, outH * rowLength}),
      b.getDenseI64ArrayAttr({1, 1, 1}));
  Value wide = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({filters, images, outH, rowLength}, f32),
      rowsOnly, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
  auto byFilterType = RankedTensorType::get({filters, images, outH, outW}, f32);
  Value cropped = tensor::ExtractSliceOp::create(
      b, loc, byFilterType, wide, ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr({0, 0, 0, 0}),
      b.getDenseI64ArrayAttr({filters, images, outH, outW}),
      b.getDenseI64ArrayAttr({1, 1, 1, 1}));
  return linalg::TransposeOp::create(b, loc, cropped,
                                     createEmptyTensor(b, loc, resultType),
                                     SmallVector<int64_t>{1, 0, 2, 3})
      .getResult()[0];
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
  if (!patches && panelColumns > 0)
    if (Value result = createFlatRowConv(b, loc, input, filter, resultType,
                                         strides, dilations, panelColumns))
      return result;
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
      return lowerDynamic(op, adaptor, rewriter);
    Type f32 = resultType.getElementType();
    Value zero = createScalarConstant(rewriter, loc, f32, 0);
    Value input = padImages(rewriter, loc, adaptor.getInput(), op.getPads());
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
  /// A convolution with dynamic sizes as linalg's named convolution, for
  /// one group or one per channel (the im2col panels need static sizes).
  LogicalResult lowerDynamic(Conv2DOp op, OpAdaptor adaptor,
                             ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    auto filterType = cast<RankedTensorType>(op.getFilter().getType());
    int64_t groups = static_cast<int64_t>(op.getGroups());
    bool depthwise = groups > 1 && filterType.getDimSize(0) == groups &&
                     filterType.getDimSize(1) == 1;
    if (groups != 1 && !depthwise)
      return rewriter.notifyMatchFailure(op, "dynamic grouped convolution");
    Value input = padImages(rewriter, loc, adaptor.getInput(), op.getPads());
    Value init = createFilledTensor(
        rewriter, loc, resultType,
        createScalarConstant(rewriter, loc, resultType.getElementType(), 0),
        getDynamicResultSizes(rewriter, op));
    auto strides = rewriter.getI64TensorAttr(op.getStrides());
    auto dilations = rewriter.getI64TensorAttr(op.getDilations());
    if (!depthwise) {
      rewriter.replaceOpWithNewOp<linalg::Conv2DNchwFchwOp>(
          op, resultType, ValueRange{input, adaptor.getFilter()}, init, strides,
          dilations);
      return success();
    }
    // [C, 1, KH, KW] -> [C, KH, KW]
    Value filter = tensor::CollapseShapeOp::create(
        rewriter, loc, adaptor.getFilter(),
        ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    rewriter.replaceOpWithNewOp<linalg::DepthwiseConv2DNchwChwOp>(
        op, resultType, ValueRange{input, filter}, init, strides, dilations);
    return success();
  }

  int64_t patchColumns;
};

} // namespace

void kiln::populateCompositeLoweringPatterns(RewritePatternSet &patterns,
                                             int64_t patchColumns) {
  patterns.add<Conv2DLowering>(patterns.getContext(), patchColumns);
}
