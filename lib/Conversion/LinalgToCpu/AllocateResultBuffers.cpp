//===- AllocateResultBuffers.cpp - results written where they are returned ===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_ALLOCATERESULTBUFFERSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The allocation `value` reshapes, through expand_shape and collapse_shape
/// ops only, if there is one and it has a static identity layout.
memref::AllocOp getReshapedAllocation(Value value) {
  while (true) {
    if (auto expand = value.getDefiningOp<memref::ExpandShapeOp>()) {
      value = expand.getSrc();
      continue;
    }
    if (auto collapse = value.getDefiningOp<memref::CollapseShapeOp>()) {
      value = collapse.getSrc();
      continue;
    }
    break;
  }
  auto alloc = value.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity())
    return nullptr;
  return alloc;
}

/// `buffer` (static, identity layout) viewed as `type`, which has as many
/// elements: through a collapse to 1-D and an expand.
Value reshapeBuffer(OpBuilder &b, Location loc, Value buffer, MemRefType type) {
  auto bufferType = cast<MemRefType>(buffer.getType());
  if (bufferType.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < bufferType.getRank(); ++i)
      all.push_back(i);
    buffer = memref::CollapseShapeOp::create(
        b, loc, buffer,
        bufferType.getRank() == 0 ? SmallVector<ReassociationIndices>{}
                                  : SmallVector<ReassociationIndices>{all});
  }
  if (type.getRank() == 1)
    return buffer;
  ReassociationIndices all;
  for (int64_t i = 0; i < type.getRank(); ++i)
    all.push_back(i);
  return memref::ExpandShapeOp::create(
      b, loc, type.getShape(), buffer,
      type.getRank() == 0 ? SmallVector<ReassociationIndices>{}
                          : SmallVector<ReassociationIndices>{all});
}

/// Gives each result of `ret` a buffer of its own: a buffer returned again
/// (an output that is also another output, or a view of one) is copied
/// into a new allocation, since the caller receives every result
/// separately.
void copyRepeatedResults(func::ReturnOp ret) {
  llvm::SmallPtrSet<Value, 8> returned;
  for (OpOperand &operand : ret->getOpOperands()) {
    Value result = operand.get();
    auto type = dyn_cast<MemRefType>(result.getType());
    if (!type || !type.getLayout().isIdentity())
      continue;
    memref::AllocOp alloc = getReshapedAllocation(result);
    if (returned.insert(alloc ? alloc.getResult() : result).second)
      continue;
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(memref::DimOp::create(b, loc, result, d));
    auto copy = memref::AllocOp::create(
        b, loc, type, dynamicSizes, b.getI64IntegerAttr(64));
    memref::CopyOp::create(b, loc, result, copy);
    operand.set(copy);
  }
}

struct AllocateResultBuffersPass
    : kiln::impl::AllocateResultBuffersPassBase<AllocateResultBuffersPass> {
  void runOnOperation() override {
    getOperation()->walk([](func::ReturnOp ret) {
      copyRepeatedResults(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value result = operand.get();
        auto resultType = dyn_cast<MemRefType>(result.getType());
        memref::AllocOp alloc = getReshapedAllocation(result);
        if (!resultType || !alloc || alloc.getResult() == result ||
            !resultType.getLayout().isIdentity() || resultType.getRank() == 0 ||
            alloc.getType().getRank() == 0)
          continue;
        OpBuilder b(alloc);
        auto replacement = memref::AllocOp::create(
            b, alloc.getLoc(), resultType, alloc.getAlignmentAttr());
        Value view =
            reshapeBuffer(b, alloc.getLoc(), replacement, alloc.getType());
        alloc.replaceAllUsesWith(view);
        alloc.erase();
        operand.set(replacement);
      }
    });
  }
};

} // namespace
