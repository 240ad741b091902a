//===- SplatDepthOrder.cpp - the visible splats sorted by depth -----------===//
//
// The first steps of kiln.splat_rasterize (and kiln.splat_contributions),
// with loops over tensors:
//   1. the visible splats' indices, compacted in index order, with their
//      depths' bits as keys;
//   2. a stable radix sort by the keys (four 8-bit passes: depths of
//      visible splats are positive floats, whose bits order as integers),
//      then the splats gathered into depth order.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

DepthOrder kiln::splat::orderByDepth(OpBuilder &rewriter, Location loc,
                                     Value splats, Value reaches) {
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
  Value sorted = createEmptyTensor(
      rewriter, loc,
      RankedTensorType::get({kRecordFields, count}, rewriter.getF32Type()));
  for (int64_t f = 0; f < kFields; ++f)
    if (f != kDepth)
      sorted = a.withRow(gather(splats, f), sorted, f);
  DepthOrder result{sorted, Value(), order, visibleCount};
  if (reaches)
    result.reaches = gather(reaches, std::nullopt);
  return result;
}
