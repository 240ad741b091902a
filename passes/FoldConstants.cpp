//===- FoldConstants.cpp - evaluate kiln ops on constants at compile time -===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Row-major strides of `shape`.
SmallVector<int64_t> getStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// For every flat index of `resultShape`, the flat index of the operand of
/// `operandShape` that broadcasting reads there.
SmallVector<int64_t> getBroadcastIndices(ArrayRef<int64_t> operandShape,
                                         ArrayRef<int64_t> resultShape) {
  SmallVector<int64_t> resultStrides = getStrides(resultShape);
  SmallVector<int64_t> operandStrides = getStrides(operandShape);
  size_t offset = resultShape.size() - operandShape.size();
  int64_t count = 1;
  for (int64_t dim : resultShape)
    count *= dim;
  SmallVector<int64_t> indices(count);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t index = 0;
    for (size_t d = 0; d < operandShape.size(); ++d) {
      int64_t coord =
          flat / resultStrides[offset + d] % resultShape[offset + d];
      if (operandShape[d] != 1)
        index += coord * operandStrides[d];
    }
    indices[flat] = index;
  }
  return indices;
}

/// The same integer division the lowering generates (x / 0 == 0, and
/// INT64_MIN / -1 wraps), so folding never changes a result.
int64_t safeDivide(int64_t lhs, int64_t rhs) {
  if (rhs == 0)
    return 0;
  if (rhs == -1)
    return static_cast<int64_t>(0ull - static_cast<uint64_t>(lhs));
  return lhs / rhs;
}

template <typename T> T applyBinary(Operation *op, T lhs, T rhs) {
  if (isa<AddOp>(op))
    return lhs + rhs;
  if (isa<SubOp>(op))
    return lhs - rhs;
  if (isa<MulOp>(op))
    return lhs * rhs;
  if constexpr (std::is_integral_v<T>)
    return safeDivide(lhs, rhs);
  else
    return lhs / rhs;
}

template <typename T>
DenseElementsAttr foldBinary(Operation *op, DenseElementsAttr lhs,
                             DenseElementsAttr rhs, RankedTensorType type) {
  SmallVector<T> lhsValues(lhs.getValues<T>()), rhsValues(rhs.getValues<T>());
  SmallVector<int64_t> lhsIndex =
      getBroadcastIndices(lhs.getType().getShape(), type.getShape());
  SmallVector<int64_t> rhsIndex =
      getBroadcastIndices(rhs.getType().getShape(), type.getShape());
  SmallVector<T> result(lhsIndex.size());
  for (size_t i = 0; i < result.size(); ++i)
    result[i] = applyBinary(op, lhsValues[lhsIndex[i]], rhsValues[rhsIndex[i]]);
  return DenseElementsAttr::get(type, ArrayRef<T>(result));
}

template <typename T>
DenseElementsAttr foldTranspose(DenseElementsAttr input, ArrayRef<int64_t> perm,
                                RankedTensorType type) {
  SmallVector<T> values(input.getValues<T>());
  SmallVector<int64_t> inputStrides = getStrides(input.getType().getShape());
  SmallVector<int64_t> resultStrides = getStrides(type.getShape());
  SmallVector<T> result(values.size());
  for (size_t flat = 0; flat < result.size(); ++flat) {
    int64_t source = 0;
    for (size_t d = 0; d < perm.size(); ++d) {
      int64_t coord = flat / resultStrides[d] % type.getDimSize(d);
      source += coord * inputStrides[perm[d]];
    }
    result[flat] = values[source];
  }
  return DenseElementsAttr::get(type, ArrayRef<T>(result));
}

/// Evaluates one op whose operands are all dense constants, or returns null.
DenseElementsAttr evaluate(Operation *op,
                           SmallVectorImpl<DenseElementsAttr> &operands) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  bool isFloat = type.getElementType().isF32();
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    return isFloat ? foldBinary<float>(op, operands[0], operands[1], type)
                   : foldBinary<int64_t>(op, operands[0], operands[1], type);
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return isFloat
               ? foldTranspose<float>(operands[0], transpose.getPerm(), type)
               : foldTranspose<int64_t>(operands[0], transpose.getPerm(), type);
  if (isa<ReshapeOp>(op))
    return operands[0].reshape(type);
  if (isa<NegOp>(op)) {
    if (isFloat)
      return operands[0].mapValues(type.getElementType(), [](const APFloat &v) {
        return (-v).bitcastToAPInt();
      });
    return operands[0].mapValues(type.getElementType(),
                                 [](const APInt &v) { return -v; });
  }
  if (isa<CastOp>(op)) {
    if (isFloat) {
      SmallVector<float> result;
      for (int64_t v : operands[0].getValues<int64_t>())
        result.push_back(static_cast<float>(v));
      return DenseElementsAttr::get(type, ArrayRef<float>(result));
    }
    // Out-of-range float-to-int casts are undefined in C++ and poison in
    // the generated code; leave those to run time.
    SmallVector<int64_t> result;
    for (float v : operands[0].getValues<float>()) {
      if (!(v > -9.2e18f && v < 9.2e18f))
        return {};
      result.push_back(static_cast<int64_t>(v));
    }
    return DenseElementsAttr::get(type, ArrayRef<int64_t>(result));
  }
  return {};
}

struct FoldConstantOperands : RewritePattern {
  FoldConstantOperands(MLIRContext *ctx, int64_t maxElements)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        maxElements(maxElements) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isa<AddOp, SubOp, MulOp, DivOp, TransposeOp, ReshapeOp, NegOp, CastOp>(
            op))
      return failure();
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (type.getNumElements() > maxElements)
      return rewriter.notifyMatchFailure(op, "result too large to fold");
    SmallVector<DenseElementsAttr> operands;
    for (Value operand : op->getOperands()) {
      auto constant = operand.getDefiningOp<ConstantOp>();
      auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                            : DenseElementsAttr();
      if (!dense)
        return failure();
      operands.push_back(dense);
    }
    DenseElementsAttr folded = evaluate(op, operands);
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
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
