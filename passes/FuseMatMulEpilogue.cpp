//===- FuseMatMulEpilogue.cpp - bias, GELU, residual into packed products -===//
//
// A linear layer exports as MatMul, then Add of a constant row (the bias),
// often GELU spelled as five (erf form) or eleven (tanh form) elementwise
// ops, and in every transformer block an Add of the skip connection. Each
// would be a pass over the product's result; fused, the bias is where the
// accumulators start, and GELU and the residual apply to each block of the
// result while it is in cache, which is written once.
//
// The epilogue's order is bias, activation, residual: each pattern refuses
// a product that already has a later stage.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>
#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_FUSEMATMULEPILOGUEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

//===----------------------------------------------------------------------===//
// Bias
//===----------------------------------------------------------------------===//

/// The N values of a constant `[..., 1, N]` row, as `panels` x `width`
/// panels padded with zeros; null if `value` isn't such a constant.
DenseElementsAttr packBias(Value value, int64_t columns, int64_t panels,
                           int64_t width) {
  DenseElementsAttr dense = getConstantElements(value);
  if (!dense || !dense.getElementType().isF32())
    return nullptr;
  auto type = cast<RankedTensorType>(dense.getType());
  if (type.getRank() == 0 || type.getShape().back() != columns ||
      type.getNumElements() != columns)
    return nullptr;
  std::vector<float> packed(panels * width, 0.0f);
  auto values = dense.getValues<float>();
  std::copy(values.begin(), values.end(), packed.begin());
  return DenseElementsAttr::get(
      RankedTensorType::get({panels, width}, type.getElementType()),
      ArrayRef<float>(packed));
}

