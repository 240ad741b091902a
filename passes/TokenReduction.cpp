//===- TokenReduction.cpp - fewer tokens after an attention ---------------===//
//
// Each reduction shrinks the residual stream from N to M tokens. Every op
// downstream that works token by token (elementwise ops, products with
// weights, layer norms, reshapes and transposes that keep the token axis,
// attention) is retyped in place to the new count; any other user gets the
// stream back at N tokens through kiln.token_unmerge. So reductions compose
// block after block, and the function's signature never changes.
//
//===----------------------------------------------------------------------===//
#include "passes/TokenReduction.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace kiln;

namespace {

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The first op before `value` in a chain of single-operand data movement
/// and bias ops, stopping at a matmul: the residual stream the attention's
/// projection reads, or null.
Value findProjectedInput(Value value) {
  for (int step = 0; step < 8; ++step) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return {};
    if (auto product = dyn_cast<MatMulOp>(def))
      return product.getLhs();
    // A fused QKV projection reaches its query through a slice, or a
    // gather from the stacked [3, ...] projections (DiT).
    if (!isa<ReshapeOp, TransposeOp, SliceOp, GatherOp, AddOp, MulOp>(def))
      return {};
    value = def->getOperand(0);
  }
  return {};
}

/// The stream a pre-LN block normalizes into `projected`: the input of the
/// layer norm `projected` is, or is modulated from (DiT's adaLN:
/// `norm * (1 + scale) + shift`, the norm the operand of the stream's
/// shape); null if none.
Value findNormalizedStream(Value projected) {
  Value value = projected;
  for (int step = 0; step < 3; ++step) {
    if (auto norm = value.getDefiningOp<LayerNormOp>())
      return norm.getInput();
    Operation *def = value.getDefiningOp();
    if (!isa_and_nonnull<AddOp, MulOp>(def))
      return {};
    auto full = llvm::find_if(def->getOperands(), [&](Value operand) {
      return operand.getType() == value.getType();
    });
    if (full == def->getOperands().end())
      return {};
    value = *full;
  }
  return {};
}

/// Finds the points of the block of `attention` (see BlockPoints); fails
/// with `why` set if the block has another shape. `points.stream` is null,
/// with `why` set, where only the branch can be reduced.
LogicalResult findBlockPoints(AttentionOp attention, BlockPoints &points,
                              std::string &why) {
  Value projected = findProjectedInput(attention.getQuery());
  if (!projected) {
    why = "its query is not a projection of the residual stream";
    return failure();
  }
  points.branchInput = projected;
  // Pre-LN blocks normalize the stream before projecting it, post-LN ones
  // project it as it is (the previous block's norm).
  Value normalized = findNormalizedStream(projected);
  Value value = attention.getResult();
  for (int step = 0; step < 10; ++step) {
    if (!value.hasOneUse() || value.getUsers().begin()->getNumResults() != 1) {
      why = "its output has several users before the residual add";
      return failure();
    }
    Operation *user = *value.getUsers().begin();
    auto isStream = [&](Value v) { return v == projected || v == normalized; };
    if (auto add = dyn_cast<AddOp>(user);
        add && (isStream(add.getLhs()) || isStream(add.getRhs()))) {
      points.residualAdd = add;
      Value residual = add.getResult();
      if (!residual.hasOneUse())
        points.stream = residual;
      else if (auto norm = dyn_cast<LayerNormOp>(*residual.getUsers().begin()))
        points.stream = norm.getResult();
      else
        why = "the residual add's only user is not a layer norm";
      return success();
    }
    value = user->getResult(0);
  }
  why = "no residual add follows it";
  return failure();
}

/// The key mask of `attention` as [B, N] f32, built before `attention`;
/// null without a mask. Fails for masks other than one row of key biases
/// per batch entry.
FailureOr<Value> getKeyMask(OpBuilder &b, AttentionOp attention,
                            int64_t batch) {
  Value mask = attention.getMask();
  if (!mask)
    return Value();
  RankedTensorType type = tensorType(mask);
  if (!type.getElementType().isF32() || !type.hasStaticShape() ||
      type.getRank() != 4 || type.getDimSize(1) != 1 ||
      type.getDimSize(2) != 1 ||
      (type.getDimSize(0) != 1 && type.getDimSize(0) != batch))
    return failure();
  Location loc = attention.getLoc();
  int64_t keys = type.getDimSize(3);
  Value rows = ReshapeOp::create(
      b, loc, RankedTensorType::get({type.getDimSize(0), keys}, b.getF32Type()),
      mask, ValueRange());
  if (type.getDimSize(0) == batch)
    return rows;
  auto full = RankedTensorType::get({batch, keys}, b.getF32Type());
  return BroadcastOp::create(b, loc, full, rows, ValueRange()).getResult();
}

} // namespace

