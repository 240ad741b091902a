//===- ExposePastKeysValues.cpp - a plain decoder in the with-past form ---===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kiln {
#define GEN_PASS_DEF_EXPOSEPASTKEYSVALUESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kPastDim = "past_seq";

/// One attention of the decoder: `scores = query x key_t`, masked and
/// scaled, `softmax`, then `weighted = probabilities x value`.
struct Attention {
  MatMulOp scores;
  MatMulOp weighted;
  /// Operands that joined the scores between the product and the softmax
  /// with both sequence axes (masks).
  SmallVector<Value> masks;
};

/// Whether `value`'s last two dimensions are dynamic: [..., queries, keys].
bool hasSequenceAxes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() >= 2 && type.isDynamicDim(type.getRank() - 1) &&
         type.isDynamicDim(type.getRank() - 2);
}

/// The attention whose softmax is `softmax`, found by walking back from it
/// through the elementwise ops that scale and mask the scores (the operand
/// of the scores' own type continues the walk) to a product, and forward to
/// the product of the probabilities with the values.
std::optional<Attention> matchAttention(SoftmaxOp softmax) {
  auto type = cast<RankedTensorType>(softmax.getType());
  if (!hasSequenceAxes(softmax) ||
      softmax.getAxis() != static_cast<uint64_t>(type.getRank() - 1) ||
      !softmax->hasOneUse())
    return std::nullopt;
  Attention attention;
  attention.weighted = dyn_cast<MatMulOp>(*softmax->user_begin());
  if (!attention.weighted || attention.weighted.getLhs() != softmax)
    return std::nullopt;
  Value scores = softmax.getInput();
  while (!(attention.scores = scores.getDefiningOp<MatMulOp>())) {
    Operation *op = scores.getDefiningOp();
    if (!isa_and_nonnull<AddOp, SubOp, MulOp, DivOp, SelectOp>(op))
      return std::nullopt;
    Value next;
    for (Value operand : op->getOperands()) {
      if (operand.getType() == scores.getType()) {
        if (next)
          return std::nullopt;
        next = operand;
      } else if (hasSequenceAxes(operand)) {
        attention.masks.push_back(operand);
      }
    }
    if (!next)
      return std::nullopt;
    scores = next;
  }
  if (!hasSequenceAxes(attention.scores))
    return std::nullopt;
  return attention;
}

/// `value` with its last two dimensions swapped.
Value swapLastAxes(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> perm =
      llvm::to_vector(llvm::seq<int64_t>(type.getRank()));
  std::swap(perm[type.getRank() - 1], perm[type.getRank() - 2]);
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[type.getRank() - 1], shape[type.getRank() - 2]);
  return TransposeOp::create(b, loc, type.clone(shape), value,
                             b.getDenseI64ArrayAttr(perm));
}

/// Rewrites the position-only computations that read the sequence length
/// `seq` so that they describe the last `seq` of `past + seq` positions.
class PositionRewriter {
public:
  PositionRewriter(func::FuncOp func, Value seq, Value past, int64_t maxContext)
      : func(func), seq(seq), past(past), maxContext(maxContext) {}

  /// A slice of a mask sized by the sequence: along the query axis it
  /// starts at `past`, along the key axis it takes `past + seq`.
  LogicalResult rewriteMask(Value mask) {
    SmallVector<Value> worklist{mask};
    while (!worklist.empty()) {
      Value value = worklist.pop_back_val();
      Operation *op = value.getDefiningOp();
      if (!op || !visited.insert(op).second)
        continue;
      if (auto slice = dyn_cast<DynamicSliceOp>(op)) {
        if (failed(rewriteSlice(slice, mask)))
          return failure();
        worklist.push_back(slice.getInput());
        continue;
      }
      if (llvm::is_contained(op->getOperands(), seq)) {
        return emitError(op->getLoc())
               << "a mask computed from the sequence length by '"
               << op->getName()
               << "' cannot be extended to a KV cache; export the decoder "
                  "with past_key_values inputs";
      }
      if (op->hasTrait<OpTrait::ConstantLike>())
        continue;
      for (Value operand : op->getOperands())
        worklist.push_back(operand);
    }
    return success();
  }

