//===- KilnTokenOps.cpp - token merging op verifiers ----------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

/// Checks that `value` is a static tensor of `rank`, `op`'s `name`.
static LogicalResult verifyStatic(Operation *op, Value value, int64_t rank,
                                  StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != rank || !type.hasStaticShape())
    return op->emitOpError() << name << " must be a static tensor of rank "
                             << rank << ", not " << type;
  return success();
}

static ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

LogicalResult TokenMatchOp::verify() {
  if (failed(verifyStatic(*this, getMetric(), 3, "metric")) ||
      failed(verifyStatic(*this, getDestination(), 2, "destination")) ||
      failed(verifyStatic(*this, getKept(), 2, "kept")))
    return failure();
  ArrayRef<int64_t> metric = shapeOf(getMetric());
  int64_t batch = metric[0], tokens = metric[1];
  SmallVector<int64_t, 2> perToken{batch, tokens};
  if (Value bias = getKeyBias())
    if (failed(verifyStatic(*this, bias, 2, "key_bias")) ||
        shapeOf(bias) != ArrayRef<int64_t>(perToken))
      return emitOpError("key_bias must be [")
             << batch << ", " << tokens << "]";
  if (shapeOf(getDestination()) != ArrayRef<int64_t>(perToken))
    return emitOpError("destination must be [")
           << batch << ", " << tokens << "]";
  int64_t merged = static_cast<int64_t>(getMerged());
  int64_t protectedPrefix = static_cast<int64_t>(getProtectedPrefix());
  if (protectedPrefix < 0 || protectedPrefix > tokens)
    return emitOpError("protects 0 to ")
           << tokens << " tokens, not " << protectedPrefix;
  // Each merge takes an unprotected even token: (N - protected) / 2 of
  // them, with an unprotected odd token left to take them.
  int64_t mergeable = (tokens - protectedPrefix) / 2;
  if (merged < 0 || merged > mergeable)
    return emitOpError("can merge 0 to ")
           << mergeable << " of " << tokens << " tokens with "
           << protectedPrefix << " protected, not " << merged;
  if (shapeOf(getKept()) != ArrayRef<int64_t>{batch, tokens - merged})
    return emitOpError("kept must be [")
           << batch << ", " << tokens - merged << "]";
  return success();
}

LogicalResult TokenSelectOp::verify() {
  if (failed(verifyStatic(*this, getImportance(), 2, "importance")) ||
      failed(verifyStatic(*this, getDestination(), 2, "destination")) ||
      failed(verifyStatic(*this, getKeptTokens(), 2, "kept_tokens")))
    return failure();
  ArrayRef<int64_t> perToken = shapeOf(getImportance());
  int64_t batch = perToken[0], tokens = perToken[1];
  if (Value bias = getKeyBias())
    if (failed(verifyStatic(*this, bias, 2, "key_bias")) ||
        shapeOf(bias) != perToken)
      return emitOpError("key_bias must be [")
             << batch << ", " << tokens << "]";
  if (shapeOf(getDestination()) != perToken)
    return emitOpError("destination must be [")
           << batch << ", " << tokens << "]";
  int64_t kept = static_cast<int64_t>(getKept());
  int64_t protectedPrefix = static_cast<int64_t>(getProtectedPrefix());
  int64_t extraSlots = getKeyBias() ? 2 : 1;
  if (protectedPrefix < 0 || kept < 0 ||
      protectedPrefix + kept + extraSlots > tokens)
    return emitOpError("keeps ") << protectedPrefix << " protected and " << kept
                                 << " other tokens, which with " << extraSlots
                                 << " fused slot(s) must be at most " << tokens;
  int64_t slots = protectedPrefix + kept + extraSlots;
  if (shapeOf(getKeptTokens()) != ArrayRef<int64_t>{batch, slots})
    return emitOpError("kept_tokens must be [")
           << batch << ", " << slots << "]";
  return success();
}

LogicalResult TokenMergeOp::verify() {
  if (failed(verifyStatic(*this, getInput(), 3, "input")) ||
      failed(verifyStatic(*this, getSizes(), 2, "sizes")) ||
      failed(verifyStatic(*this, getDestination(), 2, "destination")) ||
      failed(verifyStatic(*this, getResult(), 3, "result")) ||
      failed(verifyStatic(*this, getResultSizes(), 2, "result_sizes")))
    return failure();
  ArrayRef<int64_t> input = shapeOf(getInput()), result = shapeOf(getResult());
  if (shapeOf(getSizes()) != input.take_front(2) ||
      shapeOf(getDestination()) != input.take_front(2))
    return emitOpError("sizes and destination must be [")
           << input[0] << ", " << input[1] << "]";
  if (result[0] != input[0] || result[2] != input[2] || result[1] > input[1])
    return emitOpError("result must be [")
           << input[0] << ", M, " << input[2] << "] with M <= " << input[1];
  if (shapeOf(getResultSizes()) != result.take_front(2))
    return emitOpError("result_sizes must be [")
           << result[0] << ", " << result[1] << "]";
  return success();
}

LogicalResult TokenUnmergeOp::verify() {
  if (failed(verifyStatic(*this, getInput(), 3, "input")) ||
      failed(verifyStatic(*this, getDestination(), 2, "destination")) ||
      failed(verifyStatic(*this, getResult(), 3, "result")))
    return failure();
  ArrayRef<int64_t> input = shapeOf(getInput()),
                    destination = shapeOf(getDestination()),
                    result = shapeOf(getResult());
  if (destination[0] != input[0] ||
      result != ArrayRef<int64_t>{input[0], destination[1], input[2]})
    return emitOpError("result must be [")
           << input[0] << ", " << destination[1] << ", " << input[2] << "]";
  return success();
}
