//===- SplatLowering.cpp - Gaussian splatting: projection and raster ------===//
//
// kiln.splat_project is one parallel generic over the Gaussians: each
// field of a splat is a result of its own, so the generic vectorizes over
// Gaussians, and the rows are stacked into the [11, N] splats.
//
// kiln.splat_rasterize follows the reference rasterizer's plan with loops
// over tensors:
//   1. the visible splats' indices, compacted in index order;
//   2. a stable radix sort of them by depth (four 8-bit passes over the
//      depth's bits: depths of visible splats are positive floats, whose
//      bits order as integers);
//   3. binning: a count of splats per tile, its prefix sums (each tile's
//      range), and a second pass that writes each splat's index into the
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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace kiln;

namespace {

constexpr int64_t kTile = 16;
constexpr int64_t kFields = 11;
/// The splat rows (KilnSplatOps.td).
enum Field : int64_t {
  kMeanX = 0,
  kMeanY,
  kConicA,
  kConicB,
  kConicC,
  kDepth,
  kRadius,
  kOpacity,
  kRed,
  kGreen,
  kBlue
};
constexpr double kNear = 0.2;
constexpr double kAlphaMin = 1.0 / 255.0;
constexpr double kAlphaMax = 0.99;
constexpr double kTransmittanceMin = 1e-4;

/// Scalar and vector arithmetic on f32, i32 and index values.
struct Arith {
  OpBuilder &b;
  Location loc;

  Value f(double value) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  }
  Value fv(double value, int64_t lanes) {
    auto type = VectorType::get({lanes}, b.getF32Type());
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }
  Value i32(int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
  }
  Value idx(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value add(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::AddFOp::create(b, loc, x, y).getResult()
               : arith::AddIOp::create(b, loc, x, y).getResult();
  }
  Value sub(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::SubFOp::create(b, loc, x, y).getResult()
               : arith::SubIOp::create(b, loc, x, y).getResult();
  }
  Value mul(Value x, Value y) {
    return isa<FloatType>(getElementTypeOrSelf(x))
               ? arith::MulFOp::create(b, loc, x, y).getResult()
               : arith::MulIOp::create(b, loc, x, y).getResult();
  }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value max(Value x, Value y) { return arith::MaxNumFOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinNumFOp::create(b, loc, x, y); }
  Value fcmp(arith::CmpFPredicate predicate, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, predicate, x, y);
  }
  Value icmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }
  Value andI(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value toIndex(Value i32Value) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32Value);
  }
  Value toI32(Value indexValue) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), indexValue);
  }
  /// A sum of products x[i] * y[i].
  Value dot(ArrayRef<Value> x, ArrayRef<Value> y) {
    Value sum = mul(x[0], y[0]);
    for (size_t i = 1; i < x.size(); ++i)
      sum = arith::AddFOp::create(b, loc, sum, mul(x[i], y[i]));
    return sum;
  }
  Value extract(Value tensor, ValueRange indices) {
    return tensor::ExtractOp::create(b, loc, tensor, indices);
  }
  Value extractAt(Value tensor, ArrayRef<int64_t> indices) {
    SmallVector<Value> values;
    for (int64_t i : indices)
      values.push_back(idx(i));
    return extract(tensor, values);
  }
  Value insert(Value scalar, Value tensor, ValueRange indices) {
    return tensor::InsertOp::create(b, loc, scalar, tensor, indices);
  }
};

