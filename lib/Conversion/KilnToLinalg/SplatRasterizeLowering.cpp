//===- SplatRasterizeLowering.cpp - blending the tiles' splats ------------===//
//
// kiln.splat_rasterize and kiln.splat_contributions bin their splats
// (SplatBinning.cpp), then blend them: a parallel loop over tiles, each a
// walk over the tile's splats in depth order until the list ends or every
// pixel's transmittance has run out. Each splat blends into the rows of
// the tile its reach ellipse spans (all 16 under square culling), each row
// 16 pixels wide as vectors; the tile's transmittance, colour and ended
// pixels are planes of 16 x 16 that the rows read and write. A splat's
// fields are read once per tile, and rows it cannot reach cost nothing.
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

/// How many splats ahead of the one blending the walk fetches records: a
/// splat blends in 100-300 ns, about one miss to memory; 8 ran 2-3% faster
/// than 4 at 2M Gaussians, the same at 500k.
constexpr int64_t kPrefetchSplats = 8;

/// The planes of a tile's blending state, 16 x 16 pixels each: the
/// transmittance, the colour so far, and 1 where a pixel has ended (its
/// transmittance ran out, or it lies in the padding).
enum Plane : int64_t {
  kTransmittancePlane = 0,
  kRedPlane,
  kEndedPlane = kRedPlane + 3,
  kPlanes
};