  /// Ranges of `seq` positions not used by masks: positions `past`
  /// onwards.
  void rewritePositions() {
    func.walk([&](RangeOp range) {
      if (range.getSize() != seq || visited.contains(range))
        return;
      OpBuilder b(range);
      Location loc = range.getLoc();
      auto scalar = cast<RankedTensorType>(range.getStart().getType());
      Value count =
          arith::IndexCastOp::create(b, loc, scalar.getElementType(), past);
      Value offset = MulOp::create(
          b, loc, scalar, tensor::FromElementsOp::create(b, loc, scalar, count),
          range.getDelta());
      range.getStartMutable().assign(
          AddOp::create(b, loc, scalar, range.getStart(), offset));
    });
  }

private:
  LogicalResult rewriteSlice(DynamicSliceOp slice, Value mask) {
    int64_t rank = cast<RankedTensorType>(slice.getType()).getRank();
    int64_t maskRank = cast<RankedTensorType>(mask.getType()).getRank();
    auto inputType = cast<RankedTensorType>(slice.getInput().getType());
    for (auto [i, axis] : llvm::enumerate(slice.getAxes())) {
      if (slice.getSizes()[i] != seq)
        continue;
      bool queries = axis == rank - 2, keys = axis == rank - 1;
      if (rank != maskRank || !(queries || keys) ||
          !matchPattern(slice.getOffsets()[i], m_Zero()))
        return emitError(slice.getLoc())
               << "a mask slice sized by the sequence along axis " << axis
               << " is not a [queries, keys] window from 0; export the "
                  "decoder with past_key_values inputs";
      if (inputType.isDynamicDim(axis) ||
          inputType.getDimSize(axis) < maxContext)
        return emitError(slice.getLoc())
               << "the mask covers " << inputType.getDimSize(axis)
               << " positions, fewer than the " << maxContext
               << " of --max-context";
      OpBuilder b(slice);
      if (queries)
        slice.getOffsetsMutable().slice(i, 1).assign(past);
      else
        slice.getSizesMutable().slice(i, 1).assign(
            arith::AddIOp::create(b, slice.getLoc(), past, seq));
    }
    return success();
  }

  func::FuncOp func;
  Value seq, past;
  int64_t maxContext;
  llvm::SmallPtrSet<Operation *, 16> visited;
};

/// The computed dimension `past_seq + seq`, added to the module's list.
StringAttr declareTotalDim(ModuleOp module, StringRef seqName,
                           int64_t maxContext) {
  MLIRContext *context = module.getContext();
  SmallVector<Attribute> dims;
  if (auto list = module->getAttrOfType<ArrayAttr>(kDimsAttr))
    dims.assign(list.begin(), list.end());
  int64_t seqMin = 1, seqMax = maxContext;
  for (auto dim : dims)
    if (auto named = dyn_cast<DimAttr>(dim);
        named && named.getName() == seqName)
      std::tie(seqMin, seqMax) = std::make_pair(named.getMin(), named.getMax());
  std::string total = (kPastDim + " + " + seqName).str();
  auto sum = AffineMap::get(
      0, 2, getAffineSymbolExpr(0, context) + getAffineSymbolExpr(1, context),
      context);
  Builder b(context);
  dims.push_back(DimAttr::get(context, kPastDim, 0, maxContext));
  dims.push_back(DimAttr::get(context, total, seqMin, maxContext + seqMax,
                              AffineMapAttr::get(sum),
                              b.getStrArrayAttr({kPastDim, seqName})));
  module->setAttr(kDimsAttr, ArrayAttr::get(context, dims));
  return b.getStringAttr(total);
}

/// The names of `type`'s dimensions, `axis` named `name`.
ArrayAttr dimNames(Builder &b, RankedTensorType type, int64_t axis,
                   StringRef name) {
  SmallVector<StringRef> names(type.getRank(), "");
  names[axis] = name;
  return b.getStrArrayAttr(names);
}