/// The coefficients of the real SH basis of degree 0-3 in 3DGS's order and
/// signs, at the unit direction (x, y, z).
SmallVector<Value> shBasis(Arith &a, Value x, Value y, Value z,
                           int64_t coefficients) {
  SmallVector<Value> basis = {a.f(0.28209479177387814)};
  if (coefficients == 1)
    return basis;
  const double c1 = 0.4886025119029199;
  basis.append({a.mul(a.f(-c1), y), a.mul(a.f(c1), z), a.mul(a.f(-c1), x)});
  if (coefficients == 4)
    return basis;
  Value xx = a.mul(x, x), yy = a.mul(y, y), zz = a.mul(z, z);
  Value xy = a.mul(x, y), yz = a.mul(y, z), xz = a.mul(x, z);
  Value xxyy = a.add(xx, yy);
  basis.append({a.mul(a.f(1.0925484305920792), xy),
                a.mul(a.f(-1.0925484305920792), yz),
                a.mul(a.f(0.31539156525252005), a.sub(a.mul(a.f(2), zz), xxyy)),
                a.mul(a.f(-1.0925484305920792), xz),
                a.mul(a.f(0.5462742152960396), a.sub(xx, yy))});
  if (coefficients == 9)
    return basis;
  Value fourZzMinus = a.sub(a.mul(a.f(4), zz), xxyy);
  basis.append(
      {a.mul(a.mul(a.f(-0.5900435899266435), y), a.sub(a.mul(a.f(3), xx), yy)),
       a.mul(a.mul(a.f(2.890611442640554), xy), z),
       a.mul(a.mul(a.f(-0.4570457994644658), y), fourZzMinus),
       a.mul(a.mul(a.f(0.3731763325901154), z),
             a.sub(a.mul(a.f(2), zz), a.mul(a.f(3), xxyy))),
       a.mul(a.mul(a.f(-0.4570457994644658), x), fourZzMinus),
       a.mul(a.mul(a.f(1.445305721320277), z), a.sub(xx, yy)),
       a.mul(a.mul(a.f(-0.5900435899266435), x),
             a.sub(xx, a.mul(a.f(3), yy)))});
  return basis;
}

/// Column `column` of the static [N, C] (or [N, K, C] at `row`) `tensor`,
/// as a strided [N] slice.
Value column(OpBuilder &b, Location loc, Value tensor,
             ArrayRef<int64_t> position) {
  auto type = cast<RankedTensorType>(tensor.getType());
  int64_t count = type.getDimSize(0);
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(count)};
  for (int64_t p : position) {
    offsets.push_back(b.getIndexAttr(p));
    sizes.push_back(b.getIndexAttr(1));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  auto sliceType = RankedTensorType::get({count}, type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, tensor, offsets,
                                        sizes, strides);
}

