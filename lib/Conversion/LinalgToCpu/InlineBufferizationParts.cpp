//===- InlineBufferizationParts.cpp - parts back into their callers -------===//
//
// The parts kiln-split-for-bufferization cut out exist only to bound
// one-shot bufferization's work. Once bufferized, they go back where they
// were called, so that the rest of the pipeline (result buffers, memory
// planning, the split before LLVM) sees one function, as it would have.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/LinalgToCpu/FunctionSplitter.h"

#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_INLINEBUFFERIZATIONPARTSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct InlineBufferizationPartsPass
    : kiln::impl::InlineBufferizationPartsPassBase<
          InlineBufferizationPartsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // One walk for all calls: a symbol-use query per part would walk the
    // module once per part.
    llvm::MapVector<func::FuncOp, SmallVector<func::CallOp, 1>> calls;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kiln::kBufferizationPartAttr))
        calls[func];
    module.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (auto it = calls.find(callee); it != calls.end())
        it->second.push_back(call);
    });
    for (auto &[part, partCalls] : calls) {
      if (partCalls.size() != 1 || !llvm::hasSingleElement(part.getBody())) {
        part.emitError("a part cut for bufferization must have one block "
                       "and be called once");
        return signalPassFailure();
      }
      func::CallOp call = partCalls.front();
      Block &body = part.front();
      for (auto [argument, operand] :
           llvm::zip_equal(body.getArguments(), call.getOperands()))
        argument.replaceAllUsesWith(operand);
      Operation *ret = body.getTerminator();
      call.replaceAllUsesWith(ret->getOperands());
      call->getBlock()->getOperations().splice(
          call->getIterator(), body.getOperations(), body.begin(),
          ret->getIterator());
      call.erase();
    }
    for (auto &entry : calls)
      symbols.erase(entry.first);
  }
};

} // namespace
