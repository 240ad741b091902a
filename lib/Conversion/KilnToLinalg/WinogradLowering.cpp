//===- WinogradLowering.cpp - kiln.winograd_conv2d to loops and products --===//
//
// F(2x2, 3x3) on NCHW images: each 4x4 input tile d (tiles overlap by two
// rows and columns) is transformed as B^T d B, the 16 elements of the
// transforms become 16 matrix products with the filter's transforms over
// the channels, and A^T m A turns each tile's 16 products into its 2x2
// outputs, with
//
//   B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
//   A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]
//
// Both transforms are a few additions per element on a whole row of tiles
// at once, in vectors: a tile's columns are two apart, so rows of the input
// are split into their even and odd columns (a deinterleave of the input
// row) and rows of the output are the interleave of the tiles' even and odd
// output columns. Generic ops would read or write those columns with a
// stride of two, which stays scalar.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// Row r of B^T: `first` minus, or plus, `second`.
struct TwoTerms {
  int first, second;
  bool add;
};
constexpr TwoTerms kInputTransform[4] = {
    {0, 2, false}, {1, 2, true}, {2, 1, false}, {1, 3, false}};

/// Row r of A^T: three terms from `first`, all added or the first minus
/// the other two.
struct ThreeTerms {
  int first;
  bool add;
};
constexpr ThreeTerms kOutputTransform[2] = {{0, true}, {1, false}};

Value addOrSubtract(OpBuilder &b, Location loc, Value x, Value y, bool add) {
  return add ? arith::AddFOp::create(b, loc, x, y).getResult()
             : arith::SubFOp::create(b, loc, x, y).getResult();
}

Value applyTwoTerms(OpBuilder &b, Location loc, const TwoTerms &terms,
                    ArrayRef<Value> values) {
  return addOrSubtract(b, loc, values[terms.first], values[terms.second],
                       terms.add);
}

Value applyThreeTerms(OpBuilder &b, Location loc, const ThreeTerms &terms,
                      ArrayRef<Value> values) {
  Value partial = addOrSubtract(b, loc, values[terms.first],
                                values[terms.first + 1], terms.add);
  return addOrSubtract(b, loc, partial, values[terms.first + 2], terms.add);
}

Value index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// Where a panel of `width` tiles lies in the image: `rows` rows of tiles
/// of `lanes` tiles each; a row of tiles is `panelsPerRow` panels (1 where
/// a panel holds whole rows).
struct PanelTiles {
  int64_t rows, lanes, panelsPerRow;
};

struct WinogradConv2DLowering : OpConversionPattern<WinogradConv2DOp> {
  WinogradConv2DLowering(MLIRContext *context, int64_t panelColumns)
      : OpConversionPattern(context), panelColumns(panelColumns) {}

