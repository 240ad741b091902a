//===- SplitLargeFunctions.cpp - functions LLVM compiles in linear time ---===//
//
// A graph with thousands of small operations (a Concat of 2000 inputs, a
// Split into 2000 outputs) becomes one entry function with thousands of
// small loops, and parts of LLVM's middle end and its schedulers take time
// quadratic in a function's size. Cutting the function into parts of
// bounded size makes the whole compile linear in the graph's size.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITLARGEFUNCTIONSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Operations left in place and recreated in every part that uses them:
/// cheap to repeat, and passing them (views of any layout) would lengthen
/// the parts' signatures.
bool isRecomputable(Operation *op) {
  return op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
         isMemoryEffectFree(op);
}

/// Types a part takes or returns.
bool isPassable(Type type) {
  return isa<MemRefType, VectorType, LLVM::LLVMPointerType>(type) ||
         type.isIntOrIndexOrFloat();
}

int64_t countOps(Operation *op) {
  int64_t count = 0;
  op->walk([&](Operation *) { ++count; });
  return count;
}

class FunctionSplitter {
public:
  FunctionSplitter(func::FuncOp func, SymbolTable &symbols, int64_t maxOps)
      : func(func), symbols(symbols), maxOps(maxOps) {}

  /// Cuts `block`'s operations into runs of at most maxOps and outlines
  /// each; an operation larger than that has its regions split instead.
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
      if (isRecomputable(&op))
        continue;
      if (isa<memref::AllocaOp>(op)) {
        flush();
        continue;
      }
      int64_t ops = countOps(&op);
      if (ops > maxOps && op.getNumRegions() > 0) {
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
    // Views and constants only the moved operations used.
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(block.getOperations())))
      if (isRecomputable(&op) && op.use_empty())
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
      if (def && isRecomputable(def)) {
        if (recomputed.insert(def))
          worklist.insert(def->operand_begin(), def->operand_end());
        continue;
      }
      if (!isPassable(value.getType()))
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
          if (!isPassable(result.getType()))
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
    // LLVM's inliner would otherwise put the parts back together: each is
    // called once. (The conversion to the LLVM dialect keeps `passthrough`,
    // not `no_inline`.)
    part->setAttr(
        "passthrough",
        ArrayAttr::get(context, {StringAttr::get(context, "noinline")}));
    symbols.insert(part);

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
      if (inRun.contains(op) || (isRecomputable(op) && op->use_empty()))
        op->erase();
      op = previous;
    }
  }

  func::FuncOp func;
  SymbolTable &symbols;
  int64_t maxOps;
};

struct SplitLargeFunctionsPass
    : kiln::impl::SplitLargeFunctionsPassBase<SplitLargeFunctionsPass> {
  using SplitLargeFunctionsPassBase::SplitLargeFunctionsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions;
    // Entries only: they grow with the graph, where a kernel's body is as
    // large as its tiles (and a call in its inner loop would cost speed).
    for (auto func : module.getOps<func::FuncOp>())
      if (kiln::isEntryPoint(func) && countOps(func) > maxOps)
        functions.push_back(func);
    for (func::FuncOp func : functions) {
      FunctionSplitter splitter(func, symbols, maxOps);
      for (Block &block : func.getBody())
        splitter.splitBlock(block);
    }
  }
};

} // namespace
