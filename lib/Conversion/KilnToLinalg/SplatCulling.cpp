//===- SplatCulling.cpp - which tiles and rows a splat reaches ------------===//
//
// The reference binning gives a splat every tile of its 3-sigma square;
// exact culling keeps those where its alpha can reach 1/255 at a pixel
// centre: the tiles of its reach ellipse's box, each tested exactly, and in
// the blend the rows the ellipse spans (docs/splatting.md).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

using namespace mlir;

namespace kiln::splat {

ImageExtent getImageExtent(Arith &a, int64_t maxWidth, int64_t maxHeight,
                           ValueRange size) {
  if (size.empty())
    return {maxWidth, maxHeight, a.idx(maxWidth), a.idx(maxHeight)};
  return {maxWidth, maxHeight, a.clampTo(size[1], maxWidth),
          a.clampTo(size[0], maxHeight)};
}

std::pair<Value, Value> tileRange(Arith &a, Value mean, Value radius,
                                  Value tiles) {
  auto toTile = [&](Value coordinate) {
    Value clamped = a.min(a.max(a.div(coordinate, a.f(kTile)), a.f(0)), tiles);
    return a.toIndex(
        arith::FPToSIOp::create(a.b, a.loc, a.b.getI32Type(), clamped));
  };
  return {toTile(a.sub(mean, radius)),
          toTile(a.add(a.add(mean, radius), a.f(kTile - 1)))};
}

Value reachOf(Arith &g, Value opacity) {
  Value bound =
      g.mul(g.f(2), math::LogOp::create(g.b, g.loc, g.mul(g.f(255), opacity)));
  return g.add(g.mul(bound, g.f(1.001)), g.f(0.01));
}

Value leastAlongRow(Arith &h, Value a, Value b, Value c, Value bOverA, Value dy,
                    Value dxLow, Value dxHigh) {
  Value dx = h.min(h.max(h.neg(h.mul(bOverA, dy)), dxLow), dxHigh);
  return h.add(
      h.add(h.mul(a, h.mul(dx, dx)), h.mul(h.mul(h.f(2), b), h.mul(dx, dy))),
      h.mul(c, h.mul(dy, dy)));
}

void SplatCover::setConic(Arith &h, Value conicA, Value conicB, Value conicC) {
  a = conicA;
  b = conicB;
  c = conicC;
  bOverA = h.div(b, a);
  bOverC = h.div(b, c);
}

Value SplatCover::reaches(Arith &h, Value tx, Value ty) const {
  auto pixel = [&](Value tileIndex) {
    return arith::UIToFPOp::create(h.b, h.loc, h.b.getF32Type(),
                                   h.toI32(h.mul(tileIndex, h.idx(kTile))));
  };
  Value x0 = pixel(tx), y0 = pixel(ty);
  Value dxLow = h.sub(meanX, h.add(x0, h.f(kTile - 1)));
  Value dxHigh = h.sub(meanX, x0);
  Value dyLow = h.sub(meanY, h.add(y0, h.f(kTile - 1)));
  Value dyHigh = h.sub(meanY, y0);
  // The form is symmetric in (x, a) and (y, c).
  auto alongX = [&](Value dx) {
    return leastAlongRow(h, c, b, a, bOverC, dx, dyLow, dyHigh);
  };
  auto alongY = [&](Value dy) {
    return leastAlongRow(h, a, b, c, bOverA, dy, dxLow, dxHigh);
  };
  Value least = h.min(h.min(alongX(dxLow), alongX(dxHigh)),
                      h.min(alongY(dyLow), alongY(dyHigh)));
  auto le = [&](Value x, Value y) {
    return h.fcmp(arith::CmpFPredicate::OLE, x, y);
  };
  Value holdsMean = h.andI(h.andI(le(dxLow, h.f(0)), le(h.f(0), dxHigh)),
                           h.andI(le(dyLow, h.f(0)), le(h.f(0), dyHigh)));
  return arith::OrIOp::create(h.b, h.loc, holdsMean, le(least, reach));
}

SplatCover coverOf(Arith &g, function_ref<Value(int64_t)> field, Value reach,
                   Value tilesX, Value tilesY) {
  SplatCover cover;
  Value radius = field(kRadius);
  cover.meanX = field(kMeanX);
  cover.meanY = field(kMeanY);
  std::tie(cover.columnsBegin, cover.columnsEnd) =
      tileRange(g, cover.meanX, radius, tilesX);
  std::tie(cover.rowsBegin, cover.rowsEnd) =
      tileRange(g, cover.meanY, radius, tilesY);
  if (!reach)
    return cover;
  cover.exact = true;
  cover.setConic(g, field(kConicA), field(kConicB), field(kConicC));
  cover.reach = reach;
  reach = g.max(reach, g.f(0));
  // The reach ellipse's box: half sides sqrt(reach * (conic^-1)_ii).
  Value det = g.sub(g.mul(cover.a, cover.c), g.mul(cover.b, cover.b));
  Value halfX = g.sqrt(g.div(g.mul(reach, cover.c), det));
  Value halfY = g.sqrt(g.div(g.mul(reach, cover.a), det));
  auto snug = [&](Value mean, Value half, Value tiles, Value &begin,
                  Value &end) {
    auto toTile = [&](Value coordinate) {
      Value clamped =
          g.min(g.max(g.div(coordinate, g.f(kTile)), g.f(0)), tiles);
      return g.toIndex(
          arith::FPToSIOp::create(g.b, g.loc, g.b.getI32Type(), clamped));
    };
    begin =
        arith::MaxUIOp::create(g.b, g.loc, begin, toTile(g.sub(mean, half)));
    end = arith::MinUIOp::create(g.b, g.loc, end,
                                 toTile(g.add(g.add(mean, half), g.f(kTile))));
    // A splat that reaches no pixel gets no tiles.
    Value none = g.fcmp(arith::CmpFPredicate::OLT, cover.reach, g.f(0));
    end = g.select(none, begin, end);
  };
  cover.halfY = halfY;
  snug(cover.meanX, halfX, tilesX, cover.columnsBegin, cover.columnsEnd);
  snug(cover.meanY, halfY, tilesY, cover.rowsBegin, cover.rowsEnd);
  return cover;
}

} // namespace kiln::splat
