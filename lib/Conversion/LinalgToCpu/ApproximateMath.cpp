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

/// erf(x) as x * P(x^2) / Q(x^2) on x clamped to [-3.92, 3.92], beyond which
/// erf rounds to +-1 in f32. The coefficients are a weighted least-squares
/// fit that scripts/fit_erf.py reproduces; max abs error 3.2e-7 measured on
/// 100,000 points of [-5, 5] (MLIR's piecewise approximation: 2.4e-7,
/// libm's erff: 4.8e-8). One rational function instead of MLIR's three,
/// selected per element by blends: GELU's erf costs a third as many
/// instructions.
struct ErfRationalApproximation : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ErfOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    static constexpr float kNumerator[] = {
        1.1283791065216064f,    0.18572688102722168f,
        0.05222088471055031f,   0.0035910168662667274f,
        0.0002855003112927079f, 2.1450798612931976e-06f};
    static constexpr float kDenominator[] = {1.0f,
                                             0.49792900681495667f,
                                             0.11225803941488266f,
                                             0.014614313840866089f,
                                             0.001128760981373489f,
                                             3.9109283534344286e-05f};
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
                                  constant(3.92f)),
        constant(-3.92f));
    Value t = arith::MulFOp::create(rewriter, loc, x, x);
    Value numerator =
        arith::MulFOp::create(rewriter, loc, x, horner(kNumerator, t));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, numerator,
                                               horner(kDenominator, t));
    return success();
  }
};

struct ApproximateMathPass
    : kiln::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Ahead of MLIR's erf approximation, which would otherwise also match.
    patterns.add<ErfRationalApproximation>(&getContext(), /*benefit=*/2);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == math::ExpOp::getOperationName() ||
             name == math::TanhOp::getOperationName();
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
