//===- PlanMemory.cpp - static buffers in a per-session arena -------------===//
//
// Every function's statically shaped buffers get offsets in one scratch
// arena, its `kiln.scratch` argument. A call to a function with an arena of
// its own (its frame) is a buffer of the caller live at the call, which
// passes the callee a view of that place: the session's one arena holds the
// entry's buffers and those of everything it calls. A buffer of dynamic
// shape takes the place of its largest (bounded) size.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/LinalgToCpu/AbiLayout.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "lib/Conversion/LinalgToCpu/ContextArguments.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct Frame;

/// A buffer (a memref.alloc), a callee's frame (a func.call), or a loop or
/// branch (scf.for, scf.if) whose regions' frames share its place.
struct Buffer {
  Operation *op;
  int64_t bytes;
  int64_t start, end; // top-level op indices where the buffer is live
  int64_t offset = 0;
  SmallVector<std::unique_ptr<Frame>> regions;
};

/// The buffers of one block, placed relative to the block's first byte.
struct Frame {
  SmallVector<Buffer> buffers;
  int64_t size = 0;
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

/// Whether `value`, or a view of it, leaves `block` through its terminator
/// (a loop's next iteration or an scf.if's result holds it).
bool escapesBlock(Value value, Block &block) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (user == block.getTerminator())
        return true;
      for (Value result : user->getResults())
        if (isa<MemRefType>(result.getType()))
          worklist.push_back(result);
    }
  }
  return false;
}

/// The largest value `size` takes, if known. Clamped sizes (a slice of
/// state whose offset is read at run time) are `min(x, c)`, which
/// ValueBounds does not model for arith: the smaller of the operands'
/// bounds is one.
std::optional<int64_t> getUpperBound(Value size) {
  if (auto min = size.getDefiningOp<arith::MinSIOp>()) {
    std::optional<int64_t> lhs = getUpperBound(min.getLhs());
    std::optional<int64_t> rhs = getUpperBound(min.getRhs());
    if (lhs && rhs)
      return std::min(*lhs, *rhs);
    return lhs ? lhs : rhs;
  }
  FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, ValueBoundsConstraintSet::Variable(size),
      /*stopCondition=*/nullptr, /*closedUB=*/true);
  if (failed(bound))
    return std::nullopt;
  return *bound;
}

/// The most elements `alloc` can hold: its static sizes times the upper
/// bound of each dynamic one (a named dimension's maximum, through
/// kiln-bind-dimensions); nullopt if a size has no bound.
std::optional<int64_t> getMaxElements(memref::AllocOp alloc) {
  int64_t count = 1;
  unsigned next = 0;
  for (int64_t size : alloc.getType().getShape()) {
    if (ShapedType::isDynamic(size)) {
      std::optional<int64_t> bound =
          getUpperBound(alloc.getDynamicSizes()[next++]);
      if (!bound || *bound < 0)
        return std::nullopt;
      size = *bound;
    }
    if (llvm::MulOverflow(count, size, count))
      return std::nullopt;
  }
  return count;
}

/// First fit, largest buffers first: each at the lowest aligned offset not
/// overlapping a buffer placed before it that is live at the same time.
/// Placed in program order instead, small short-lived buffers split the
/// arena so that later large ones found no gap: DiT's workspace took
/// 15.0 MB, against 4.7 MB largest first.
void assignOffsets(MutableArrayRef<Buffer> buffers) {
  SmallVector<size_t> order =
      llvm::to_vector(llvm::seq<size_t>(0, buffers.size()));
  llvm::sort(order, [&](size_t a, size_t b) {
    return std::make_pair(-buffers[a].bytes, a) <
           std::make_pair(-buffers[b].bytes, b);
  });
  for (auto [placed, i] : llvm::enumerate(order)) {
    SmallVector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : ArrayRef(order).take_front(placed))
      if (buffers[j].start <= buffers[i].end &&
          buffers[i].start <= buffers[j].end)
        taken.push_back(
            {buffers[j].offset, buffers[j].offset + buffers[j].bytes});
    llvm::sort(taken);
    int64_t offset = 0;
    for (auto [begin, end] : taken) {
      if (offset + buffers[i].bytes <= begin)
        break;
      offset = std::max<int64_t>(offset, llvm::alignTo(end, kiln::abi::kAlignment));
    }
    buffers[i].offset = offset;
  }
}

