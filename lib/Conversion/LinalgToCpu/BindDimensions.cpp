//===- BindDimensions.cpp - one bounded value per named dimension ---------===//
//
// An entry's dynamic sizes all come from its arguments' dimensions, each
// one of the module's named dimensions (#kiln.dim). This pass reads each
// named dimension once, at the entry's start, clamped to its maximum, and
// makes every read of an argument's dimension use that value. The runtime
// has already checked the range, so the clamp changes nothing at run time;
// it tells the analyses (ValueBounds, for kiln-plan-memory) the bound.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_BINDDIMENSIONSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The argument and dimension a dim op reads, if it reads one of `func`'s
/// arguments at a constant index.
std::optional<std::pair<unsigned, int64_t>> getArgumentDim(Operation *op,
                                                           func::FuncOp func) {
  Value source, index;
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    source = dim.getSource();
    index = dim.getIndex();
  } else if (auto dim = dyn_cast<memref::DimOp>(op)) {
    source = dim.getSource();
    index = dim.getIndex();
  } else {
    return std::nullopt;
  }
  auto argument = dyn_cast<BlockArgument>(source);
  std::optional<int64_t> d = getConstantIntValue(index);
  if (!argument || argument.getOwner() != &func.getBody().front() || !d)
    return std::nullopt;
  return std::make_pair(argument.getArgNumber(), *d);
}

void bindFunction(func::FuncOp func, const llvm::StringMap<DimAttr> &dims) {
  // Each named dimension, where it first appears, and its bounded value.
  llvm::StringMap<Value> bound;
  DenseMap<std::pair<unsigned, int64_t>, Value> byArgumentDim;
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  for (BlockArgument argument : func.getArguments()) {
    auto names = func.getArgAttrOfType<ArrayAttr>(argument.getArgNumber(),
                                                  kDimNamesAttr);
    if (!names)
      continue;
    for (auto [d, name] : llvm::enumerate(names.getAsValueRange<StringAttr>())) {
      if (name.empty())
        continue;
      Value &value = bound[name];
      if (!value) {
        Location loc = func.getLoc();
        Value raw =
            isa<TensorType>(argument.getType())
                ? Value(tensor::DimOp::create(b, loc, argument, d))
                : Value(memref::DimOp::create(b, loc, argument, d));
        MLIRContext *context = b.getContext();
        AffineMap clamp = AffineMap::get(
            1, 0,
            {getAffineDimExpr(0, context),
             getAffineConstantExpr(dims.lookup(name).getMax(), context)},
            context);
        value = affine::AffineMinOp::create(b, loc, clamp, raw);
      }
      byArgumentDim[{argument.getArgNumber(), static_cast<int64_t>(d)}] =
          value;
    }
  }
  SmallVector<Operation *> reads;
  func.walk([&](Operation *op) {
    if (auto at = getArgumentDim(op, func); at && byArgumentDim.count(*at))
      reads.push_back(op);
  });
  for (Operation *op : reads) {
    Value value = byArgumentDim.lookup(*getArgumentDim(op, func));
    // The read feeding the clamp itself stays.
    if (value.getDefiningOp()->getOperand(0) == op->getResult(0))
      continue;
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
  }
}

struct BindDimensionsPass
    : kiln::impl::BindDimensionsPassBase<BindDimensionsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto table = module->getAttrOfType<ArrayAttr>(kDimsAttr);
    if (!table)
      return;
    llvm::StringMap<DimAttr> dims;
    for (auto dim : table.getAsRange<DimAttr>())
      dims[dim.getName()] = dim;
    for (auto func : module.getOps<func::FuncOp>())
      if (isEntryPoint(func))
        bindFunction(func, dims);
  }
};

} // namespace