struct FuseBiasAdd : OpRewritePattern<AddOp> {
  // Before a residual: a [1, N] row added to a [1, N] product is a bias.
  FuseBiasAdd(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [product, other] : {std::pair(add.getLhs(), add.getRhs()),
                                  std::pair(add.getRhs(), add.getLhs())}) {
      auto matmul = product.getDefiningOp<PackedMatMulOp>();
      // The sum must have the product's shape: a bias that broadcasts the
      // product to more rows isn't a per-row bias.
      // An activation or residual comes after the bias; a bias can't join
      // them later.
      if (!matmul || matmul.getBias() || matmul.getActivation() ||
          matmul.getResidual() || !matmul->hasOneUse() ||
          add.getType() != matmul.getType())
        continue;
      auto panelsType = cast<RankedTensorType>(matmul.getRhs().getType());
      DenseElementsAttr bias =
          packBias(other, matmul.getType().getShape().back(),
                   panelsType.getDimSize(0), panelsType.getDimSize(2));
      if (!bias)
        continue;
      rewriter.setInsertionPoint(matmul);
      Value packed = ConstantOp::create(rewriter, other.getLoc(), bias);
      rewriter.replaceOpWithNewOp<PackedMatMulOp>(
          add, add.getType(), matmul.getLhs(), matmul.getRhs(), packed, Value(),
          matmul.getActivationAttr());
      rewriter.eraseOp(matmul);
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Activation
//===----------------------------------------------------------------------===//

/// Whether `value` is a splat f32 constant within 1e-6 (relative) of
/// `expected`.
bool isConstant(Value value, double expected) {
  std::optional<float> actual = getSplatF32(value);
  return actual && std::abs(*actual - expected) <= 1e-6 * std::abs(expected);
}

/// Matches one GELU expression of `x`, recording the ops it consists of.
class GeluMatcher {
public:
  explicit GeluMatcher(Value x) : x(x) {}

  /// The kind of GELU `root` computes of x, if any.
  std::optional<Activation> match(Operation *root) {
    SmallVector<Value> factors;
    collectFactors(root, factors);
    if (factors.size() != 3)
      return std::nullopt;
    Value half, input, onePlus;
    for (Value factor : factors) {
      if (!half && isConstant(factor, 0.5))
        half = factor;
      else if (!input && factor == x)
        input = factor;
      else
        onePlus = factor;
    }
    auto add = onePlus ? onePlus.getDefiningOp<AddOp>() : AddOp();
    if (!half || !input || !add)
      return std::nullopt;
    ops.insert(add);
    Value inner = otherOperand(add, [](Value v) { return isConstant(v, 1); });
    if (auto erf = inner ? inner.getDefiningOp<ErfOp>() : ErfOp()) {
      ops.insert(erf);
      if (isScaledInput(erf.getInput()))
        return Activation::GeluErf;
    }
    if (auto tanh = inner ? inner.getDefiningOp<TanhOp>() : TanhOp()) {
      ops.insert(tanh);
      if (isTanhArgument(tanh.getInput()))
        return Activation::GeluTanh;
    }
    return std::nullopt;
  }

  /// Whether x is used only inside the matched expression.
  bool coversUsesOfInput() const {
    return llvm::all_of(x.getUsers(),
                        [&](Operation *user) { return ops.contains(user); });
  }

private:
  /// The leaves of the tree of single-use multiplications under `op`.
  void collectFactors(Operation *op, SmallVectorImpl<Value> &factors) {
    ops.insert(op);
    for (Value operand : op->getOperands()) {
      auto mul = operand.getDefiningOp<MulOp>();
      if (mul && mul->hasOneUse() && operand != x)
        collectFactors(mul, factors);
      else
        factors.push_back(operand);
    }
  }

  /// The operand of binary `op` that is not the one `isKnown` accepts.
  template <typename OpTy, typename Pred>
  static Value otherOperand(OpTy op, Pred isKnown) {
    if (isKnown(op.getLhs()))
      return op.getRhs();
    if (isKnown(op.getRhs()))
      return op.getLhs();
    return {};
  }

  /// x / sqrt(2) or x * (1 / sqrt(2)).
  bool isScaledInput(Value value) {
    if (auto div = value.getDefiningOp<DivOp>()) {
      ops.insert(div);
      return div.getLhs() == x && isConstant(div.getRhs(), std::sqrt(2.0));
    }
    if (auto mul = value.getDefiningOp<MulOp>()) {
      ops.insert(mul);
      return otherOperand(mul, [](Value v) {
               return isConstant(v, 1 / std::sqrt(2.0));
             }) == x;
    }
    return false;
  }

  /// sqrt(2 / pi) * (x + 0.044715 * x^3), factors in either order.
  bool isTanhArgument(Value value) {
    auto scale = value.getDefiningOp<MulOp>();
    if (!scale)
      return false;
    ops.insert(scale);
    Value sum = otherOperand(
        scale, [](Value v) { return isConstant(v, std::sqrt(2 / M_PI)); });
    auto add = sum ? sum.getDefiningOp<AddOp>() : AddOp();
    if (!add)
      return false;
    ops.insert(add);
    Value term = otherOperand(add, [&](Value v) { return v == x; });
    auto cubic = term ? term.getDefiningOp<MulOp>() : MulOp();
    if (!cubic)
      return false;
    ops.insert(cubic);
    Value cube =
        otherOperand(cubic, [](Value v) { return isConstant(v, 0.044715); });
    return cube && isCube(cube);
  }

  /// x * (x * x), (x * x) * x or x ^ 3.
  bool isCube(Value value) {
    if (auto pow = value.getDefiningOp<PowOp>()) {
      ops.insert(pow);
      return pow.getLhs() == x && isConstant(pow.getRhs(), 3);
    }
    auto mul = value.getDefiningOp<MulOp>();
    if (!mul)
      return false;
    ops.insert(mul);
    Value square = otherOperand(mul, [&](Value v) { return v == x; });
    auto inner = square ? square.getDefiningOp<MulOp>() : MulOp();
    if (!inner || inner.getLhs() != x || inner.getRhs() != x)
      return false;
    ops.insert(inner);
    return true;
  }

  Value x;
  llvm::SmallPtrSet<Operation *, 16> ops;
};

struct FuseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    // The root is the outermost multiplication: one whose user isn't a
    // single-use multiplication continuing the product.
    if (root->hasOneUse() && isa<MulOp>(*root->getUsers().begin()))
      return failure();
    for (Value operand : root->getOperands()) {
      // x is a packed product somewhere in the tree; find it by walking
      // down single-use multiplications.
      Value candidate = operand;
      while (auto mul = candidate.getDefiningOp<MulOp>()) {
        if (!mul->hasOneUse())
          break;
        candidate = mul.getLhs().getDefiningOp<PackedMatMulOp>() ? mul.getLhs()
                                                                 : mul.getRhs();
      }
      auto matmul = candidate.getDefiningOp<PackedMatMulOp>();
      // The residual is added after the activation.
      if (!matmul || matmul.getActivation() || matmul.getResidual() ||
          root.getType() != matmul.getType())
        continue;
      GeluMatcher matcher(matmul.getResult());
      std::optional<Activation> kind = matcher.match(root);
      if (!kind || !matcher.coversUsesOfInput())
        continue;
      rewriter.setInsertionPoint(root);
      rewriter.replaceOpWithNewOp<PackedMatMulOp>(
          root, root.getType(), matmul.getLhs(), matmul.getRhs(),
          matmul.getBias(), Value(),
          ActivationAttr::get(rewriter.getContext(), *kind));
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Residual
//===----------------------------------------------------------------------===//

struct FuseResidualAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    for (auto [product, other] : {std::pair(add.getLhs(), add.getRhs()),
                                  std::pair(add.getRhs(), add.getLhs())}) {
      auto matmul = product.getDefiningOp<PackedMatMulOp>();
      // The residual has the product's shape: an add that broadcasts is a
      // bias (or something else), not a skip connection.
      if (!matmul || matmul.getResidual() || !matmul->hasOneUse() ||
          other.getType() != matmul.getType() ||
          add.getType() != matmul.getType())
        continue;
      rewriter.replaceOpWithNewOp<PackedMatMulOp>(
          add, add.getType(), matmul.getLhs(), matmul.getRhs(),
          matmul.getBias(), other, matmul.getActivationAttr());
      rewriter.eraseOp(matmul);
      return success();
    }
    return failure();
  }
};

struct FuseMatMulEpiloguePass
    : kiln::impl::FuseMatMulEpiloguePassBase<FuseMatMulEpiloguePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseBiasAdd, FuseGelu, FuseResidualAdd>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
