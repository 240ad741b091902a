//===- SplatLowering.h - shared parts of the splatting lowering -*- C++ -*-===//
//
// The splat layout, the arithmetic builder and the culling tests that
// kiln.splat_project's and kiln.splat_rasterize's lowerings share.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CONVERSION_KILNTOLINALG_SPLATLOWERING_H
#define KILN_CONVERSION_KILNTOLINALG_SPLATLOWERING_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace kiln::splat {

// The lowering's own namespace: its helpers are written in MLIR's terms.
using namespace mlir;

constexpr int64_t kTile = 16;
/// Binning runs in parallel over at most this many bands of tile rows.
/// Each band walks every visible splat, so more bands cost more walks;
/// 16 keep the walks a few percent of binning and feed 16 threads.
constexpr int64_t kBinningBands = 16;
constexpr int64_t kFields = 11;
/// The splat rows (KilnSplatOps.td).
enum Field : int64_t {
  kMeanX = 0,
  kMeanY,
  kConicA,
  kConicB,
  kConicC,
  kDepth,
  kRadius,
  kOpacity,
  kRed,
  kGreen,
  kBlue,
  /// In the sorted records (DepthOrder::records), after the fields: the
  /// rows of pixels the reach ellipse spans, and the reach (exact culling).
  kSpanTop,
  kSpanBottom,
  kReach
};
/// The floats of one splat's record: a 64-byte cache line.
constexpr int64_t kRecordFields = 16;
constexpr double kNear = 0.2;
constexpr double kAlphaMin = 1.0 / 255.0;
constexpr double kAlphaMax = 0.99;
constexpr double kTransmittanceMin = 1e-4;

/// Scalar and vector arithmetic on f32, i32 and index values.
struct Arith {
  OpBuilder &b;
  Location loc;

