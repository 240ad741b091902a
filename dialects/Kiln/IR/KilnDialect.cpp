//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

#include "dialects/Kiln/IR/KilnDialect.cpp.inc"
#include "dialects/Kiln/IR/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttributes.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Kiln/IR/KilnAttributes.cpp.inc"
      >();
  registerShapeReification(*getContext());
}

LogicalResult DimAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringRef name, int64_t min, int64_t max,
                              AffineMapAttr size, ArrayAttr operands) {
  if (name.empty())
    return emitError() << "a named dimension needs a name";
  if (min < 0 || min > max)
    return emitError() << "dimension '" << name << "' has the range " << min
                       << ".." << max << "; it needs 0 <= min <= max";
  if (static_cast<bool>(size) != static_cast<bool>(operands))
    return emitError() << "computed dimension '" << name
                       << "' needs both its size and the dimensions it reads";
  if (size && (size.getValue().getNumDims() != 0 ||
               size.getValue().getNumResults() != 1 ||
               size.getValue().getNumSymbols() != operands.size() ||
               !llvm::all_of(operands, llvm::IsaPred<StringAttr>)))
    return emitError() << "computed dimension '" << name
                       << "' needs a map of one result over one symbol per "
                          "dimension name it reads";
  return success();
}

LogicalResult CpuModelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t fmaUnits, int64_t fmaLatency,
                                   int64_t l1, int64_t l2, int64_t l3) {
  if (fmaUnits < 1 || fmaLatency < 1)
    return emitError() << "a CPU model needs at least one FMA unit and a "
                          "latency of at least one cycle";
  if (l1 < 1 || l2 < 1 || l3 < 0)
    return emitError() << "a CPU model needs positive L1 and L2 sizes and "
                          "an L3 size of at least 0";
  return success();
}

TargetAttr kiln::getTarget(Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    module = op->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<TargetAttr>(kTargetAttr) : nullptr;
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
