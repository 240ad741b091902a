//===- BuildKvCache.cpp - a with-past decoder's cache in session state ----===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

LogicalResult buildCache(ModuleOp module, func::FuncOp func,
                         int64_t maxContext) {
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
    SmallVector<int64_t> shape(pastType.getShape());
    shape[axis] = maxContext;
    auto stateType = RankedTensorType::get(shape, pastType.getElementType());
    StateOp::create(moduleBuilder, loc, pair.stateName, stateType,
                    ElementsAttr());

    // The past: the filled prefix of the state.
    b.setInsertionPointAfterValue(length);
    Value cache = StateReadOp::create(b, loc, stateType, pair.stateName);
    Value past = DynamicSliceOp::create(b, loc, pastType, cache,
                                        b.getDenseI64ArrayAttr({axis}),
                                        ValueRange{zero}, ValueRange{length});
    pair.past.replaceAllUsesWith(past);

    // The present: the new positions written in place, then the prefix
    // including them.
    b.setInsertionPoint(pair.append);
    Value update = pair.append.getInputs()[1];
    Value count = tensor::DimOp::create(b, loc, update, axis);
    if (!added)
      added = count;
    auto write = StateUpdateOp::create(b, loc, update, pair.stateName, axis,
                                       lengthTensor);
    if (index == 0)
      write->setAttr(
          kOverflowErrorAttr,
          b.getStringAttr("the context would exceed the KV cache's " +
                          std::to_string(maxContext) +
                          " positions (--max-context); reset the "
                          "session to start a new sequence"));
    Value total = arith::AddIOp::create(b, loc, length, count);
    Value updated = StateReadOp::create(b, loc, stateType, pair.stateName);
    Value present = DynamicSliceOp::create(
        b, loc, pair.append.getType(), updated, b.getDenseI64ArrayAttr({axis}),
        ValueRange{zero}, ValueRange{total});
    pair.append.getResult().replaceAllUsesWith(present);
    pair.append.erase();
    // Usually the append was the past's only use; a read left behind would
    // be copied, since the state is written after it.
    if (past.use_empty()) {
      past.getDefiningOp()->erase();
      cache.getDefiningOp()->erase();
    }
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

  // The past length is no input's dimension any more.
  bool stillUsed = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto names = func.getArgAttrOfType<ArrayAttr>(i, kDimNamesAttr))
      stillUsed |= llvm::is_contained(names.getAsValueRange<StringAttr>(),
                                      StringRef(pastDim));
  if (auto dims = module->getAttrOfType<ArrayAttr>(kDimsAttr);
      dims && !stillUsed) {
    SmallVector<Attribute> kept;
    for (auto dim : dims.getAsRange<DimAttr>())
      if (dim.getName() != pastDim)
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
    if (failed(buildCache(module, entries[0], maxContext)))
      return signalPassFailure();
  }
};

} // namespace
