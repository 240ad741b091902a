//===- FuseLayerNorm.cpp - decomposed layer norms into kiln.layer_norm ----===//
//
// Exporters targeting opsets before 17 spell LayerNorm as nine ops; lowered
// one by one they make four passes over the activations and two reductions
// that don't know about each other. kiln.layer_norm's lowering does it in
// two passes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FUSELAYERNORMPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// A decomposed normalization `(x - mean(x)) / sqrt(mean((x - mean(x))^2) +
/// epsilon)` over the trailing axes from `axis`.
struct Normalization {
  Value input;
  int64_t axis;
  float epsilon;
};

/// `mean` = reduce_mean(`input`) with kept dims over trailing axes; returns
/// the first of them.
std::optional<int64_t> getTrailingMean(Value mean, Value input) {
  auto op = mean.getDefiningOp<ReduceMeanOp>();
  if (!op || !op.getKeepDims() || (input && op.getInput() != input))
    return std::nullopt;
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t rank = op.getInput().getType().getRank();
  if (axes.empty())
    return std::nullopt;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != rank - static_cast<int64_t>(axes.size() - i))
      return std::nullopt;
  return axes.front();
}

std::optional<Normalization> matchNormalization(Value value) {
  auto div = value.getDefiningOp<DivOp>();
  if (!div)
    return std::nullopt;
  auto centered = div.getLhs().getDefiningOp<SubOp>();
  auto root = div.getRhs().getDefiningOp<SqrtOp>();
  if (!centered || !root || div.getType() != centered.getLhs().getType())
    return std::nullopt;
  Value input = centered.getLhs();
  std::optional<int64_t> axis = getTrailingMean(centered.getRhs(), input);
  auto shifted = root.getInput().getDefiningOp<AddOp>();
  if (!axis || !shifted)
    return std::nullopt;
  for (auto [variance, epsilon] :
       {std::pair(shifted.getLhs(), shifted.getRhs()),
        std::pair(shifted.getRhs(), shifted.getLhs())}) {
    std::optional<float> eps = getSplatF32(epsilon);
    auto mean = variance.getDefiningOp<ReduceMeanOp>();
    if (!eps || !mean || getTrailingMean(variance, {}) != axis)
      continue;
    Value square = mean.getInput();
    bool squaresCentered = false;
    if (auto pow = square.getDefiningOp<PowOp>())
      squaresCentered = pow.getLhs() == centered.getResult() &&
                        getSplatF32(pow.getRhs()) == 2.0f;
    else if (auto mul = square.getDefiningOp<MulOp>())
      squaresCentered = mul.getLhs() == centered.getResult() &&
                        mul.getRhs() == centered.getResult();
    if (squaresCentered)
      return Normalization{input, *axis, *eps};
  }
  return std::nullopt;
}

/// Whether `param` broadcasts to the normalized dimensions of `type` without
/// changing the result's shape.
bool isNormalizedParam(Value param, RankedTensorType type, int64_t axis) {
  auto paramType = dyn_cast<RankedTensorType>(param.getType());
  if (!paramType || paramType.getElementType() != type.getElementType())
    return false;
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  SmallVector<int64_t> broadcast;
  return OpTrait::util::getBroadcastedShape(normalized, paramType.getShape(),
                                            broadcast) &&
         ArrayRef<int64_t>(broadcast) == normalized;
}

struct FuseLayerNormPattern : RewritePattern {
  explicit FuseLayerNormPattern(MLIRContext *ctx)
      : RewritePattern(DivOp::getOperationName(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    std::optional<Normalization> norm = matchNormalization(op->getResult(0));
    if (!norm)
      return failure();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    // Absorb `* gamma`, then `+ beta`, where each is the only use.
    Value scale, bias;
    Operation *last = op;
    auto absorb = [&](auto opTag, Value &param) {
      using OpTy = decltype(opTag);
      if (!last->hasOneUse())
        return;
      auto next = dyn_cast<OpTy>(*last->getUsers().begin());
      if (!next || next.getType() != type)
        return;
      Value other =
          next.getLhs() == last->getResult(0) ? next.getRhs() : next.getLhs();
      if (!isNormalizedParam(other, type, norm->axis))
        return;
      param = other;
      last = next;
    };
    absorb(MulOp(), scale);
    if (scale)
      absorb(AddOp(), bias);
    Location loc = last->getLoc();
    rewriter.setInsertionPoint(last);
    auto paramType = RankedTensorType::get(
        type.getShape().drop_front(norm->axis), type.getElementType());
    if (!scale)
      scale = ConstantOp::create(rewriter, loc,
                                 DenseElementsAttr::get(paramType, 1.0f));
    if (!bias)
      bias = ConstantOp::create(rewriter, loc,
                                DenseElementsAttr::get(paramType, 0.0f));
    rewriter.replaceOpWithNewOp<LayerNormOp>(
        last, type, norm->input, scale, bias,
        rewriter.getI64IntegerAttr(norm->axis),
        rewriter.getF32FloatAttr(norm->epsilon));
    return success();
  }
};

struct FuseLayerNormPass
    : kiln::impl::FuseLayerNormPassBase<FuseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLayerNormPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
