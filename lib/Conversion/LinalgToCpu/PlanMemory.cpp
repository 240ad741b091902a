//===- PlanMemory.cpp - static buffers in a per-session arena -------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;

struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes;
  int64_t start, end; // top-level op indices where the buffer is live
  int64_t offset = 0;
};

/// The last top-level op (index in `order`) that uses `value` or any view of
/// it, in the entry block.
int64_t getLastUse(Value value, Block &block,
                   const DenseMap<Operation *, int64_t> &order) {
  int64_t last = order.lookup(value.getDefiningOp());
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (Operation *user : current.getUsers()) {
      Operation *top = block.findAncestorOpInBlock(*user);
      if (top)
        last = std::max(last, order.lookup(top));
      // Any memref a user produces may alias the buffer (a view, a loop
      // result carrying it): its uses extend the buffer's life.
      for (Value result : user->getResults())
        if (isa<MemRefType>(result.getType()))
          worklist.push_back(result);
    }
  }
  return last;
}

/// First fit: the lowest aligned offset not overlapping a buffer that is
/// live at the same time.
void assignOffsets(MutableArrayRef<Buffer> buffers) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j = 0; j < i; ++j)
      if (buffers[j].start <= buffers[i].end &&
          buffers[i].start <= buffers[j].end)
        taken.push_back(
            {buffers[j].offset, buffers[j].offset + buffers[j].bytes});
    llvm::sort(taken);
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + buffers[i].bytes <= begin)
        break;
      offset = std::max<int64_t>(offset, llvm::alignTo(end, kAlignment));
    }
    buffers[i].offset = offset;
  }
}

int64_t planFunction(func::FuncOp func) {
  Block &block = func.getBody().front();
  DenseMap<Operation *, int64_t> order;
  for (auto [index, op] : llvm::enumerate(block))
    order[&op] = index;

  SmallVector<Buffer> buffers;
  for (auto alloc : block.getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    unsigned bits = type.getElementTypeBitWidth();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
        bits % 8 != 0 || type.getMemorySpace())
      continue;
    int64_t bytes = type.getNumElements() * (bits / 8);
    buffers.push_back(
        {alloc, bytes, order[alloc], getLastUse(alloc, block, order)});
  }
  assignOffsets(buffers);
  int64_t size = 0;
  for (const Buffer &buffer : buffers)
    size = std::max(size, buffer.offset + buffer.bytes);

  OpBuilder b(func.getContext());
  auto arenaType = MemRefType::get({size}, b.getI8Type());
  (void)func.insertArgument(func.getNumArguments(), arenaType,
                            b.getDictionaryAttr({}), func.getLoc());
  Value arena = func.getArgument(func.getNumArguments() - 1);
  for (Buffer &buffer : buffers) {
    b.setInsertionPoint(buffer.alloc);
    Location loc = buffer.alloc.getLoc();
    Value offset = arith::ConstantIndexOp::create(b, loc, buffer.offset);
    Value view = memref::ViewOp::create(b, loc, buffer.alloc.getType(), arena,
                                        offset, ValueRange());
    // The arena outlives the call; freeing a view of it would be wrong.
    for (Operation *user : llvm::make_early_inc_range(buffer.alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    buffer.alloc.replaceAllUsesWith(view);
    buffer.alloc.erase();
  }
  return size;
}

struct PlanMemoryPass : kiln::impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<NamedAttribute> sizes;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      if (!llvm::hasSingleElement(func.getBody())) {
        func.emitError("entry points must have a single block");
        return signalPassFailure();
      }
      int64_t size = planFunction(func);
      sizes.push_back(NamedAttribute(
          func.getSymNameAttr(),
          IntegerAttr::get(IntegerType::get(&getContext(), 64), size)));
    }
    module->setAttr("kiln.scratch_sizes",
                    DictionaryAttr::get(&getContext(), sizes));
  }
};

} // namespace
