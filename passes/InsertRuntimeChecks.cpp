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

LogicalResult insertChecks(func::FuncOp func) {
  SmallVector<GatherOp> gathers;
  func.walk([&](GatherOp op) { gathers.push_back(op); });
  auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  OpBuilder b(returnOp);
  Location loc = returnOp.getLoc();
  auto statusType = RankedTensorType::get({}, b.getI32Type());
  Value status = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(statusType, b.getI32IntegerAttr(0)));
  SmallVector<Attribute> errors;
  for (GatherOp gather : gathers) {
    int64_t size = gather.getData().getType().getDimSize(
        static_cast<int64_t>(gather.getAxis()));
    errors.push_back(b.getStringAttr("Gather index out of range at " +
                                     describeLocation(gather.getLoc())));
    status = CheckIndexRangeOp::create(
        b, gather.getLoc(), gather.getIndices(), status,
        b.getI64IntegerAttr(size),
        b.getI32IntegerAttr(static_cast<int32_t>(errors.size())));
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