Value kiln::getKeyMetric(OpBuilder &b, AttentionOp attention) {
  Location loc = attention.getLoc();
  Value keys = attention.getKeyT();
  ArrayRef<int64_t> shape = tensorType(keys).getShape();
  auto averaged =
      RankedTensorType::get({shape[0], shape[2], shape[3]}, b.getF32Type());
  Value mean = ReduceMeanOp::create(b, loc, averaged, keys,
                                    b.getDenseI64ArrayAttr({1}), UnitAttr());
  return TransposeOp::create(
      b, loc,
      RankedTensorType::get({shape[0], shape[3], shape[2]}, b.getF32Type()),
      mean, b.getDenseI64ArrayAttr({0, 2, 1}));
}

namespace {

/// Retypes, op by op after `start`, what reads the merged stream; see the
/// file comment. `changed` maps each value now holding `tokens` tokens
/// (instead of `previousTokens`) to its token axis.
class Retyper {
public:
  /// `barrier`, if any, reads the reduced tokens back unmerged whatever
  /// it is (the residual add after a branch).
  Retyper(Value destination, int64_t previousTokens, int64_t tokens,
          Value scoreBias, Operation *barrier = nullptr)
      : destination(destination), previousTokens(previousTokens),
        tokens(tokens), scoreBias(scoreBias), barrier(barrier) {}

  LogicalResult run(Operation *start, Value merged) {
    changed[merged] = 1;
    for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
             std::next(start->getIterator()), start->getBlock()->end()))) {
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return changed.contains(v); }))
        continue;
      std::optional<int64_t> axis = &op == barrier ? std::nullopt : retype(&op);
      if (axis) {
        changed[op.getResult(0)] = *axis;
        continue;
      }
      if (failed(unmergeOperands(&op)))
        return failure();
    }
    return success();
  }

