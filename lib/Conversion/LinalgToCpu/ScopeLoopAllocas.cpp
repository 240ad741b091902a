//===- ScopeLoopAllocas.cpp - stack buffers freed every iteration ---------===//
//
// Parallel loops are automatic allocation scopes: a memref.alloca in an
// scf.forall or scf.parallel body lives for one iteration (which is why
// canonicalization inlines an alloca_scope there). Once such a loop runs
// sequentially (an outlined body's loop over its range, or a loop left
// serial) that meaning is lost when it becomes control flow, and the stack
// grows with every iteration: attention over 512 keys overflowed an 8 MiB
// stack. This pass saves the stack pointer at the start of the body of
// every loop that still allocates on the stack and restores it at the end,
// right before loops are lowered. (A memref.alloca_scope would say the
// same, but it must stay one block, and the loops it would hold are lowered
// to control flow before it is.)
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_SCOPELOOPALLOCASPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Releases what `body` allocates on the stack when it ends.
void scopeBody(Block *body, Location loc) {
  OpBuilder b = OpBuilder::atBlockBegin(body);
  Value stack = LLVM::StackSaveOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  b.setInsertionPoint(body->getTerminator());
  LLVM::StackRestoreOp::create(b, loc, stack);
}

struct ScopeLoopAllocasPass
    : kiln::impl::ScopeLoopAllocasPassBase<ScopeLoopAllocasPass> {
  void runOnOperation() override {
    SmallVector<std::pair<Block *, Location>> bodies;
    getOperation()->walk([&](Operation *op) {
      if (!isa<scf::ForOp, scf::ParallelOp>(op))
        return;
      Block *body = &op->getRegion(0).front();
      if (llvm::any_of(body->getOperations(), [](Operation &nested) {
            return isa<memref::AllocaOp>(nested);
          }))
        bodies.push_back({body, op->getLoc()});
    });
    for (auto [body, loc] : bodies)
      scopeBody(body, loc);
  }
};

} // namespace