  /// One loop iteration per panel of tiles: the input transform of its
  /// tiles, the 16 products of [F, C] filter transforms with [C, width]
  /// input transforms, and the output transform into the panel's outputs.
  /// A panel's transforms and products stay in cache between the steps.
  /// Each step is a loop (over channels, rows of tiles, the 16 elements,
  /// filters), not unrolled: one-shot bufferization's analysis grows with
  /// the square of the ops on one tensor in a block, and 16 products side
  /// by side and unrolled rows of tiles made it most of the compile time
  /// (the UNet denoiser: 20.0 s against 7.7 s).
  LogicalResult
  matchAndRewrite(WinogradConv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    Shape shape{resultType.getDimSize(0),
                cast<RankedTensorType>(adaptor.getInput().getType())
                    .getDimSize(1),
                resultType.getDimSize(1), resultType.getDimSize(2) / 2,
                resultType.getDimSize(3) / 2};
    std::optional<RowPanelSplit> split =
        splitRowsIntoPanels(shape.tileRows, shape.tileColumns, panelColumns);
    if (!split)
      return rewriter.notifyMatchFailure(op, "tiles don't fill the panels");
    PanelTiles panel =
        split->rowParts
            ? PanelTiles{1, panelColumns, split->split}
            : PanelTiles{split->split, shape.tileColumns, 1};
    Location loc = op.getLoc();
    Type f32 = resultType.getElementType();
    Value input = padImages(rewriter, loc, adaptor.getInput(), op.getPads());
    int64_t panels = shape.images * shape.tileRows * shape.tileColumns /
                     panelColumns;
    auto loop = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(panels)},
        ValueRange{createEmptyTensor(rewriter, loc, resultType)},
        std::nullopt);
    OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
    MLIRContext *ctx = getContext();
    AffineExpr p = getAffineDimExpr(0, ctx);
    Value panelIndex = loop.getInductionVar(0);
    auto apply = [&](AffineExpr expr) -> Value {
      return affine::AffineApplyOp::create(
          b, loc, AffineMap::get(1, 0, expr), panelIndex);
    };
    // The panel's first row of tiles overall (images after each other),
    // as an image and a row in it, and its first tile in that row.
    AffineExpr firstRow = p.floorDiv(panel.panelsPerRow) * panel.rows;
    Value n = apply(firstRow.floorDiv(shape.tileRows));
    Value ty = apply(firstRow % shape.tileRows);
    Value tx = apply((p % panel.panelsPerRow) * panel.lanes);

    Value transforms = transformInput(b, loc, input, n, ty, tx, shape, panel);
    Value products = multiplyTransforms(b, loc, adaptor.getFilterTransform(),
                                        transforms, shape);

    Value out = loop.getRegionIterArgs()[0];
    SmallVector<OpFoldResult> offsets = {
        n, b.getIndexAttr(0), apply(firstRow % shape.tileRows * 2),
        apply((p % panel.panelsPerRow) * panel.lanes * 2)};
    SmallVector<OpFoldResult> sizes = {
        b.getIndexAttr(1), b.getIndexAttr(shape.filters),
        b.getIndexAttr(2 * panel.rows), b.getIndexAttr(2 * panel.lanes)};
    SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
    Value block = tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get(
            {1, shape.filters, 2 * panel.rows, 2 * panel.lanes}, f32),
        out, offsets, sizes, unit);
    block = transformOutput(b, loc, products, block, shape, panel);
    b.setInsertionPointToStart(loop.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, block, out, offsets, sizes,
                                          unit);
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }

