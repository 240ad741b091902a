//===- BuildKvCache.cpp - a with-past decoder's cache in session state ----===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Regex.h"

namespace kiln {
#define GEN_PASS_DEF_BUILDKVCACHEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// One past input and the present output it becomes.
struct CachePair {
  BlockArgument past;
  unsigned presentIndex;
  ConcatOp append;
  std::string stateName;
};

StringRef getName(func::FuncOp func, BlockArgument argument) {
  auto name =
      func.getArgAttrOfType<StringAttr>(argument.getArgNumber(), kNameAttr);
  return name ? name.getValue() : StringRef();
}

/// The dimension `past` grows along: its one dynamic dimension after the
/// batch, which must be 1 (the cache holds one sequence).
FailureOr<int64_t> getCacheAxis(func::FuncOp func, BlockArgument past) {
  auto type = cast<RankedTensorType>(past.getType());
  StringRef name = getName(func, past);
  if (type.getRank() < 2 || type.isDynamicDim(0) || type.getDimSize(0) != 1)
    return emitError(func.getLoc())
           << "input '" << name << "' has type " << type
           << "; the KV cache holds one sequence: fix its "
              "batch dimension to 1 (--dim NAME=1)";
  int64_t axis = -1;
  for (int64_t d = 1; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d))
      continue;
    if (axis >= 0)
      return emitError(func.getLoc())
             << "input '" << name << "' has type " << type
             << "; a past input grows along one dynamic "
                "dimension";
    axis = d;
  }
  if (axis < 0)
    return emitError(func.getLoc())
           << "input '" << name << "' has type " << type
           << "; a past input needs a dynamic sequence "
              "dimension";
  return axis;
}

/// The past inputs of `func` paired with their present outputs, each
/// present being `concat(past, new)` along the cache axis.
FailureOr<SmallVector<CachePair>> findPairs(func::FuncOp func, int64_t &axis) {
  llvm::Regex pastName("^past_key_values\\.([0-9]+)\\.(key|value)$");
  llvm::StringMap<unsigned> results;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto name = func.getResultAttrOfType<StringAttr>(i, kNameAttr))
      results[name.getValue()] = i;
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<CachePair> pairs;
  axis = -1;
  for (BlockArgument argument : func.getArguments()) {
    SmallVector<StringRef> match;
    if (!pastName.match(getName(func, argument), &match))
      continue;
    std::string present = ("present." + match[1] + "." + match[2]).str();
    auto result = results.find(present);
    if (result == results.end())
      return emitError(func.getLoc()) << "input '" << getName(func, argument)
                                      << "' has no output '" << present << "'";
    FailureOr<int64_t> argumentAxis = getCacheAxis(func, argument);
    if (failed(argumentAxis))
      return failure();
    if (axis >= 0 && *argumentAxis != axis)
      return emitError(func.getLoc())
             << "past inputs grow along different axes";
    axis = *argumentAxis;
    auto append = returnOp.getOperand(result->second).getDefiningOp<ConcatOp>();
    if (!append || append.getInputs().size() != 2 ||
        append.getInputs()[0] != argument ||
        static_cast<int64_t>(append.getAxis()) != axis)
      return emitError(func.getLoc())
             << "output '" << present << "' is not input '"
             << getName(func, argument) << "' with the new positions "
             << "appended (a Concat along axis " << axis << ")";
    pairs.push_back({argument, result->second, append,
                     ("kv_cache." + match[1] + "." + match[2]).str()});
  }
  if (pairs.empty())
    return emitError(func.getLoc())
           << "no input named past_key_values.N.key or .value: the KV cache "
              "needs a decoder exported with past keys and values";
  return pairs;
}

/// Where one past input lives: its values (f32 or int8) and, for int8,
/// one f32 scale per head and position. Float keys that attention reads
/// transposed (`[..., depth, positions]`) are stored that way, so a call
/// reads the cache in place instead of transposing all of it.
struct CacheState {
  std::string values, scales;
  RankedTensorType valuesType, scalesType;
  int64_t axis; // the state's axis of positions
  bool transposed = false;
};

/// The permutation swapping the last two of `rank` dimensions.
SmallVector<int64_t> swapLastTwo(int64_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

/// `value` with its last two dimensions swapped.
Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> perm = swapLastTwo(type.getRank());
  SmallVector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(type.getDimSize(d));
  return TransposeOp::create(b, loc, type.clone(shape), value,
                             b.getDenseI64ArrayAttr(perm));
}

