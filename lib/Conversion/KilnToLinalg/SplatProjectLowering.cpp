//===- SplatProjectLowering.cpp - Gaussians to screen-space splats --------===//
//
// kiln.splat_project is one parallel generic over the Gaussians: each
// field of a splat is a result of its own, so the generic vectorizes over
// Gaussians, and the rows are stacked into the [11, N] splats.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/KilnToLinalg/SplatLowering.h"

#include "dialects/Kiln/IR/Weights.h"

#include <cstdint>

using namespace mlir;
using namespace kiln;
using namespace kiln::splat;

namespace {

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

/// The elements of a constant attribute operand (`original` before the
/// conversion, `converted` after), where their bytes can be read.
std::optional<ArrayRef<char>> constantBytes(Value original, Value converted) {
  ElementsAttr elements;
  if (auto constant = original.getDefiningOp<ConstantOp>())
    elements = constant.getValue();
  else if (auto constant = converted.getDefiningOp<arith::ConstantOp>())
    elements = dyn_cast<ElementsAttr>(constant.getValue());
  if (!elements)
    return std::nullopt;
  return getRawBytes(elements);
}

/// The columns of an attribute operand ([N] or [N, ...]: one column per
/// trailing element, row-major), each an [N] tensor. A constant's columns
/// are the rows of its transpose, made at compile time: contiguous, so the
/// projection loads each as whole vectors (strided columns of a 2M-Gaussian
/// scene were read one lane at a time, 45 ns a Gaussian). Run-time inputs
/// keep strided columns.
SmallVector<Value> attributeColumns(OpBuilder &b, Location loc, Value original,
                                    Value converted) {
  auto type = cast<RankedTensorType>(converted.getType());
  if (type.getRank() == 1)
    return {converted};
  int64_t count = type.getDimSize(0);
  int64_t columns = type.getNumElements() / std::max<int64_t>(count, 1);
  std::optional<ArrayRef<char>> bytes = constantBytes(original, converted);
  SmallVector<Value> result;
  if (!bytes) {
    SmallVector<int64_t> position(type.getRank() - 1, 0);
    for (int64_t c = 0; c < columns; ++c) {
      int64_t rest = c;
      for (int64_t d = type.getRank() - 1; d >= 1; --d) {
        position[d - 1] = rest % type.getDimSize(d);
        rest /= type.getDimSize(d);
      }
      result.push_back(column(b, loc, converted, position));
    }
    return result;
  }
  auto transposedType =
      RankedTensorType::get({columns, count}, type.getElementType());
  // As integers of the element's width (f32, f16, i8), in blocks of rows
  // that stay in L1 while each column of the block is written.
  auto transpose = [&](auto *out, const auto *in) {
    constexpr int64_t block = 64;
    for (int64_t first = 0; first < count; first += block) {
      int64_t last = std::min(count, first + block);
      for (int64_t c = 0; c < columns; ++c)
        for (int64_t n = first; n < last; ++n)
          out[c * count + n] = in[n * columns + c];
    }
  };
  ElementsAttr transposed =
      createElements(transposedType, [&](MutableArrayRef<char> out) {
        switch (getElementBytes(type.getElementType())) {
        case 4:
          return transpose(reinterpret_cast<uint32_t *>(out.data()),
                           reinterpret_cast<const uint32_t *>(bytes->data()));
        case 2:
          return transpose(reinterpret_cast<uint16_t *>(out.data()),
                           reinterpret_cast<const uint16_t *>(bytes->data()));
        default:
          assert(getElementBytes(type.getElementType()) == 1 &&
                 "splat attributes are f32, f16 or i8");
          return transpose(reinterpret_cast<uint8_t *>(out.data()),
                           reinterpret_cast<const uint8_t *>(bytes->data()));
        }
      });
  Value rows = arith::ConstantOp::create(b, loc, cast<TypedAttr>(transposed));
  Arith a{b, loc};
  for (int64_t c = 0; c < columns; ++c)
    result.push_back(a.row(rows, c));
  return result;
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
    ImageExtent image = getImageExtent(a, op.getWidth(), op.getHeight(),
                                       adaptor.getImageSize());
    auto halfFov = [&](Value size, int64_t fixed) {
      return op.getImageSize().empty() ? a.f(0.65 * static_cast<double>(fixed))
                                       : a.mul(a.f(0.65), a.indexToFloat(size));
    };
    Value limitX = a.div(halfFov(image.width, op.getWidth()), fx);
    Value limitY = a.div(halfFov(image.height, op.getHeight()), fy);
    // The camera centre, -R^T t.
    Value centre[3];
    for (int64_t j = 0; j < 3; ++j)
      centre[j] = a.neg(a.dot({view[0][j], view[1][j], view[2][j]},
                              {view[0][3], view[1][3], view[2][3]}));

    // In the generic's order: positions, log scales, rotations, opacity
    // logits, then SH coefficient by coefficient, channels within each.
    Value originals[] = {op.getPositions(), op.getLogScales(),
                         op.getRotations(), op.getOpacityLogits(), op.getSh()};
    Value converted[] = {adaptor.getPositions(), adaptor.getLogScales(),
                         adaptor.getRotations(), adaptor.getOpacityLogits(),
                         adaptor.getSh()};
    SmallVector<Value> inputs;
    for (auto [original, value] : llvm::zip_equal(originals, converted))
      llvm::append_range(inputs,
                         attributeColumns(rewriter, loc, original, value));

    auto fieldType = RankedTensorType::get({count}, rewriter.getF32Type());
    SmallVector<Value> inits;
    for (int64_t f = 0; f < kFields; ++f)
      inits.push_back(createEmptyTensor(rewriter, loc, fieldType));
    AffineMap identity = rewriter.getMultiDimIdentityMap(1);
    SmallVector<AffineMap> maps(inputs.size() + inits.size(), identity);

    // Each int8 input column's map back to floats, in input order.
    SmallVector<std::optional<std::pair<float, float>>> int8Maps;
    int64_t int8Column = 0;
    for (Value input : inputs) {
      int8Maps.emplace_back();
      if (getElementTypeOrSelf(input).isInteger(8)) {
        int8Maps.back() = {(*op.getInt8Scales())[int8Column],
                           (*op.getInt8Offsets())[int8Column]};
        ++int8Column;
      }
    }

    auto body = [&](OpBuilder &nb, Location l, ValueRange stored) {
      Arith g{nb, l};
      // Attributes stored as float16 or int8 widen as they are read.
      SmallVector<Value> args;
      for (auto [value, int8Map] : llvm::zip(stored, int8Maps)) {
        if (value.getType().isF16()) {
          args.push_back(arith::ExtFOp::create(nb, l, nb.getF32Type(), value));
        } else if (int8Map) {
          Value q = arith::SIToFPOp::create(nb, l, nb.getF32Type(), value);
          args.push_back(math::FmaOp::create(nb, l, q, g.f(int8Map->first),
                                             g.f(int8Map->second)));
        } else {
          args.push_back(value);
        }
      }
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
      splats = a.withRow(fields[f], splats, f);
    rewriter.replaceOp(op, splats);
    return success();
  }
};

} // namespace

void kiln::splat::addSplatProjectLowering(RewritePatternSet &patterns) {
  patterns.add<SplatProjectLowering>(patterns.getContext());
}
