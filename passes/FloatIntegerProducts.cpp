//===- FloatIntegerProducts.cpp - constant-weight integer products in f32 -===//
//
// On a CPU without VNNI, an exact product of 8-bit integers runs no faster
// than float32 FMA (docs/design.md), and MLIR's vectorizer makes it 32-bit
// multiplies, slower still. With constant weights the float product also
// gets Kiln's packed kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"
#include "passes/ConstantMatch.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FLOATINTEGERPRODUCTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The integers of the constant `value`, 8-bit ones unsigned with
/// `isUnsigned`; nullopt if it is not a constant.
std::optional<SmallVector<int64_t>> getConstantIntegers(Value value,
                                                        bool isUnsigned) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  return getIntegers(constant.getValue(), isUnsigned);
}

struct FloatConstantProduct : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp toFloatOp,
                                PatternRewriter &rewriter) const override {
    auto product = toFloatOp.getInput().getDefiningOp<MatMulIntegerOp>();
    RankedTensorType type = toFloatOp.getType();
    if (!product || !product->hasOneUse() || !type.getElementType().isF32())
      return failure();
    auto weightType = cast<RankedTensorType>(product.getRhs().getType());
    auto zeroType =
        cast<RankedTensorType>(product.getRhsZeroPoint().getType());
    if (weightType.getRank() != 2 || !weightType.hasStaticShape() ||
        (zeroType.getNumElements() != 1 && zeroType.getRank() != 1))
      return failure();
    bool rhsUnsigned = product.getRhsUnsigned();
    std::optional<SmallVector<int64_t>> weights =
        getConstantIntegers(product.getRhs(), rhsUnsigned);
    std::optional<SmallVector<int64_t>> zeros =
        getConstantIntegers(product.getRhsZeroPoint(), rhsUnsigned);
    if (!weights || !zeros)
      return failure();
    int64_t columns = weightType.getDimSize(1);
    auto floatWeightType = RankedTensorType::get(weightType.getShape(),
                                                 rewriter.getF32Type());
    ElementsAttr floats =
        createElements(floatWeightType, [&](MutableArrayRef<char> out) {
          float *w = reinterpret_cast<float *>(out.data());
          for (size_t i = 0; i < weights->size(); ++i)
            w[i] = static_cast<float>(
                (*weights)[i] -
                (*zeros)[zeros->size() == 1 ? 0 : i % columns]);
        });
    Location loc = product.getLoc();
    auto toFloat = [&](Value value) {
      auto valueType = cast<RankedTensorType>(value.getType());
      auto op = CastOp::create(
          rewriter, loc,
          RankedTensorType::get(valueType.getShape(), rewriter.getF32Type()),
          value);
      op.setInputUnsigned(product.getLhsUnsigned());
      return op.getResult();
    };
    Value lhs = toFloat(product.getLhs());
    Value lhsZero = toFloat(product.getLhsZeroPoint());
    SmallVector<Type> differenceType;
    if (failed(SubOp::inferReturnTypes(
            getContext(), loc, SubOp::Adaptor(ValueRange{lhs, lhsZero}),
            differenceType)))
      return failure();
    Value difference =
        SubOp::create(rewriter, loc, differenceType[0], lhs, lhsZero);
    Value matrix = ConstantOp::create(rewriter, loc, floats);
    rewriter.replaceOpWithNewOp<MatMulOp>(toFloatOp, type, difference, matrix);
    return success();
  }
};

struct FloatIntegerProductsPass
    : kiln::impl::FloatIntegerProductsPassBase<FloatIntegerProductsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FloatConstantProduct>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