/// Whether the present of `pair`, growing along `axis`, is read with its
/// last two dimensions swapped (keys, for attention's scores).
bool isReadTransposed(CachePair pair, int64_t axis) {
  int64_t rank = pair.append.getType().getRank();
  if (axis != rank - 2)
    return false;
  return llvm::any_of(pair.append->getUsers(), [&](Operation *user) {
    auto transpose = dyn_cast<TransposeOp>(user);
    return transpose && llvm::equal(transpose.getPerm(), swapLastTwo(rank));
  });
}

FailureOr<CacheState> declareState(OpBuilder &moduleBuilder, Location loc,
                                   const CachePair &pair,
                                   RankedTensorType pastType, int64_t axis,
                                   int64_t maxContext, bool int8) {
  SmallVector<int64_t> shape(pastType.getShape());
  shape[axis] = maxContext;
  CacheState state;
  state.axis = axis;
  state.values = pair.stateName;
  if (!int8) {
    if (isReadTransposed(pair, axis)) {
      state.transposed = true;
      state.axis = axis + 1;
      std::swap(shape[axis], shape[axis + 1]);
    }
    state.valuesType = RankedTensorType::get(shape, pastType.getElementType());
  } else {
    int64_t depth = pastType.getRank() - 1;
    if (depth == axis || pastType.isDynamicDim(depth) ||
        !pastType.getElementType().isF32())
      return emitError(loc) << "an int8 KV cache needs float32 past inputs "
                               "with a fixed last dimension, got "
                            << pastType;
    state.valuesType =
        RankedTensorType::get(shape, moduleBuilder.getIntegerType(8));
    shape[depth] = 1;
    state.scales = pair.stateName + ".scale";
    state.scalesType = RankedTensorType::get(shape, moduleBuilder.getF32Type());
    StateOp::create(moduleBuilder, loc, state.scales, state.scalesType,
                    ElementsAttr());
  }
  StateOp::create(moduleBuilder, loc, state.values, state.valuesType,
                  ElementsAttr());
  return state;
}

/// Zero points for int8 values with `scalesType`'s scales (dynamic
/// along `axis`, `size` long): the cache is quantized symmetrically.
Value getZeroPoints(OpBuilder &b, Location loc, RankedTensorType scalesType,
                    Value size, int64_t axis) {
  Value zero = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, b.getIntegerType(8)),
                             b.getI8IntegerAttr(0)));
  return BroadcastOp::create(b, loc, scalesType.clone(b.getIntegerType(8)),
                             zero, ValueRange{size});
}

/// Writes `update`'s positions at `offset` (a tensor<i64>): as they are,
/// or for int8 each head and position scaled by its largest magnitude.
/// Returns the values' update.
Operation *appendPositions(OpBuilder &b, Location loc, const CacheState &state,
                           Value update, Value offset) {
  if (state.transposed)
    update = transposeLastTwo(b, loc, update);
  if (state.scales.empty())
    return StateUpdateOp::create(b, loc, update, state.values, state.axis,
                                 offset);
  auto updateType = cast<RankedTensorType>(update.getType());
  int64_t depth = updateType.getRank() - 1;
  SmallVector<int64_t> shape(updateType.getShape());
  shape[depth] = 1;
  auto scaleType = RankedTensorType::get(shape, b.getF32Type());
  auto scalar = [&](float value) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                               b.getF32FloatAttr(value)));
  };
  Value magnitude = AbsOp::create(b, loc, updateType, update);
  Value largest =
      ReduceMaxOp::create(b, loc, scaleType, magnitude,
                          b.getDenseI64ArrayAttr({depth}), b.getUnitAttr());
  // The tiny bias keeps an all-zero row's scale above 0.
  Value scale = DivOp::create(
      b, loc, scaleType,
      AddOp::create(b, loc, scaleType, largest, scalar(1e-30f)), scalar(127));
  Value count = tensor::DimOp::create(b, loc, update, state.axis);
  Value quantized = QuantizeOp::create(
      b, loc, updateType.clone(b.getIntegerType(8)), update, scale,
      getZeroPoints(b, loc, scaleType, count, state.axis),
      b.getI64IntegerAttr(depth),
      b.getI64IntegerAttr(updateType.getDimSize(depth)), UnitAttr());
  Operation *write = StateUpdateOp::create(b, loc, quantized, state.values,
                                           state.axis, offset);
  StateUpdateOp::create(b, loc, scale, state.scales, state.axis, offset);
  return write;
}