  Value f(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value fv(double value, int64_t lanes) {
    auto type = VectorType::get({lanes}, b.getF32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }
  Value i32(int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
  }
  Value idx(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value add(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::AddIOp::create(b, loc, x, y).getResult();
  }
  Value sub(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::SubFOp::create(b, loc, x, y).getResult()
               : arith::SubIOp::create(b, loc, x, y).getResult();
  }
  Value mul(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::MulFOp::create(b, loc, x, y).getResult()
               : arith::MulIOp::create(b, loc, x, y).getResult();
  }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value max(Value x, Value y) { return arith::MaxNumFOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinNumFOp::create(b, loc, x, y); }
  Value fcmp(arith::CmpFPredicate predicate, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, predicate, x, y);
  }
  Value icmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value toIndex(Value i32Value) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32Value);
  }
  Value toI32(Value indexValue) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), indexValue);
  }
  /// A non-negative index as f32, folded when it is a constant.
  Value indexToFloat(Value indexValue) {
    if (std::optional<int64_t> constant = getConstantIntValue(indexValue))
      return f(static_cast<double>(*constant));
    return arith::UIToFPOp::create(b, loc, b.getF32Type(), toI32(indexValue));
  }
  /// min(x, bound) of an index as affine.min: a no-op where x is known not
  /// to exceed the bound, which tells ValueBounds (the parallel loops'
  /// outlining, the memory plan) how large x can be.
  Value clampTo(Value x, int64_t bound) {
    AffineMap map = AffineMap::get(
        0, 1, {b.getAffineSymbolExpr(0), b.getAffineConstantExpr(bound)},
        b.getContext());
    return affine::AffineMinOp::create(b, loc, map, ValueRange{x});
  }
  /// ceil(x / d) of a non-negative index, folded when x is a constant;
  /// affine, so that a bound of x bounds it (ValueBounds).
  Value ceilDiv(Value x, int64_t d) {
    if (std::optional<int64_t> constant = getConstantIntValue(x))
      return idx((*constant + d - 1) / d);
    AffineExpr s0 = b.getAffineSymbolExpr(0);
    return affine::AffineApplyOp::create(
        b, loc, AffineMap::get(0, 1, s0.ceilDiv(d)), ValueRange{x});
  }
  /// A sum of products x[i] * y[i].
  Value dot(ArrayRef<Value> x, ArrayRef<Value> y) {
    Value sum = mul(x[0], y[0]);
    for (size_t i = 1; i < x.size(); ++i)
      sum = arith::AddFOp::create(b, loc, sum, mul(x[i], y[i]));
    return sum;
  }
  Value extract(Value tensor, ValueRange indices) {
    return tensor::ExtractOp::create(b, loc, tensor, indices);
  }
  Value extractAt(Value tensor, ArrayRef<int64_t> indices) {
    SmallVector<Value> values;
    for (int64_t i : indices)
      values.push_back(idx(i));
    return extract(tensor, values);
  }
  Value insert(Value scalar, Value tensor, ValueRange indices) {
    return tensor::InsertOp::create(b, loc, scalar, tensor, indices);
  }
  /// Row r of a static [R, N] tensor, as [N].
  Value row(Value matrix, int64_t r) {
    auto type = cast<RankedTensorType>(matrix.getType());
    int64_t n = type.getDimSize(1);
    return tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({n}, type.getElementType()), matrix,
        ArrayRef<OpFoldResult>{b.getIndexAttr(r), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  /// `matrix` ([R, N]) with row r replaced by `values` ([N]).
  Value withRow(Value values, Value matrix, int64_t r) {
    int64_t n = cast<RankedTensorType>(matrix.getType()).getDimSize(1);
    return tensor::InsertSliceOp::create(
        b, loc, values, matrix,
        ArrayRef<OpFoldResult>{b.getIndexAttr(r), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
};

/// Loops over tensors for the rasterizer's serial steps.
struct Loops {
  OpBuilder &b;
  Location loc;

  using Body = function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                               ValueRange)>;
  /// for i in [lower, upper) carrying `inits`; `body` returns the next
  /// values.
  ValueRange forLoop(Value lower, Value upper, ValueRange inits, Body body) {
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    return scf::ForOp::create(
               b, loc, lower, upper, one, inits,
               [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
                 scf::YieldOp::create(nb, l, body(nb, l, i, args));
               })
        .getResults();
  }
  /// The running sums of `counts` (i32) before each of [0, end), in a new
  /// i32 tensor of `size` entries with their total at `end`, and the total.
  std::pair<Value, Value> exclusiveSums(Value counts, Value end, int64_t size) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    ValueRange scanned = forLoop(
        zero, end,
        ValueRange{tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{size},
                                           b.getI32Type()),
                   arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0))},
        [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
          Arith g{nb, l};
          Value next = g.add(args[1], g.extract(counts, ValueRange{i}));
          return SmallVector<Value>{g.insert(args[1], args[0], i), next};
        });
    Arith g{b, loc};
    return {g.insert(scanned[1], scanned[0], ValueRange{end}), scanned[1]};
  }
};

/// The size of the image a splat op draws: fixed, or chosen at run time up
/// to a bound. The bound fixes the layout (the tile grid's row length, the
/// padded image); the run-time size, which tiles get splats and which
/// pixels are drawn.
struct ImageExtent {
  int64_t maxWidth, maxHeight;
  /// Index values, constants for a fixed size.
  Value width, height;

  int64_t maxTilesX() const { return (maxWidth + kTile - 1) / kTile; }
  int64_t maxTilesY() const { return (maxHeight + kTile - 1) / kTile; }
  Value tilesX(Arith &a) const { return a.ceilDiv(width, kTile); }
  Value tilesY(Arith &a) const { return a.ceilDiv(height, kTile); }
};

/// The extent of an image of at most `maxWidth` x `maxHeight`, of `size`
/// (index height and width) when given. The run-time size is clamped to
/// the bound, which the caller has checked: the clamp changes nothing but
/// bounds what is sized by it.
ImageExtent getImageExtent(Arith &a, int64_t maxWidth, int64_t maxHeight,
                           ValueRange size);

