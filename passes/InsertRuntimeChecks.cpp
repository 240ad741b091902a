//===- InsertRuntimeChecks.cpp - error status for data-dependent checks ---===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

/// The ONNX op a checked gather comes from.
std::string getOnnxName(Operation *op) {
  return isa<GatherElementsOp>(op) ? "GatherElements" : "Gather";
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
    if (isa<GatherOp, GatherElementsOp>(op) ||
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
    auto code = b.getI32IntegerAttr(static_cast<int32_t>(errors.size() + 1));
    if (isa<GatherOp, GatherElementsOp>(op)) {
      Value data = op->getOperand(0), indices = op->getOperand(1);
      int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
      // The status is computed where the entry returns.
      if (indices.getParentRegion() != &func.getBody())
        return op->emitError() << "cannot check " << getOnnxName(op)
                               << " indices computed inside a loop (a "
                                  "sampler step) at run time";
      // Along a dynamic axis the lowering's clamping alone keeps reads
      // inside the data.
      int64_t size = cast<RankedTensorType>(data.getType()).getDimSize(axis);
      if (ShapedType::isDynamic(size))
        continue;
      errors.push_back(b.getStringAttr(getOnnxName(op) +
                                       " index out of range at " +
                                       describeLocation(op->getLoc())));
      status = CheckIndexRangeOp::create(b, op->getLoc(), indices, status,
                                         b.getI64IntegerAttr(size), code);
      continue;
    }
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