/// Erases `op`, unused, and the reads and views that fed only it.
void eraseUnusedReads(Operation *op) {
  // A set: an op with two erased users must not be queued twice.
  llvm::SetVector<Operation *> worklist;
  worklist.insert(op);
  while (!worklist.empty()) {
    Operation *next = worklist.pop_back_val();
    if (!next->use_empty() || !isa<StateReadOp, DynamicSliceOp, DequantizeOp,
                                   BroadcastOp, ConstantOp, TransposeOp>(next))
      continue;
    for (Value operand : next->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        worklist.insert(producer);
    next->erase();
  }
}

/// The first `size` positions of `state` as `type` (float): a view of the
/// state, or its int8 values dequantized with their scales.
Value readPrefix(OpBuilder &b, Location loc, const CacheState &state, Type type,
                 Value zero, Value size) {
  auto prefixOf = [&](StringRef name, RankedTensorType stateType) {
    SmallVector<int64_t> shape(stateType.getShape());
    shape[state.axis] = ShapedType::kDynamic;
    Value whole = StateReadOp::create(b, loc, stateType, name);
    return DynamicSliceOp::create(
        b, loc, RankedTensorType::get(shape, stateType.getElementType()), whole,
        b.getDenseI64ArrayAttr({state.axis}), ValueRange{zero},
        ValueRange{size});
  };
  Value values = prefixOf(state.values, state.valuesType);
  // In the graph's layout; the graph's own transpose for attention then
  // cancels this one.
  if (state.transposed)
    return transposeLastTwo(b, loc, values);
  if (state.scales.empty())
    return values;
  Value scales = prefixOf(state.scales, state.scalesType);
  int64_t depth = state.valuesType.getRank() - 1;
  return DequantizeOp::create(
      b, loc, type, values, scales,
      getZeroPoints(b, loc, cast<RankedTensorType>(scales.getType()), size,
                    state.axis),
      b.getI64IntegerAttr(depth),
      b.getI64IntegerAttr(state.valuesType.getDimSize(depth)), UnitAttr());
}

/// The entry `truncate(length) -> length`: keeps the first `length`
/// positions of the cache (at most those filled) and forgets the rest, so
/// the next decode continues after them: rejected draft tokens, or a
/// prompt shared by several continuations. Returns the positions kept.
void buildTruncate(ModuleOp module, Location loc, RankedTensorType lengthType) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto truncate = func::FuncOp::create(
      b, loc, "truncate", b.getFunctionType({lengthType}, {lengthType}));
  truncate.setArgAttr(0, kNameAttr, b.getStringAttr("length"));
  truncate.setResultAttr(0, kNameAttr, b.getStringAttr("length"));
  b.setInsertionPointToStart(truncate.addEntryBlock());
  Value requested =
      tensor::ExtractOp::create(b, loc, truncate.getArgument(0), ValueRange());
  Value filled = tensor::ExtractOp::create(
      b, loc, StateReadOp::create(b, loc, lengthType, "kv_cache.length"),
      ValueRange());
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value kept = arith::MaxSIOp::create(
      b, loc, arith::MinSIOp::create(b, loc, requested, filled), zero);
  Value result = tensor::FromElementsOp::create(b, loc, lengthType, kept);
  StateWriteOp::create(b, loc, result, "kv_cache.length");
  func::ReturnOp::create(b, loc, result);
}

