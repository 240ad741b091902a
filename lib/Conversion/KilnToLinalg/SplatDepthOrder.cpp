//===- SplatDepthOrder.cpp - the visible splats sorted by depth -----------===//
//
// The first steps of kiln.splat_rasterize (and kiln.splat_contributions),
// with loops over tensors:
//   1. the visible splats' indices, compacted in index order, with their
//      depths' bits as keys, and the keys' digits counted;
//   2. a stable radix sort by the keys (four 8-bit passes: depths of
//      visible splats are positive floats, whose bits order as integers);
//   3. each splat's fields as a record of one cache line, and the records
//      gathered into depth order with each splat's cover of the tiles.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

namespace {

/// Splats per task of the loops that write records: a few hundred tasks
/// at 2M Gaussians.
constexpr int64_t kRecordChunk = 4096;

/// The radix sort's digits: four passes of 8 bits. Three of 11 bits ran
/// slower (2M Gaussians: 2-4% slower frames): a pass's 2048 places of
/// writing each touch their own line and page, more than the caches keep.
constexpr int64_t kDigitBits = 8;
constexpr int64_t kBuckets = int64_t(1) << kDigitBits;
constexpr int64_t kPasses = 4;
/// Copies of the digits' histograms, splat n counting into copy n mod 4:
/// the high digits of depths are nearly all alike, and one copy's counter
/// would wait for its own last increment splat after splat.
constexpr int64_t kCopies = 4;

/// How many splats ahead the depth order's gather fetches records.
constexpr int64_t kGatherAhead = 16;

/// A loop in parallel over chunks of kRecordChunk of `count` splats, each
/// a serial loop over its splats: `body` takes the chunk's first splat,
/// its parts of `outputs` ([N, ...]; empty tensors of the chunk's rows)
/// and a splat's place k in the chunk, and returns the parts with row k
/// written.
using RowBody =
    function_ref<SmallVector<Value>(Arith &, Value, ValueRange, Value)>;
ValueRange overRows(OpBuilder &rewriter, Location loc, int64_t count,
                    ValueRange outputs, RowBody body) {
  Arith a{rewriter, loc};
  return overChunks(
      rewriter, loc, count, kRecordChunk, a.idx(count), outputs,
      [&](Arith &g, Value, Value base, Value size) {
        SmallVector<Value> parts;
        for (Value output : outputs) {
          auto type = cast<RankedTensorType>(output.getType());
          SmallVector<int64_t> shape(type.getShape());
          shape[0] = ShapedType::kDynamic;
          parts.push_back(createEmptyTensor(
              g.b, g.loc, RankedTensorType::get(shape, type.getElementType()),
              ValueRange{size}));
        }
        Loops loops{g.b, g.loc};
        ValueRange written = loops.forLoop(
            g.idx(0), size, parts,
            [&](OpBuilder &nb, Location l, Value k, ValueRange args) {
              Arith h{nb, l};
              return body(h, base, args, k);
            });
        SmallVector<ChunkSlice> slices;
        for (Value part : written)
          slices.push_back({part, base, size});
        return slices;
      });
}

/// `chunk` with `record` as its row k.
Value writeRecord(Arith &g, Value record, Value chunk, Value k) {
  return vector::TransferWriteOp::create(g.b, g.loc, record, chunk,
                                         ValueRange{k, g.idx(0)},
                                         ArrayRef<bool>{true})
      .getResult();
}

} // namespace

ValueRange kiln::splat::overChunks(OpBuilder &rewriter, Location loc,
                                   int64_t count, int64_t chunkSize, Value end,
                                   ValueRange outputs, ChunkBody body) {
  auto forall =
      scf::ForallOp::create(rewriter, loc,
                            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(
                                (count + chunkSize - 1) / chunkSize)},
                            outputs, std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  Arith g{rewriter, loc};
  Value chunk = forall.getInductionVar(0);
  Value base = g.mul(chunk, g.idx(chunkSize));
  Value size = g.clampTo(
      g.sub(arith::MaxUIOp::create(rewriter, loc, end, base), base), chunkSize);
  SmallVector<ChunkSlice> slices = body(g, chunk, base, size);
  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  for (auto [slice, shared] :
       llvm::zip_equal(slices, forall.getRegionIterArgs())) {
    auto type = cast<RankedTensorType>(shared.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = {slice.size};
    for (int64_t d = 1; d < type.getRank(); ++d)
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(d)));
    offsets[0] = slice.offset;
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, slice.slice, shared, offsets, sizes,
        SmallVector<OpFoldResult>(type.getRank(), rewriter.getIndexAttr(1)));
  }
  return forall.getResults();
}

