//===- FoldConstants.cpp - evaluate kiln ops on constants at compile time -===//
#include "passes/Passes.h"

#include "passes/ConstantMatch.h"

#include "dialects/Kiln/IR/ConstantEvaluation.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct FoldConstantOperands : RewritePattern {
  FoldConstantOperands(MLIRContext *ctx, int64_t maxElements)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        maxElements(maxElements) {}

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
        rewriter.replaceOpWithNewOp<ConstantOp>(op, moved);
        eraseIfUnused(rewriter, weight, weight.getValue());
        return success();
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
    DenseElementsAttr folded = evaluateConstantOp(op, operands);
    if (!folded)
      return failure();
    rewriter.replaceOpWithNewOp<ConstantOp>(op, folded);
    return success();
  }

  int64_t maxElements;
};

struct FoldConstantsPass
    : kiln::impl::FoldConstantsPassBase<FoldConstantsPass> {
  using FoldConstantsPassBase::FoldConstantsPassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldConstantOperands>(&getContext(), maxElements);
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
