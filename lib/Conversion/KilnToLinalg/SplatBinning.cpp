//===- SplatBinning.cpp - depth order and tile lists of splats ------------===//
//
// The first steps of kiln.splat_rasterize (and kiln.splat_contributions),
// with loops over tensors:
//   1. the visible splats' indices, compacted in index order, with their
//      depths' bits as keys;
//   2. a stable radix sort by the keys (four 8-bit passes: depths of
//      visible splats are positive floats, whose bits order as integers),
//      then the splats gathered into depth order;
//   3. binning: a count of splats per tile, its prefix sums (each tile's
//      range), and a second pass that writes each splat's position into the
//      ranges of the tiles it covers: in depth order, so each tile's range
//      is sorted without a sort per tile.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

SplatBins kiln::splat::binSplats(OpBuilder &rewriter, Location loc,
                                 Value splats, bool exact, int64_t tilesX,
                                 int64_t tilesY) {
  Arith a{rewriter, loc};
  Loops loops{rewriter, loc};
  int64_t count = cast<RankedTensorType>(splats.getType()).getDimSize(1);
  int64_t tiles = tilesX * tilesY;
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
    Value opacity = tensor::ExtractSliceOp::create(
        rewriter, loc, rowType, splats,
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(kOpacity),
                               rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(count)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(1)});
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
  // exact culling): binning then reads them in order, and each tile's
  // blending in increasing addresses. Rows past the visible count are
  // never read.
  SmallVector<Value> gathered = {createEmptyTensor(
      rewriter, loc, cast<RankedTensorType>(splats.getType()))};
  if (reaches)
    gathered.push_back(createEmptyTensor(
        rewriter, loc, cast<RankedTensorType>(reaches.getType())));
  gathered = llvm::to_vector(
      loops.forLoop(zero, visibleCount, gathered,
                    [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
                      Arith g{nb, l};
                      Value n = g.toIndex(g.extract(order, ValueRange{i}));
                      SmallVector<Value> next(args);
                      for (int64_t f = 0; f < kFields; ++f)
                        next[0] = g.insert(field(g, splats, f, n), next[0],
                                           ValueRange{g.idx(f), i});
                      if (reaches)
                        next[1] = g.insert(g.extract(reaches, ValueRange{n}),
                                           next[1], ValueRange{i});
                      return next;
                    }));
  splats = gathered[0];
  if (reaches)
    reaches = gathered[1];

  // 3. Binning. `visit` calls `step` for each tile the splat covers.
  auto overTiles =
      [&](Arith &g, Value splat, ValueRange inits,
          function_ref<SmallVector<Value>(Arith &, Value, ValueRange)> step)
      -> ValueRange {
    SplatCover cover =
        coverOf(g, splats, reaches, g.toIndex(splat), tilesX, tilesY);
    Loops inner{g.b, g.loc};
    return inner.forLoop(
        cover.rowsBegin, cover.rowsEnd, inits,
        [&](OpBuilder &yb, Location yl, Value ty, ValueRange yArgs) {
          Loops row{yb, yl};
          ValueRange results = row.forLoop(
              cover.columnsBegin, cover.columnsEnd, yArgs,
              [&](OpBuilder &xb, Location xl, Value tx, ValueRange xArgs) {
                Arith h{xb, xl};
                Value tile = h.add(h.mul(ty, h.idx(tilesX)), tx);
                if (!cover.exact)
                  return step(h, tile, xArgs);
                auto binned = scf::IfOp::create(
                    xb, xl, cover.reaches(h, tx, ty),
                    [&](OpBuilder &tb, Location tl) {
                      Arith t{tb, tl};
                      scf::YieldOp::create(tb, tl, step(t, tile, xArgs));
                    },
                    [&](OpBuilder &eb, Location el) {
                      scf::YieldOp::create(eb, el, xArgs);
                    });
                return SmallVector<Value>(binned.getResults());
              });
          return SmallVector<Value>(results);
        });
  };
  Value counts = loops.forLoop(
      zero, visibleCount,
      ValueRange{createFilledTensor(rewriter, loc, indices(tiles), a.i32(0))},
      [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
        Arith g{nb, l};
        return SmallVector<Value>(overTiles(
            g, g.toI32(i), args, [](Arith &h, Value tile, ValueRange tileArgs) {
              Value bumped =
                  h.add(h.extract(tileArgs[0], ValueRange{tile}), h.i32(1));
              return SmallVector<Value>{h.insert(bumped, tileArgs[0], tile)};
            }));
      })[0];
  // Each tile's range starts at the count of the tiles before it; the
  // last entry is the number of splat-tile pairs.
  ValueRange scanned = loops.forLoop(
      zero, a.idx(tiles),
      ValueRange{createEmptyTensor(rewriter, loc, indices(tiles + 1)),
                 createEmptyTensor(rewriter, loc, indices(tiles)), a.i32(0)},
      [&](OpBuilder &nb, Location l, Value t, ValueRange args) {
        Arith g{nb, l};
        Value next = g.add(args[2], g.extract(counts, ValueRange{t}));
        return SmallVector<Value>{g.insert(args[2], args[0], t),
                                  g.insert(args[2], args[1], t), next};
      });
  Value pairs = scanned[2];
  Value ranges = a.insert(pairs, scanned[0], ValueRange{a.idx(tiles)});
  Value entries = createEmptyTensor(
      rewriter, loc, RankedTensorType::get({ShapedType::kDynamic}, i32),
      ValueRange{a.toIndex(pairs)});
  entries = loops.forLoop(
      zero, visibleCount, ValueRange{entries, scanned[1]},
      [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
        Arith g{nb, l};
        Value splat = g.toI32(i);
        return SmallVector<Value>(overTiles(
            g, splat, args, [&](Arith &h, Value tile, ValueRange tileArgs) {
              Value position = h.extract(tileArgs[1], ValueRange{tile});
              Value written = h.insert(splat, tileArgs[0], h.toIndex(position));
              Value cursors =
                  h.insert(h.add(position, h.i32(1)), tileArgs[1], tile);
              return SmallVector<Value>{written, cursors};
            }));
      })[0];

  return {splats, reaches, order, ranges, entries, pairs};
}