struct SplatProjectLowering : OpConversionPattern<SplatProjectOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SplatProjectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Arith a{rewriter, loc};
    int64_t count =
        cast<RankedTensorType>(op.getPositions().getType()).getDimSize(0);
    int64_t coefficients =
        cast<RankedTensorType>(op.getSh().getType()).getDimSize(1);

    // The camera: uniform across Gaussians, read once.
    Value view[3][4];
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        view[i][j] = a.extractAt(adaptor.getView(), {i, j});
    Value fx = a.extractAt(adaptor.getIntrinsics(), {0});
    Value fy = a.extractAt(adaptor.getIntrinsics(), {1});
    Value cx = a.extractAt(adaptor.getIntrinsics(), {2});
    Value cy = a.extractAt(adaptor.getIntrinsics(), {3});
    // The Jacobian is taken at most 1.3 half fields of view off axis.
    Value limitX = a.div(a.f(0.65 * op.getWidth()), fx);
    Value limitY = a.div(a.f(0.65 * op.getHeight()), fy);
    // The camera centre, -R^T t.
    Value centre[3];
    for (int64_t j = 0; j < 3; ++j)
      centre[j] = a.neg(a.dot({view[0][j], view[1][j], view[2][j]},
                              {view[0][3], view[1][3], view[2][3]}));

    SmallVector<Value> inputs;
    for (int64_t c = 0; c < 3; ++c)
      inputs.push_back(column(rewriter, loc, adaptor.getPositions(), {c}));
    for (int64_t c = 0; c < 3; ++c)
      inputs.push_back(column(rewriter, loc, adaptor.getLogScales(), {c}));
    for (int64_t c = 0; c < 4; ++c)
      inputs.push_back(column(rewriter, loc, adaptor.getRotations(), {c}));
    inputs.push_back(adaptor.getOpacityLogits());
    for (int64_t k = 0; k < coefficients; ++k)
      for (int64_t c = 0; c < 3; ++c)
        inputs.push_back(column(rewriter, loc, adaptor.getSh(), {k, c}));

    auto fieldType = RankedTensorType::get({count}, rewriter.getF32Type());
    SmallVector<Value> inits;
    for (int64_t f = 0; f < kFields; ++f)
      inits.push_back(createEmptyTensor(rewriter, loc, fieldType));
    AffineMap identity = rewriter.getMultiDimIdentityMap(1);
    SmallVector<AffineMap> maps(inputs.size() + inits.size(), identity);

    auto body = [&](OpBuilder &nb, Location l, ValueRange args) {
      Arith g{nb, l};
      Value p[3] = {args[0], args[1], args[2]};
      Value cam[3];
      for (int64_t i = 0; i < 3; ++i)
        cam[i] = g.add(
            g.dot({view[i][0], view[i][1], view[i][2]}, {p[0], p[1], p[2]}),
            view[i][3]);
      Value visible = g.fcmp(arith::CmpFPredicate::OGT, cam[2], g.f(kNear));
      Value depth = g.select(visible, cam[2], g.f(1));
      Value inverseDepth = g.div(g.f(1), depth);
      Value meanX = g.add(g.mul(g.mul(fx, cam[0]), inverseDepth), cx);
      Value meanY = g.add(g.mul(g.mul(fy, cam[1]), inverseDepth), cy);

      // Sigma = M M^T with M = R(q) diag(exp(log scales)).
      Value q[4] = {args[6], args[7], args[8], args[9]};
      Value qInverse = g.div(g.f(1), g.sqrt(g.dot(q, q)));
      Value w = g.mul(q[0], qInverse), x = g.mul(q[1], qInverse),
            y = g.mul(q[2], qInverse), z = g.mul(q[3], qInverse);
      auto two = [&](Value u, Value v) { return g.mul(g.f(2), g.mul(u, v)); };
      Value rot[3][3] = {
          {g.sub(g.f(1), g.add(two(y, y), two(z, z))),
           g.sub(two(x, y), two(w, z)), g.add(two(x, z), two(w, y))},
          {g.add(two(x, y), two(w, z)),
           g.sub(g.f(1), g.add(two(x, x), two(z, z))),
           g.sub(two(y, z), two(w, x))},
          {g.sub(two(x, z), two(w, y)), g.add(two(y, z), two(w, x)),
           g.sub(g.f(1), g.add(two(x, x), two(y, y)))}};
      Value scale[3] = {g.exp(args[3]), g.exp(args[4]), g.exp(args[5])};
      Value m[3][3];
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j)
          m[i][j] = g.mul(rot[i][j], scale[j]);
      Value sigma[3][3];
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = i; j < 3; ++j)
          sigma[i][j] = sigma[j][i] =
              g.dot({m[i][0], m[i][1], m[i][2]}, {m[j][0], m[j][1], m[j][2]});

      // T = J W, J the projection's Jacobian at the clamped mean.
      auto clampTimesDepth = [&](Value t, Value limit) {
        Value ratio = g.mul(t, inverseDepth);
        return g.mul(g.min(g.max(ratio, g.neg(limit)), limit), depth);
      };
      Value jx = clampTimesDepth(cam[0], limitX);
      Value jy = clampTimesDepth(cam[1], limitY);
      Value inverseSquare = g.mul(inverseDepth, inverseDepth);
      Value j00 = g.mul(fx, inverseDepth), j11 = g.mul(fy, inverseDepth);
      Value j02 = g.neg(g.mul(g.mul(fx, jx), inverseSquare));
      Value j12 = g.neg(g.mul(g.mul(fy, jy), inverseSquare));
      Value t[2][3];
      for (int64_t j = 0; j < 3; ++j) {
        t[0][j] = g.add(g.mul(j00, view[0][j]), g.mul(j02, view[2][j]));
        t[1][j] = g.add(g.mul(j11, view[1][j]), g.mul(j12, view[2][j]));
      }
      auto quadratic = [&](int64_t r, int64_t s) {
        Value sum;
        for (int64_t i = 0; i < 3; ++i) {
          Value row = g.dot({sigma[i][0], sigma[i][1], sigma[i][2]},
                            {t[s][0], t[s][1], t[s][2]});
          Value term = g.mul(t[r][i], row);
          sum = sum ? g.add(sum, term) : term;
        }
        return sum;
      };
      Value covA = g.add(quadratic(0, 0), g.f(0.3));
      Value covB = quadratic(0, 1);
      Value covC = g.add(quadratic(1, 1), g.f(0.3));
      Value det = g.sub(g.mul(covA, covC), g.mul(covB, covB));
      Value invertible = g.fcmp(arith::CmpFPredicate::ONE, det, g.f(0));
      visible = g.andI(visible, invertible);
      Value inverseDet = g.div(g.f(1), g.select(invertible, det, g.f(1)));
      Value conicA = g.mul(covC, inverseDet);
      Value conicB = g.neg(g.mul(covB, inverseDet));
      Value conicC = g.mul(covA, inverseDet);
      Value mid = g.mul(g.f(0.5), g.add(covA, covC));
      Value root = g.sqrt(g.max(g.f(0.1), g.sub(g.mul(mid, mid), det)));
      Value radius =
          math::CeilOp::create(nb, l, g.mul(g.f(3), g.sqrt(g.add(mid, root))));
      radius = g.select(visible, radius, g.f(0));

      Value direction[3];
      for (int64_t i = 0; i < 3; ++i)
        direction[i] = g.sub(p[i], centre[i]);
      Value inverseLength = g.div(
          g.f(1), g.sqrt(g.dot({direction[0], direction[1], direction[2]},
                               {direction[0], direction[1], direction[2]})));
      for (Value &d : direction)
        d = g.mul(d, inverseLength);
      SmallVector<Value> basis =
          shBasis(g, direction[0], direction[1], direction[2], coefficients);
      Value colour[3];
      for (int64_t c = 0; c < 3; ++c) {
        SmallVector<Value> channel;
        for (int64_t k = 0; k < coefficients; ++k)
          channel.push_back(args[11 + 3 * k + c]);
        colour[c] = g.max(g.add(g.dot(basis, channel), g.f(0.5)), g.f(0));
      }
      Value opacity = g.div(g.f(1), g.add(g.f(1), g.exp(g.neg(args[10]))));

      linalg::YieldOp::create(nb, l,
                              ValueRange{meanX, meanY, conicA, conicB, conicC,
                                         cam[2], radius, opacity, colour[0],
                                         colour[1], colour[2]});
    };
    SmallVector<utils::IteratorType> iterators = {
        utils::IteratorType::parallel};
    ValueRange fields =
        linalg::GenericOp::create(rewriter, loc, TypeRange(inits), inputs,
                                  inits, maps, iterators, body)
            .getResults();

    auto splatsType =
        RankedTensorType::get({kFields, count}, rewriter.getF32Type());
    Value splats = createEmptyTensor(rewriter, loc, splatsType);
    for (int64_t f = 0; f < kFields; ++f)
      splats = tensor::InsertSliceOp::create(
          rewriter, loc, fields[f], splats,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(f),
                                 rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                                 rewriter.getIndexAttr(count)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                                 rewriter.getIndexAttr(1)});
    rewriter.replaceOp(op, splats);
    return success();
  }
};

