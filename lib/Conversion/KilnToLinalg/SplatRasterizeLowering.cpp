//===- SplatRasterizeLowering.cpp - blending the tiles' splats ------------===//
//
// kiln.splat_rasterize and kiln.splat_contributions bin their splats
// (SplatBinning.cpp), then blend them: a parallel loop over tiles, each a
// loop over the tile's 16 rows, each row 16 pixels wide as vectors, which
// walks the tile's splats until the range ends or every pixel's
// transmittance has run out.
//
// The rasterization's tiles write a channel-major image padded to whole
// tiles, which a last generic transposes and crops to [H, W, 3]. The
// contributions' tiles write each pair's weight summed over the tile's
// pixels (no two tiles share a pair, so no write races), which a serial
// loop then adds up per splat.
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

/// The walk over a tile row's splats carries these values; the colour of
/// the three channels (rasterization) or the tile's pair weights
/// (contributions) follow them.
enum WalkState : unsigned { kPosition = 0, kTransmittance, kLive, kRest };

/// Blends the splats of `bins` tile by tile, in parallel over tiles, for
/// an image of `width` x `height` pixels. With a `background` (three f32
/// scalars): the image, channel-major, padded to whole tiles ([3, tilesY
/// 16, tilesX 16]; the padding is background). Without: each pair's weight
/// alpha T summed over its tile's pixels in the image (f32 [pairs], in
/// entries' order).
Value blendTiles(OpBuilder &rewriter, Location loc, const SplatBins &bins,
                 int64_t width, int64_t height, ValueRange background) {
  int64_t tilesX = (width + kTile - 1) / kTile;
  int64_t tilesY = (height + kTile - 1) / kTile;
  bool pairWeights = background.empty();
  Arith a{rewriter, loc};
  Value zero = a.idx(0);
  Value splats = bins.splats, reaches = bins.reaches;
  auto field = [](Arith &g, Value s, int64_t f, Value splat) {
    return g.extract(s, ValueRange{g.idx(f), splat});
  };
  Type f32 = rewriter.getF32Type();
  auto weightsType = RankedTensorType::get({ShapedType::kDynamic}, f32);
  auto paddedType =
      RankedTensorType::get({3, tilesY * kTile, tilesX * kTile}, f32);
  auto tileType = RankedTensorType::get({3, kTile, kTile}, f32);
  auto lanes = VectorType::get({kTile}, f32);
  auto laneMask = VectorType::get({kTile}, rewriter.getI1Type());
  SmallVector<float> laneOffsets;
  for (int64_t i = 0; i < kTile; ++i)
    laneOffsets.push_back(static_cast<float>(i));
  Value laneOffsetsConstant = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(lanes, ArrayRef<float>(laneOffsets)));

  Value output = pairWeights
                     ? createEmptyTensor(rewriter, loc, weightsType,
                                         ValueRange{a.toIndex(bins.pairs)})
                     : createEmptyTensor(rewriter, loc, paddedType);
  auto forall = scf::ForallOp::create(
      rewriter, loc,
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(tilesX * tilesY)},
      ValueRange{output}, std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(forall.getBody());
  Arith g{rewriter, loc};
  Value tile = forall.getInductionVar(0);
  Value tileY = arith::DivUIOp::create(rewriter, loc, tile, g.idx(tilesX));
  Value tileX = arith::RemUIOp::create(rewriter, loc, tile, g.idx(tilesX));
  Value rowStart = g.mul(tileY, g.idx(kTile));
  Value columnStart = g.mul(tileX, g.idx(kTile));
  Value first = g.toIndex(g.extract(bins.ranges, ValueRange{tile}));
  Value end =
      g.toIndex(g.extract(bins.ranges, ValueRange{g.add(tile, g.idx(1))}));
  Value tilePairs = g.sub(end, first);
  Value columnX =
      arith::UIToFPOp::create(rewriter, loc, f32, g.toI32(columnStart));
  Value pixelX =
      g.add(vector::BroadcastOp::create(rewriter, loc, lanes, columnX),
            laneOffsetsConstant);

  Value tileInit = pairWeights
                       ? createFilledTensor(rewriter, loc, weightsType, g.f(0),
                                            ValueRange{tilePairs})
                       : createEmptyTensor(rewriter, loc, tileType);
  Loops rows{rewriter, loc};
  Value tileResult = rows.forLoop(
      zero, g.idx(kTile), ValueRange{tileInit},
      [&](OpBuilder &rb, Location rl, Value row, ValueRange rowArgs) {
        Arith h{rb, rl};
        Value rowY =
            arith::UIToFPOp::create(rb, rl, f32, h.toI32(h.add(rowStart, row)));
        Value pixelY = vector::BroadcastOp::create(rb, rl, lanes, rowY);
        // Pixels of the padding blend nothing.
        Value inside = h.andI(
            h.fcmp(arith::CmpFPredicate::OLT, pixelX, h.fv(width, kTile)),
            h.fcmp(arith::CmpFPredicate::OLT, pixelY, h.fv(height, kTile)));
        SmallVector<Value> state = {first, h.fv(1, kTile), inside};
        if (pairWeights)
          state.push_back(rowArgs[0]);
        else
          state.append(3, h.fv(0, kTile));
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
          Value transmittance = args[kTransmittance];
          Value used = w.andI(
              args[kLive],
              w.andI(w.fcmp(arith::CmpFPredicate::OLE, power, w.fv(0, kTile)),
                     w.fcmp(arith::CmpFPredicate::OGE, alpha,
                            w.fv(kAlphaMin, kTile))));
          Value after = w.mul(transmittance, w.sub(w.fv(1, kTile), alpha));
          Value ends = w.andI(used, w.fcmp(arith::CmpFPredicate::OLT, after,
                                           w.fv(kTransmittanceMin, kTile)));
          Value allSet = arith::ConstantOp::create(
              w.b, w.loc, DenseElementsAttr::get(laneMask, true));
          Value notEnds = arith::XOrIOp::create(w.b, w.loc, ends, allSet);
          used = w.andI(used, notEnds);
          Value weight = w.mul(alpha, transmittance);
          SmallVector<Value> next = {w.add(args[kPosition], w.idx(1)),
                                     w.select(used, after, transmittance),
                                     w.andI(args[kLive], notEnds)};
          if (pairWeights) {
            Value rowWeight = vector::ReductionOp::create(
                w.b, w.loc, vector::CombiningKind::ADD,
                w.select(used, weight, w.fv(0, kTile)));
            Value at = w.sub(args[kPosition], first);
            Value sum =
                w.add(w.extract(args[kRest], ValueRange{at}), rowWeight);
            next.push_back(w.insert(sum, args[kRest], ValueRange{at}));
            return next;
          }
          for (int64_t c = 0; c < 3; ++c) {
            Value added =
                w.add(args[kRest + c], w.mul(weight, splatField(kRed + c)));
            next.push_back(w.select(used, added, args[kRest + c]));
          }
          return next;
        };
        auto walk = scf::WhileOp::create(
            rb, rl, stateTypes, state,
            [&](OpBuilder &wb, Location wl, ValueRange args) {
              Arith w{wb, wl};
              Value more =
                  w.icmp(arith::CmpIPredicate::ult, args[kPosition], end);
              Value anyLive = vector::ReductionOp::create(
                  wb, wl, vector::CombiningKind::OR, args[kLive]);
              scf::ConditionOp::create(wb, wl, w.andI(more, anyLive), args);
            },
            [&](OpBuilder &wb, Location wl, ValueRange args) {
              Arith w{wb, wl};
              Value splat = w.toIndex(
                  w.extract(bins.entries, ValueRange{args[kPosition]}));
              if (!reaches) {
                scf::YieldOp::create(wb, wl, blend(w, args, splat));
                return;
              }
              // Exact culling: a splat whose reach ellipse does not span
              // this row skips it at every pixel. Two compares tell; the
              // exact test along the row (the tile's columns too) skipped
              // a few more rows but cost more in mispredicted branches
              // than the blends it saved.
              auto skip = [&](OpBuilder &eb, Location el) {
                Arith e{eb, el};
                SmallVector<Value> same(args);
                same[kPosition] = e.add(args[kPosition], e.idx(1));
                scf::YieldOp::create(eb, el, same);
              };
              Value spanned =
                  w.andI(w.fcmp(arith::CmpFPredicate::OGE, rowY,
                                w.extract(bins.spanTop, ValueRange{splat})),
                         w.fcmp(arith::CmpFPredicate::OLE, rowY,
                                w.extract(bins.spanBottom, ValueRange{splat})));
              auto step = scf::IfOp::create(
                  wb, wl, spanned,
                  [&](OpBuilder &sb, Location sl) {
                    Arith t{sb, sl};
                    scf::YieldOp::create(sb, sl, blend(t, args, splat));
                  },
                  skip);
              scf::YieldOp::create(wb, wl, step.getResults());
            });
        if (pairWeights)
          return SmallVector<Value>{walk.getResult(kRest)};
        Value image = rowArgs[0];
        for (int64_t c = 0; c < 3; ++c) {
          Value pixel = h.add(
              walk.getResult(kRest + c),
              h.mul(walk.getResult(kTransmittance),
                    vector::BroadcastOp::create(rb, rl, lanes, background[c])));
          image = vector::TransferWriteOp::create(
                      rb, rl, pixel, image, ValueRange{h.idx(c), row, h.idx(0)},
                      ArrayRef<bool>{true})
                      .getResult();
        }
        return SmallVector<Value>{image};
      })[0];

  rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
  if (pairWeights) {
    tensor::ParallelInsertSliceOp::create(
        rewriter, loc, tileResult, forall.getRegionIterArgs()[0],
        ArrayRef<OpFoldResult>{first}, ArrayRef<OpFoldResult>{tilePairs},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
  } else {
    SmallVector<OpFoldResult> offsets = {rewriter.getIndexAttr(0), rowStart,
                                         columnStart};
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(3),
                                       rewriter.getIndexAttr(kTile),
                                       rewriter.getIndexAttr(kTile)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(rewriter, loc, tileResult,
                                          forall.getRegionIterArgs()[0],
                                          offsets, sizes, strides);
  }
  return forall.getResult(0);
}

