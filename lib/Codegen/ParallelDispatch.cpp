//===- ParallelDispatch.cpp - calls into the runtime's executor -----------===//
#include "lib/Codegen/ParallelDispatch.h"

#include "kiln/abi.h"

#include "llvm/IR/IRBuilder.h"

using namespace llvm;

namespace {

constexpr StringLiteral kDispatchPrefix = "kiln.parallel_for.";

/// `void task(ptr closure, i64 begin, i64 end)` unpacking `closureType` into
/// the arguments of `body`.
Function *createTask(Module &module, Function *body, StructType *closureType) {
  LLVMContext &ctx = module.getContext();
  PointerType *ptrTy = PointerType::getUnqual(ctx);
  Type *i64Ty = Type::getInt64Ty(ctx);
  auto *type = FunctionType::get(Type::getVoidTy(ctx), {ptrTy, i64Ty, i64Ty},
                                 /*isVarArg=*/false);
  Function *task = Function::Create(type, GlobalValue::InternalLinkage,
                                    body->getName() + ".task", module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", task));
  SmallVector<Value *> args = {task->getArg(1), task->getArg(2)};
  for (unsigned i = 0; i < closureType->getNumElements(); ++i)
    args.push_back(
        b.CreateLoad(closureType->getElementType(i),
                     b.CreateStructGEP(closureType, task->getArg(0), i)));
  b.CreateCall(body, args);
  b.CreateRetVoid();
  // The body has this one caller; inlining it lets LLVM see the whole loop.
  body->setLinkage(GlobalValue::InternalLinkage);
  body->addFnAttr(Attribute::AlwaysInline);
  return task;
}

/// Rewrites `call` of a dispatch declaration into
/// `executor->parallel_for(executor, task, &closure, count)`.
void lowerCall(CallInst *call, Function *task, StructType *closureType) {
  Function *caller = call->getFunction();
  LLVMContext &ctx = call->getContext();
  PointerType *ptrTy = PointerType::getUnqual(ctx);
  IRBuilder<> entry(&caller->getEntryBlock(),
                    caller->getEntryBlock().getFirstInsertionPt());
  Value *closure = entry.CreateAlloca(closureType, nullptr, "closure");
  IRBuilder<> b(call);
  for (unsigned i = 0; i < closureType->getNumElements(); ++i)
    b.CreateStore(call->getArgOperand(i + 2),
                  b.CreateStructGEP(closureType, closure, i));
  Value *executor = call->getArgOperand(0);
  static_assert(offsetof(kiln_abi_executor, parallel_for) == 0,
                "the executor is loaded as its first field");
  Value *parallelFor = b.CreateLoad(ptrTy, executor, "parallel_for");
  auto *type = FunctionType::get(Type::getVoidTy(ctx),
                                 {ptrTy, ptrTy, ptrTy, Type::getInt64Ty(ctx)},
                                 /*isVarArg=*/false);
  b.CreateCall(type, parallelFor,
               {executor, task, closure, call->getArgOperand(1)});
  call->eraseFromParent();
}

} // namespace

std::string kiln::lowerParallelDispatch(Module &module) {
  SmallVector<Function *> dispatches;
  for (Function &function : module)
    if (function.isDeclaration() &&
        function.getName().starts_with(kDispatchPrefix))
      dispatches.push_back(&function);
  for (Function *dispatch : dispatches) {
    StringRef bodyName = dispatch->getName().drop_front(kDispatchPrefix.size());
    Function *body = module.getFunction(bodyName);
    FunctionType *type = dispatch->getFunctionType();
    if (!body || body->isDeclaration() || type->getNumParams() < 2 ||
        body->arg_size() != type->getNumParams())
      return "no parallel loop body '" + bodyName.str() + "' matching '" +
             dispatch->getName().str() + "'";
    StructType *closureType =
        StructType::get(module.getContext(), type->params().drop_front(2));
    Function *task = createTask(module, body, closureType);
    for (User *user : make_early_inc_range(dispatch->users())) {
      auto *call = dyn_cast<CallInst>(user);
      if (!call || call->getCalledFunction() != dispatch)
        return "'" + dispatch->getName().str() + "' is used other than called";
      lowerCall(call, task, closureType);
    }
    dispatch->eraseFromParent();
  }
  return "";
}