/// Plans the buffers of `block`: its statically shaped allocations, the
/// frames of the functions it calls, and, at the place of each scf.for and
/// scf.if in it, the frames of their regions, planned the same way (a loop
/// body's buffers are reused by every iteration, and an scf.if's branches
/// share theirs). A nested block's buffer that its terminator passes on
/// stays on the heap. Other ops' regions (parallel loops, whose iterations
/// run at once) are not planned; their calls reserve frames at the op.
Frame planBlock(Block &block, const DenseMap<StringAttr, int64_t> &frames,
                bool nested) {
  DenseMap<Operation *, int64_t> order;
  for (auto [index, op] : llvm::enumerate(block))
    order[&op] = index;

  Frame frame;
  for (Operation &op : block) {
    int64_t at = order[&op];
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      unsigned bits = type.getElementTypeBitWidth();
      if (!type.getLayout().isIdentity() || bits % 8 != 0 ||
          type.getMemorySpace() || (nested && escapesBlock(alloc, block)))
        continue;
      std::optional<int64_t> elements = getMaxElements(alloc);
      int64_t bytes;
      if (!elements || llvm::MulOverflow(*elements, int64_t(bits / 8), bytes))
        continue;
      frame.buffers.push_back(
          {alloc, bytes, at, getLastUse(alloc, block, order), 0, {}});
      continue;
    }
    if (isa<scf::ForOp, scf::IfOp>(op)) {
      Buffer regions{&op, 0, at, at, 0, {}};
      for (Region &region : op.getRegions()) {
        if (region.empty())
          continue;
        auto inner = std::make_unique<Frame>(
            planBlock(region.front(), frames, /*nested=*/true));
        regions.bytes = std::max(regions.bytes, inner->size);
        regions.regions.push_back(std::move(inner));
      }
      if (regions.bytes > 0)
        frame.buffers.push_back(std::move(regions));
      continue;
    }
    op.walk([&](func::CallOp call) {
      if (int64_t callee = frames.lookup(call.getCalleeAttr().getAttr()))
        frame.buffers.push_back({call, callee, at, at, 0, {}});
    });
  }
  assignOffsets(frame.buffers);
  for (const Buffer &buffer : frame.buffers)
    frame.size = std::max(frame.size, buffer.offset + buffer.bytes);
  return frame;
}

/// Replaces `frame`'s allocations by views of `arena` from `base` on, and
/// passes its callees their frames.
void placeFrame(Frame &frame, int64_t base, Value arena) {
  OpBuilder b(arena.getContext());
  for (Buffer &buffer : frame.buffers) {
    int64_t offset = base + buffer.offset;
    if (!buffer.regions.empty()) {
      for (std::unique_ptr<Frame> &region : buffer.regions)
        placeFrame(*region, offset, arena);
      continue;
    }
    b.setInsertionPoint(buffer.op);
    Location loc = buffer.op->getLoc();
    Value start = arith::ConstantIndexOp::create(b, loc, offset);
    if (auto call = dyn_cast<func::CallOp>(buffer.op)) {
      auto frameType = MemRefType::get({buffer.bytes}, b.getI8Type());
      Value view = memref::ViewOp::create(b, loc, frameType, arena, start,
                                          ValueRange());
      call.getOperandsMutable().append(view);
      continue;
    }
    auto alloc = cast<memref::AllocOp>(buffer.op);
    Value view = memref::ViewOp::create(b, loc, alloc.getType(), arena, start,
                                        alloc.getDynamicSizes());
    // The arena outlives the call; freeing a view of it would be wrong.
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(view);
    alloc.erase();
  }
}

/// Plans `func`'s buffers, given the frame sizes of the functions it calls;
/// returns its own frame size (0: it takes no arena).
int64_t planFunction(func::FuncOp func,
                     const DenseMap<StringAttr, int64_t> &frames) {
  Frame frame = planBlock(func.getBody().front(), frames, /*nested=*/false);
  if (frame.size == 0)
    return 0;
  OpBuilder b(func.getContext());
  auto arenaType = MemRefType::get({frame.size}, b.getI8Type());
  (void)func.insertArgument(
      func.getNumArguments(), arenaType,
      b.getDictionaryAttr(b.getNamedAttr(kiln::kScratchAttr, b.getUnitAttr())),
      func.getLoc());
  placeFrame(frame, 0, func.getArgument(func.getNumArguments() - 1));
  return frame.size;
}

/// The module's functions with bodies, every callee before its callers.
FailureOr<SmallVector<func::FuncOp>> orderCalleesFirst(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<func::FuncOp> order;
  DenseMap<Operation *, bool> done; // false while on the stack
  std::function<LogicalResult(func::FuncOp)> visit =
      [&](func::FuncOp func) -> LogicalResult {
    auto [it, inserted] = done.try_emplace(func, false);
    if (!inserted)
      return it->second ? success()
                        : func.emitError() << "function '" << func.getSymName()
                                           << "' is recursive; Kiln plans "
                                              "memory for call trees only";
    WalkResult result = func.walk([&](func::CallOp call) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && !callee.isExternal() && failed(visit(callee)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    done[func] = true;
    order.push_back(func);
    return success();
  };
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && failed(visit(func)))
      return failure();
  return order;
}

struct PlanMemoryPass : kiln::impl::PlanMemoryPassBase<PlanMemoryPass> {
  void runOnOperation() override {
    FailureOr<SmallVector<func::FuncOp>> order =
        orderCalleesFirst(getOperation());
    if (failed(order))
      return signalPassFailure();
    DenseMap<StringAttr, int64_t> frames;
    for (func::FuncOp func : *order) {
      if (!llvm::hasSingleElement(func.getBody())) {
        func.emitError("functions must have a single block to plan memory");
        return signalPassFailure();
      }
      frames[func.getSymNameAttr()] = planFunction(func, frames);
    }
  }
};

} // namespace
