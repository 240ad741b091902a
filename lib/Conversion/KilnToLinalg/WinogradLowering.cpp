//===- WinogradLowering.cpp - kiln.winograd_conv2d to loops and products --===//
//
// F(m x m, 3x3), m = 2 or 4, on NCHW images: each t x t input tile d
// (t = m + 2; tiles overlap by two rows and columns) is transformed as
// B^T d B, the t * t elements of the transforms become t * t matrix
// products with the filter's transforms over the channels, and A^T p A
// turns each tile's t * t products into its m x m outputs.
//
// Both transforms are a few additions (and, for m = 4, multiply-adds) per
// element on a whole row of tiles at once, in vectors: a tile's columns are
// m apart, so rows of the input are split into their m phases (column
// modulo m; deinterleaves of the input row) and rows of the output are the
// interleave of the tiles' m output phases. Generic ops would read or
// write those columns with a stride of m, which stays scalar.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// B^T and A^T of F(2x2, 3x3) (interpolation points 0, 1, -1, infinity)
/// and F(4x4, 3x3) (0, 1, -1, 2, -2, infinity).
constexpr double kInputTransform2[4][4] = {
    {1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kOutputTransform2[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
constexpr double kInputTransform4[6][6] = {
    {4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kOutputTransform4[4][6] = {{1, 1, 1, 1, 1, 0},
                                            {0, 1, -1, 2, -2, 0},
                                            {0, 1, 1, 4, 4, 0},
                                            {0, 1, -1, 8, -8, 1}};

/// The transforms of F(m x m, 3x3) on t x t tiles (t = m + 2), row-major.
struct TileTransforms {
  int64_t m, t;
  ArrayRef<double> input;  // B^T, t x t
  ArrayRef<double> output; // A^T, m x t

  static TileTransforms get(int64_t m) {
    if (m == 2)
      return {2, 4, ArrayRef(&kInputTransform2[0][0], 16),
              ArrayRef(&kOutputTransform2[0][0], 8)};
    assert(m == 4 && "Winograd tiles are 2x2 or 4x4");
    return {4, 6, ArrayRef(&kInputTransform4[0][0], 36),
            ArrayRef(&kOutputTransform4[0][0], 24)};
  }
  ArrayRef<double> inputRow(int64_t row) const {
    return input.slice(row * t, t);
  }
  ArrayRef<double> outputRow(int64_t row) const {
    return output.slice(row * t, t);
  }
};

/// sum_k coefficients[k] * values[k] for vectors: from a term with
/// coefficient 1 where there is one, then additions and subtractions for
/// the terms of +-1 and multiply-adds for the others.
Value combine(OpBuilder &b, Location loc, ArrayRef<double> coefficients,
              ArrayRef<Value> values) {
  auto splat = [&](double c) -> Value {
    auto type = cast<VectorType>(values.front().getType());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, static_cast<float>(c)));
  };
  const double *first = llvm::find(coefficients, 1.0);
  Value sum;
  if (first != coefficients.end())
    sum = values[first - coefficients.begin()];
  for (auto [k, c] : llvm::enumerate(coefficients)) {
    if (c == 0 || (sum && &coefficients[k] == first))
      continue;
    Value v = values[k];
    if (!sum)
      sum = c == -1 ? arith::NegFOp::create(b, loc, v).getResult()
                    : arith::MulFOp::create(b, loc, v, splat(c)).getResult();
    else if (c == 1)
      sum = arith::AddFOp::create(b, loc, sum, v);
    else if (c == -1)
      sum = arith::SubFOp::create(b, loc, sum, v);
    else
      sum = math::FmaOp::create(b, loc, v, splat(c), sum);
  }
  return sum;
}

/// `row`'s m phases: elements m * i + phase for phase < m (m = 2 or 4).
SmallVector<Value> splitPhases(OpBuilder &b, Location loc, Value row,
                               int64_t m) {
  auto halves = vector::DeinterleaveOp::create(b, loc, row);
  if (m == 2)
    return {halves.getRes1(), halves.getRes2()};
  auto even = vector::DeinterleaveOp::create(b, loc, halves.getRes1());
  auto odd = vector::DeinterleaveOp::create(b, loc, halves.getRes2());
  return {even.getRes1(), odd.getRes1(), even.getRes2(), odd.getRes2()};
}

/// The row whose element m * i + phase is `phases[phase][i]`.
Value mergePhases(OpBuilder &b, Location loc, ArrayRef<Value> phases) {
  if (phases.size() == 2)
    return vector::InterleaveOp::create(b, loc, phases[0], phases[1]);
  return vector::InterleaveOp::create(
      b, loc, vector::InterleaveOp::create(b, loc, phases[0], phases[2]),
      vector::InterleaveOp::create(b, loc, phases[1], phases[3]));
}

Value index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// The vector length the transforms work in: one AVX-512 register of f32.
constexpr int64_t kTransformLanes = 16;

/// Where a panel of `width` tiles lies in the image: `rows` rows of tiles
/// of `lanes` tiles each; a row of tiles is `panelsPerRow` panels (1 where
/// a panel holds whole rows). The transforms take `rowsPerStep` rows of
/// tiles at a time (side by side in the panel), so that short rows still
/// fill whole vectors.
struct PanelTiles {
  int64_t width, rows, lanes, panelsPerRow, rowsPerStep;
};

/// The vectors of `parts` one after another.
Value concatenate(OpBuilder &b, Location loc, ArrayRef<Value> parts) {
  SmallVector<Value> level(parts);
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t k = 0; k < level.size(); k += 2) {
      int64_t length = cast<VectorType>(level[k].getType()).getNumElements();
      next.push_back(vector::ShuffleOp::create(
          b, loc, level[k], level[k + 1],
          llvm::to_vector(llvm::seq<int64_t>(0, 2 * length))));
    }
    level = std::move(next);
  }
  return level.front();
}

/// Part `part` of `value` cut into parts of `length` elements.
Value extractPart(OpBuilder &b, Location loc, Value value, int64_t part,
                  int64_t length) {
  if (cast<VectorType>(value.getType()).getNumElements() == length)
    return value;
  return vector::ExtractStridedSliceOp::create(b, loc, value, {part * length},
                                               {length}, {1});
}

struct WinogradConv2DLowering : OpConversionPattern<WinogradConv2DOp> {
  WinogradConv2DLowering(MLIRContext *context, int64_t panelColumns)
      : OpConversionPattern(context), panelColumns(panelColumns) {}

  /// One loop iteration per panel of tiles: the input transform of its
  /// tiles, the t * t products of [F, C] filter transforms with [C, width]
  /// input transforms, and the output transform into the panel's outputs.
  /// A panel's transforms and products stay in cache between the steps.
  /// Each step is a loop (over channels, rows of tiles, the t * t elements,
  /// filters), not unrolled: one-shot bufferization's analysis grows with
  /// the square of the ops on one tensor in a block, and 16 products side
  /// by side and unrolled rows of tiles made it most of the compile time
  /// (the UNet denoiser: 20.0 s against 7.7 s).
  LogicalResult
  matchAndRewrite(WinogradConv2DOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    TileTransforms tiles = TileTransforms::get(op.getOutputTile());
    int64_t m = tiles.m;
    Shape shape{
        resultType.getDimSize(0),
        cast<RankedTensorType>(adaptor.getInput().getType()).getDimSize(1),
        resultType.getDimSize(1), resultType.getDimSize(2) / m,
        resultType.getDimSize(3) / m};
    // Panels as wide as the products' register blocks, else half as wide
    // (small maps: one image's tiles), as kiln-winograd-convolutions chose.
    int64_t width = panelColumns;
    std::optional<RowPanelSplit> split =
        splitRowsIntoPanels(shape.tileRows, shape.tileColumns, width);
    if (!split) {
      width /= 2;
      split = splitRowsIntoPanels(shape.tileRows, shape.tileColumns, width);
    }
    if (!split)
      return rewriter.notifyMatchFailure(op, "tiles don't fill the panels");
    PanelTiles panel =
        split->rowParts
            ? PanelTiles{width, 1, width, split->split, 1}
            : PanelTiles{width, split->split, shape.tileColumns, 1, 1};
    if (panel.lanes < kTransformLanes && kTransformLanes % panel.lanes == 0 &&
        panel.rows % (kTransformLanes / panel.lanes) == 0)
      panel.rowsPerStep = kTransformLanes / panel.lanes;
    Location loc = op.getLoc();
    Type f32 = resultType.getElementType();
    // A row's last tiles read its phases from m columns further on, m - 2
    // past the padded row: zeros on the right keep those reads in bounds.
    SmallVector<int64_t> pads(op.getPads());
    pads[3] += m - 2;
    Value input = padImages(rewriter, loc, adaptor.getInput(), pads);
    int64_t panelCount =
        shape.images * shape.tileRows * shape.tileColumns / width;
    auto loop = scf::ForallOp::create(
        rewriter, loc,
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(panelCount)},
        ValueRange{createEmptyTensor(rewriter, loc, resultType)}, std::nullopt);
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

    Value transforms =
        transformInput(b, loc, input, n, ty, tx, shape, panel, tiles);
    Value products = multiplyTransforms(b, loc, adaptor.getFilterTransform(),
                                        transforms, shape, tiles, width);

    Value out = loop.getRegionIterArgs()[0];
    SmallVector<OpFoldResult> offsets = {
        n, b.getIndexAttr(0), apply(firstRow % shape.tileRows * m),
        apply((p % panel.panelsPerRow) * panel.lanes * m)};
    SmallVector<OpFoldResult> sizes = {
        b.getIndexAttr(1), b.getIndexAttr(shape.filters),
        b.getIndexAttr(m * panel.rows), b.getIndexAttr(m * panel.lanes)};
    SmallVector<OpFoldResult> unit(4, b.getIndexAttr(1));
    Value block = tensor::ExtractSliceOp::create(
        b, loc,
        RankedTensorType::get(
            {1, shape.filters, m * panel.rows, m * panel.lanes}, f32),
        out, offsets, sizes, unit);
    block = transformOutput(b, loc, products, block, shape, panel, tiles);
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

  /// A loop over the panel's rows of tiles, `rowsPerStep` at a time,
  /// carrying `init`; `lane` is, at the start of its body, the first row's
  /// first column in the panel.
  static scf::ForOp createRowLoop(OpBuilder &b, Location loc,
                                  const PanelTiles &panel, Value init,
                                  Value &lane) {
    auto loop =
        scf::ForOp::create(b, loc, index(b, loc, 0), index(b, loc, panel.rows),
                           index(b, loc, panel.rowsPerStep), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    AffineExpr row = getAffineDimExpr(0, b.getContext());
    lane = affine::AffineApplyOp::create(
        b, loc, AffineMap::get(1, 0, row * panel.lanes),
        loop.getInductionVar());
    return loop;
  }

  /// B^T d B of the panel's tiles (image n, rows of tiles from ty, tiles
  /// from tx in each), [t * t, C, width]: per channel and row of tiles, the
  /// whole row in vectors.
  Value transformInput(OpBuilder &b, Location loc, Value padded, Value n,
                       Value ty, Value tx, const Shape &shape,
                       const PanelTiles &panel,
                       const TileTransforms &tiles) const {
    int64_t m = tiles.m, t = tiles.t;
    Type f32 = cast<RankedTensorType>(padded.getType()).getElementType();
    auto type =
        RankedTensorType::get({t * t, shape.channels, panel.width}, f32);
    auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                   index(b, loc, shape.channels),
                                   index(b, loc, 1),
                                   ValueRange{createEmptyTensor(b, loc, type)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value c = loop.getInductionVar();
    Value transforms = loop.getRegionIterArgs()[0];
    Value zero = createScalarConstant(b, loc, f32, 0);
    auto rowType = VectorType::get({m * panel.lanes}, f32);
    AffineExpr d0, d1;
    bindDims(b.getContext(), d0, d1);
    Value column = affine::AffineApplyOp::create(b, loc, d0 * m, tx);
    Value lane;
    scf::ForOp rowLoop = createRowLoop(b, loc, panel, transforms, lane);
    {
      OpBuilder::InsertionGuard rowGuard(b);
      b.setInsertionPointAfterValue(lane);
      Value r = rowLoop.getInductionVar();
      transforms = rowLoop.getRegionIterArgs()[0];
      // d[i][j]: element (i, j) of the step's tiles. Tile u's columns are
      // m u + j: the m phases of the padded row from the tiles' first
      // column (j < m) and the first t - m phases from m further (j >= m);
      // the step's rows of tiles side by side.
      SmallVector<SmallVector<Value, 6>, 6> d(t);
      for (int64_t i = 0; i < t; ++i) {
        SmallVector<SmallVector<Value, 4>, 6> parts(t);
        for (int64_t q = 0; q < panel.rowsPerStep; ++q) {
          Value y = affine::AffineApplyOp::create(
              b, loc, AffineMap::get(2, 0, (d0 + d1 + q) * m + i),
              ValueRange{ty, r});
          int64_t j = 0;
          for (int64_t start : {int64_t(0), m}) {
            Value x =
                arith::AddIOp::create(b, loc, column, index(b, loc, start));
            Value row = vector::TransferReadOp::create(
                b, loc, rowType, padded, ValueRange{n, c, y, x}, zero,
                ArrayRef<bool>{true});
            for (Value phase : splitPhases(b, loc, row, m))
              if (j < t)
                parts[j++].push_back(phase);
          }
        }
        for (int64_t j = 0; j < t; ++j)
          d[i].push_back(concatenate(b, loc, parts[j]));
      }
      // B^T d, then (B^T d) B.
      SmallVector<SmallVector<Value, 6>, 6> rows(t);
      for (int64_t j = 0; j < t; ++j) {
        SmallVector<Value, 6> columnValues;
        for (int64_t i = 0; i < t; ++i)
          columnValues.push_back(d[i][j]);
        for (int64_t a = 0; a < t; ++a)
          rows[a].push_back(combine(b, loc, tiles.inputRow(a), columnValues));
      }
      for (int64_t a = 0; a < t; ++a) {
        for (int64_t e = 0; e < t; ++e) {
          Value element = combine(b, loc, tiles.inputRow(e), rows[a]);
          transforms = vector::TransferWriteOp::create(
                           b, loc, element, transforms,
                           ValueRange{index(b, loc, t * a + e), c, lane},
                           ArrayRef<bool>{true})
                           .getResult();
        }
      }
      scf::YieldOp::create(b, loc, transforms);
    }
    scf::YieldOp::create(b, loc, rowLoop.getResult(0));
    return loop.getResult(0);
  }

  /// The t * t products of the [F, C] filter transforms with the panel's
  /// [C, width] input transforms, [t * t, F, width].
  Value multiplyTransforms(OpBuilder &b, Location loc, Value filterTransform,
                           Value transforms, const Shape &shape,
                           const TileTransforms &tiles, int64_t width) const {
    int64_t elements = tiles.t * tiles.t;
    Type f32 = cast<RankedTensorType>(transforms.getType()).getElementType();
    auto productsType =
        RankedTensorType::get({elements, shape.filters, width}, f32);
    auto loop = scf::ForOp::create(
        b, loc, index(b, loc, 0), index(b, loc, elements), index(b, loc, 1),
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
    Value init = slice(products, shape.filters, width);
    Value filled = linalg::FillOp::create(
                       b, loc, ValueRange{createScalarConstant(b, loc, f32, 0)},
                       ValueRange{init})
                       .getResult(0);
    Value product =
        linalg::MatmulOp::create(
            b, loc, init.getType(),
            ValueRange{slice(filterTransform, shape.filters, shape.channels),
                       slice(transforms, shape.channels, width)},
            filled)
            .getResult(0);
    Value inserted = tensor::InsertSliceOp::create(
        b, loc, product, products, ArrayRef<OpFoldResult>{element, zero, zero},
        ArrayRef<OpFoldResult>{one, b.getIndexAttr(shape.filters),
                               b.getIndexAttr(width)},
        ArrayRef<OpFoldResult>{one, one, one});
    scf::YieldOp::create(b, loc, inserted);
    return loop.getResult(0);
  }

  /// A^T p A of the panel's tiles into `block`, their [1, F, m rows,
  /// m lanes] outputs: per filter and row of tiles, m output rows, each the
  /// interleave of the tiles' m output phases.
  Value transformOutput(OpBuilder &b, Location loc, Value products, Value block,
                        const Shape &shape, const PanelTiles &panel,
                        const TileTransforms &tiles) const {
    int64_t m = tiles.m, t = tiles.t;
    Type f32 = cast<RankedTensorType>(block.getType()).getElementType();
    auto loop = scf::ForOp::create(b, loc, index(b, loc, 0),
                                   index(b, loc, shape.filters),
                                   index(b, loc, 1), ValueRange{block});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value f = loop.getInductionVar();
    Value outputs = loop.getRegionIterArgs()[0];
    Value zero = createScalarConstant(b, loc, f32, 0);
    auto tilesType = VectorType::get({panel.rowsPerStep * panel.lanes}, f32);
    Value lane;
    scf::ForOp rowLoop = createRowLoop(b, loc, panel, outputs, lane);
    {
      OpBuilder::InsertionGuard rowGuard(b);
      b.setInsertionPointAfterValue(lane);
      Value r = rowLoop.getInductionVar();
      outputs = rowLoop.getRegionIterArgs()[0];
      AffineExpr d0 = getAffineDimExpr(0, b.getContext());
      SmallVector<Value> elements;
      for (int64_t element = 0; element < t * t; ++element)
        elements.push_back(vector::TransferReadOp::create(
            b, loc, tilesType, products,
            ValueRange{index(b, loc, element), f, lane}, zero,
            ArrayRef<bool>{true}));
      // p A per row a of p, then A^T (p A) per output column j.
      SmallVector<SmallVector<Value, 6>, 4> columns(m);
      for (int64_t a = 0; a < t; ++a)
        for (int64_t j = 0; j < m; ++j)
          columns[j].push_back(
              combine(b, loc, tiles.outputRow(j),
                      ArrayRef<Value>(elements).slice(t * a, t)));
      for (int64_t i = 0; i < m; ++i) {
        SmallVector<Value, 4> phases;
        for (int64_t j = 0; j < m; ++j)
          phases.push_back(combine(b, loc, tiles.outputRow(i), columns[j]));
        for (int64_t q = 0; q < panel.rowsPerStep; ++q) {
          SmallVector<Value, 4> rowPhases;
          for (Value phase : phases)
            rowPhases.push_back(extractPart(b, loc, phase, q, panel.lanes));
          Value row = mergePhases(b, loc, rowPhases);
          Value y = affine::AffineApplyOp::create(
              b, loc, AffineMap::get(1, 0, (d0 + q) * m + i), r);
          outputs = vector::TransferWriteOp::create(
                        b, loc, row, outputs,
                        ValueRange{index(b, loc, 0), f, y, index(b, loc, 0)},
                        ArrayRef<bool>{true})
                        .getResult();
        }
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