/// The tile range [first, end) a splat's square of `radius` around
/// `mean` covers along one axis of `tiles` tiles (f32; the reference's
/// integer truncation; clamped in float so that far-off means stay in
/// range).
std::pair<Value, Value> tileRange(Arith &a, Value mean, Value radius,
                                  Value tiles);

/// The largest a x^2 + 2 b x y + c y^2 at which a splat of `opacity` still
/// reaches alpha 1/255: opacity exp(-q / 2) >= 1/255 where q <= 2 ln(255
/// opacity). The margin covers float rounding of the blend's power and exp
/// many times over; a negative reach reaches no pixel.
Value reachOf(Arith &g, Value opacity);

/// The least of a dx^2 + 2 b dx dy + c dy^2 over dx in [dxLow, dxHigh] at
/// fixed dy: at -(b / a) dy, clamped (`bOverA` is b / a). Rounding moves
/// that dx by ulps, and the form by a times their square, which the
/// reach's margin covers.
Value leastAlongRow(Arith &h, Value a, Value b, Value c, Value bOverA, Value dy,
                    Value dxLow, Value dxHigh);

/// The tiles one splat is binned to: a rectangle of tiles, and under exact
/// culling a test of each of its tiles.
struct SplatCover {
  Value columnsBegin, columnsEnd, rowsBegin, rowsEnd;
  bool exact = false;
  /// Exact culling: the mean, the conic and the largest a x^2 + 2 b x y +
  /// c y^2 at which the splat's alpha can still reach 1/255.
  Value meanX, meanY, a, b, c, reach;
  /// b / a and b / c, the slopes of the form's least along a row and a
  /// column: once per splat rather than four divisions per tile tested.
  Value bOverA, bOverC;
  /// Exact culling (from coverOf): half the height of the reach ellipse.
  Value halfY;

  /// Whether tile (tx, ty) has a pixel centre within the reach: the least
  /// quadratic form over the tile's square of pixel centres (0 where it
  /// holds the mean, else the least over its four edges, each a clamped
  /// one-dimensional minimum).
  Value reaches(Arith &h, Value tx, Value ty) const;
  /// Sets the conic a, b, c and the slopes.
  void setConic(Arith &h, Value conicA, Value conicB, Value conicC);
};

/// The cover of the splat whose fields `field` reads: the tiles of the
/// square of its radius, and with its `reach` (exact culling: reachOf its
/// opacity) those of the box of its reach ellipse among them.
SplatCover coverOf(Arith &g, function_ref<Value(int64_t)> field, Value reach,
                   Value tilesX, Value tilesY);

/// The visible splats (radius above 0) in increasing depth, stable.
struct DepthOrder {
  /// A record of kRecordFields floats per splat in that order ([N,
  /// kRecordFields]): the 11 fields, and under exact culling kSpanTop,
  /// kSpanBottom and kReach. Records past the visible count hold splat 0
  /// and are never read.
  Value records;
  /// Each record's cover (coverOf): its tiles' columns and rows, [begin,
  /// end) (i32 [N] each).
  Value columnsBegin, columnsEnd, rowsBegin, rowsEnd;
  /// The splats' indices in that order ([N] i32), and how many are visible.
  Value order, visibleCount;
};

/// The visible splats of `splats` ([11, N]) sorted by depth, as records
/// with their covers of a grid of `tilesX` x `tilesY` tiles (f32), under
/// `exact` culling or the 3-sigma square's.
DepthOrder orderByDepth(OpBuilder &b, Location loc, Value splats, bool exact,
                        Value tilesX, Value tilesY);

/// A chunk's slice of one output of overChunks: [offset, offset + size)
/// along the first dimension, whole along the others.
struct ChunkSlice {
  Value slice;
  OpFoldResult offset, size;
};
using ChunkBody =
    function_ref<SmallVector<ChunkSlice>(Arith &, Value, Value, Value)>;