struct SplatRasterizeLowering : OpConversionPattern<SplatRasterizeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplatRasterizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Arith a{rewriter, loc};
    auto imageType = cast<RankedTensorType>(op.getImage().getType());
    int64_t height = imageType.getDimSize(0), width = imageType.getDimSize(1);
    SplatBins bins =
        binSplats(rewriter, loc, adaptor.getSplats(),
                  op.getCulling() == SplatCulling::Exact,
                  (width + kTile - 1) / kTile, (height + kTile - 1) / kTile);
    SmallVector<Value> background;
    for (int64_t c = 0; c < 3; ++c)
      background.push_back(a.extractAt(adaptor.getBackground(), {c}));
    Value padded = blendTiles(rewriter, loc, bins, width, height, background);

    // Channel-major and padded to [H, W, 3].
    Value cropped = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get({3, height, width}, rewriter.getF32Type()),
        padded,
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

struct SplatContributionsLowering : OpConversionPattern<SplatContributionsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplatContributionsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Arith a{rewriter, loc};
    Loops loops{rewriter, loc};
    int64_t width = op.getWidth(), height = op.getHeight();
    SplatBins bins =
        binSplats(rewriter, loc, adaptor.getSplats(),
                  op.getCulling() == SplatCulling::Exact,
                  (width + kTile - 1) / kTile, (height + kTile - 1) / kTile);
    Value weights = blendTiles(rewriter, loc, bins, width, height, {});
    auto sumsType = cast<RankedTensorType>(op.getContributions().getType());
    // In pair order, so the sums do not depend on the threads.
    Value sums = loops.forLoop(
        a.idx(0), a.toIndex(bins.pairs),
        ValueRange{createFilledTensor(rewriter, loc, sumsType, a.f(0))},
        [&](OpBuilder &nb, Location l, Value p, ValueRange args) {
          Arith g{nb, l};
          Value sorted = g.toIndex(g.extract(bins.entries, ValueRange{p}));
          Value n = g.toIndex(g.extract(bins.order, ValueRange{sorted}));
          Value sum = g.add(g.extract(args[0], ValueRange{n}),
                            g.extract(weights, ValueRange{p}));
          return SmallVector<Value>{g.insert(sum, args[0], ValueRange{n})};
        })[0];
    rewriter.replaceOp(op, sums);
    return success();
  }
};

} // namespace

void kiln::populateSplatLoweringPatterns(RewritePatternSet &patterns) {
  addSplatProjectLowering(patterns);
  patterns.add<SplatRasterizeLowering, SplatContributionsLowering>(
      patterns.getContext());
}
