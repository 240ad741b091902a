//===- OutlineParallelLoops.cpp - parallel loops on the runtime's threads -===//
//
// The runtime's executor takes a function over a range of iterations and a
// closure. This pass produces the function (the loop body over a range) and a
// call naming it; code generation packs the call's operands into the
// closure, because only after lowering to LLVM are their types final.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "lib/Conversion/LinalgToCpu/ContextArguments.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Iterations a flattened space should have, so the executor can balance
/// threads that finish at different times.
constexpr int64_t kMinFlatIterations = 64;

std::optional<int64_t> getTripCount(Value lower, Value upper, Value step) {
  std::optional<int64_t> lb = getConstantIntValue(lower),
                         ub = getConstantIntValue(upper),
                         st = getConstantIntValue(step);
  if (!lb || !ub || !st || *st <= 0)
    return std::nullopt;
  return *ub <= *lb ? 0 : llvm::divideCeil(*ub - *lb, *st);
}

/// The largest trip count a loop can have: its count if constant, else
/// from the upper bound of its end (a dynamic loop sized by a named
/// dimension, bounded by kiln-bind-dimensions).
std::optional<int64_t> getMaxTripCount(Value lower, Value upper, Value step) {
  if (std::optional<int64_t> trip = getTripCount(lower, upper, step))
    return trip;
  std::optional<int64_t> st = getConstantIntValue(step);
  FailureOr<int64_t> ub = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(upper),
      /*stopCondition=*/nullptr, /*closedUB=*/true);
  FailureOr<int64_t> lb = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::LB, ValueBoundsConstraintSet::Variable(lower));
  if (!st || *st <= 0 || failed(ub) || failed(lb))
    return std::nullopt;
  return *ub <= *lb ? 0 : llvm::divideCeil(*ub - *lb, *st);
}

/// The trip count of a loop dimension as a value computed where `b` is.
Value createTripCount(OpBuilder &b, Location loc, Value lower, Value upper,
                      Value step) {
  if (std::optional<int64_t> trip = getTripCount(lower, upper, step))
    return arith::ConstantIndexOp::create(b, loc, *trip);
  Value span = arith::SubIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, upper, lower), lower);
  return arith::CeilDivUIOp::create(b, loc, span, step);
}

/// Scalar operations one execution of `op` runs (a vector op counts its
/// elements), its loops multiplied out at their largest trip counts; a
/// loop without a bound counts as one iteration.
double estimateWork(Operation *op) {
  double own = 1;
  for (Type type : op->getResultTypes())
    if (auto vector = dyn_cast<VectorType>(type))
      own = std::max<double>(own, vector.getNumElements());
  double inner = 0;
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &nested : block)
        inner += estimateWork(&nested);
  double trips = 1;
  if (auto loop = dyn_cast<scf::ForOp>(op)) {
    trips = getMaxTripCount(loop.getLowerBound(), loop.getUpperBound(),
                            loop.getStep())
                .value_or(1);
  } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    for (auto [lb, ub, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
      trips *= getMaxTripCount(lb, ub, step).value_or(1);
  }
  return own + trips * inner;
}

/// Types a loop body takes as arguments: scalars, pointers, and buffers
/// of identity layout (their sizes travel in their descriptors).
bool isPassable(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return memref.getLayout().isIdentity() && !memref.getMemorySpace();
  return type.isIntOrIndexOrFloat() || isa<LLVM::LLVMPointerType>(type);
}

/// What the body needs from outside: values passed in, and side-effect free
/// ops recreated inside (so views of any layout never cross the call).
struct LoopInputs {
  SetVector<Value> arguments;
  SetVector<Operation *> recomputed;
};

FailureOr<LoopInputs> collectInputs(scf::ParallelOp loop) {
  SetVector<Value> worklist;
  getUsedValuesDefinedAbove(loop.getRegion(), worklist);
  worklist.insert(loop->operand_begin(), loop->operand_end());
  LoopInputs inputs;
  for (size_t i = 0; i < worklist.size(); ++i) {
    Value value = worklist[i];
    Operation *def = value.getDefiningOp();
    if (def && def->getNumRegions() == 0 && isMemoryEffectFree(def)) {
      if (inputs.recomputed.insert(def))
        worklist.insert(def->operand_begin(), def->operand_end());
      continue;
    }
    if (!isPassable(value.getType()))
      return failure();
    inputs.arguments.insert(value);
  }
  inputs.recomputed = topologicalSort(inputs.recomputed);
  return inputs;
}

