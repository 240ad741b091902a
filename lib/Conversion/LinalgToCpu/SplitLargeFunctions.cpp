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

#include "lib/Conversion/LinalgToCpu/FunctionSplitter.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITLARGEFUNCTIONSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Buffers cross between parts; views and constants are recomputed, and
/// stack buffers stay in the entry's frame.
class BufferSplitPolicy : public kiln::SplitPolicy {
public:
  /// Cheap to repeat, and passing views (of any layout) would lengthen the
  /// parts' signatures.
  bool isRecomputable(Operation *op) const override {
    return op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
           isMemoryEffectFree(op);
  }
  bool isPassable(Type type) const override {
    return isa<MemRefType, VectorType, LLVM::LLVMPointerType>(type) ||
           type.isIntOrIndexOrFloat();
  }
  bool isBarrier(Operation *op) const override {
    return isa<memref::AllocaOp>(op);
  }
  bool splitsRegions() const override { return true; }
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
      if (kiln::isEntryPoint(func) && kiln::countNestedOps(func) > maxOps)
        functions.push_back(func);
    BufferSplitPolicy policy;
    MLIRContext *context = module.getContext();
    // LLVM's inliner would otherwise put the parts back together: each is
    // called once. (The conversion to the LLVM dialect keeps `passthrough`,
    // not `no_inline`.)
    auto noInline =
        ArrayAttr::get(context, {StringAttr::get(context, "noinline")});
    for (func::FuncOp func : functions)
      for (func::FuncOp part :
           kiln::splitFunction(func, symbols, policy, maxOps))
        part->setAttr("passthrough", noInline);
  }
};

} // namespace
