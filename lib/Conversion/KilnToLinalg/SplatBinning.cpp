//===- SplatBinning.cpp - depth order and tile lists of splats ------------===//
//
// The first steps of kiln.splat_rasterize (and kiln.splat_contributions),
// with loops over tensors:
//   1. the visible splats' indices, compacted in index order, with their
//      depths' bits as keys;
//   2. a stable radix sort by the keys (four 8-bit passes: depths of
//      visible splats are positive floats, whose bits order as integers),
//      then the splats gathered into depth order;
//   3. binning, in parallel over bands of tile rows, each band over its
//      list of the splats that meet it: a count of splats per
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
  auto field = [](Arith &g, Value s, int64_t f, Value splat) {
    return g.extract(s, ValueRange{g.idx(f), splat});
  };

  // Exact culling: each splat's reach, for its tiles and for the rows of
  // pixels it can reach in them.
  Value reaches;
  if (exact) {
    auto rowType = RankedTensorType::get({count}, rewriter.getF32Type());
    Value opacity = a.row(splats, kOpacity);
    AffineMap identity = rewriter.getMultiDimIdentityMap(1);
    reaches = linalg::GenericOp::create(
                  rewriter, loc, TypeRange{rowType}, ValueRange{opacity},
                  ValueRange{createEmptyTensor(rewriter, loc, rowType)},
                  ArrayRef<AffineMap>{identity, identity},
                  ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
                  [](OpBuilder &nb, Location l, ValueRange args) {
                    Arith g{nb, l};
                    linalg::YieldOp::create(nb, l, reachOf(g, args[0]));
                  })
                  .getResult(0);
  }
  // 1. The visible splats, in index order, with their depths' bits as
  // sort keys: every entry is written at the count so far, which moves on
  // only past a visible one.
  ValueRange compacted = loops.forLoop(
      zero, a.idx(count),
      ValueRange{createEmptyTensor(rewriter, loc, indices(count)),
                 createEmptyTensor(rewriter, loc, indices(count)), zero},
      [&](OpBuilder &nb, Location l, Value n, ValueRange args) {
        Arith g{nb, l};
        Value visible = g.fcmp(arith::CmpFPredicate::OGT,
                               field(g, splats, kRadius, n), g.f(0));
        Value bits =
            arith::BitcastOp::create(nb, l, i32, field(g, splats, kDepth, n));
        Value order = g.insert(g.toI32(n), args[0], args[2]);
        Value keys = g.insert(bits, args[1], args[2]);
        Value next = g.add(args[2], g.select(visible, g.idx(1), g.idx(0)));
        return SmallVector<Value>{order, keys, next};
      });
  Value order = compacted[0], keys = compacted[1];
  Value visibleCount = compacted[2];

  // 2. Stable LSD radix sort by the keys, 8 bits at a time; the keys
  // travel with the indices, so each pass reads them in order.
  auto digit = [&](Arith &g, Value key, int64_t shift) {
    Value shifted = arith::ShRUIOp::create(g.b, g.loc, key, g.i32(shift));
    return g.toIndex(arith::AndIOp::create(g.b, g.loc, shifted, g.i32(255)));
  };
  for (int64_t shift = 0; shift < 32; shift += 8) {
    Value histogram = loops.forLoop(
        zero, visibleCount,
        ValueRange{createFilledTensor(rewriter, loc, indices(256), a.i32(0))},
        [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
          Arith g{nb, l};
          Value d = digit(g, g.extract(keys, ValueRange{i}), shift);
          Value bumped = g.add(g.extract(args[0], ValueRange{d}), g.i32(1));
          return SmallVector<Value>{g.insert(bumped, args[0], d)};
        })[0];
    Value starts = loops.forLoop(
        zero, a.idx(256),
        ValueRange{createEmptyTensor(rewriter, loc, indices(256)), a.i32(0)},
        [&](OpBuilder &nb, Location l, Value d, ValueRange args) {
          Arith g{nb, l};
          Value next = g.add(args[1], g.extract(histogram, ValueRange{d}));
          return SmallVector<Value>{g.insert(args[1], args[0], d), next};
        })[0];
    ValueRange scattered = loops.forLoop(
        zero, visibleCount,
        ValueRange{createEmptyTensor(rewriter, loc, indices(count)),
                   createEmptyTensor(rewriter, loc, indices(count)), starts},
        [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
          Arith g{nb, l};
          Value key = g.extract(keys, ValueRange{i});
          Value d = digit(g, key, shift);
          Value position = g.extract(args[2], ValueRange{d});
          Value at = g.toIndex(position);
          Value sortedOrder =
              g.insert(g.extract(order, ValueRange{i}), args[0], at);
          Value sortedKeys = g.insert(key, args[1], at);
          Value cursors = g.insert(g.add(position, g.i32(1)), args[2], d);
          return SmallVector<Value>{sortedOrder, sortedKeys, cursors};
        });
    order = scattered[0];
    keys = scattered[1];
  }

  // The visible splats' fields in depth order (and their reach, under
  // exact culling), gathered in parallel: binning then reads them in
  // order, and each tile's blending in increasing addresses. One field at
  // a time, in parallel over the splats: its random reads stay within one
  // row (a [fields, N] generic ran in parallel over the fields, 6 and 5 on
  // two threads). Not the depths, which nothing reads after the sort. Rows
  // past the visible count hold splat 0 and are never read.
  auto rowType = RankedTensorType::get({count}, rewriter.getF32Type());
  auto gather = [&](Value source, std::optional<int64_t> field) {
    AffineMap identity = rewriter.getMultiDimIdentityMap(1);
    return linalg::GenericOp::create(
               rewriter, loc, TypeRange{rowType}, ValueRange{},
               ValueRange{createEmptyTensor(rewriter, loc, rowType)},
               ArrayRef<AffineMap>{identity},
               ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
               [&](OpBuilder &nb, Location l, ValueRange) {
                 Arith g{nb, l};
                 Value i = linalg::IndexOp::create(nb, l, 0);
                 Value visible =
                     g.icmp(arith::CmpIPredicate::ult, i, visibleCount);
                 Value n = g.select(visible,
                                    g.toIndex(g.extract(order, ValueRange{i})),
                                    g.idx(0));
                 SmallVector<Value> at = {n};
                 if (field)
                   at.insert(at.begin(), g.idx(*field));
                 linalg::YieldOp::create(nb, l, g.extract(source, at));
               })
        .getResult(0);
  };
  Value sorted = createEmptyTensor(rewriter, loc,
                                   cast<RankedTensorType>(splats.getType()));
  for (int64_t f = 0; f < kFields; ++f)
    if (f != kDepth)
      sorted = a.withRow(gather(splats, f), sorted, f);
  splats = sorted;
  if (reaches)
    reaches = gather(reaches, std::nullopt);

  // 3. Binning, in parallel over bands of whole tile rows: a band's tiles
  // and their pairs are contiguous, so each band writes its own slices.
  // Each band walks every visible splat in depth order, so its tiles'
  // lists come out sorted; the splats' tile rectangles are computed once.
  // Under exact culling, also the rows of pixels the reach ellipse spans,
  // for the blend's cheap first test of a row.
  SmallVector<Type> rectTypes(4, indices(count));
  if (reaches)
    rectTypes.append(2, RankedTensorType::get({count}, rewriter.getF32Type()));
  SmallVector<Value> rectInits;
  for (Type type : rectTypes)
    rectInits.push_back(
        createEmptyTensor(rewriter, loc, cast<RankedTensorType>(type)));
  ValueRange rects =
      linalg::GenericOp::create(
          rewriter, loc, rectTypes, ValueRange{}, rectInits,
          SmallVector<AffineMap>(rectTypes.size(),
                                 rewriter.getMultiDimIdentityMap(1)),
          ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
          [&](OpBuilder &nb, Location l, ValueRange) {
            Arith g{nb, l};
            SplatCover cover =
                coverOf(g, splats, reaches, linalg::IndexOp::create(nb, l, 0),
                        gridX, gridY);
            SmallVector<Value> results = {
                g.toI32(cover.columnsBegin), g.toI32(cover.columnsEnd),
                g.toI32(cover.rowsBegin), g.toI32(cover.rowsEnd)};
            if (cover.exact) {
              // Float rounding of the half height is a few ulps; the
              // reach's own margin covers the blend's.
              Value half = g.add(g.mul(cover.halfY, g.f(1.001)), g.f(0.01));
              results.push_back(g.sub(cover.meanY, half));
              results.push_back(g.add(cover.meanY, half));
            }
            linalg::YieldOp::create(nb, l, results);
          })
          .getResults();
  // The bands' walks end at the visible count, bounded by the splat count
  // so that the parallel loop's outlining sees how much work they are.
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
  // Each band's splats, in depth order: a splat is listed in the bands its
  // rows of tiles meet, so that each band walks its own splats rather than
  // all of them (2M Gaussians: 4% faster frames). bandsOf(i) is splat i's
  // range of bands [first, end).
  auto bandsOf = [&](Arith &g, Value i) {
    Value top = g.toIndex(g.extract(rects[2], ValueRange{i}));
    Value bottom = g.toIndex(g.extract(rects[3], ValueRange{i}));
    Value first = arith::DivUIOp::create(g.b, g.loc, top, rowsPerBand);
    Value last = arith::DivUIOp::create(
        g.b, g.loc,
        g.sub(arith::MaxUIOp::create(g.b, g.loc, bottom, g.idx(1)), g.idx(1)),
        rowsPerBand);
    Value rows = g.icmp(arith::CmpIPredicate::ult, top, bottom);
    return std::make_pair(first, g.select(rows, g.add(last, g.idx(1)), first));
  };
  auto overBandsOf = [&](Arith &g, Value i, ValueRange inits,
                         function_ref<Value(Arith &, Value, Value)> step) {
    auto [first, end] = bandsOf(g, i);
    Loops over{g.b, g.loc};
    return over.forLoop(
        first, end, inits,
        [&](OpBuilder &nb, Location l, Value band, ValueRange args) {
          Arith h{nb, l};
          return SmallVector<Value>{step(h, band, args[0])};
        })[0];
  };
  auto bandOffsetsType = indices(kBinningBands + 1);
  Value bandCounts = loops.forLoop(
      zero, bandWalkEnd,
      ValueRange{createFilledTensor(rewriter, loc, bandOffsetsType, a.i32(0))},
      [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
        Arith g{nb, l};
        return SmallVector<Value>{
            overBandsOf(g, i, args, [](Arith &h, Value band, Value counts) {
              Value bumped =
                  h.add(h.extract(counts, ValueRange{band}), h.i32(1));
              return h.insert(bumped, counts, ValueRange{band});
            })};
      })[0];
  ValueRange bandScan = loops.forLoop(
      zero, a.idx(kBinningBands),
      ValueRange{createEmptyTensor(rewriter, loc, bandOffsetsType), a.i32(0)},
      [&](OpBuilder &nb, Location l, Value band, ValueRange args) {
        Arith g{nb, l};
        Value next = g.add(args[1], g.extract(bandCounts, ValueRange{band}));
        return SmallVector<Value>{g.insert(args[1], args[0], band), next};
      });
  Value bandOffsets =
      a.insert(bandScan[1], bandScan[0], ValueRange{a.idx(kBinningBands)});
  auto dynamicIndices = RankedTensorType::get({ShapedType::kDynamic}, i32);
  Value bandLists = loops.forLoop(
      zero, bandWalkEnd,
      ValueRange{createEmptyTensor(rewriter, loc, dynamicIndices,
                                   ValueRange{a.toIndex(bandScan[1])}),
                 bandOffsets},
      [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
        Arith g{nb, l};
        Value splat = g.toI32(i);
        Loops over{nb, l};
        auto [first, end] = bandsOf(g, i);
        return SmallVector<Value>(over.forLoop(
            first, end, args,
            [&](OpBuilder &bb, Location bl, Value band, ValueRange lists) {
              Arith h{bb, bl};
              Value position = h.extract(lists[1], ValueRange{band});
              Value written =
                  h.insert(splat, lists[0], ValueRange{h.toIndex(position)});
              Value next = h.insert(h.add(position, h.i32(1)), lists[1],
                                    ValueRange{band});
              return SmallVector<Value>{written, next};
            }));
      })[0];
  // Walks band `band`'s splats in depth order, carrying `inits`. Its
  // length is bounded by the splat count so that the parallel loop's
  // outlining sees how much work the walks are.
  auto walkBand = [&](Arith &g, Value band, ValueRange inits,
                      Loops::Body body) {
    Value start = g.toIndex(g.extract(bandOffsets, ValueRange{band}));
    Value stop =
        g.toIndex(g.extract(bandOffsets, ValueRange{g.add(band, g.idx(1))}));
    Value length = g.clampTo(g.sub(stop, start), count);
    Loops walk{g.b, g.loc};
    return walk.forLoop(
        zero, length, inits,
        [&](OpBuilder &nb, Location l, Value k, ValueRange args) {
          Arith h{nb, l};
          Value i =
              h.toIndex(h.extract(bandLists, ValueRange{h.add(start, k)}));
          return body(nb, l, i, args);
        });
  };
  using Step = function_ref<SmallVector<Value>(Arith &, Value, ValueRange)>;
  // Calls `step` with each tile of the band's rows [rowBegin, rowEnd) that
  // splat i covers, numbered from the band's first tile.
  auto overBand = [&](Arith &g, Value i, Value rowBegin, Value rowEnd,
                      ValueRange inits, Step step) -> ValueRange {
    auto rectAt = [&](int64_t k) {
      return g.toIndex(g.extract(rects[k], ValueRange{i}));
    };
    Value first = arith::MaxUIOp::create(g.b, g.loc, rectAt(2), rowBegin);
    Value last = arith::MinUIOp::create(g.b, g.loc, rectAt(3), rowEnd);
    auto inBand = scf::IfOp::create(
        g.b, g.loc, g.icmp(arith::CmpIPredicate::ult, first, last),
        [&](OpBuilder &ib, Location il) {
          Arith h{ib, il};
          SplatCover cover;
          cover.exact = reaches != nullptr;
          if (cover.exact) {
            auto field = [&](int64_t f) {
              return h.extract(splats, ValueRange{h.idx(f), i});
            };
            cover.meanX = field(kMeanX);
            cover.meanY = field(kMeanY);
            cover.setConic(h, field(kConicA), field(kConicB), field(kConicC));
            cover.reach = h.extract(reaches, ValueRange{i});
          }
          Value columnsBegin = rectAt(0), columnsEnd = rectAt(1);
          Loops rows{ib, il};
          ValueRange results = rows.forLoop(
              first, last, inits,
              [&](OpBuilder &yb, Location yl, Value ty, ValueRange yArgs) {
                Loops row{yb, yl};
                return SmallVector<Value>(row.forLoop(
                    columnsBegin, columnsEnd, yArgs,
                    [&](OpBuilder &xb, Location xl, Value tx,
                        ValueRange xArgs) {
                      Arith t{xb, xl};
                      Value tile =
                          t.add(t.mul(t.sub(ty, rowBegin), t.idx(tilesX)), tx);
                      if (!cover.exact)
                        return step(t, tile, xArgs);
                      auto binned = scf::IfOp::create(
                          xb, xl, cover.reaches(t, tx, ty),
                          [&](OpBuilder &tb, Location tl) {
                            Arith u{tb, tl};
                            scf::YieldOp::create(tb, tl, step(u, tile, xArgs));
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
  // `output` (starting at `offset`, `size` long).
  auto overBands =
      [&](Value output, function_ref<std::tuple<Value, Value, Value>(
                            Arith &, Value, Value, Value)>
                            body) {
        auto forall =
            scf::ForallOp::create(rewriter, loc, ArrayRef<OpFoldResult>{bands},
                                  ValueRange{output}, std::nullopt);
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToStart(forall.getBody());
        Arith g{rewriter, loc};
        Value band = forall.getInductionVar(0);
        Value rowBegin = g.mul(band, rowsPerBand);
        Value rowEnd = arith::MinUIOp::create(
            rewriter, loc, g.add(rowBegin, rowsPerBand), tilesY);
        auto [slice, offset, size] = body(g, band, rowBegin, rowEnd);
        rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
        tensor::ParallelInsertSliceOp::create(
            rewriter, loc, slice, forall.getRegionIterArgs()[0],
            ArrayRef<OpFoldResult>{offset}, ArrayRef<OpFoldResult>{size},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
        return forall.getResult(0);
      };
  Value counts = overBands(
      createEmptyTensor(rewriter, loc, indices(tiles)),
      [&](Arith &g, Value bandIndex, Value rowBegin, Value rowEnd) {
        Value bandTiles = g.mul(g.sub(rowEnd, rowBegin), g.idx(tilesX));
        Value local = walkBand(
            g, bandIndex,
            ValueRange{createFilledTensor(g.b, g.loc, dynamicIndices, g.i32(0),
                                          ValueRange{bandTiles})},
            [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
              Arith h{nb, l};
              return SmallVector<Value>(
                  overBand(h, i, rowBegin, rowEnd, args,
                           [](Arith &t, Value tile, ValueRange tileArgs) {
                             Value bumped =
                                 t.add(t.extract(tileArgs[0], ValueRange{tile}),
                                       t.i32(1));
                             return SmallVector<Value>{
                                 t.insert(bumped, tileArgs[0], tile)};
                           }));
            })[0];
        return std::make_tuple(local, g.mul(rowBegin, g.idx(tilesX)),
                               bandTiles);
      });
  // Each tile's range starts at the count of the tiles before it; the
  // entry after the image's tiles is the number of splat-tile pairs.
  ValueRange scanned = loops.forLoop(
      zero, imageTiles,
      ValueRange{createEmptyTensor(rewriter, loc, indices(tiles + 1)),
                 a.i32(0)},
      [&](OpBuilder &nb, Location l, Value t, ValueRange args) {
        Arith g{nb, l};
        Value next = g.add(args[1], g.extract(counts, ValueRange{t}));
        return SmallVector<Value>{g.insert(args[1], args[0], t), next};
      });
  Value pairs = scanned[1];
  Value ranges = a.insert(pairs, scanned[0], ValueRange{imageTiles});
  Value entries = overBands(
      createEmptyTensor(rewriter, loc, dynamicIndices,
                        ValueRange{a.toIndex(pairs)}),
      [&](Arith &g, Value bandIndex, Value rowBegin, Value rowEnd) {
        Value firstTile = g.mul(rowBegin, g.idx(tilesX));
        Value bandTiles = g.sub(g.mul(rowEnd, g.idx(tilesX)), firstTile);
        Value start = g.extract(ranges, ValueRange{firstTile});
        Value bandPairs = g.toIndex(g.sub(
            g.extract(ranges, ValueRange{g.add(firstTile, bandTiles)}), start));
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
        Value local = walkBand(
            g, bandIndex,
            ValueRange{createEmptyTensor(g.b, g.loc, dynamicIndices,
                                         ValueRange{bandPairs}),
                       cursors},
            [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
              Arith h{nb, l};
              Value splat = h.toI32(i);
              return SmallVector<Value>(overBand(
                  h, i, rowBegin, rowEnd, args,
                  [&](Arith &t, Value tile, ValueRange tileArgs) {
                    Value position = t.extract(tileArgs[1], ValueRange{tile});
                    Value written =
                        t.insert(splat, tileArgs[0], t.toIndex(position));
                    Value next =
                        t.insert(t.add(position, t.i32(1)), tileArgs[1], tile);
                    return SmallVector<Value>{written, next};
                  }));
            })[0];
        return std::make_tuple(local, g.toIndex(start), bandPairs);
      });

  SplatBins bins{splats, Value(), Value(), order, ranges, entries, pairs};
  if (reaches) {
    bins.spanTop = rects[4];
    bins.spanBottom = rects[5];
  }
  return bins;
}
