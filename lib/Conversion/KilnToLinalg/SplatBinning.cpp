//===- SplatBinning.cpp - depth order and tile lists of splats ------------===//
//
// The first steps of kiln.splat_rasterize (and kiln.splat_contributions),
// with loops over tensors:
//   1-2. the visible splats in depth order, as records with their tiles'
//      rectangles (SplatDepthOrder.cpp);
//   3. binning, in parallel over bands of tile rows, each band over its
//      list of the splats that meet it (the lists built in parallel over
//      chunks of the sorted splats): a count of splats per
//      tile, its prefix sums (each tile's range), and a second pass that
//      writes each splat's position into the ranges of the tiles it covers:
//      in depth order, so each tile's range is sorted without a sort per
//      tile.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

namespace {
/// The most tiles of a splat in one band whose exact tests the count's pass
/// keeps, one bit each, for the second pass (all of a splat's tiles but a
/// few large splats' at 2M Gaussians).
constexpr int64_t kTestBits = 32;
} // namespace

SplatBins kiln::splat::binSplats(OpBuilder &rewriter, Location loc,
                                 Value splats, bool exact,
                                 const ImageExtent &image) {
  Arith a{rewriter, loc};
  Loops loops{rewriter, loc};
  int64_t count = cast<RankedTensorType>(splats.getType()).getDimSize(1);
  // Tile (tx, ty) is ty * tilesX + tx, in rows of the bound's length; the
  // run-time image's tiles are the first imageTiles.
  int64_t tilesX = image.maxTilesX();
  int64_t tiles = tilesX * image.maxTilesY();
  Value tilesY = image.tilesY(a);
  Value imageTiles = a.mul(tilesY, a.idx(tilesX));
  Value gridX = a.indexToFloat(image.tilesX(a));
  Value gridY = a.indexToFloat(tilesY);
  Type i32 = rewriter.getI32Type();
  auto indices = [&](int64_t size) {
    return RankedTensorType::get({size}, i32);
  };
  Value zero = a.idx(0);

  DepthOrder sorted = orderByDepth(rewriter, loc, splats, exact, gridX, gridY);
  Value records = sorted.records;
  Value order = sorted.order, visibleCount = sorted.visibleCount;
  Value rects[] = {sorted.columnsBegin, sorted.columnsEnd, sorted.rowsBegin,
                   sorted.rowsEnd};

  // 3. Binning, in parallel over bands of whole tile rows: a band's tiles
  // and their pairs are contiguous, so each band writes its own slices.
  // Each band walks its visible splats in depth order, so its tiles' lists
  // come out sorted. The bands' walks end at the visible count, bounded by the
  // splat count so that the parallel loop's outlining sees how much work they
  // are.
  Value bandWalkEnd = a.clampTo(visibleCount, count);
  Value rowsPerBand = a.ceilDiv(tilesY, kBinningBands);
  OpFoldResult bands;
  if (auto rows = getConstantIntValue(rowsPerBand)) {
    bands = rewriter.getIndexAttr((*getConstantIntValue(tilesY) + *rows - 1) /
                                  *rows);
  } else {
    // A quotient of two sizes, which ValueBounds cannot bound: the clamp
    // (a no-op) tells the parallel loop's outlining how wide it is.
    bands = a.clampTo(
        arith::CeilDivUIOp::create(rewriter, loc, tilesY, rowsPerBand),
        kBinningBands);
  }
  // Each band's splats, in depth order (SplatBandLists.cpp).
  BandLists bandLists =
      listBands(rewriter, loc, rects[2], rects[3], bandWalkEnd, rowsPerBand);
  Value bandOffsets = bandLists.offsets;
  Value recordsBuffer =
      exact ? recordsBufferOf(rewriter, loc, records) : Value();
  auto dynamicIndices = RankedTensorType::get({ShapedType::kDynamic}, i32);
  using Step =
      function_ref<SmallVector<Value>(Arith &, Value, Value, ValueRange)>;
  // Calls `step` with each tile of the band's rows [rowBegin, rowEnd) that
  // splat i covers, numbered from the band's first tile, and the tile's
  // place among the splat's tiles in the band, row by row. Under exact
  // culling each tile is tested, or, given the bits `passed` that the
  // count's tests set (for a splat of at most kTestBits tiles in the band),
  // read there.
  auto overBand = [&](Arith &g, Value i, Value rowBegin, Value rowEnd,
                      ValueRange inits, Value passed, Step step) -> ValueRange {
    auto rectAt = [&](int64_t k) {
      return g.toIndex(g.extract(rects[k], ValueRange{i}));
    };
    Value first = arith::MaxUIOp::create(g.b, g.loc, rectAt(2), rowBegin);
    Value last = arith::MinUIOp::create(g.b, g.loc, rectAt(3), rowEnd);
    auto inBand = scf::IfOp::create(
        g.b, g.loc, g.icmp(arith::CmpIPredicate::ult, first, last),
        [&](OpBuilder &ib, Location il) {
          Arith h{ib, il};
          // The exact test's splat, read from its record where it is
          // built: given the bits, only the few splats past them read it.
          auto coverAt = [&](Arith &u) {
            SplatCover cover;
            auto field = [&](int64_t f) {
              return u.extract(records, ValueRange{i, u.idx(f)});
            };
            cover.exact = true;
            cover.meanX = field(kMeanX);
            cover.meanY = field(kMeanY);
            cover.setConic(u, field(kConicA), field(kConicB), field(kConicC));
            cover.reach = field(kReach);
            return cover;
          };
          std::optional<SplatCover> cover;
          if (exact && !passed)
            cover = coverAt(h);
          Value columnsBegin = rectAt(0), columnsEnd = rectAt(1);
          Value width = h.sub(columnsEnd, columnsBegin);
          Value recorded;
          if (passed)
            recorded =
                h.icmp(arith::CmpIPredicate::ule,
                       h.mul(h.sub(last, first), width), h.idx(kTestBits));
          // Whether the splat reaches the `place`-th tile, (tx, ty).
          auto reached = [&](Arith &t, Value tx, Value ty, Value place) {
            if (!passed)
              return cover->reaches(t, tx, ty);
            auto bit = scf::IfOp::create(
                t.b, t.loc, recorded,
                [&](OpBuilder &bb, Location bl) {
                  Arith u{bb, bl};
                  Value shifted =
                      arith::ShRUIOp::create(bb, bl, passed, u.toI32(place));
                  scf::YieldOp::create(bb, bl,
                                       ValueRange{arith::TruncIOp::create(
                                           bb, bl, bb.getI1Type(), shifted)});
                },
                [&](OpBuilder &tb, Location tl) {
                  Arith u{tb, tl};
                  scf::YieldOp::create(tb, tl, coverAt(u).reaches(u, tx, ty));
                });
            return bit.getResult(0);
          };
          Loops rows{ib, il};
          ValueRange results = rows.forLoop(
              first, last, inits,
              [&](OpBuilder &yb, Location yl, Value ty, ValueRange yArgs) {
                Loops row{yb, yl};
                Arith r{yb, yl};
                Value rowPlace = r.mul(r.sub(ty, first), width);
                return SmallVector<Value>(row.forLoop(
                    columnsBegin, columnsEnd, yArgs,
                    [&](OpBuilder &xb, Location xl, Value tx,
                        ValueRange xArgs) {
                      Arith t{xb, xl};
                      Value tile =
                          t.add(t.mul(t.sub(ty, rowBegin), t.idx(tilesX)), tx);
                      Value place = t.add(rowPlace, t.sub(tx, columnsBegin));
                      if (!exact)
                        return step(t, tile, place, xArgs);
                      auto binned = scf::IfOp::create(
                          xb, xl, reached(t, tx, ty, place),
                          [&](OpBuilder &tb, Location tl) {
                            Arith u{tb, tl};
                            scf::YieldOp::create(tb, tl,
                                                 step(u, tile, place, xArgs));
                          },
                          [&](OpBuilder &eb, Location el) {
                            scf::YieldOp::create(eb, el, xArgs);
                          });
                      return SmallVector<Value>(binned.getResults());
                    }));
              });
          scf::YieldOp::create(ib, il, results);
        },
        [&](OpBuilder &eb, Location el) {
          scf::YieldOp::create(eb, el, inits);
        });
    return inBand.getResults();
  };
  // A parallel loop over the bands: `body` returns the band's slice of
  // each of `outputs`, with where it starts and how long it is.
  struct BandSlice {
    Value slice, offset, size;
  };
  auto overBands =
      [&](ValueRange outputs,
          function_ref<SmallVector<BandSlice>(Arith &, Value, Value, Value)>
              body) {
        auto forall =
            scf::ForallOp::create(rewriter, loc, ArrayRef<OpFoldResult>{bands},
                                  outputs, std::nullopt);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(forall.getBody());
        Arith g{rewriter, loc};
        Value band = forall.getInductionVar(0);
        Value rowBegin = g.mul(band, rowsPerBand);
        Value rowEnd = arith::MinUIOp::create(
            rewriter, loc, g.add(rowBegin, rowsPerBand), tilesY);
        SmallVector<BandSlice> slices = body(g, band, rowBegin, rowEnd);
        rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
        for (auto [slice, shared] :
             llvm::zip_equal(slices, forall.getRegionIterArgs()))
          tensor::ParallelInsertSliceOp::create(
              rewriter, loc, slice.slice, shared,
              ArrayRef<OpFoldResult>{slice.offset},
              ArrayRef<OpFoldResult>{slice.size},
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
        return forall.getResults();
      };
  // The count's pass over each band, and under exact culling the bits of
  // the tiles each listed splat passed the test for, which the second pass
  // reads instead of testing again.
  Value listed = bandLists.listed;
  SmallVector<Value> countOutputs = {
      createEmptyTensor(rewriter, loc, indices(tiles))};
  if (exact)
    countOutputs.push_back(
        createEmptyTensor(rewriter, loc, dynamicIndices, ValueRange{listed}));
  ValueRange counted = overBands(countOutputs, [&](Arith &g, Value bandIndex,
                                                   Value rowBegin,
                                                   Value rowEnd) {
    Value bandTiles = g.mul(g.sub(rowEnd, rowBegin), g.idx(tilesX));
    Value start = g.toIndex(g.extract(bandOffsets, ValueRange{bandIndex}));
    Value length =
        g.sub(g.toIndex(g.extract(bandOffsets,
                                  ValueRange{g.add(bandIndex, g.idx(1))})),
              start);
    SmallVector<Value> inits = {createFilledTensor(
        g.b, g.loc, dynamicIndices, g.i32(0), ValueRange{bandTiles})};
    if (exact)
      inits.push_back(
          createEmptyTensor(g.b, g.loc, dynamicIndices, ValueRange{length}));
    ValueRange local = bandLists.walk(
        g, bandIndex, inits, recordsBuffer,
        [&](OpBuilder &nb, Location l, Value k, Value i, ValueRange args) {
          Arith h{nb, l};
          SmallVector<Value> tileInits = {args[0]};
          if (exact)
            tileInits.push_back(h.i32(0));
          ValueRange tiled = overBand(
              h, i, rowBegin, rowEnd, tileInits, Value(),
              [&](Arith &t, Value tile, Value place, ValueRange tileArgs) {
                Value bumped =
                    t.add(t.extract(tileArgs[0], ValueRange{tile}), t.i32(1));
                SmallVector<Value> next = {t.insert(bumped, tileArgs[0], tile)};
                if (exact) {
                  // Places past the bits are tested again.
                  Value bit =
                      t.select(t.icmp(arith::CmpIPredicate::ult, place,
                                      t.idx(kTestBits)),
                               arith::ShLIOp::create(t.b, t.loc, t.i32(1),
                                                     t.toI32(place)),
                               t.i32(0));
                  next.push_back(
                      arith::OrIOp::create(t.b, t.loc, tileArgs[1], bit));
                }
                return next;
              });
          SmallVector<Value> results = {tiled[0]};
          if (exact)
            results.push_back(h.insert(tiled[1], args[1], ValueRange{k}));
          return results;
        });
    SmallVector<BandSlice> slices = {
        {local[0], g.mul(rowBegin, g.idx(tilesX)), bandTiles}};
    if (exact)
      slices.push_back({local[1], start, length});
    return slices;
  });
  Value counts = counted[0];
  Value passed = exact ? counted[1] : Value();
  // Each tile's range starts at the count of the tiles before it; the
  // entry after the image's tiles is the number of splat-tile pairs.
  Value ranges, pairs;
  std::tie(ranges, pairs) = loops.exclusiveSums(counts, imageTiles, tiles + 1);
  Value entries = overBands(
      createEmptyTensor(rewriter, loc, dynamicIndices,
                        ValueRange{a.toIndex(pairs)}),
      [&](Arith &g, Value bandIndex, Value rowBegin, Value rowEnd) {
        Value firstTile = g.mul(rowBegin, g.idx(tilesX));
        Value bandTiles = g.sub(g.mul(rowEnd, g.idx(tilesX)), firstTile);
        Value start = g.extract(ranges, ValueRange{firstTile});
        Value bandPairs = g.toIndex(g.sub(
            g.extract(ranges, ValueRange{g.add(firstTile, bandTiles)}), start));
        Value listStart =
            g.toIndex(g.extract(bandOffsets, ValueRange{bandIndex}));
        Loops band{g.b, g.loc};
        // Where each of the band's tiles writes next, from the band's start.
        Value cursors = band.forLoop(
            zero, bandTiles,
            ValueRange{createEmptyTensor(g.b, g.loc, dynamicIndices,
                                         ValueRange{bandTiles})},
            [&](OpBuilder &nb, Location l, Value t, ValueRange args) {
              Arith h{nb, l};
              Value at = h.sub(
                  h.extract(ranges, ValueRange{h.add(firstTile, t)}), start);
              return SmallVector<Value>{h.insert(at, args[0], t)};
            })[0];
        Value local = bandLists.walk(
            g, bandIndex,
            ValueRange{createEmptyTensor(g.b, g.loc, dynamicIndices,
                                         ValueRange{bandPairs}),
                       cursors},
            /*prefetched=*/Value(),
            [&](OpBuilder &nb, Location l, Value k, Value i, ValueRange args) {
              Arith h{nb, l};
              Value splat = h.toI32(i);
              Value bits =
                  passed ? h.extract(passed, ValueRange{h.add(listStart, k)})
                         : Value();
              return SmallVector<Value>(overBand(
                  h, i, rowBegin, rowEnd, args, bits,
                  [&](Arith &t, Value tile, Value, ValueRange tileArgs) {
                    Value position = t.extract(tileArgs[1], ValueRange{tile});
                    Value written =
                        t.insert(splat, tileArgs[0], t.toIndex(position));
                    Value next =
                        t.insert(t.add(position, t.i32(1)), tileArgs[1], tile);
                    return SmallVector<Value>{written, next};
                  }));
            })[0];
        return SmallVector<BandSlice>{{local, g.toIndex(start), bandPairs}};
      })[0];

  SplatBins bins{records, exact, order, ranges, entries, pairs};
  return bins;
}
