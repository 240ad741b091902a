//===- SplatBandLists.cpp - each band's list of the sorted splats ---------===//
//
// Binning (SplatBinning.cpp) runs in parallel over bands of tile rows, each
// band walking the visible splats whose rows of tiles meet it, in depth
// order, rather than all of them (2M Gaussians: 4% faster frames). The
// lists are built in parallel over chunks of the sorted splats: each chunk
// counts its splats per band; a short serial scan places each chunk's run
// of each band; each chunk then lists its splats band by band in its own
// slice of the lists, after the chunks before it. A band's list is its run
// in each chunk's slice, chunk by chunk: in depth order.
//
// One slice per chunk rather than one per run of a band: the folding of a
// single-iteration scf.forall keeps only the first of several slices into
// one result.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

namespace {

/// Sorted splats per task of the loops that list each band's splats.
constexpr int64_t kListChunk = 4096;
/// How many splats ahead in its run a band's walk fetches records.
constexpr int64_t kWalkAhead = 16;

} // namespace

std::pair<Value, Value> BandLists::bandsOf(Arith &g, Value i) const {
  Value top = g.toIndex(g.extract(rowsBegin, ValueRange{i}));
  Value bottom = g.toIndex(g.extract(rowsEnd, ValueRange{i}));
  Value first = arith::DivUIOp::create(g.b, g.loc, top, rowsPerBand);
  Value last = arith::DivUIOp::create(
      g.b, g.loc,
      g.sub(arith::MaxUIOp::create(g.b, g.loc, bottom, g.idx(1)), g.idx(1)),
      rowsPerBand);
  Value rows = g.icmp(arith::CmpIPredicate::ult, top, bottom);
  return {first, g.select(rows, g.add(last, g.idx(1)), first)};
}