private:
  Value destination;
  int64_t previousTokens, tokens;
  Value scoreBias;
  Operation *barrier;
  llvm::DenseMap<Value, int64_t> changed;

  /// `type` with `axis` holding `count` tokens.
  static RankedTensorType withTokens(RankedTensorType type, int64_t axis,
                                     int64_t count) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = count;
    return type.clone(shape);
  }

  /// The token axis of `op`'s result once retyped to the merged count, or
  /// nullopt (op untouched) if `op` does not work token by token.
  std::optional<int64_t> retype(Operation *op) {
    if (op->getNumResults() != 1)
      return std::nullopt;
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType)
      return std::nullopt;
    std::optional<int64_t> axis = resultAxis(op, resultType);
    if (!axis)
      return std::nullopt;
    op->getResult(0).setType(withTokens(resultType, *axis, tokens));
    if (auto attention = dyn_cast<AttentionOp>(op))
      attention.getMaskMutable().assign(scoreBias);
    return axis;
  }

  std::optional<int64_t> resultAxis(Operation *op,
                                    RankedTensorType resultType) {
    int64_t rank = resultType.getRank();
    // Unary ops are SameOperandsAndResultType; softmax too, but along an
    // axis.
    if (isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, CastOp>(op) ||
        (op->hasTrait<OpTrait::SameOperandsAndResultType>() &&
         !isa<SoftmaxOp>(op)))
      return elementwiseAxis(op, rank);
    if (auto norm = dyn_cast<LayerNormOp>(op)) {
      std::optional<int64_t> axis = operandAxis(norm.getInput());
      if (!axis || static_cast<int64_t>(norm.getAxis()) <= *axis ||
          changed.contains(norm.getScale()) || changed.contains(norm.getBias()))
        return std::nullopt;
      return axis;
    }
    if (auto product = dyn_cast<MatMulOp>(op)) {
      std::optional<int64_t> axis = operandAxis(product.getLhs());
      int64_t lhsRank = tensorType(product.getLhs()).getRank();
      if (!axis || changed.contains(product.getRhs()) ||
          tensorType(product.getRhs()).getRank() > 2 || *axis >= lhsRank - 1)
        return std::nullopt;
      return *axis + rank - lhsRank;
    }
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      int64_t axis = changed.lookup(transpose.getInput());
      ArrayRef<int64_t> perm = transpose.getPerm();
      return std::distance(perm.begin(), llvm::find(perm, axis));
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return reshapeAxis(reshape, resultType);
    if (auto slice = dyn_cast<SliceOp>(op))
      return sliceAxis(slice);
    if (auto gather = dyn_cast<GatherOp>(op))
      return gatherAxis(gather);
    if (auto attention = dyn_cast<AttentionOp>(op))
      return attentionAxis(attention, rank);
    return std::nullopt;
  }

  std::optional<int64_t> operandAxis(Value value) {
    auto it = changed.find(value);
    if (it == changed.end())
      return std::nullopt;
    return it->second;
  }

  /// Broadcasting ops: every merged operand's token axis lands on one
  /// result axis, and the other operands broadcast along it.
  std::optional<int64_t> elementwiseAxis(Operation *op, int64_t rank) {
    std::optional<int64_t> result;
    for (Value operand : op->getOperands()) {
      if (auto axis = operandAxis(operand)) {
        int64_t aligned = *axis + rank - tensorType(operand).getRank();
        if (result && *result != aligned)
          return std::nullopt;
        result = aligned;
      }
    }
    for (Value operand : op->getOperands()) {
      if (changed.contains(operand))
        continue;
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        return std::nullopt;
      int64_t at = *result - (rank - type.getRank());
      if (at >= 0 && type.getDimSize(at) != 1)
        return std::nullopt;
    }
    return result;
  }

  /// A reshape keeps the token axis if the dims before it multiply to the
  /// same count on both sides and the token count stays one dim.
  std::optional<int64_t> reshapeAxis(ReshapeOp reshape,
                                     RankedTensorType resultType) {
    RankedTensorType inputType = tensorType(reshape.getInput());
    int64_t axis = changed.lookup(reshape.getInput());
    if (!inputType.hasStaticShape() || !resultType.hasStaticShape())
      return std::nullopt;
    int64_t before = 1;
    for (int64_t d = 0; d < axis; ++d)
      before *= inputType.getDimSize(d);
    int64_t product = 1;
    for (int64_t d = 0; d < resultType.getRank(); ++d) {
      if (product == before && resultType.getDimSize(d) == previousTokens)
        return d;
      product *= resultType.getDimSize(d);
    }
    return std::nullopt;
  }

  /// A slice along other axes (a fused QKV projection's split) keeps every
  /// token; its sizes then say the merged count.
  std::optional<int64_t> sliceAxis(SliceOp slice) {
    int64_t axis = changed.lookup(slice.getInput());
    if (slice.getOffsets()[axis] != 0 || slice.getStrides()[axis] != 1 ||
        slice.getSizes()[axis] != previousTokens)
      return std::nullopt;
    SmallVector<int64_t> sizes(slice.getSizes());
    sizes[axis] = tokens;
    slice.setSizes(sizes);
    return axis;
  }

  /// A gather along another axis (the query, key or value of stacked
  /// projections) keeps every token; the indices' dims replace the
  /// gathered one.
  std::optional<int64_t> gatherAxis(GatherOp gather) {
    std::optional<int64_t> axis = operandAxis(gather.getData());
    int64_t gathered = static_cast<int64_t>(gather.getAxis());
    if (!axis || changed.contains(gather.getIndices()) || *axis == gathered)
      return std::nullopt;
    if (*axis < gathered)
      return axis;
    return *axis - 1 + tensorType(gather.getIndices()).getRank();
  }

  /// Self-attention over the merged tokens: queries, keys and values all
  /// merged, each on its sequence axis.
  std::optional<int64_t> attentionAxis(AttentionOp attention, int64_t rank) {
    auto sequenceAxis = [&](bool sequenceFirst) {
      return sequenceFirst ? rank - 3 : rank - 2;
    };
    if (operandAxis(attention.getQuery()) !=
            sequenceAxis(attention.getQuerySeqFirst()) ||
        operandAxis(attention.getKeyT()) != rank - 1 ||
        operandAxis(attention.getValue()) !=
            sequenceAxis(attention.getValueSeqFirst()) ||
        changed.contains(attention.getMask()) || rank != 4)
      return std::nullopt;
    return sequenceAxis(attention.getResultSeqFirst());
  }

  /// Gives `op` every merged operand back at the previous token count.
  LogicalResult unmergeOperands(Operation *op) {
    OpBuilder b(op);
    for (OpOperand &use : op->getOpOperands()) {
      auto it = changed.find(use.get());
      if (it == changed.end())
        continue;
      Value value = use.get();
      RankedTensorType type = tensorType(value);
      if (it->second != 1 || type.getRank() < 3 || !type.hasStaticShape())
        return op->emitError("cannot merge tokens: ")
               << op->getName() << " reads merged tokens on axis " << it->second
               << " of " << type << "; unmerging needs axis 1";
      Location loc = op->getLoc();
      int64_t width = type.getNumElements() / (type.getDimSize(0) * tokens);
      auto rows = RankedTensorType::get({type.getDimSize(0), tokens, width},
                                        type.getElementType());
      Value flat = type.getRank() == 3
                       ? value
                       : ReshapeOp::create(b, loc, rows, value, ValueRange())
                             .getResult();
      Value restored = TokenUnmergeOp::create(
          b, loc, withTokens(rows, 1, previousTokens), flat, destination);
      RankedTensorType original = withTokens(type, 1, previousTokens);
      if (type.getRank() != 3)
        restored = ReshapeOp::create(b, loc, original, restored, ValueRange());
      use.set(restored);
    }
    return success();
  }
};

} // namespace

