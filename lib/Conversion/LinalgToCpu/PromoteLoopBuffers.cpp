//===- PromoteLoopBuffers.cpp - per-iteration scratch on the stack --------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/LinalgToCpu/AbiLayout.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"

namespace kiln {
#define GEN_PASS_DEF_PROMOTELOOPBUFFERSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// True if the buffer `alloc` returns, or any view of it or loop result
/// carrying it, reaches a terminator: it then lives past the iteration that
/// allocated it (a value carried to the next iteration of a sequential loop,
/// or returned).
bool escapesIteration(memref::AllocOp alloc) {
  SmallVector<Value> worklist = {alloc.getResult()};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    if (!seen.insert(current).second)
      continue;
    for (Operation *user : current.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        return true;
      if (isa<ViewLikeOpInterface, RegionBranchOpInterface>(user))
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            worklist.push_back(result);
    }
  }
  return false;
}

struct PromoteLoopBuffersPass
    : kiln::impl::PromoteLoopBuffersPassBase<PromoteLoopBuffersPass> {
  using PromoteLoopBuffersPassBase::PromoteLoopBuffersPassBase;

  void runOnOperation() override {
    llvm::MapVector<Operation *, SmallVector<memref::AllocOp>> promoted;
    getOperation()->walk([&](memref::AllocOp alloc) {
      auto loop = alloc->getParentOfType<scf::ForallOp>();
      MemRefType type = alloc.getType();
      if (!loop || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !type.getElementType().isIntOrFloat())
        return;
      int64_t bytes = type.getNumElements() *
                      llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      if (bytes > maxBytes || escapesIteration(alloc))
        return;
      promoted[loop].push_back(alloc);
    });
    for (auto &[loopOp, allocs] : promoted) {
      auto loop = cast<scf::ForallOp>(loopOp);
      Block *body = loop.getBody();
      OpBuilder b = OpBuilder::atBlockBegin(body);
      auto scope = memref::AllocaScopeOp::create(b, loop.getLoc(), TypeRange{});
      Block *scopeBody = b.createBlock(&scope.getBodyRegion());
      // Everything but the loop's terminator moves into the scope.
      scopeBody->getOperations().splice(scopeBody->end(), body->getOperations(),
                                        std::next(Block::iterator(scope)),
                                        body->getTerminator()->getIterator());
      b.setInsertionPointToEnd(scopeBody);
      memref::AllocaScopeReturnOp::create(b, loop.getLoc());
      // The allocas go before the scope's first op, which may be one of the
      // allocs they replace: all are created before any alloc is erased.
      b.setInsertionPointToStart(scopeBody);
      SmallVector<Value> stack;
      for (memref::AllocOp alloc : allocs)
        stack.push_back(memref::AllocaOp::create(
            b, alloc.getLoc(), alloc.getType(), ValueRange{},
            b.getI64IntegerAttr(kiln::abi::kAlignment)));
      for (auto [alloc, buffer] : llvm::zip_equal(allocs, stack)) {
        alloc.replaceAllUsesWith(buffer);
        alloc.erase();
      }
    }
  }
};

} // namespace
