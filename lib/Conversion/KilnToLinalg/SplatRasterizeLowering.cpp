//===- SplatRasterizeLowering.cpp - binning, depth order and blending -----===//
//
// kiln.splat_rasterize follows the reference rasterizer's plan with loops
// over tensors:
//   1. the visible splats' indices, compacted in index order, with their
//      depths' bits as keys;
//   2. a stable radix sort by the keys (four 8-bit passes: depths of
//      visible splats are positive floats, whose bits order as integers),
//      then the splats gathered into depth order;
//   3. binning: a count of splats per tile, its prefix sums (each tile's
//      range), and a second pass that writes each splat's position into the
//      ranges of the tiles it covers: in depth order, so each tile's range
//      is sorted without a sort per tile;
//   4. blending: a parallel loop over tiles, each a loop over the tile's 16
//      rows, each row 16 pixels wide as vectors, which walks the tile's
//      splats until the range ends or every pixel's transmittance has run
//      out.
// The tiles write a channel-major image padded to whole tiles, which a last
// generic transposes and crops to [H, W, 3].
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

namespace {

struct SplatRasterizeLowering : OpConversionPattern<SplatRasterizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplatRasterizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Arith a{rewriter, loc};
    Loops loops{rewriter, loc};
    Value splats = adaptor.getSplats();
    int64_t count = cast<RankedTensorType>(splats.getType()).getDimSize(1);
    auto imageType = cast<RankedTensorType>(op.getImage().getType());
    int64_t height = imageType.getDimSize(0), width = imageType.getDimSize(1);
    int64_t tilesX = (width + kTile - 1) / kTile;
    int64_t tilesY = (height + kTile - 1) / kTile;
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
    if (op.getCulling() == SplatCulling::Exact) {
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
      reaches =
          linalg::GenericOp::create(
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
              g, g.toI32(i), args,
              [](Arith &h, Value tile, ValueRange tileArgs) {
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
                Value written =
                    h.insert(splat, tileArgs[0], h.toIndex(position));
                Value cursors =
                    h.insert(h.add(position, h.i32(1)), tileArgs[1], tile);
                return SmallVector<Value>{written, cursors};
              }));
        })[0];

    // 4. Blending, in parallel over tiles.
    Value background[3];
    for (int64_t c = 0; c < 3; ++c)
      background[c] = a.extractAt(adaptor.getBackground(), {c});
    auto paddedType = RankedTensorType::get({3, tilesY * kTile, tilesX * kTile},
                                            rewriter.getF32Type());
    auto tileType =
        RankedTensorType::get({3, kTile, kTile}, rewriter.getF32Type());
    auto lanes = VectorType::get({kTile}, rewriter.getF32Type());
    auto laneMask = VectorType::get({kTile}, rewriter.getI1Type());
    SmallVector<float> laneOffsets;
    for (int64_t i = 0; i < kTile; ++i)
      laneOffsets.push_back(static_cast<float>(i));
    Value laneOffsetsConstant = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(lanes, ArrayRef<float>(laneOffsets)));

    auto forall = scf::ForallOp::create(
        rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(tiles)},
        ValueRange{createEmptyTensor(rewriter, loc, paddedType)}, std::nullopt);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(forall.getBody());
      Arith g{rewriter, loc};
      Value tile = forall.getInductionVar(0);
      Value tileY = arith::DivUIOp::create(rewriter, loc, tile, g.idx(tilesX));
      Value tileX = arith::RemUIOp::create(rewriter, loc, tile, g.idx(tilesX));
      Value rowStart = g.mul(tileY, g.idx(kTile));
      Value columnStart = g.mul(tileX, g.idx(kTile));
      Value first = g.toIndex(g.extract(ranges, ValueRange{tile}));
      Value end =
          g.toIndex(g.extract(ranges, ValueRange{g.add(tile, g.idx(1))}));
      Value columnX = arith::UIToFPOp::create(
          rewriter, loc, rewriter.getF32Type(), g.toI32(columnStart));
      Value pixelX =
          g.add(vector::BroadcastOp::create(rewriter, loc, lanes, columnX),
                laneOffsetsConstant);

      Loops rows{rewriter, loc};
      Value tileImage = rows.forLoop(
          zero, g.idx(kTile),
          ValueRange{createEmptyTensor(rewriter, loc, tileType)},
          [&](OpBuilder &rb, Location rl, Value row, ValueRange rowArgs) {
            Arith h{rb, rl};
            Value rowY = arith::UIToFPOp::create(rb, rl, rb.getF32Type(),
                                                 h.toI32(h.add(rowStart, row)));
            Value pixelY = vector::BroadcastOp::create(rb, rl, lanes, rowY);
            Value allLive = arith::ConstantOp::create(
                rb, rl, DenseElementsAttr::get(laneMask, true));
            SmallVector<Value> state = {first,          h.fv(1, kTile),
                                        h.fv(0, kTile), h.fv(0, kTile),
                                        h.fv(0, kTile), allLive};
            SmallVector<Type> stateTypes = llvm::to_vector(
                llvm::map_range(state, [](Value v) { return v.getType(); }));
            // One splat over the row's 16 pixels: the next walk state.
            auto blend = [&](Arith &w, ValueRange args,
                             Value splat) -> SmallVector<Value> {
              auto splatField = [&](int64_t f) {
                return vector::BroadcastOp::create(w.b, w.loc, lanes,
                                                   field(w, splats, f, splat));
              };
              Value dx = w.sub(splatField(kMeanX), pixelX);
              Value dy = w.sub(splatField(kMeanY), pixelY);
              Value power =
                  w.sub(w.mul(w.fv(-0.5, kTile),
                              w.add(w.mul(splatField(kConicA), w.mul(dx, dx)),
                                    w.mul(splatField(kConicC), w.mul(dy, dy)))),
                        w.mul(splatField(kConicB), w.mul(dx, dy)));
              Value alpha = w.min(w.fv(kAlphaMax, kTile),
                                  w.mul(splatField(kOpacity), w.exp(power)));
              Value transmittance = args[1];
              Value used = w.andI(
                  args[5], w.andI(w.fcmp(arith::CmpFPredicate::OLE, power,
                                         w.fv(0, kTile)),
                                  w.fcmp(arith::CmpFPredicate::OGE, alpha,
                                         w.fv(kAlphaMin, kTile))));
              Value after = w.mul(transmittance, w.sub(w.fv(1, kTile), alpha));
              Value ends = w.andI(used, w.fcmp(arith::CmpFPredicate::OLT, after,
                                               w.fv(kTransmittanceMin, kTile)));
              Value allSet = arith::ConstantOp::create(
                  w.b, w.loc, DenseElementsAttr::get(laneMask, true));
              Value notEnds = arith::XOrIOp::create(w.b, w.loc, ends, allSet);
              Value live = w.andI(args[5], notEnds);
              used = w.andI(used, notEnds);
              Value weight = w.mul(alpha, transmittance);
              SmallVector<Value> next = {w.add(args[0], w.idx(1)),
                                         w.select(used, after, transmittance)};
              for (int64_t c = 0; c < 3; ++c) {
                Value added =
                    w.add(args[2 + c], w.mul(weight, splatField(kRed + c)));
                next.push_back(w.select(used, added, args[2 + c]));
              }
              next.push_back(live);
              return next;
            };
            auto walk = scf::WhileOp::create(
                rb, rl, stateTypes, state,
                [&](OpBuilder &wb, Location wl, ValueRange args) {
                  Arith w{wb, wl};
                  Value more = w.icmp(arith::CmpIPredicate::ult, args[0], end);
                  Value anyLive = vector::ReductionOp::create(
                      wb, wl, vector::CombiningKind::OR, args[5]);
                  scf::ConditionOp::create(wb, wl, w.andI(more, anyLive), args);
                },
                [&](OpBuilder &wb, Location wl, ValueRange args) {
                  Arith w{wb, wl};
                  Value splat =
                      w.toIndex(w.extract(entries, ValueRange{args[0]}));
                  if (!reaches) {
                    scf::YieldOp::create(wb, wl, blend(w, args, splat));
                    return;
                  }
                  // Exact culling: a splat whose reach ellipse misses this
                  // row of the tile skips it at every pixel.
                  Value dy = w.sub(field(w, splats, kMeanY, splat), rowY);
                  Value meanX = field(w, splats, kMeanX, splat);
                  Value least = leastAlongRow(
                      w, field(w, splats, kConicA, splat),
                      field(w, splats, kConicB, splat),
                      field(w, splats, kConicC, splat), dy,
                      w.sub(meanX, w.add(columnX, w.f(kTile - 1))),
                      w.sub(meanX, columnX));
                  Value touches = w.fcmp(arith::CmpFPredicate::OLE, least,
                                         w.extract(reaches, ValueRange{splat}));
                  auto step = scf::IfOp::create(
                      wb, wl, touches,
                      [&](OpBuilder &tb, Location tl) {
                        Arith t{tb, tl};
                        scf::YieldOp::create(tb, tl, blend(t, args, splat));
                      },
                      [&](OpBuilder &eb, Location el) {
                        Arith e{eb, el};
                        SmallVector<Value> same(args);
                        same[0] = e.add(args[0], e.idx(1));
                        scf::YieldOp::create(eb, el, same);
                      });
                  scf::YieldOp::create(wb, wl, step.getResults());
                });
            Value image = rowArgs[0];
            for (int64_t c = 0; c < 3; ++c) {
              Value pixel = h.add(
                  walk.getResult(2 + c),
                  h.mul(walk.getResult(1), vector::BroadcastOp::create(
                                               rb, rl, lanes, background[c])));
              image =
                  vector::TransferWriteOp::create(
                      rb, rl, pixel, image, ValueRange{h.idx(c), row, h.idx(0)},
                      ArrayRef<bool>{true})
                      .getResult();
            }
            return SmallVector<Value>{image};
          })[0];

      rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
      SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(0), rowStart,
                                           columnStart};
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(3),
                                         rewriter.getIndexAttr(kTile),
                                         rewriter.getIndexAttr(kTile)};
      SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
      tensor::ParallelInsertSliceOp::create(rewriter, loc, tileImage,
                                            forall.getRegionIterArgs()[0],
                                            offsets, sizes, strides);
    }

    // Channel-major and padded to [H, W, 3].
    Value cropped = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get({3, height, width}, rewriter.getF32Type()),
        forall.getResult(0),
        ArrayRef<OpFoldResult>(
            SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(0))),
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(3),
                               rewriter.getIndexAttr(height),
                               rewriter.getIndexAttr(width)},
        ArrayRef<OpFoldResult>(
            SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(1))));
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr h = getAffineDimExpr(0, ctx), w = getAffineDimExpr(1, ctx),
               c = getAffineDimExpr(2, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {c, h, w}, ctx),
                                   AffineMap::get(3, 0, {h, w, c}, ctx)};
    SmallVector<utils::IteratorType> iterators(3,
                                               utils::IteratorType::parallel);
    Value image = linalg::GenericOp::create(
                      rewriter, loc, TypeRange{imageType}, ValueRange{cropped},
                      ValueRange{createEmptyTensor(rewriter, loc, imageType)},
                      maps, iterators,
                      [](OpBuilder &nb, Location l, ValueRange args) {
                        linalg::YieldOp::create(nb, l, args[0]);
                      })
                      .getResult(0);
    rewriter.replaceOp(op, image);
    return success();
  }
};

} // namespace

void kiln::populateSplatLoweringPatterns(RewritePatternSet &patterns) {
  addSplatProjectLowering(patterns);
  patterns.add<SplatRasterizeLowering>(patterns.getContext());
}
