//===- LowerState.cpp - session state in the runtime's state block --------===//
//
// Every kiln.state gets a place in one block of bytes that the runtime's
// session owns (kiln_abi_call.state). Reads become tensors over that memory
// and writes store into it, so state is never copied on its way in or out;
// in-place updates write only their slice.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "lib/Conversion/LinalgToCpu/AbiLayout.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/LinalgToCpu/ContextArguments.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERSTATEPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

struct Slot {
  RankedTensorType type;
  int64_t offset;
};

/// Bytes of one element in memory (i1 takes a byte).
int64_t getElementBytes(Type element) {
  return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
}

/// Writes `value`'s elements at `bytes`, laid out as generated code reads
/// them (little-endian, a byte per i1).
void writeElements(ElementsAttr value, MutableArrayRef<char> bytes) {
  auto dense = cast<DenseElementsAttr>(value);
  Type element = dense.getElementType();
  if (element.isInteger(1)) {
    for (auto [i, flag] : llvm::enumerate(dense.getValues<bool>()))
      bytes[i] = flag;
    return;
  }
  int64_t size = getElementBytes(element);
  if (dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    for (int64_t i = 0; i < dense.getNumElements(); ++i)
      std::copy(one.begin(), one.begin() + size, bytes.begin() + i * size);
    return;
  }
  ArrayRef<char> raw = dense.getRawData();
  std::copy(raw.begin(), raw.end(), bytes.begin());
}

/// A view of the state's place in the block `block`.
Value getStateView(OpBuilder &b, Location loc, Value block, const Slot &slot) {
  auto type =
      MemRefType::get(slot.type.getShape(), slot.type.getElementType());
  Value offset = arith::ConstantIndexOp::create(b, loc, slot.offset);
  return memref::ViewOp::create(b, loc, type, block, offset, ValueRange());
}

/// Lowers the state ops of `func`, in program order.
LogicalResult lowerFunction(func::FuncOp func,
                            const DenseMap<StringAttr, Slot> &slots,
                            MemRefType blockType) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<StateReadOp, StateWriteOp, StateUpdateOp>(op))
      ops.push_back(op);
  });
  if (ops.empty())
    return success();
  FailureOr<BlockArgument> block =
      getOrAddContextArgument(func, kStateAttr, blockType);
  if (failed(block))
    return failure();

  auto stateOf = [](Operation *op) {
    return cast<FlatSymbolRefAttr>(op->getAttr("state")).getAttr();
  };
  OpBuilder b(func.getContext());
  for (size_t index = 0; index < ops.size(); ++index) {
    Operation *op = ops[index];
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    const Slot &slot = slots.at(stateOf(op));
    Value view = getStateView(b, loc, *block, slot);
    if (auto read = dyn_cast<StateReadOp>(op)) {
      Value value = bufferization::ToTensorOp::create(
          b, loc, slot.type, view, /*restrict=*/true, /*writable=*/false);
      // The tensor is the state's memory: if the state changes later in
      // the call, the value read must not, so it is copied here.
      bool writtenLater = llvm::any_of(
          ArrayRef(ops).drop_front(index + 1), [&](Operation *later) {
            return !isa<StateReadOp>(later) &&
                   stateOf(later) == stateOf(op);
          });
      if (writtenLater) {
        Value empty = tensor::EmptyOp::create(b, loc, slot.type.getShape(),
                                              slot.type.getElementType());
        value = linalg::CopyOp::create(b, loc, value, empty).getResult(0);
      }
      read.getResult().replaceAllUsesWith(value);
    } else if (auto write = dyn_cast<StateWriteOp>(op)) {
      bufferization::MaterializeInDestinationOp::create(
          b, loc, Type(), write.getValue(), view, /*restrict=*/true,
          /*writable=*/true);
    } else {
      auto update = cast<StateUpdateOp>(op);
      int64_t axis = update.getAxis();
      RankedTensorType updateType = update.getUpdate().getType();
      // Clamped so the slice lies inside the state; the update's size
      // along the axis may be dynamic (a decoder step of several tokens).
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(b, loc, update.getUpdate());
      // Folded where the size is static.
      Value count = b.createOrFold<arith::IndexCastOp>(
          loc, b.getI64Type(),
          getValueOrCreateConstantIndexOp(b, loc, sizes[axis]));
      Value offset = tensor::ExtractOp::create(b, loc, update.getOffset(),
                                               ValueRange());
      Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
      Value last = b.createOrFold<arith::SubIOp>(
          loc,
          arith::ConstantIntOp::create(b, loc, slot.type.getDimSize(axis), 64),
          count);
      offset = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, offset, zero), last);
      offset = arith::IndexCastOp::create(b, loc, b.getIndexType(), offset);
      SmallVector<OpFoldResult> offsets(updateType.getRank(),
                                        b.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> strides(updateType.getRank(),
                                        b.getIndexAttr(1));
      // An update longer than the state is written nowhere (the run-time
      // check reports it); only a dynamic size can be.
      OpBuilder::InsertionGuard guard(b);
      if (updateType.isDynamicDim(axis)) {
        Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge,
                                           last, zero);
        auto inside = scf::IfOp::create(b, loc, fits, /*withElseRegion=*/false);
        b.setInsertionPointToStart(inside.thenBlock());
      }
      Value slice =
          memref::SubViewOp::create(b, loc, view, offsets, sizes, strides);
      bufferization::MaterializeInDestinationOp::create(
          b, loc, Type(), update.getUpdate(), slice, /*restrict=*/true,
          /*writable=*/true);
    }
    op->erase();
  }
  return success();
}

struct LowerStatePass : kiln::impl::LowerStatePassBase<LowerStatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<StateOp> states(module.getOps<StateOp>());
    if (states.empty())
      return;

    DenseMap<StringAttr, Slot> slots;
    int64_t size = 0;
    bool hasInitialValues = false;
    for (StateOp state : states) {
      auto type = cast<RankedTensorType>(state.getType());
      int64_t offset = llvm::alignTo(size, abi::kAlignment);
      slots[state.getSymNameAttr()] = {type, offset};
      size = offset + type.getNumElements() *
                          getElementBytes(type.getElementType());
      hasInitialValues |= static_cast<bool>(state.getInitialValueAttr());
    }
    auto blockType = MemRefType::get({size}, IntegerType::get(context, 8));
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(lowerFunction(func, slots, blockType)))
        return signalPassFailure();

    Builder b(context);
    module->setAttr(kStateSizeAttr, b.getI64IntegerAttr(size));
    if (hasInitialValues) {
      std::vector<char> bytes(size, 0);
      for (StateOp state : states)
        if (ElementsAttr initial = state.getInitialValueAttr())
          writeElements(initial, MutableArrayRef(bytes).drop_front(
                                     slots[state.getSymNameAttr()].offset));
      module->setAttr(kStateInitAttr,
                      DenseElementsAttr::getFromRawBuffer(
                          RankedTensorType::get({size}, b.getI8Type()),
                          ArrayRef<char>(bytes)));
    }
    for (StateOp state : states)
      state.erase();
  }
};

} // namespace