/// Loops over tensors for the rasterizer's serial steps.
struct Loops {
  OpBuilder &b;
  Location loc;

  using Body = function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                               ValueRange)>;
  /// for i in [lower, upper) carrying `inits`; `body` returns the next
  /// values.
  ValueRange forLoop(Value lower, Value upper, ValueRange inits, Body body) {
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    return scf::ForOp::create(
               b, loc, lower, upper, one, inits,
               [&](OpBuilder &nb, Location l, Value i, ValueRange args) {
                 scf::YieldOp::create(nb, l, body(nb, l, i, args));
               })
        .getResults();
  }
};

/// The tile range [first, end) a splat's square of `radius` around
/// `mean` covers along one axis of `tiles` tiles (the reference's integer
/// truncation; clamped in float so that far-off means stay in range).
std::pair<Value, Value> tileRange(Arith &a, Value mean, Value radius,
                                  int64_t tiles) {
  auto toTile = [&](Value coordinate) {
    Value clamped = a.min(a.max(a.div(coordinate, a.f(kTile)), a.f(0)),
                          a.f(static_cast<double>(tiles)));
    return a.toIndex(
        arith::FPToSIOp::create(a.b, a.loc, a.b.getI32Type(), clamped));
  };
  return {toTile(a.sub(mean, radius)),
          toTile(a.add(a.add(mean, radius), a.f(kTile - 1)))};
}