/// A loop in parallel over the chunks of `chunkSize` of `count` splats, for
/// the first `end` of them: `body` takes a chunk's index, its first splat
/// and how many of its splats lie before `end`, and returns its slice of
/// each of `outputs`.
ValueRange overChunks(OpBuilder &b, Location loc, int64_t count,
                      int64_t chunkSize, Value end, ValueRange outputs,
                      ChunkBody body);

/// `records` ([N, kRecordFields]) as a read-only buffer, for prefetches.
Value recordsBufferOf(OpBuilder &b, Location loc, Value records);

/// Fetches record `splat` of `recordsBuffer` into the cache for a read to
/// come: the records are read at random, a cache line each, and a loop
/// over them with a long body would otherwise wait for each in turn.
void prefetchRecord(Arith &g, Value recordsBuffer, Value splat);

/// Each band of tile rows' list of the visible sorted splats whose rows of
/// tiles meet it, in depth order (SplatBandLists.cpp): a run in each
/// chunk of the sorted splats.
struct BandLists {
  /// The sorted splats' rows of tiles, [begin, end) (i32 [N] each), and
  /// the rows of a band.
  Value rowsBegin, rowsEnd, rowsPerBand;
  int64_t chunks = 0;
  /// The splats, chunk after chunk, each chunk's band after band (i32
  /// [listed]).
  Value lists;
  /// Chunk c's count of band b's splats, and where its run starts in
  /// `lists` (i32 [chunks * kBinningBands] each, at c * kBinningBands + b).
  Value chunkCounts, runStarts;
  /// Where each band's part of a list with an entry per listed splat
  /// starts (i32 [kBinningBands + 1]; the last: `listed`, index).
  Value offsets, listed;

  /// Splat i's bands, [first, end).
  std::pair<Value, Value> bandsOf(Arith &g, Value i) const;
  using WalkBody = function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                                   Value, ValueRange)>;
  /// Walks band `band`'s splats in depth order, carrying `inits`: calls
  /// `body` with each splat's place in the band's list and the splat. With
  /// `prefetched` (recordsBufferOf the records), each step fetches the
  /// record of a splat 16 further on in its run: a band's splats are a
  /// sixteenth of all, their records a line each at uneven strides that
  /// the hardware's prefetchers miss.
  ValueRange walk(Arith &g, Value band, ValueRange inits, Value prefetched,
                  WalkBody body) const;
};

/// The bands' lists of the first `visibleEnd` sorted splats, whose rows of
/// tiles are [rowsBegin, rowsEnd), in bands of `rowsPerBand` rows.
BandLists listBands(OpBuilder &b, Location loc, Value rowsBegin, Value rowsEnd,
                    Value visibleEnd, Value rowsPerBand);

/// The splats in the order the tiles blend them, and each tile's list.
struct SplatBins {
  /// The visible splats in increasing depth (DepthOrder::records; the
  /// spans kSpanTop and kSpanBottom widened by 0.1% + 0.01 for float
  /// rounding). Records past the visible count are never read.
  Value records;
  bool exact = false;
  /// For each sorted splat, its index in the op's splats (i32 [N]).
  Value order;
  /// Tile t's list is entries[ranges[t], ranges[t + 1]) (i32 [tiles + 1]).
  Value ranges;
  /// The sorted splats' positions, tile after tile (i32 [pairs]).
  Value entries;
  /// The number of splat-tile pairs (i32).
  Value pairs;
};

/// Compacts the visible splats of `splats` ([11, N]), sorts them by depth
/// (stable) and bins them into the 16x16 tiles of `image`, each tile's
/// list in depth order; under `exact` culling only to the tiles each can
/// reach. Tiles are numbered row by row in rows of the bound's length.
SplatBins binSplats(OpBuilder &b, Location loc, Value splats, bool exact,
                    const ImageExtent &image);

void addSplatProjectLowering(mlir::RewritePatternSet &patterns);
void addSplatRasterizeLowering(mlir::RewritePatternSet &patterns);

} // namespace kiln::splat

#endif // KILN_CONVERSION_KILNTOLINALG_SPLATLOWERING_H
