//===- FoldConstants.cpp - evaluate kiln ops on constants at compile time -===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/ConstantEvaluation.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

int64_t getByteSize(ShapedType type) {
  int64_t bytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  return type.getNumElements() * bytes;
}

/// What the pass may still create, in bytes: constants live as long as the
/// context (attributes are never freed), so a model that folds the same
/// weight a thousand ways would otherwise take a thousand times its size.
struct FoldBudget {
  int64_t bytesLeft;

  /// Whether a constant of `type` fits; if so, it is taken from the budget.
  bool take(ShapedType type) {
    int64_t bytes = getByteSize(type);
    if (bytes > bytesLeft)
      return false;
    bytesLeft -= bytes;
    return true;
  }
};

struct FoldConstantOperands : RewritePattern {
  FoldConstantOperands(MLIRContext *ctx, int64_t maxElements,
                       FoldBudget &budget)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        maxElements(maxElements), budget(budget) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isConstantEvaluable(op))
      return failure();
    // Data movement of a weight (a transposed embedding) works on its
    // bytes, which may be a resource blob; the weight goes once unused.
    if (auto weight = op->getNumOperands() == 1
                          ? op->getOperand(0).getDefiningOp<ConstantOp>()
                          : ConstantOp()) {
      if (ElementsAttr moved = evaluateDataMovement(op, weight.getValue())) {
        if (cast<ShapedType>(moved.getType()).getNumElements() >
            std::max(maxElements, weight.getType().getNumElements()))
          return rewriter.notifyMatchFailure(op, "result too large to fold");
        if (!budget.take(cast<ShapedType>(moved.getType())))
          return rewriter.notifyMatchFailure(op, "folding budget spent");
        rewriter.replaceOpWithNewOp<ConstantOp>(op, moved);
        eraseIfUnused(rewriter, weight, weight.getValue());
        return success();
      }
    }
    if (auto concat = dyn_cast<ConcatOp>(op)) {
      SmallVector<ElementsAttr> inputs;
      for (Value operand : concat->getOperands())
        if (auto constant = operand.getDefiningOp<ConstantOp>())
          inputs.push_back(constant.getValue());
      // Dense splats have no bytes: the general evaluation below folds them.
      if (inputs.size() == concat->getNumOperands()) {
        if (!budget.take(concat.getType()))
          return rewriter.notifyMatchFailure(op, "folding budget spent");
        if (ElementsAttr joined = evaluateConcatBytes(concat, inputs)) {
          rewriter.replaceOpWithNewOp<ConstantOp>(op, joined);
          return success();
        }
      }
    }
    SmallVector<DenseElementsAttr> operands;
    int64_t operandElements = 0;
    for (Value operand : op->getOperands()) {
      DenseElementsAttr dense = getConstantElements(operand);
      if (!dense)
        return failure();
      operands.push_back(dense);
      operandElements += dense.getNumElements();
    }
    // A result no larger than its operands (a transposed weight) can't
    // blow up; one that grows (a broadcast) is capped.
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (type.getNumElements() > std::max(maxElements, operandElements))
      return rewriter.notifyMatchFailure(op, "result too large to fold");
    if (!budget.take(type))
      return rewriter.notifyMatchFailure(op, "folding budget spent");
    DenseElementsAttr folded = evaluateConstantOp(op, operands);
    if (!folded)
      return failure();
    rewriter.replaceOpWithNewOp<ConstantOp>(op, folded);
    return success();
  }

  int64_t maxElements;
  FoldBudget &budget;
};

/// kiln.dequantize of constants (a QDQ model's weights) becomes the float
/// constant it computes, `(q - zero_point) * scale` exactly as at run time,
/// so the product it feeds gets a constant weight: packed, and not
/// dequantized again on every run.
struct FoldDequantize : OpRewritePattern<DequantizeOp> {
  FoldDequantize(MLIRContext *ctx, FoldBudget &budget)
      : OpRewritePattern(ctx), budget(budget) {}

  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    auto input = op.getInput().getDefiningOp<ConstantOp>();
    auto scale = op.getScale().getDefiningOp<ConstantOp>();
    auto zeroPoint = op.getZeroPoint().getDefiningOp<ConstantOp>();
    if (!input || !scale || !zeroPoint || !op.getType().hasStaticShape())
      return failure();
    bool isUnsigned = op.getInputUnsigned();
    std::optional<SmallVector<int64_t>> values =
        getIntegers(input.getValue(), isUnsigned);
    std::optional<SmallVector<int64_t>> zeros =
        getIntegers(zeroPoint.getValue(), isUnsigned);
    std::optional<SmallVector<float>> scales = getFloats(scale.getValue());
    if (!values || !zeros || !scales)
      return failure();
    RankedTensorType type = op.getType();
    if (!budget.take(type))
      return rewriter.notifyMatchFailure(op, "folding budget spent");
    // Flat element i = (outer, index along the axis, inner) reads parameter
    // `index` (per axis), or (outer, index / blockSize, inner) (blocked).
    int64_t inner = 1, size = 1, blockSize = op.getBlockSize().value_or(0);
    if (std::optional<int64_t> axis = op.getAxis()) {
      size = type.getDimSize(*axis);
      for (int64_t d = *axis + 1; d < type.getRank(); ++d)
        inner *= type.getDimSize(d);
    }
    int64_t blocks = blockSize ? llvm::divideCeil(size, blockSize) : 0;
    auto paramIndex = [&](int64_t i) -> int64_t {
      if (scales->size() == 1)
        return 0;
      int64_t index = i / inner % size;
      if (!blockSize)
        return index;
      return (i / inner / size * blocks + index / blockSize) * inner +
             i % inner;
    };
    ElementsAttr folded = createElements(type, [&](MutableArrayRef<char> out) {
      float *result = reinterpret_cast<float *>(out.data());
      for (size_t i = 0; i < values->size(); ++i) {
        int64_t param = paramIndex(static_cast<int64_t>(i));
        int64_t difference =
            static_cast<int32_t>((*values)[i] - (*zeros)[param]);
        result[i] = static_cast<float>(difference) * (*scales)[param];
      }
    });
    rewriter.replaceOpWithNewOp<ConstantOp>(op, folded);
    eraseIfUnused(rewriter, input, input.getValue());
    return success();
  }

  FoldBudget &budget;
};

struct FoldConstantsPass
    : kiln::impl::FoldConstantsPassBase<FoldConstantsPass> {
  using FoldConstantsPassBase::FoldConstantsPassBase;

  void runOnOperation() override {
    // Four times the constants the pass starts from leaves room to
    // dequantize int8 weights to float, with max-created-bytes beyond.
    int64_t startBytes = 0;
    getOperation()->walk([&](ConstantOp constant) {
      startBytes += getByteSize(constant.getType());
    });
    FoldBudget budget{maxCreatedBytes + 4 * startBytes};
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldConstantOperands>(&getContext(), maxElements, budget);
    patterns.add<FoldDequantize>(&getContext(), budget);
    // Only this pass's size policy decides: the op folders' own (smaller)
    // limit would fold past a lower max-elements.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