/// Blends the splats of `bins` tile by tile, in parallel over the tiles of
/// `image`. With a `background` (three f32 scalars): the image,
/// channel-major, padded to the bound's whole tiles ([3, tilesY 16, tilesX
/// 16]; the padding within the image's tiles is background, the rest
/// undefined). Without: each pair's weight alpha T summed over its tile's
/// pixels in the image (f32 [pairs], in entries' order).
Value blendTiles(OpBuilder &rewriter, Location loc, const SplatBins &bins,
                 const ImageExtent &image, ValueRange background) {
  int64_t tilesX = image.maxTilesX(), tilesY = image.maxTilesY();
  bool pairWeights = background.empty();
  Arith a{rewriter, loc};
  // The tiles of the image's rows, of the bound's row length: those past
  // the image's columns get no splats.
  OpFoldResult imageTiles = rewriter.getIndexAttr(tilesX * tilesY);
  if (!getConstantIntValue(image.height))
    imageTiles = a.mul(image.tilesY(a), a.idx(tilesX));
  Value zero = a.idx(0);
  Value records = bins.records;
  Type f32 = rewriter.getF32Type();
  auto weightsType = RankedTensorType::get({ShapedType::kDynamic}, f32);
  auto paddedType =
      RankedTensorType::get({3, tilesY * kTile, tilesX * kTile}, f32);
  auto tileType = RankedTensorType::get({3, kTile, kTile}, f32);
  auto stateType = RankedTensorType::get({kPlanes, kTile, kTile}, f32);
  auto lanes = VectorType::get({kTile}, f32);
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
  auto forall =
      scf::ForallOp::create(rewriter, loc, ArrayRef<OpFoldResult>{imageTiles},
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
  Value rowStartY = arith::UIToFPOp::create(rewriter, loc, f32,
                                            g.toI32(rowStart));
  Value columnX =
      arith::UIToFPOp::create(rewriter, loc, f32, g.toI32(columnStart));
  Value pixelX =
      g.add(vector::BroadcastOp::create(rewriter, loc, lanes, columnX),
            laneOffsetsConstant);

  auto read = [&](Arith &w, Value state, int64_t plane, Value row) {
    return vector::TransferReadOp::create(
               w.b, w.loc, lanes, state,
               ValueRange{w.idx(plane), row, w.idx(0)}, w.f(0),
               ArrayRef<bool>{true})
        .getResult();
  };
  auto write = [&](Arith &w, Value vector, Value state, int64_t plane,
                   Value row) {
    return vector::TransferWriteOp::create(
               w.b, w.loc, vector, state,
               ValueRange{w.idx(plane), row, w.idx(0)}, ArrayRef<bool>{true})
        .getResult();
  };
  auto isLive = [&](Arith &w, Value ended) {
    return w.fcmp(arith::CmpFPredicate::OEQ, ended, w.fv(0, kTile));
  };
  auto anyOf = [&](Arith &w, Value mask) {
    return vector::ReductionOp::create(w.b, w.loc, vector::CombiningKind::OR,
                                       mask)
        .getResult();
  };

  // T = 1 and no colour; the padding's pixels have ended. Every row in the
  // image has a live pixel.
  Loops loops{rewriter, loc};
  Value width = getConstantIntValue(image.width)
                    ? g.fv(static_cast<double>(image.maxWidth), kTile)
                    : vector::BroadcastOp::create(rewriter, loc, lanes,
                                                  g.indexToFloat(image.width))
                          .getResult();
  Value inImageColumns = g.fcmp(arith::CmpFPredicate::OLT, pixelX, width);
  Value state = loops.forLoop(
      zero, g.idx(kTile),
      ValueRange{createEmptyTensor(rewriter, loc, stateType)},
      [&](OpBuilder &nb, Location l, Value row, ValueRange args) {
        Arith h{nb, l};
        Value inImageRow = h.icmp(arith::CmpIPredicate::ult,
                                  h.add(rowStart, row), image.height);
        Value inside = h.andI(
            inImageColumns,
            vector::BroadcastOp::create(
                nb, l, VectorType::get({kTile}, nb.getI1Type()), inImageRow));
        Value next = write(h, h.fv(1, kTile), args[0], kTransmittancePlane,
                           row);
        for (int64_t c = 0; c < 3; ++c)
          next = write(h, h.fv(0, kTile), next, kRedPlane + c, row);
        next = write(h, h.select(inside, h.fv(0, kTile), h.fv(1, kTile)),
                     next, kEndedPlane, row);
        return SmallVector<Value>{next};
      })[0];
  Value liveRows = arith::MinUIOp::create(
      rewriter, loc, g.sub(image.height, rowStart), g.idx(kTile));

  // The splats' records as a buffer, for the prefetches of the walk.
  Value recordsBuffer = recordsBufferOf(rewriter, loc, records);
  SmallVector<Value> walkInit = {first, state, liveRows};
  if (pairWeights)
    walkInit.push_back(createFilledTensor(rewriter, loc, weightsType, g.f(0),
                                          ValueRange{tilePairs}));
  SmallVector<Type> walkTypes = llvm::to_vector(
      llvm::map_range(walkInit, [](Value v) { return v.getType(); }));
  auto walk = scf::WhileOp::create(
      rewriter, loc, walkTypes, walkInit,
      [&](OpBuilder &wb, Location wl, ValueRange args) {
        Arith w{wb, wl};
        Value more = w.andI(w.icmp(arith::CmpIPredicate::ult, args[0], end),
                            w.icmp(arith::CmpIPredicate::ugt, args[2],
                                   w.idx(0)));
        scf::ConditionOp::create(wb, wl, more, args);
      },
      [&](OpBuilder &wb, Location wl, ValueRange args) {
        Arith w{wb, wl};
        // The record of a splat kPrefetchSplats ahead, fetched now: the
        // records are read at random across the splats, a cache line each,
        // and each splat would otherwise wait for its own while its
        // blend's instructions fill the reorder buffer (2M Gaussians: half
        // of the blend's time).
        Value ahead = arith::MinUIOp::create(
            wb, wl, w.add(args[0], w.idx(kPrefetchSplats)),
            w.sub(end, w.idx(1)));
        prefetchRecord(w, recordsBuffer,
                       w.toIndex(w.extract(bins.entries, ValueRange{ahead})));
        Value splat =
            w.toIndex(w.extract(bins.entries, ValueRange{args[0]}));
        Value record = vector::TransferReadOp::create(
            wb, wl, VectorType::get({kRecordFields}, f32), records,
            ValueRange{splat, w.idx(0)}, w.f(0), ArrayRef<bool>{true});
        auto scalar = [&](int64_t f) {
          return vector::ExtractOp::create(wb, wl, record, f).getResult();
        };
        auto broadcast = [&](Value value) {
          return vector::BroadcastOp::create(wb, wl, lanes, value).getResult();
        };
        // The tile's rows the splat's reach ellipse spans (exact culling),
        // clamped in float so that far-off splats stay in range.
        Value rowBegin = w.idx(0), rowEnd = w.idx(kTile);
        if (bins.exact) {
          auto toRow = [&](Value y) {
            Value clamped =
                w.min(w.max(w.sub(y, rowStartY), w.f(0)), w.f(kTile));
            return w.toIndex(
                arith::FPToSIOp::create(wb, wl, wb.getI32Type(), clamped));
          };
          rowBegin = toRow(math::CeilOp::create(wb, wl, scalar(kSpanTop)));
          rowEnd = toRow(w.add(
              math::FloorOp::create(wb, wl, scalar(kSpanBottom)), w.f(1)));
        }
        Value meanY = scalar(kMeanY);
        Value dx = w.sub(broadcast(scalar(kMeanX)), pixelX);
        Value conicA = broadcast(scalar(kConicA));
        Value conicB = broadcast(scalar(kConicB));
        Value conicC = broadcast(scalar(kConicC));
        Value opacity = broadcast(scalar(kOpacity));
        SmallVector<Value> colour;
        for (int64_t c = 0; c < 3; ++c)
          colour.push_back(broadcast(scalar(kRed + c)));
        Loops rows{wb, wl};
        ValueRange blended = rows.forLoop(
            rowBegin, rowEnd, ValueRange{args[1], args[2], w.f(0)},
            [&](OpBuilder &rb, Location rl, Value row, ValueRange rowArgs) {
              Arith h{rb, rl};
              Value ended = read(h, rowArgs[0], kEndedPlane, row);
              Value live = isLive(h, ended);
              auto step = scf::IfOp::create(
                  rb, rl, anyOf(h, live),
                  [&](OpBuilder &tb, Location tl) {
                    Arith t{tb, tl};
                    Value rowY = arith::UIToFPOp::create(
                        tb, tl, f32, t.toI32(t.add(rowStart, row)));
                    Value dy = broadcast(t.sub(meanY, rowY));
                    Value power = t.sub(
                        t.mul(t.fv(-0.5, kTile),
                              t.add(t.mul(conicA, t.mul(dx, dx)),
                                    t.mul(conicC, t.mul(dy, dy)))),
                        t.mul(conicB, t.mul(dx, dy)));
                    Value alpha = t.min(t.fv(kAlphaMax, kTile),
                                        t.mul(opacity, t.exp(power)));
                    // Every plane is read before any is written, so that
                    // the writes update the state in place.
                    Value transmittance =
                        read(t, rowArgs[0], kTransmittancePlane, row);
                    SmallVector<Value> sums;
                    for (int64_t c = 0; c < 3; ++c)
                      sums.push_back(read(t, rowArgs[0], kRedPlane + c, row));
                    Value used = t.andI(
                        live,
                        t.andI(t.fcmp(arith::CmpFPredicate::OLE, power,
                                      t.fv(0, kTile)),
                               t.fcmp(arith::CmpFPredicate::OGE, alpha,
                                      t.fv(kAlphaMin, kTile))));
                    Value after =
                        t.mul(transmittance, t.sub(t.fv(1, kTile), alpha));
                    Value ends =
                        t.andI(used, t.fcmp(arith::CmpFPredicate::OLT, after,
                                            t.fv(kTransmittanceMin, kTile)));
                    Value allSet = arith::ConstantOp::create(
                        tb, tl,
                        DenseElementsAttr::get(
                            VectorType::get({kTile}, tb.getI1Type()), true));
                    Value notEnds = arith::XOrIOp::create(tb, tl, ends, allSet);
                    used = t.andI(used, notEnds);
                    Value weight = t.mul(alpha, transmittance);
                    Value next = write(t, t.select(used, after, transmittance),
                                       rowArgs[0], kTransmittancePlane, row);
                    for (int64_t c = 0; c < 3; ++c) {
                      Value added = t.add(sums[c], t.mul(weight, colour[c]));
                      next = write(t, t.select(used, added, sums[c]), next,
                                   kRedPlane + c, row);
                    }
                    next = write(t, t.select(ends, t.fv(1, kTile), ended),
                                 next, kEndedPlane, row);
                    // A row whose last live pixels end leaves the walk.
                    Value stillLive = anyOf(t, t.andI(live, notEnds));
                    Value rowsLeft = t.select(
                        stillLive, rowArgs[1], t.sub(rowArgs[1], t.idx(1)));
                    Value rowWeight = vector::ReductionOp::create(
                        tb, tl, vector::CombiningKind::ADD,
                        t.select(used, weight, t.fv(0, kTile)));
                    scf::YieldOp::create(
                        tb, tl,
                        ValueRange{next, rowsLeft,
                                   t.add(rowArgs[2], rowWeight)});
                  },
                  [&](OpBuilder &eb, Location el) {
                    scf::YieldOp::create(eb, el, rowArgs);
                  });
              return SmallVector<Value>(step.getResults());
            });
        SmallVector<Value> next = {w.add(args[0], w.idx(1)), blended[0],
                                   blended[1]};
        if (pairWeights) {
          Value at = w.sub(args[0], first);
          next.push_back(w.insert(blended[2], args[3], ValueRange{at}));
        }
        scf::YieldOp::create(wb, wl, next);
      });

  Value tileResult;
  if (pairWeights) {
    tileResult = walk.getResult(3);
  } else {
    Value blendedState = walk.getResult(1);
    tileResult = loops.forLoop(
        zero, g.idx(kTile),
        ValueRange{createEmptyTensor(rewriter, loc, tileType)},
        [&](OpBuilder &nb, Location l, Value row, ValueRange args) {
          Arith h{nb, l};
          Value transmittance =
              read(h, blendedState, kTransmittancePlane, row);
          Value image = args[0];
          for (int64_t c = 0; c < 3; ++c) {
            Value pixel = h.add(
                read(h, blendedState, kRedPlane + c, row),
                h.mul(transmittance, vector::BroadcastOp::create(
                                         nb, l, lanes, background[c])));
            image = vector::TransferWriteOp::create(
                        nb, l, pixel, image,
                        ValueRange{h.idx(c), row, h.idx(0)},
                        ArrayRef<bool>{true})
                        .getResult();
          }
          return SmallVector<Value>{image};
        })[0];
  }

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
    bool sized = !op.getImageSize().empty();
    ImageExtent image =
        sized ? getImageExtent(a, (*op.getMaxSize())[1], (*op.getMaxSize())[0],
                               adaptor.getImageSize())
              : getImageExtent(a, imageType.getDimSize(1),
                               imageType.getDimSize(0), {});
    SplatBins bins = binSplats(rewriter, loc, adaptor.getSplats(),
                               op.getCulling() == SplatCulling::Exact, image);
    SmallVector<Value> background;
    for (int64_t c = 0; c < 3; ++c)
      background.push_back(a.extractAt(adaptor.getBackground(), {c}));
    Value padded = blendTiles(rewriter, loc, bins, image, background);

    // Channel-major and padded to [H, W, 3].
    OpFoldResult height = getAsOpFoldResult(image.height);
    OpFoldResult width = getAsOpFoldResult(image.width);
    SmallVector<Value> sizes;
    if (sized)
      sizes = {image.height, image.width};
    Value cropped = tensor::ExtractSliceOp::create(
        rewriter, loc,
        RankedTensorType::get(
            {3, imageType.getDimSize(0), imageType.getDimSize(1)},
            rewriter.getF32Type()),
        padded,
        ArrayRef<OpFoldResult>(
            SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(0))),
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(3), height, width},
        ArrayRef<OpFoldResult>(
            SmallVector<OpFoldResult>(3, rewriter.getIndexAttr(1))));
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr h = getAffineDimExpr(0, ctx), w = getAffineDimExpr(1, ctx),
               c = getAffineDimExpr(2, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {c, h, w}, ctx),
                                   AffineMap::get(3, 0, {h, w, c}, ctx)};
    SmallVector<utils::IteratorType> iterators(3,
                                               utils::IteratorType::parallel);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{imageType}, ValueRange{cropped},
            ValueRange{createEmptyTensor(rewriter, loc, imageType, sizes)},
            maps, iterators,
            [](OpBuilder &nb, Location l, ValueRange args) {
              linalg::YieldOp::create(nb, l, args[0]);
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
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
    ImageExtent image = getImageExtent(a, op.getWidth(), op.getHeight(),
                                       adaptor.getImageSize());
    SplatBins bins = binSplats(rewriter, loc, adaptor.getSplats(),
                               op.getCulling() == SplatCulling::Exact, image);
    Value weights = blendTiles(rewriter, loc, bins, image, {});
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