LogicalResult buildCache(ModuleOp module, func::FuncOp func, int64_t maxContext,
                         bool int8) {
  int64_t axis;
  FailureOr<SmallVector<CachePair>> pairs = findPairs(func, axis);
  if (failed(pairs))
    return failure();
  MLIRContext *context = module.getContext();
  Location loc = func.getLoc();
  OpBuilder moduleBuilder = OpBuilder::atBlockBegin(module.getBody());
  auto lengthType = RankedTensorType::get({}, moduleBuilder.getI64Type());
  StateOp::create(moduleBuilder, loc, "kv_cache.length", lengthType,
                  ElementsAttr());

  // The filled length, read once, clamped to the cache so every size
  // derived from it has a bound.
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value lengthTensor =
      StateReadOp::create(b, loc, lengthType, "kv_cache.length");
  Value raw = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      tensor::ExtractOp::create(b, loc, lengthTensor));
  AffineExpr d0 = getAffineDimExpr(0, context);
  Value atLeastZero = affine::AffineMaxOp::create(
      b, loc,
      AffineMap::get(1, 0, {d0, getAffineConstantExpr(0, context)}, context),
      ValueRange{raw});
  Value length = affine::AffineMinOp::create(
      b, loc,
      AffineMap::get(1, 0, {d0, getAffineConstantExpr(maxContext, context)},
                     context),
      ValueRange{atLeastZero});
  std::string pastDim;
  if (auto names = func.getArgAttrOfType<ArrayAttr>(
          (*pairs)[0].past.getArgNumber(), kDimNamesAttr))
    pastDim = cast<StringAttr>(names[axis]).getValue().str();

  Value added;
  for (auto [index, pair] : llvm::enumerate(*pairs)) {
    auto pastType = cast<RankedTensorType>(pair.past.getType());
    FailureOr<CacheState> state = declareState(
        moduleBuilder, loc, pair, pastType, axis, maxContext, int8);
    if (failed(state))
      return failure();

    // The past: the filled prefix of the state.
    b.setInsertionPointAfterValue(length);
    Value past = readPrefix(b, loc, *state, pastType, zero, length);
    pair.past.replaceAllUsesWith(past);

    // The present: the new positions written in place, then the prefix
    // including them.
    b.setInsertionPoint(pair.append);
    Value update = pair.append.getInputs()[1];
    Value count = tensor::DimOp::create(b, loc, update, axis);
    if (!added)
      added = count;
    Operation *write = appendPositions(b, loc, *state, update, lengthTensor);
    if (index == 0)
      write->setAttr(
          kOverflowErrorAttr,
          b.getStringAttr("the context would exceed the KV cache's " +
                          std::to_string(maxContext) +
                          " positions (--max-context); reset the "
                          "session to start a new sequence"));
    Value total = arith::AddIOp::create(b, loc, length, count);
    Value present =
        readPrefix(b, loc, *state, pair.append.getType(), zero, total);
    pair.append.getResult().replaceAllUsesWith(present);
    pair.append.erase();
    // Usually the append was the past's only use; reads left behind would
    // be copied, since the state is written after them.
    if (past.use_empty())
      eraseUnusedReads(past.getDefiningOp());
  }

  // The positions filled after this call.
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(returnOp);
  Value next = arith::IndexCastOp::create(
      b, loc, b.getI64Type(), arith::AddIOp::create(b, loc, length, added));
  StateWriteOp::create(b, loc,
                       tensor::FromElementsOp::create(b, loc, lengthType, next),
                       "kv_cache.length");

  llvm::BitVector results(func.getNumResults()),
      arguments(func.getNumArguments());
  for (const CachePair &pair : *pairs) {
    results.set(pair.presentIndex);
    arguments.set(pair.past.getArgNumber());
  }
  SmallVector<Value> kept;
  for (auto [i, operand] : llvm::enumerate(returnOp.getOperands()))
    if (!results.test(i))
      kept.push_back(operand);
  returnOp->setOperands(kept);
  if (failed(func.eraseResults(results)) ||
      failed(func.eraseArguments(arguments)))
    return failure();
  func.setSymName("decode");
  buildTruncate(module, loc, lengthType);

  // The past length is no input's dimension any more.
  bool stillUsed = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto names = func.getArgAttrOfType<ArrayAttr>(i, kDimNamesAttr))
      stillUsed |= llvm::is_contained(names.getAsValueRange<StringAttr>(),
                                      StringRef(pastDim));
  if (auto dims = module->getAttrOfType<ArrayAttr>(kDimsAttr);
      dims && !stillUsed) {
    SmallVector<Attribute> kept;
    // Computed dimensions reading it sized the present outputs, now gone.
    for (auto dim : dims.getAsRange<DimAttr>())
      if (dim.getName() != pastDim &&
          !(dim.isComputed() &&
            llvm::is_contained(dim.getOperands().getAsValueRange<StringAttr>(),
                               StringRef(pastDim))))
        kept.push_back(dim);
    if (kept.empty())
      module->removeAttr(kDimsAttr);
    else
      module->setAttr(kDimsAttr, ArrayAttr::get(context, kept));
  }
  return success();
}

struct BuildKvCachePass : kiln::impl::BuildKvCachePassBase<BuildKvCachePass> {
  using BuildKvCachePassBase::BuildKvCachePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (maxContext <= 0) {
      emitError(module.getLoc(), "the KV cache needs a positive max-context");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (isEntryPoint(func))
        entries.push_back(func);
    if (entries.size() != 1) {
      emitError(module.getLoc(), "the KV cache is built for a module with one "
                                 "entry point, this one has ")
          << entries.size();
      return signalPassFailure();
    }
    if (!llvm::hasSingleElement(entries[0].getBody())) {
      emitError(entries[0].getLoc(), "entry points must have a single block");
      return signalPassFailure();
    }
    if (failed(buildCache(module, entries[0], maxContext, int8)))
      return signalPassFailure();
  }
};

} // namespace