/// The largest a x^2 + 2 b x y + c y^2 at which a splat of `opacity` still
/// reaches alpha 1/255: opacity exp(-q / 2) >= 1/255 where q <= 2 ln(255
/// opacity). The margin covers float rounding of the blend's power and exp
/// many times over; a negative reach reaches no pixel.
Value reachOf(Arith &g, Value opacity) {
  Value bound =
      g.mul(g.f(2), math::LogOp::create(g.b, g.loc, g.mul(g.f(255), opacity)));
  return g.add(g.mul(bound, g.f(1.001)), g.f(0.01));
}

/// The least of a dx^2 + 2 b dx dy + c dy^2 over dx in [dxLow, dxHigh] at
/// fixed dy: at -b dy / a, clamped.
Value leastAlongRow(Arith &h, Value a, Value b, Value c, Value dy, Value dxLow,
                    Value dxHigh) {
  Value dx = h.min(h.max(h.neg(h.div(h.mul(b, dy), a)), dxLow), dxHigh);
  return h.add(
      h.add(h.mul(a, h.mul(dx, dx)), h.mul(h.mul(h.f(2), b), h.mul(dx, dy))),
      h.mul(c, h.mul(dy, dy)));
}

/// The tiles one splat is binned to: a rectangle of tiles, and under exact
/// culling a test of each of its tiles.
struct SplatCover {
  Value columnsBegin, columnsEnd, rowsBegin, rowsEnd;
  bool exact = false;
  /// Exact culling: the mean, the conic and the largest a x^2 + 2 b x y +
  /// c y^2 at which the splat's alpha can still reach 1/255.
  Value meanX, meanY, a, b, c, reach;

  /// Whether tile (tx, ty) has a pixel centre within the reach: the least
  /// quadratic form over the tile's square of pixel centres (0 where it
  /// holds the mean, else the least over its four edges, each a clamped
  /// one-dimensional minimum).
  Value reaches(Arith &h, Value tx, Value ty) const {
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
      return leastAlongRow(h, c, b, a, dx, dyLow, dyHigh);
    };
    auto alongY = [&](Value dy) {
      return leastAlongRow(h, a, b, c, dy, dxLow, dxHigh);
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
};

/// The cover of splat `n`: the tiles of the square of its radius, and with
/// `reaches` (exact culling: each splat's reachOf) those of the box of its
/// reach ellipse among them.
SplatCover coverOf(Arith &g, Value splats, Value reaches, Value n,
                   int64_t tilesX, int64_t tilesY) {
  auto field = [&](int64_t f) {
    return g.extract(splats, ValueRange{g.idx(f), n});
  };
  SplatCover cover;
  Value radius = field(kRadius);
  cover.meanX = field(kMeanX);
  cover.meanY = field(kMeanY);
  std::tie(cover.columnsBegin, cover.columnsEnd) =
      tileRange(g, cover.meanX, radius, tilesX);
  std::tie(cover.rowsBegin, cover.rowsEnd) =
      tileRange(g, cover.meanY, radius, tilesY);
  if (!reaches)
    return cover;
  cover.exact = true;
  cover.a = field(kConicA);
  cover.b = field(kConicB);
  cover.c = field(kConicC);
  cover.reach = g.extract(reaches, ValueRange{n});
  Value reach = g.max(cover.reach, g.f(0));
  // The reach ellipse's box: half sides sqrt(reach * (conic^-1)_ii).
  Value det = g.sub(g.mul(cover.a, cover.c), g.mul(cover.b, cover.b));
  Value halfX = g.sqrt(g.div(g.mul(reach, cover.c), det));
  Value halfY = g.sqrt(g.div(g.mul(reach, cover.a), det));
  auto snug = [&](Value mean, Value half, int64_t tiles, Value &begin,
                  Value &end) {
    auto toTile = [&](Value coordinate) {
      Value clamped = g.min(g.max(g.div(coordinate, g.f(kTile)), g.f(0)),
                            g.f(static_cast<double>(tiles)));
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
  snug(cover.meanX, halfX, tilesX, cover.columnsBegin, cover.columnsEnd);
  snug(cover.meanY, halfY, tilesY, cover.rowsBegin, cover.rowsEnd);
  return cover;
}

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
  patterns.add<SplatProjectLowering, SplatRasterizeLowering>(
      patterns.getContext());
}