bool kiln::sameMasks(ArrayRef<AttentionOp> attentions, StringRef what) {
  Value mask = AttentionOp(attentions.front()).getMask();
  for (AttentionOp attention : attentions)
    if (attention.getMask() != mask) {
      emitWarning(attention.getLoc())
          << what << ": the attentions use different masks";
      return false;
    }
  return true;
}

FailureOr<ReducibleBlock> kiln::prepareBlock(OpBuilder &b,
                                             AttentionOp attention,
                                             TokenSet &set, StringRef what) {
  Location loc = attention.getLoc();
  std::string why;
  BlockPoints points;
  if (succeeded(findBlockPoints(attention, points, why)) && points.stream) {
    RankedTensorType streamType = tensorType(points.stream);
    if (streamType.getRank() != 3 || !streamType.hasStaticShape() ||
        tensorType(attention.getKeyT()).getRank() != 4)
      why = "its tokens are not a static [batch, tokens, channels] stream";
  }
  if (!why.empty()) {
    emitWarning(loc) << what << " after this attention: " << why;
    return failure();
  }
  RankedTensorType streamType = tensorType(points.stream);
  ReducibleBlock block{points.stream, streamType.getDimSize(0),
                       streamType.getDimSize(1)};
  b.setInsertionPointAfterValue(points.stream);
  if (!set.scoreBias) {
    FailureOr<Value> mask = getKeyMask(b, attention, block.batch);
    if (failed(mask)) {
      emitWarning(loc) << what
                       << ": the attention mask is not one f32 row of key "
                          "biases per batch entry";
      return failure();
    }
    set.keyMask = *mask;
  }
  if (set.tokens == 0)
    set.tokens = block.tokens;
  if (!set.sizes)
    set.sizes = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            RankedTensorType::get({block.batch, block.tokens}, b.getF32Type()),
            b.getF32FloatAttr(1.0f)));
  return block;
}

