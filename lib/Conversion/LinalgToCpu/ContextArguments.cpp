//===- ContextArguments.cpp - arguments a call's context provides ---------===//
#include "lib/Conversion/LinalgToCpu/ContextArguments.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

BlockArgument kiln::findContextArgument(func::FuncOp func, StringRef attrName) {
  for (BlockArgument argument : func.getArguments())
    if (func.getArgAttr(argument.getArgNumber(), attrName))
      return argument;
  return {};
}

FailureOr<BlockArgument>
kiln::getOrAddContextArgument(func::FuncOp func, StringRef attrName,
                              Type type) {
  if (BlockArgument argument = findContextArgument(func, attrName))
    return argument;
  auto module = func->getParentOfType<ModuleOp>();
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(func, module);
  SmallVector<func::CallOp> calls;
  for (const SymbolTable::SymbolUse &use : uses.value_or(SymbolTable::UseRange({}))) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call)
      return func.emitError() << "internal error: function '"
                              << func.getSymName()
                              << "' needs " << attrName
                              << " but is used other than called";
    calls.push_back(call);
  }
  MLIRContext *context = func.getContext();
  if (failed(func.insertArgument(
          func.getNumArguments(), type,
          DictionaryAttr::get(context, {NamedAttribute(
                                           StringAttr::get(context, attrName),
                                           UnitAttr::get(context))}),
          func.getLoc())))
    return failure();
  BlockArgument added = func.getArgument(func.getNumArguments() - 1);
  for (func::CallOp call : calls) {
    auto caller = call->getParentOfType<func::FuncOp>();
    FailureOr<BlockArgument> passed =
        getOrAddContextArgument(caller, attrName, type);
    if (failed(passed))
      return failure();
    call.getOperandsMutable().append(Value(*passed));
  }
  return added;
}