/// Replaces `loop` by a call running its body on the executor of `func`,
/// or leaves it in place when it doesn't qualify.
LogicalResult outlineLoop(scf::ParallelOp loop, func::FuncOp func,
                          SymbolTable &symbols) {
  if (!loop.getInitVals().empty())
    return success();
  unsigned rank = loop.getNumLoops();
  // Trip counts at their largest (run-time counts for dynamic loops). A
  // run-time count with no known bound (a quotient: blocks of a sequence
  // of any length, as attention's) is taken to be wide enough to share;
  // the executor runs a count of 1 in place.
  SmallVector<int64_t> trips;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
    trips.push_back(getMaxTripCount(lb, ub, step).value_or(kMinFlatIterations));
  // Flatten leading dimensions until the space is wide enough, keeping the
  // innermost one as a loop of its own unless nothing else can be shared:
  // it is the one LLVM vectorizes.
  unsigned flat = 0;
  int64_t count = 1;
  while (flat < trips.size() && (flat == 0 || count < kMinFlatIterations) &&
         (flat + 1 < rank || count < 2)) {
    count *= trips[flat];
    ++flat;
  }
  if (flat == 0 || count < 2)
    return success();
  FailureOr<LoopInputs> inputs = collectInputs(loop);
  if (failed(inputs))
    return success();
  FailureOr<BlockArgument> executor = kiln::getOrAddContextArgument(
      func, kiln::kExecutorAttr, LLVM::LLVMPointerType::get(loop.getContext()));
  if (failed(executor))
    return failure();
  StringRef functionName = func.getSymName();

  MLIRContext *context = loop.getContext();
  Location loc = loop.getLoc();
  auto indexType = IndexType::get(context);
  SmallVector<Type> bodyTypes = {indexType, indexType};
  for (Value value : inputs->arguments)
    bodyTypes.push_back(value.getType());
  OpBuilder moduleBuilder(context);
  auto body =
      func::FuncOp::create(moduleBuilder, loc, (functionName + "_parallel").str(),
                           FunctionType::get(context, bodyTypes, {}));
  body.setPrivate();
  symbols.insert(body);
  SmallVector<Type> dispatchTypes = {executor->getType(), indexType};
  llvm::append_range(dispatchTypes, llvm::drop_begin(bodyTypes, 2));
  auto dispatch = func::FuncOp::create(
      moduleBuilder, loc, ("kiln.parallel_for." + body.getSymName()).str(),
      FunctionType::get(context, dispatchTypes, {}));
  dispatch.setPrivate();
  symbols.insert(dispatch);

  Block *entry = body.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  for (auto [value, argument] :
       llvm::zip(inputs->arguments, entry->getArguments().drop_front(2)))
    mapping.map(value, argument);
  for (Operation *op : inputs->recomputed)
    b.clone(*op, mapping);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto flatLoop = scf::ForOp::create(b, loc, entry->getArgument(0),
                                     entry->getArgument(1), one);
  b.setInsertionPointToStart(flatLoop.getBody());
  // Delinearize, innermost flattened dimension fastest.
  Value remaining = flatLoop.getInductionVar();
  SmallVector<Value> ivs(flat);
  for (int dim = flat - 1; dim >= 0; --dim) {
    Value index = remaining;
    if (dim > 0) {
      Value trip = createTripCount(b, loc,
                                   mapping.lookup(loop.getLowerBound()[dim]),
                                   mapping.lookup(loop.getUpperBound()[dim]),
                                   mapping.lookup(loop.getStep()[dim]));
      index = arith::RemUIOp::create(b, loc, remaining, trip);
      remaining = arith::DivUIOp::create(b, loc, remaining, trip);
    }
    Value scaled = arith::MulIOp::create(b, loc, index,
                                         mapping.lookup(loop.getStep()[dim]));
    ivs[dim] = arith::AddIOp::create(b, loc, scaled,
                                     mapping.lookup(loop.getLowerBound()[dim]));
  }
  auto cloneBody = [&](OpBuilder &nb) {
    for (Operation &op : loop.getBody()->without_terminator())
      nb.clone(op, mapping);
  };
  for (unsigned dim = 0; dim < flat; ++dim)
    mapping.map(loop.getInductionVars()[dim], ivs[dim]);
  if (flat == rank) {
    cloneBody(b);
  } else {
    auto rest = [&](OperandRange values) {
      return llvm::map_to_vector(llvm::drop_begin(values, flat),
                                 [&](Value v) { return mapping.lookup(v); });
    };
    scf::ParallelOp::create(
        b, loc, rest(loop.getLowerBound()), rest(loop.getUpperBound()),
        rest(loop.getStep()), [&](OpBuilder &nb, Location, ValueRange inner) {
          // A copy (getInductionVars returns one): a temporary would die
          // before the loop over it runs.
          SmallVector<Value> outer = loop.getInductionVars();
          for (auto [old, fresh] :
               llvm::zip(llvm::drop_begin(outer, flat), inner))
            mapping.map(old, fresh);
          cloneBody(nb);
        });
  }
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, loc);

  b.setInsertionPoint(loop);
  // The iterations to share: constant unless a trip count is dynamic.
  int64_t constantTotal = 1;
  Value dynamicTotal;
  for (unsigned dim = 0; dim < flat; ++dim) {
    Value lb = loop.getLowerBound()[dim], ub = loop.getUpperBound()[dim],
          step = loop.getStep()[dim];
    if (std::optional<int64_t> trip = getTripCount(lb, ub, step)) {
      constantTotal *= *trip;
      continue;
    }
    Value trip = createTripCount(b, loc, lb, ub, step);
    dynamicTotal = dynamicTotal
                       ? arith::MulIOp::create(b, loc, dynamicTotal, trip)
                       : trip;
  }
  Value total = arith::ConstantIndexOp::create(b, loc, constantTotal);
  if (dynamicTotal)
    total = constantTotal == 1
                ? dynamicTotal
                : arith::MulIOp::create(b, loc, dynamicTotal, total);
  SmallVector<Value> operands = {*executor, total};
  llvm::append_range(operands, inputs->arguments);
  func::CallOp::create(b, loc, dispatch, operands);
  loop.erase();
  return success();
}

struct OutlineParallelLoopsPass
    : kiln::impl::OutlineParallelLoopsPassBase<OutlineParallelLoopsPass> {
  using OutlineParallelLoopsPassBase::OutlineParallelLoopsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp func : functions) {
      SmallVector<scf::ParallelOp> loops;
      func.walk([&](scf::ParallelOp loop) {
        if (!loop->getParentOfType<scf::ParallelOp>() &&
            estimateWork(loop) >= static_cast<double>(minWork))
          loops.push_back(loop);
      });
      for (scf::ParallelOp loop : loops)
        if (failed(outlineLoop(loop, func, symbols)))
          return signalPassFailure();
    }
  }
};

} // namespace