FailureOr<ReducibleBranch>
kiln::prepareBranch(OpBuilder &b, AttentionOp attention, StringRef what) {
  Location loc = attention.getLoc();
  std::string why;
  BlockPoints points;
  // Only the branch matters: a block whose stream cannot shrink is fine.
  if (failed(findBlockPoints(attention, points, why))) {
    emitWarning(loc) << what << " around this attention: " << why;
    return failure();
  }
  RankedTensorType inputType = tensorType(points.branchInput);
  if (inputType.getRank() != 3 || !inputType.hasStaticShape() ||
      tensorType(attention.getKeyT()).getRank() != 4) {
    emitWarning(loc) << what
                     << " around this attention: its input is not a static "
                        "[batch, tokens, channels] stream";
    return failure();
  }
  ReducibleBranch branch;
  branch.input = points.branchInput;
  branch.residualAdd = points.residualAdd;
  branch.batch = inputType.getDimSize(0);
  branch.tokens = inputType.getDimSize(1);
  // Before the branch's first reader, and after the mask.
  Operation *first = nullptr;
  for (Operation *user : branch.input.getUsers())
    if (user->getBlock() == attention->getBlock() &&
        (!first || user->isBeforeInBlock(first)))
      first = user;
  Value attentionMask = attention.getMask();
  Operation *maskDef = attentionMask ? attentionMask.getDefiningOp() : nullptr;
  if (!first || (maskDef && maskDef->getBlock() == first->getBlock() &&
                 first->isBeforeInBlock(maskDef))) {
    emitWarning(loc) << what
                     << " around this attention: its mask is computed after "
                        "its input is read";
    return failure();
  }
  b.setInsertionPoint(first);
  FailureOr<Value> mask = getKeyMask(b, attention, branch.batch);
  if (failed(mask)) {
    emitWarning(loc) << what
                     << ": the attention mask is not one f32 row of key "
                        "biases per batch entry";
    return failure();
  }
  branch.keyMask = *mask;
  return branch;
}

LogicalResult kiln::reduceBranch(OpBuilder &b, Location loc,
                                 const ReducibleBranch &branch,
                                 Value destination, Value kept, int64_t slots) {
  RankedTensorType inputType = tensorType(branch.input);
  int64_t batch = branch.batch;
  auto perSlot = RankedTensorType::get({batch, slots}, b.getF32Type());
  Value ones = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          RankedTensorType::get({batch, branch.tokens}, b.getF32Type()),
          b.getF32FloatAttr(1.0f)));
  auto merge = TokenMergeOp::create(
      b, loc, inputType.clone({batch, slots, inputType.getDimSize(2)}), perSlot,
      branch.input, ones, destination);
  // The residual add (post-LN: it reads the branch's input too) keeps every
  // token; so do the ops that chose the merge.
  Operation *chooser = destination.getDefiningOp();
  Value input = branch.input;
  input.replaceUsesWithIf(merge.getResult(), [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    return owner != merge && owner != chooser && owner != branch.residualAdd;
  });
  Value bias = LogOp::create(b, loc, merge.getResultSizes());
  if (branch.keyMask)
    bias =
        AddOp::create(b, loc, bias,
                      GatherElementsOp::create(b, loc, perSlot, branch.keyMask,
                                               kept, b.getI64IntegerAttr(1)));
  Value scoreBias = ReshapeOp::create(
      b, loc, RankedTensorType::get({batch, 1, 1, slots}, b.getF32Type()), bias,
      ValueRange());
  Retyper retyper(destination, branch.tokens, slots, scoreBias,
                  branch.residualAdd);
  return retyper.run(scoreBias.getDefiningOp(), merge.getResult());
}

LogicalResult kiln::reduceTokens(OpBuilder &b, Location loc,
                                 const ReducibleBlock &block, Value destination,
                                 Value kept, int64_t slots, TokenSet &set) {
  RankedTensorType streamType = tensorType(block.stream);
  int64_t batch = block.batch;
  auto perSlot = RankedTensorType::get({batch, slots}, b.getF32Type());
  auto merge = TokenMergeOp::create(
      b, loc, streamType.clone({batch, slots, streamType.getDimSize(2)}),
      perSlot, block.stream, set.sizes, destination);
  Value stream = block.stream;
  stream.replaceAllUsesExcept(merge.getResult(), merge);

  set.tokens = slots;
  set.sizes = merge.getResultSizes();
  Value bias = LogOp::create(b, loc, set.sizes);
  if (set.keyMask) {
    set.keyMask = GatherElementsOp::create(b, loc, perSlot, set.keyMask, kept,
                                           b.getI64IntegerAttr(1));
    bias = AddOp::create(b, loc, bias, set.keyMask);
  }
  set.scoreBias = ReshapeOp::create(
      b, loc, RankedTensorType::get({batch, 1, 1, slots}, b.getF32Type()), bias,
      ValueRange());
  Retyper retyper(destination, block.tokens, slots, set.scoreBias);
  return retyper.run(set.scoreBias.getDefiningOp(), merge.getResult());
}
