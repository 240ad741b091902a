//===- InsertRuntimeChecks.cpp - error status for data-dependent checks ---===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_INSERTRUNTIMECHECKSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// "node 'name'" for an imported op, else the printed location.
std::string describeLocation(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return "node '" + name.getName().str() + "'";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

/// The ONNX op a checked gather or scatter comes from.
std::string getOnnxName(Operation *op) {
  return TypeSwitch<Operation *, std::string>(op)
      .Case([](GatherElementsOp) { return "GatherElements"; })
      .Case([](ScatterElementsOp) { return "ScatterElements"; })
      .Case([](ScatterNDOp) { return "ScatterND"; })
      .Case([](GatherNDOp) { return "GatherND"; })
      .Default([](Operation *) { return "Gather"; });
}

/// The axes of `data` that the indices of `op` address, each with the
/// indices that do: a gather's or scatter's along its axis, and for the
/// ND ops column j of the index tuples along data axis batch_dims + j.
SmallVector<std::pair<int64_t, Value>> getIndexedAxes(OpBuilder &b,
                                                      Operation *op) {
  Value indices = op->getOperand(1);
  if (!isa<ScatterNDOp, GatherNDOp>(op))
    return {{op->getAttrOfType<IntegerAttr>("axis").getInt(), indices}};
  int64_t batchDims = 0;
  if (auto gather = dyn_cast<GatherNDOp>(op))
    batchDims = static_cast<int64_t>(gather.getBatchDims());
  auto type = cast<RankedTensorType>(indices.getType());
  int64_t last = type.getRank() - 1;
  SmallVector<std::pair<int64_t, Value>> axes;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(indices);
  for (int64_t j = 0; j < type.getShape().back(); ++j) {
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
        sizes = tensor::getMixedSizes(b, op->getLoc(), indices),
        strides(type.getRank(), b.getIndexAttr(1));
    offsets[last] = b.getIndexAttr(j);
    sizes[last] = b.getIndexAttr(1);
    axes.push_back({batchDims + j,
                    tensor::ExtractSliceOp::create(b, op->getLoc(), indices,
                                                   offsets, sizes, strides)});
  }
  return axes;
}

/// The size of the state `update` writes along its axis.
int64_t getStateSize(StateUpdateOp update) {
  auto state = SymbolTable::lookupNearestSymbolFrom<StateOp>(
      update, update.getStateAttr());
  return cast<RankedTensorType>(state.getType())
      .getDimSize(static_cast<int64_t>(update.getAxis()));
}

/// `[offset + count - 1]`, the last index `update` writes along its axis
/// (before the op's own clamping), as a tensor<1xi64> for
/// kiln.check_index_range; computed right after the update's operands.
Value getLastWrittenIndex(OpBuilder &b, StateUpdateOp update) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(update);
  Location loc = update.getLoc();
  Value offset = tensor::ExtractOp::create(b, loc, update.getOffset());
  Value count = arith::IndexCastOp::create(
      b, loc, b.getI64Type(),
      tensor::DimOp::create(b, loc, update.getUpdate(),
                            static_cast<int64_t>(update.getAxis())));
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  Value last = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, offset, count), one);
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({1}, b.getI64Type()), last);
}

LogicalResult insertChecks(func::FuncOp func) {
  SmallVector<Operation *> checked;
  func.walk([&](Operation *op) {
    if (isa<GatherOp, GatherElementsOp, ScatterElementsOp, ScatterNDOp,
            GatherNDOp>(op) ||
        (isa<StateUpdateOp>(op) && op->hasAttr(kOverflowErrorAttr)))
      checked.push_back(op);
  });
  auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  OpBuilder b(returnOp);
  Location loc = returnOp.getLoc();
  auto statusType = RankedTensorType::get({}, b.getI32Type());
  Value status = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(statusType, b.getI32IntegerAttr(0)));
  SmallVector<Attribute> errors;
  for (Operation *op : checked) {
    if (!isa<StateUpdateOp>(op)) {
      Value data = op->getOperand(0);
      // The status is computed where the entry returns.
      if (op->getOperand(1).getParentRegion() != &func.getBody())
        return op->emitError() << "cannot check " << getOnnxName(op)
                               << " indices computed inside a loop (a "
                                  "sampler step) at run time";
      for (auto [axis, indices] : getIndexedAxes(b, op)) {
        // Along a dynamic axis the lowering's clamping alone keeps reads
        // and writes inside the data.
        int64_t size = cast<RankedTensorType>(data.getType()).getDimSize(axis);
        if (ShapedType::isDynamic(size))
          continue;
        auto code =
            b.getI32IntegerAttr(static_cast<int32_t>(errors.size() + 1));
        errors.push_back(b.getStringAttr(getOnnxName(op) +
                                         " index out of range at " +
                                         describeLocation(op->getLoc())));
        status = CheckIndexRangeOp::create(b, op->getLoc(), indices, status,
                                           b.getI64IntegerAttr(size), code);
      }
      continue;
    }
    auto code = b.getI32IntegerAttr(static_cast<int32_t>(errors.size() + 1));
    auto update = cast<StateUpdateOp>(op);
    errors.push_back(update->getAttrOfType<StringAttr>(kOverflowErrorAttr));
    status = CheckIndexRangeOp::create(
        b, update.getLoc(), getLastWrittenIndex(b, update), status,
        b.getI64IntegerAttr(getStateSize(update)), code);
  }
  returnOp.getOperandsMutable().append(status);
  func->setAttr(kErrorsAttr, b.getArrayAttr(errors));
  return func.insertResult(
      func.getNumResults(), statusType,
      b.getDictionaryAttr(b.getNamedAttr(kStatusAttr, b.getUnitAttr())));
}

struct InsertRuntimeChecksPass
    : kiln::impl::InsertRuntimeChecksPassBase<InsertRuntimeChecksPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!isEntryPoint(func))
        continue;
      if (!llvm::hasSingleElement(func.getBody())) {
        func.emitError("entry points must have a single block");
        return signalPassFailure();
      }
      if (failed(insertChecks(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