LogicalResult exposePast(ModuleOp module, func::FuncOp func,
                         int64_t maxContext) {
  Location loc = func.getLoc();
  if (func.getNumArguments() != 1)
    return emitError(loc)
           << "a decoder without past_key_values inputs must take one input, "
              "its token ids [batch, seq], for Kiln to add a KV cache; this "
              "one takes "
           << func.getNumArguments();
  BlockArgument ids = func.getArgument(0);
  auto idsType = dyn_cast<RankedTensorType>(ids.getType());
  auto idsDims = func.getArgAttrOfType<ArrayAttr>(0, kDimNamesAttr);
  if (!idsType || idsType.getRank() != 2 || !idsType.isDynamicDim(1) ||
      !idsDims)
    return emitError(loc) << "the token ids must be [batch, seq] with a named "
                             "sequence dimension, got "
                          << ids.getType();
  StringRef seqName = cast<StringAttr>(idsDims[1]).getValue();

  SmallVector<Attention> attentions;
  func.walk([&](SoftmaxOp softmax) {
    if (std::optional<Attention> attention = matchAttention(softmax))
      attentions.push_back(*attention);
  });
  if (attentions.empty())
    return emitError(loc) << "found no attention (a softmax between two "
                             "products over the sequence) to cache the keys "
                             "and values of";

  // The sequence length, one value for every read of it.
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Value seq = tensor::DimOp::create(b, loc, ids, 1);
  for (Operation *user : llvm::make_early_inc_range(ids.getUsers()))
    if (auto dim = dyn_cast<tensor::DimOp>(user);
        dim && dim != seq.getDefiningOp() &&
        matchPattern(dim.getIndex(), m_One())) {
      dim.replaceAllUsesWith(seq);
      dim.erase();
    }

  // One past input per key and value, `[..., past_seq, depth]`, appended
  // at the end of the signature.
  Builder builder(module.getContext());
  StringAttr totalDim = declareTotalDim(module, seqName, maxContext);
  SmallVector<Value> presents;
  SmallVector<DictionaryAttr> presentAttrs;
  Value pastLength;
  for (auto [layer, attention] : llvm::enumerate(attentions)) {
    Value keyT = attention.scores.getRhs();
    Value value = attention.weighted.getRhs();
    for (auto [kind, operand] :
         {std::pair<StringRef, Value>{"key", keyT}, {"value", value}}) {
      OpBuilder at(kind == "key" ? attention.scores : attention.weighted);
      Location opLoc = at.getInsertionPoint()->getLoc();
      Value rows = kind == "key" ? swapLastAxes(at, opLoc, operand) : operand;
      auto rowsType = cast<RankedTensorType>(rows.getType());
      int64_t axis = rowsType.getRank() - 2;
      std::string name = ("past_key_values." + Twine(layer) + "." + kind).str();
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, rowsType,
                                     builder.getDictionaryAttr({}), loc)))
        return failure();
      BlockArgument past = func.getArgument(index);
      func.setArgAttr(past.getArgNumber(), kNameAttr,
                      builder.getStringAttr(name));
      func.setArgAttr(past.getArgNumber(), kDimNamesAttr,
                      dimNames(builder, rowsType, axis, kPastDim));
      if (!pastLength) {
        b.setInsertionPointAfterValue(seq);
        pastLength = tensor::DimOp::create(b, loc, past, axis);
      }
      Value present =
          ConcatOp::create(at, opLoc, rowsType, ValueRange{past, rows}, axis);
      Value used = kind == "key" ? swapLastAxes(at, opLoc, present) : present;
      (kind == "key" ? attention.scores.getRhsMutable()
                     : attention.weighted.getRhsMutable())
          .assign(used);
      presents.push_back(present);
      presentAttrs.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr(
               kNameAttr, builder.getStringAttr(
                              ("present." + Twine(layer) + "." + kind).str())),
           builder.getNamedAttr(kDimNamesAttr,
                                dimNames(builder, rowsType, axis, totalDim))}));
    }
  }

  PositionRewriter positions(func, seq, pastLength, maxContext);
  for (const Attention &attention : attentions)
    for (Value mask : attention.masks)
      if (failed(positions.rewriteMask(mask)))
        return failure();
  positions.rewritePositions();

  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  unsigned first = func.getNumResults();
  returnOp->insertOperands(first, presents);
  for (auto [i, present] : llvm::enumerate(presents))
    if (failed(
            func.insertResult(first + i, present.getType(), presentAttrs[i])))
      return failure();
  return success();
}

struct ExposePastKeysValuesPass
    : kiln::impl::ExposePastKeysValuesPassBase<ExposePastKeysValuesPass> {
  using ExposePastKeysValuesPassBase::ExposePastKeysValuesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (isEntryPoint(func))
        entries.push_back(func);
    if (maxContext <= 0) {
      emitError(module.getLoc(), "the KV cache needs a positive max-context");
      return signalPassFailure();
    }
    if (entries.size() != 1)
      return;
    func::FuncOp func = entries[0];
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
          name && name.getValue().starts_with("past_key_values."))
        return;
    if (!llvm::hasSingleElement(func.getBody())) {
      emitError(func.getLoc(), "entry points must have a single block");
      return signalPassFailure();
    }
    if (failed(exposePast(module, func, maxContext)))
      signalPassFailure();
  }
};

} // namespace