BandLists kiln::splat::listBands(OpBuilder &rewriter, Location loc,
                                 Value rowsBegin, Value rowsEnd,
                                 Value visibleEnd, Value rowsPerBand) {
  Arith a{rewriter, loc};
  Loops loops{rewriter, loc};
  int64_t count = cast<RankedTensorType>(rowsBegin.getType()).getDimSize(0);
  BandLists result;
  result.rowsBegin = rowsBegin;
  result.rowsEnd = rowsEnd;
  result.rowsPerBand = rowsPerBand;
  result.chunks = (count + kListChunk - 1) / kListChunk;
  int64_t chunks = result.chunks;
  Type i32 = rewriter.getI32Type();
  auto indices = [&](int64_t size) {
    return RankedTensorType::get({size}, i32);
  };
  auto dynamicIndices = RankedTensorType::get({ShapedType::kDynamic}, i32);
  auto bandsType = indices(kBinningBands);
  auto chunkBandsType = indices(chunks * kBinningBands);
  Value zero = a.idx(0);

  // Each chunk's count of its splats per band.
  result.chunkCounts = overChunks(
      rewriter, loc, count, kListChunk, visibleEnd,
      createEmptyTensor(rewriter, loc, chunkBandsType),
      [&](Arith &g, Value chunk, Value base, Value size) {
        Loops over{g.b, g.loc};
        Value counts = over.forLoop(
            zero, size,
            ValueRange{createFilledTensor(g.b, g.loc, bandsType, g.i32(0))},
            [&](OpBuilder &nb, Location l, Value k, ValueRange args) {
              Arith h{nb, l};
              auto [first, end] = result.bandsOf(h, h.add(base, k));
              Loops bands{nb, l};
              return SmallVector<Value>(bands.forLoop(
                  first, end, args,
                  [&](OpBuilder &bb, Location bl, Value band,
                      ValueRange counted) {
                    Arith u{bb, bl};
                    Value bumped = u.add(
                        u.extract(counted[0], ValueRange{band}), u.i32(1));
                    return SmallVector<Value>{
                        u.insert(bumped, counted[0], ValueRange{band})};
                  }));
            })[0];
        return SmallVector<ChunkSlice>{{counts,
                                        g.mul(chunk, g.idx(kBinningBands)),
                                        g.b.getIndexAttr(kBinningBands)}};
      })[0];

  // Where each chunk's run of each band starts in the lists (chunk after
  // chunk, each band after band), each band's count, and from those where
  // each band's part of a list per listed splat starts.
  ValueRange runScan = loops.forLoop(
      zero, a.idx(chunks * kBinningBands),
      ValueRange{createEmptyTensor(rewriter, loc, chunkBandsType),
                 createFilledTensor(rewriter, loc, bandsType, a.i32(0)),
                 a.i32(0)},
      [&](OpBuilder &nb, Location l, Value at, ValueRange args) {
        Arith g{nb, l};
        Value counted = g.extract(result.chunkCounts, ValueRange{at});
        Value band = arith::RemUIOp::create(nb, l, at, g.idx(kBinningBands));
        Value total = g.add(g.extract(args[1], ValueRange{band}), counted);
        return SmallVector<Value>{g.insert(args[2], args[0], ValueRange{at}),
                                  g.insert(total, args[1], ValueRange{band}),
                                  g.add(args[2], counted)};
      });
  result.runStarts = runScan[0];
  Value bandTotals = runScan[1];
  Value listed;
  std::tie(result.offsets, listed) =
      loops.exclusiveSums(bandTotals, a.idx(kBinningBands), kBinningBands + 1);
  result.listed = a.toIndex(listed);

  // Each chunk's splats, band after band.
  result.lists = overChunks(
      rewriter, loc, count, kListChunk, visibleEnd,
      createEmptyTensor(rewriter, loc, dynamicIndices,
                        ValueRange{result.listed}),
      [&](Arith &g, Value chunk, Value base, Value size) {
        // Where each of the chunk's runs starts in its slice.
        Value length = g.idx(0);
        Value cursors = createEmptyTensor(g.b, g.loc, bandsType);
        for (int64_t band = 0; band < kBinningBands; ++band) {
          Value at = g.add(g.mul(chunk, g.idx(kBinningBands)), g.idx(band));
          cursors = g.insert(g.toI32(length), cursors, ValueRange{g.idx(band)});
          length = g.add(
              length, g.toIndex(g.extract(result.chunkCounts, ValueRange{at})));
        }
        length = g.clampTo(length, kListChunk * kBinningBands);
        Loops over{g.b, g.loc};
        Value local = over.forLoop(
            zero, size,
            ValueRange{createEmptyTensor(g.b, g.loc, dynamicIndices,
                                         ValueRange{length}),
                       cursors},
            [&](OpBuilder &nb, Location l, Value k, ValueRange args) {
              Arith h{nb, l};
              Value i = h.add(base, k);
              Value splat = h.toI32(i);
              auto [first, end] = result.bandsOf(h, i);
              Loops bands{nb, l};
              return SmallVector<Value>(bands.forLoop(
                  first, end, args,
                  [&](OpBuilder &bb, Location bl, Value band,
                      ValueRange lists) {
                    Arith u{bb, bl};
                    Value position = u.extract(lists[1], ValueRange{band});
                    Value written = u.insert(splat, lists[0],
                                             ValueRange{u.toIndex(position)});
                    Value next = u.insert(u.add(position, u.i32(1)), lists[1],
                                          ValueRange{band});
                    return SmallVector<Value>{written, next};
                  }));
            })[0];
        Value start = g.toIndex(g.extract(
            result.runStarts, ValueRange{g.mul(chunk, g.idx(kBinningBands))}));
        return SmallVector<ChunkSlice>{{local, start, length}};
      })[0];
  return result;
}

ValueRange BandLists::walk(Arith &g, Value band, ValueRange inits,
                           Value prefetched, WalkBody body) const {
  Value zero = g.idx(0);
  SmallVector<Value> walkInits = {zero};
  llvm::append_range(walkInits, inits);
  Loops chunkLoop{g.b, g.loc};
  ValueRange walked = chunkLoop.forLoop(
      zero, g.idx(chunks), walkInits,
      [&](OpBuilder &nb, Location l, Value chunk, ValueRange args) {
        Arith h{nb, l};
        Value at = h.add(h.mul(chunk, h.idx(kBinningBands)), band);
        Value start = h.toIndex(h.extract(runStarts, ValueRange{at}));
        Value length = h.clampTo(
            h.toIndex(h.extract(chunkCounts, ValueRange{at})), kListChunk);
        Loops run{nb, l};
        return SmallVector<Value>(run.forLoop(
            zero, length, args,
            [&](OpBuilder &rb, Location rl, Value j, ValueRange runArgs) {
              Arith u{rb, rl};
              auto splatAt = [&](Value place) {
                return u.toIndex(
                    u.extract(lists, ValueRange{u.add(start, place)}));
              };
              if (prefetched) {
                Value ahead =
                    arith::MinUIOp::create(rb, rl, u.add(j, u.idx(kWalkAhead)),
                                           u.sub(length, u.idx(1)));
                prefetchRecord(u, prefetched, splatAt(ahead));
              }
              SmallVector<Value> next = {u.add(runArgs[0], u.idx(1))};
              llvm::append_range(next, body(rb, rl, runArgs[0], splatAt(j),
                                            runArgs.drop_front()));
              return next;
            }));
      });
  return walked.drop_front();
}
