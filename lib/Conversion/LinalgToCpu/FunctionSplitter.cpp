//===- FunctionSplitter.cpp - cut a function into outlined parts ----------===//
//
// Part of Kiln. See FunctionSplitter.h.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/LinalgToCpu/FunctionSplitter.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

int64_t kiln::countNestedOps(Operation *op) {
  int64_t count = 0;
  op->walk([&](Operation *) { ++count; });
  return count;
}

namespace {

class FunctionSplitter {
public:
  FunctionSplitter(func::FuncOp func, SymbolTable &symbols,
                   const kiln::SplitPolicy &policy, int64_t maxOps)
      : func(func), symbols(symbols), policy(policy), maxOps(maxOps) {}

  /// Cuts `block`'s operations into runs of at most maxOps and outlines
  /// each; an operation larger than that has its regions split instead
  /// where the policy allows it.
  void splitBlock(Block &block) {
    SmallVector<Operation *> run;
    int64_t runOps = 0;
    auto flush = [&] {
      if (!run.empty())
        outlineRun(block, run);
      run.clear();
      runOps = 0;
    };
    for (Operation &op :
         llvm::make_early_inc_range(block.without_terminator())) {
      if (policy.isRecomputable(&op))
        continue;
      if (policy.isBarrier(&op)) {
        flush();
        continue;
      }
      int64_t ops = kiln::countNestedOps(&op);
      if (ops > maxOps && op.getNumRegions() > 0 && policy.splitsRegions()) {
        flush();
        for (Region &region : op.getRegions())
          for (Block &nested : region)
            splitBlock(nested);
        continue;
      }
      if (runOps + ops > maxOps)
        flush();
      run.push_back(&op);
      runOps += ops;
    }
    flush();
    // Operations only the moved ones used.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(block.getOperations())))
      if (policy.isRecomputable(&op) && op.use_empty())
        op.erase();
  }

private:
  /// Moves `run` (operations of `block`, in order) into a new function and
  /// calls it in their place; leaves them when a value they share with the
  /// rest of the function cannot cross a call.
  void outlineRun(Block &block, ArrayRef<Operation *> run) {
    llvm::SmallPtrSet<Operation *, 32> inRun(run.begin(), run.end());
    auto isInRun = [&](Value value) {
      Operation *def = value.getDefiningOp();
      return def && inRun.contains(def);
    };

    // What the run uses from outside: passed, or recomputed inside.
    SetVector<Value> worklist;
    for (Operation *op : run) {
      worklist.insert(op->operand_begin(), op->operand_end());
      getUsedValuesDefinedAbove(op->getRegions(), worklist);
    }
    SetVector<Value> arguments;
    SetVector<Operation *> recomputed;
    for (size_t i = 0; i < worklist.size(); ++i) {
      Value value = worklist[i];
      if (isInRun(value))
        continue;
      Operation *def = value.getDefiningOp();
      if (def && policy.isRecomputable(def)) {
        if (recomputed.insert(def))
          worklist.insert(def->operand_begin(), def->operand_end());
        continue;
      }
      if (!policy.isPassable(value.getType()))
        return;
      arguments.insert(value);
    }
    // What the rest of the function uses from the run: a recomputed
    // operation among the run's counts only if something outside uses it.
    DenseMap<Operation *, bool> staysUsed;
    std::function<bool(Value)> isUsedOutside = [&](Value value) {
      return llvm::any_of(value.getUsers(), [&](Operation *user) {
        Operation *op = block.findAncestorOpInBlock(*user);
        if (inRun.contains(op))
          return false;
        if (!recomputed.contains(op))
          return true;
        if (auto known = staysUsed.find(op); known != staysUsed.end())
          return known->second;
        bool used = llvm::any_of(op->getResults(), isUsedOutside);
        staysUsed[op] = used;
        return used;
      });
    };
    SmallVector<Value> results;
    for (Operation *op : run)
      for (Value result : op->getResults())
        if (isUsedOutside(result)) {
          if (!policy.isPassable(result.getType()))
            return;
          results.push_back(result);
        }

    // Recomputed operations from enclosing blocks come first; those of this
    // block keep their place among the run's.
    SmallVector<Operation *> outer, ordered;
    for (Operation *op : recomputed)
      (op->getBlock() == &block ? ordered : outer).push_back(op);
    outer = llvm::to_vector(
        topologicalSort(SetVector<Operation *>(outer.begin(), outer.end())));
    llvm::append_range(ordered, run);
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });

    MLIRContext *context = func.getContext();
    Location loc = run.front()->getLoc();
    auto types = [](auto values) {
      return llvm::map_to_vector(values, [](Value v) { return v.getType(); });
    };
    OpBuilder moduleBuilder(context);
    auto part = func::FuncOp::create(
        moduleBuilder, loc, (func.getSymName() + "_part").str(),
        FunctionType::get(context, types(arguments), types(results)));
    part.setPrivate();
    symbols.insert(part);
    parts.push_back(part);

    Block *entry = part.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping mapping;
    mapping.map(arguments.getArrayRef(), entry->getArguments());
    for (Operation *op : outer)
      b.clone(*op, mapping);
    for (Operation *op : ordered)
      b.clone(*op, mapping);
    func::ReturnOp::create(b, loc, llvm::map_to_vector(results, [&](Value v) {
                             return mapping.lookup(v);
                           }));

    OpBuilder caller(run.front());
    auto call =
        func::CallOp::create(caller, loc, part, arguments.getArrayRef());
    for (auto [old, fresh] : llvm::zip(results, call.getResults()))
      old.replaceAllUsesWith(fresh);
    // Back to front: the run, and the views and constants among it that
    // only it used (they may use its values).
    Operation *op = run.back();
    while (op != call) {
      Operation *previous = op->getPrevNode();
      if (inRun.contains(op) || (policy.isRecomputable(op) && op->use_empty()))
        op->erase();
      op = previous;
    }
  }

  func::FuncOp func;
  SymbolTable &symbols;
  const kiln::SplitPolicy &policy;
  int64_t maxOps;

public:
  SmallVector<func::FuncOp> parts;
};

} // namespace

SmallVector<func::FuncOp> kiln::splitFunction(func::FuncOp func,
                                              SymbolTable &symbols,
                                              const SplitPolicy &policy,
                                              int64_t maxOps) {
  FunctionSplitter splitter(func, symbols, policy, maxOps);
  for (Block &block : func.getBody())
    splitter.splitBlock(block);
  return std::move(splitter.parts);
}