Value kiln::splat::recordsBufferOf(OpBuilder &b, Location loc, Value records) {
  auto type = cast<RankedTensorType>(records.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(type.getShape(), type.getElementType()), records,
      /*readOnly=*/true);
}

void kiln::splat::prefetchRecord(Arith &g, Value recordsBuffer, Value splat) {
  memref::PrefetchOp::create(g.b, g.loc, recordsBuffer,
                             ValueRange{splat, g.idx(0)}, /*isWrite=*/false,
                             /*localityHint=*/3, /*isDataCache=*/true);
}

DepthOrder kiln::splat::orderByDepth(OpBuilder &rewriter, Location loc,
                                     Value splats, bool exact, Value tilesX,
                                     Value tilesY) {
  Arith a{rewriter, loc};
  Loops loops{rewriter, loc};
  int64_t count = cast<RankedTensorType>(splats.getType()).getDimSize(1);
  Type i32 = rewriter.getI32Type();
  auto indices = [&](int64_t size) {
    return RankedTensorType::get({size}, i32);
  };
  Value zero = a.idx(0);
  auto field = [](Arith &g, Value s, int64_t f, Value splat) {
    return g.extract(s, ValueRange{g.idx(f), splat});
  };

  // 1. The visible splats, in index order, with their depths' bits as
  // sort keys: every entry is written at the count so far, which moves on
  // only past a visible one. The same loop counts the visible keys' digits
  // for every pass of the sort (histograms side by side), rather
  // than a pass over the keys per digit (2M Gaussians: frames 2-3% faster).
  auto digit = [&](Arith &g, Value key, int64_t pass) {
    Value shifted =
        arith::ShRUIOp::create(g.b, g.loc, key, g.i32(pass * kDigitBits));
    return g.toIndex(
        arith::AndIOp::create(g.b, g.loc, shifted, g.i32(kBuckets - 1)));
  };
  ValueRange compacted = loops.forLoop(
      zero, a.idx(count),
      ValueRange{createEmptyTensor(rewriter, loc, indices(count)),
                 createEmptyTensor(rewriter, loc, indices(count)), zero,
                 createFilledTensor(rewriter, loc,
                                    indices(kCopies * kPasses * kBuckets),
                                    a.i32(0))},
      [&](OpBuilder &nb, Location l, Value n, ValueRange args) {
        Arith g{nb, l};
        Value visible = g.fcmp(arith::CmpFPredicate::OGT,
                               field(g, splats, kRadius, n), g.f(0));
        Value bits =
            arith::BitcastOp::create(nb, l, i32, field(g, splats, kDepth, n));
        Value order = g.insert(g.toI32(n), args[0], args[2]);
        Value keys = g.insert(bits, args[1], args[2]);
        Value next = g.add(args[2], g.select(visible, g.idx(1), g.idx(0)));
        Value counted = args[3];
        Value one = arith::ExtUIOp::create(nb, l, i32, visible);
        Value copy = g.mul(arith::AndIOp::create(nb, l, n, g.idx(kCopies - 1)),
                           g.idx(kPasses * kBuckets));
        for (int64_t pass = 0; pass < kPasses; ++pass) {
          Value at =
              g.add(g.add(digit(g, bits, pass), g.idx(pass * kBuckets)), copy);
          Value bumped = g.add(g.extract(counted, ValueRange{at}), one);
          counted = g.insert(bumped, counted, ValueRange{at});
        }
        return SmallVector<Value>{order, keys, next, counted};
      });
  Value order = compacted[0], keys = compacted[1];
  Value visibleCount = compacted[2], histograms = compacted[3];

  // 2. Stable LSD radix sort by the keys, kDigitBits at a time; the keys
  // travel with the indices, so each pass reads them in order.
  for (int64_t pass = 0; pass < kPasses; ++pass) {
    Value starts = loops.forLoop(
        zero, a.idx(kBuckets),
        ValueRange{createEmptyTensor(rewriter, loc, indices(kBuckets)),
                   a.i32(0)},
        [&](OpBuilder &nb, Location l, Value d, ValueRange args) {
          Arith g{nb, l};
          Value next = args[1];
          for (int64_t copy = 0; copy < kCopies; ++copy) {
            Value at = g.add(d, g.idx((copy * kPasses + pass) * kBuckets));
            next = g.add(next, g.extract(histograms, ValueRange{at}));
          }
          return SmallVector<Value>{g.insert(args[1], args[0], d), next};
        })[0];
    ValueRange scattered = loops.forLoop(
        zero, visibleCount,
        ValueRange{createEmptyTensor(rewriter, loc, indices(count)),
                   createEmptyTensor(rewriter, loc, indices(count)), starts},
        [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
          Arith g{nb, l};
          Value key = g.extract(keys, ValueRange{i});
          Value d = digit(g, key, pass);
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

  // The records, in index order then in depth order, each a loop in
  // parallel over chunks of splats: the sorted records are gathered a
  // cache line per splat rather than a line of each field's row (2M
  // Gaussians: 12 random lines per splat took a tenth of the frame's CPU
  // time).
  Type f32 = rewriter.getF32Type();
  auto recordsType = RankedTensorType::get({count, kRecordFields}, f32);
  Value records = overRows(
      rewriter, loc, count, createEmptyTensor(rewriter, loc, recordsType),
      [&](Arith &g, Value base, ValueRange chunks, Value k) {
        Value n = g.add(base, k);
        SmallVector<Value> fields;
        for (int64_t f = 0; f < kRecordFields; ++f)
          fields.push_back(f < kFields ? field(g, splats, f, n) : g.f(0));
        Value record = vector::FromElementsOp::create(
            g.b, g.loc, VectorType::get({kRecordFields}, f32), fields);
        return SmallVector<Value>{writeRecord(g, record, chunks[0], k)};
      })[0];

  // In depth order, with each splat's cover, and under exact culling its
  // reach and the rows of pixels its reach ellipse spans.
  SmallVector<Value> sortedOutputs = {
      createEmptyTensor(rewriter, loc, recordsType)};
  for (int64_t side = 0; side < 4; ++side)
    sortedOutputs.push_back(createEmptyTensor(rewriter, loc, indices(count)));
  Value recordsBuffer = recordsBufferOf(rewriter, loc, records);
  ValueRange sorted = overRows(
      rewriter, loc, count, sortedOutputs,
      [&](Arith &g, Value base, ValueRange chunks, Value k) {
        auto splatAt = [&](Value i) {
          Value visible = g.icmp(arith::CmpIPredicate::ult, i, visibleCount);
          return g.select(visible, g.toIndex(g.extract(order, ValueRange{i})),
                          g.idx(0));
        };
        Value i = g.add(base, k);
        Value ahead = arith::MinUIOp::create(
            g.b, g.loc, g.add(i, g.idx(kGatherAhead)), g.idx(count - 1));
        prefetchRecord(g, recordsBuffer, splatAt(ahead));
        Value n = splatAt(i);
        Value record = vector::TransferReadOp::create(
            g.b, g.loc, VectorType::get({kRecordFields}, f32), records,
            ValueRange{n, g.idx(0)}, g.f(0), ArrayRef<bool>{true});
        auto fieldOf = [&](int64_t f) -> Value {
          return vector::ExtractOp::create(g.b, g.loc, record, f);
        };
        Value reach = exact ? reachOf(g, fieldOf(kOpacity)) : Value();
        SplatCover cover = coverOf(g, fieldOf, reach, tilesX, tilesY);
        if (exact) {
          // Float rounding of the half height is a few ulps; the reach's
          // own margin covers the blend's.
          Value half = g.add(g.mul(cover.halfY, g.f(1.001)), g.f(0.01));
          auto set = [&](Value value, int64_t f) {
            record = vector::InsertOp::create(g.b, g.loc, value, record, f);
          };
          set(g.sub(cover.meanY, half), kSpanTop);
          set(g.add(cover.meanY, half), kSpanBottom);
          set(reach, kReach);
        }
        SmallVector<Value> next = {writeRecord(g, record, chunks[0], k)};
        Value sides[] = {cover.columnsBegin, cover.columnsEnd, cover.rowsBegin,
                         cover.rowsEnd};
        for (auto [side, chunk] : llvm::zip(sides, chunks.drop_front()))
          next.push_back(g.insert(g.toI32(side), chunk, ValueRange{k}));
        return next;
      });
  return DepthOrder{sorted[0], sorted[1], sorted[2],   sorted[3],
                    sorted[4], order,     visibleCount};
}
