//===- ApproximateMath.cpp - vectorizable exp, erf and tanh ---------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// An odd function f on f32, as x * P(x^2) / Q(x^2) on x clamped to
/// [-limit, limit], beyond which f rounds to +-1 in f32. One rational
/// function instead of MLIR's piecewise or guarded ones: no per-element
/// selection. The division may use a reciprocal estimate refined by a
/// Newton step (1-2 ulp): its denominator, Q(x^2) >= 1 on a clamped
/// input, is finite, and a full-precision division costs as much as the
/// rest of the function on x86.
template <typename MathOp>
struct OddRationalApproximation : OpRewritePattern<MathOp> {
  OddRationalApproximation(MLIRContext *ctx, float limit,
                           ArrayRef<float> numerator,
                           ArrayRef<float> denominator)
      : OpRewritePattern<MathOp>(ctx, /*benefit=*/2), limit(limit),
        numerator(numerator), denominator(denominator) {}

  LogicalResult matchAndRewrite(MathOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    auto constant = [&](float value) -> Value {
      Attribute attr = rewriter.getF32FloatAttr(value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = DenseElementsAttr::get(shaped, value);
      return arith::ConstantOp::create(rewriter, loc, cast<TypedAttr>(attr));
    };
    auto horner = [&](ArrayRef<float> coefficients, Value t) {
      Value result = constant(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back()))
        result = math::FmaOp::create(rewriter, loc, result, t, constant(c));
      return result;
    };
    Value x = arith::MaximumFOp::create(
        rewriter, loc,
        arith::MinimumFOp::create(rewriter, loc, op.getOperand(),
                                  constant(limit)),
        constant(-limit));
    Value t = arith::MulFOp::create(rewriter, loc, x, x);
    Value product =
        arith::MulFOp::create(rewriter, loc, x, horner(numerator, t));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(
        op, product, horner(denominator, t),
        arith::FastMathFlags::arcp | arith::FastMathFlags::ninf |
            arith::FastMathFlags::contract);
    return success();
  }

  float limit;
  ArrayRef<float> numerator, denominator;
};

/// erf: P and Q of degree 5 in x^2 on [0, 3.92]; scripts/fit_rational.py erf
/// reproduces them. Max abs error 3.2e-7 measured on 100,000 points of
/// [-5, 5] (MLIR's piecewise approximation: 2.4e-7, libm's erff: 4.8e-8);
/// GELU's erf costs a third of MLIR's instructions.
constexpr float kErfNumerator[] = {
    1.1283791065216064f,    0.18572688102722168f,   0.05222088471055031f,
    0.0035910168662667274f, 0.0002855003112927079f, 2.1450798612931976e-06f};
constexpr float kErfDenominator[] = {1.0f,
                                     0.49792900681495667f,
                                     0.11225803941488266f,
                                     0.014614313840866089f,
                                     0.001128760981373489f,
                                     3.9109283534344286e-05f};

/// tanh: P and Q of degree 4 in x^2 on [0, 8.5]; scripts/fit_rational.py
/// tanh reproduces them. Compiled (with the reciprocal estimate), max abs
/// error 3.2e-7 on 200,000 points of [-12, 12], relative error at most
/// 2.2e-7 on (-1, 1): MLIR's version also selects x itself for tiny
/// inputs, which this one does not need.
constexpr float kTanhNumerator[] = {
    1.0f, 0.1343052238225937f, 0.0035546955186873674f, 2.1598647435894236e-05f,
    1.476964683888582e-08f};
constexpr float kTanhDenominator[] = {
    1.0f, 0.46763846278190613f, 0.02610098011791706f, 0.000338296580594033f,
    8.34566208141041e-07f};

struct ApproximateMathPass
    : kiln::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Kiln's rational erf and tanh; MLIR's polynomial exp.
    patterns.add<OddRationalApproximation<math::ErfOp>>(
        &getContext(), 3.92f, kErfNumerator, kErfDenominator);
    patterns.add<OddRationalApproximation<math::TanhOp>>(
        &getContext(), 8.5f, kTanhNumerator, kTanhDenominator);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