private:
  struct Shape {
    int64_t images, channels, filters, tileRows, tileColumns;
  };

  /// A loop over the panel's rows of tiles carrying `init`; `lane` is, at
  /// the start of its body, the row's first column in the panel.
  static scf::ForOp createRowLoop(OpBuilder &b, Location loc,
                                  const PanelTiles &panel, Value init,
                                  Value &lane) {
    auto loop =
        scf::ForOp::create(b, loc, index(b, loc, 0), index(b, loc, panel.rows),
                           index(b, loc, 1), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    AffineExpr row = getAffineDimExpr(0, b.getContext());
    lane = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(1, 0, row * panel.lanes),
        loop.getInductionVar());
    return loop;
  }

  /// B^T d B of the panel's tiles (image n, rows of tiles from ty, tiles
  /// from tx in each), [16, C, width]: per channel and row of tiles, the
  /// whole row in vectors.
  Value transformInput(OpBuilder &b, Location loc, Value padded, Value n,
                       Value ty, Value tx, const Shape &shape,
                       const PanelTiles &panel) const {
    Type f32 = cast<RankedTensorType>(padded.getType()).getElementType();
    auto type = RankedTensorType::get({16, shape.channels, panelColumns}, f32);
    auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                   index(b, loc, shape.channels),
                                   index(b, loc, 1),
                                   ValueRange{createEmptyTensor(b, loc, type)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value c = loop.getInductionVar();
    Value transforms = loop.getRegionIterArgs()[0];
    Value zero = createScalarConstant(b, loc, f32, 0);
    auto rowType = VectorType::get({2 * panel.lanes}, f32);
    AffineExpr d0, d1;
    bindDims(b.getContext(), d0, d1);
    Value column = affine::AffineApplyOp::create(b, loc, d0 * 2, tx);
    Value lane;
    scf::ForOp rowLoop = createRowLoop(b, loc, panel, transforms, lane);
    {
      OpBuilder::InsertionGuard rowGuard(b);
      b.setInsertionPointAfterValue(lane);
      Value r = rowLoop.getInductionVar();
      transforms = rowLoop.getRegionIterArgs()[0];
      // d[i][j]: element (i, j) of the row's tiles. Tile t's columns are
      // 2 t + j: the even and odd columns of the padded row from the
      // tiles' first column (j = 0, 1) and from two further (j = 2, 3).
      SmallVector<SmallVector<Value, 4>, 4> d(4);
      for (int64_t i = 0; i < 4; ++i) {
        Value y = affine::AffineApplyOp::create(
            b, loc, AffineMap::get(2, 0, d0 * 2 + d1 * 2 + i),
            ValueRange{ty, r});
        for (int64_t start : {0, 2}) {
          Value x = arith::AddIOp::create(b, loc, column,
                                          index(b, loc, start));
          Value row = vector::TransferReadOp::create(
              b, loc, rowType, padded, ValueRange{n, c, y, x}, zero,
              ArrayRef<bool>{true});
          auto split = vector::DeinterleaveOp::create(b, loc, row);
          d[i].push_back(split.getRes1());
          d[i].push_back(split.getRes2());
        }
      }
      // B^T d, then (B^T d) B.
      SmallVector<SmallVector<Value, 4>, 4> rows(4);
      for (int64_t j = 0; j < 4; ++j) {
        SmallVector<Value, 4> columnValues = {d[0][j], d[1][j], d[2][j],
                                              d[3][j]};
        for (int64_t a = 0; a < 4; ++a)
          rows[a].push_back(
              applyTwoTerms(b, loc, kInputTransform[a], columnValues));
      }
      for (int64_t a = 0; a < 4; ++a) {
        for (int64_t e = 0; e < 4; ++e) {
          Value element = applyTwoTerms(b, loc, kInputTransform[e], rows[a]);
          transforms = vector::TransferWriteOp::create(
                           b, loc, element, transforms,
                           ValueRange{index(b, loc, 4 * a + e), c, lane},
                           ArrayRef<bool>{true})
                           .getResult();
        }
      }
      scf::YieldOp::create(b, loc, transforms);
    }
    scf::YieldOp::create(b, loc, rowLoop.getResult(0));
    return loop.getResult(0);
  }

  /// The 16 products of the [F, C] filter transforms with the panel's
  /// [C, width] input transforms, [16, F, width].
  Value multiplyTransforms(OpBuilder &b, Location loc, Value filterTransform,
                           Value transforms, const Shape &shape) const {
    Type f32 = cast<RankedTensorType>(transforms.getType()).getElementType();
    auto productsType =
        RankedTensorType::get({16, shape.filters, panelColumns}, f32);
    auto loop = scf::ForOp::create(
        b, loc, index(b, loc, 0), index(b, loc, 16), index(b, loc, 1),
        ValueRange{createEmptyTensor(b, loc, productsType)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value element = loop.getInductionVar();
    Value products = loop.getRegionIterArgs()[0];
    OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
    auto slice = [&](Value source, int64_t rows, int64_t columns) -> Value {
      return tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({rows, columns}, f32), source,
          ArrayRef<OpFoldResult>{element, zero, zero},
          ArrayRef<OpFoldResult>{one, b.getIndexAttr(rows),
                                 b.getIndexAttr(columns)},
          ArrayRef<OpFoldResult>{one, one, one});
    };
    Value init = slice(products, shape.filters, panelColumns);
    Value filled = linalg::FillOp::create(
                       b, loc, ValueRange{createScalarConstant(b, loc, f32, 0)},
                       ValueRange{init})
                       .getResult(0);
    Value product =
        linalg::MatmulOp::create(
            b, loc, init.getType(),
            ValueRange{slice(filterTransform, shape.filters, shape.channels),
                       slice(transforms, shape.channels, panelColumns)},
            filled)
            .getResult(0);
    Value inserted = tensor::InsertSliceOp::create(
        b, loc, product, products, ArrayRef<OpFoldResult>{element, zero, zero},
        ArrayRef<OpFoldResult>{one, b.getIndexAttr(shape.filters),
                               b.getIndexAttr(panelColumns)},
        ArrayRef<OpFoldResult>{one, one, one});
    scf::YieldOp::create(b, loc, inserted);
    return loop.getResult(0);
  }

  /// A^T m A of the panel's tiles into `block`, their [1, F, 2 rows,
  /// 2 lanes] outputs: per filter and row of tiles, two output rows, each
  /// the interleave of the tiles' even and odd output columns.
  Value transformOutput(OpBuilder &b, Location loc, Value products, Value block,
                        const Shape &shape, const PanelTiles &panel) const {
    Type f32 = cast<RankedTensorType>(block.getType()).getElementType();
    auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                   index(b, loc, shape.filters),
                                   index(b, loc, 1), ValueRange{block});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value f = loop.getInductionVar();
    Value outputs = loop.getRegionIterArgs()[0];
    Value zero = createScalarConstant(b, loc, f32, 0);
    auto tilesType = VectorType::get({panel.lanes}, f32);
    Value lane;
    scf::ForOp rowLoop = createRowLoop(b, loc, panel, outputs, lane);
    {
      OpBuilder::InsertionGuard rowGuard(b);
      b.setInsertionPointAfterValue(lane);
      Value r = rowLoop.getInductionVar();
      outputs = rowLoop.getRegionIterArgs()[0];
      AffineExpr d0 = getAffineDimExpr(0, b.getContext());
      SmallVector<Value> m;
      for (int64_t element = 0; element < 16; ++element)
        m.push_back(vector::TransferReadOp::create(
            b, loc, tilesType, products,
            ValueRange{index(b, loc, element), f, lane}, zero,
            ArrayRef<bool>{true}));
      // m A per row a of m, then A^T (m A) per output column j.
      SmallVector<SmallVector<Value, 4>, 2> columns(2);
      for (int64_t a = 0; a < 4; ++a)
        for (int64_t j = 0; j < 2; ++j)
          columns[j].push_back(
              applyThreeTerms(b, loc, kOutputTransform[j],
                              ArrayRef<Value>(m).slice(4 * a, 4)));
      for (int64_t i = 0; i < 2; ++i) {
        Value even = applyThreeTerms(b, loc, kOutputTransform[i], columns[0]);
        Value odd = applyThreeTerms(b, loc, kOutputTransform[i], columns[1]);
        Value row = vector::InterleaveOp::create(b, loc, even, odd);
        Value y = affine::AffineApplyOp::create(
            b, loc, AffineMap::get(1, 0, d0 * 2 + i), r);
        outputs = vector::TransferWriteOp::create(
                      b, loc, row, outputs,
                      ValueRange{index(b, loc, 0), f, y, index(b, loc, 0)},
                      ArrayRef<bool>{true})
                      .getResult();
      }
      scf::YieldOp::create(b, loc, outputs);
    }
    scf::YieldOp::create(b, loc, rowLoop.getResult(0));
    return loop.getResult(0);
  }

  int64_t panelColumns;
};

} // namespace

void kiln::populateWinogradLoweringPatterns(RewritePatternSet &patterns,
                                            int64_t panelColumns) {
  patterns.add<WinogradConv2DLowering>(patterns.getContext(), panelColumns);
}
