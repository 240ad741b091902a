//===- ArtifactGlue.cpp - ABI descriptor and entry wrappers ---------------===//
#include "lib/Codegen/ArtifactGlue.h"

#include "kiln/Config.h"
#include "kiln/abi.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"

using namespace llvm;

namespace {

/// Builds the constant tables of the artifact descriptor.
class DescriptorBuilder {
public:
  explicit DescriptorBuilder(Module &module)
      : module(module), ctx(module.getContext()),
        ptrTy(PointerType::getUnqual(ctx)), i32Ty(Type::getInt32Ty(ctx)),
        i64Ty(Type::getInt64Ty(ctx)) {
    // Field for field the structs of kiln/abi.h; LLVM's natural alignment
    // matches the C layout on the targets Kiln supports.
    tensorTy = StructType::create(ctx, {ptrTy, i32Ty, i32Ty, ptrTy},
                                  "kiln_abi_tensor");
    entryTy = StructType::create(
        ctx, {ptrTy, i32Ty, i32Ty, ptrTy, ptrTy, ptrTy, i32Ty, ptrTy, i64Ty},
        "kiln_abi_entry");
    artifactTy = StructType::create(ctx, {i32Ty, i32Ty, ptrTy, i64Ty, ptrTy},
                                    "kiln_abi_artifact");
  }

  Constant *string(StringRef value) {
    Constant *data = ConstantDataArray::getString(ctx, value, true);
    return global(data, ".kiln.str");
  }

  Constant *global(Constant *init, const Twine &name) {
    return new GlobalVariable(module, init->getType(), /*isConstant=*/true,
                              GlobalValue::PrivateLinkage, init, name);
  }

  Constant *tensorTable(const std::vector<kiln::TensorSignature> &tensors) {
    if (tensors.empty())
      return ConstantPointerNull::get(ptrTy);
    std::vector<Constant *> rows;
    for (const kiln::TensorSignature &tensor : tensors) {
      std::vector<Constant *> dims;
      for (int64_t dim : tensor.dims)
        dims.push_back(ConstantInt::get(i64Ty, dim));
      Constant *dimsPtr =
          dims.empty() ? ConstantPointerNull::get(ptrTy)
                       : global(ConstantArray::get(
                                    ArrayType::get(i64Ty, dims.size()), dims),
                                ".kiln.dims");
      rows.push_back(ConstantStruct::get(
          tensorTy, {string(tensor.name), ConstantInt::get(i32Ty, tensor.dtype),
                     ConstantInt::get(i32Ty, tensor.dims.size()), dimsPtr}));
    }
    return global(
        ConstantArray::get(ArrayType::get(tensorTy, rows.size()), rows),
        ".kiln.tensors");
  }

  Constant *stringTable(const std::vector<std::string> &strings) {
    if (strings.empty())
      return ConstantPointerNull::get(ptrTy);
    std::vector<Constant *> pointers;
    for (const std::string &s : strings)
      pointers.push_back(string(s));
    return global(
        ConstantArray::get(ArrayType::get(ptrTy, pointers.size()), pointers),
        ".kiln.errors");
  }

  Constant *entry(const kiln::EntrySignature &signature, Function *wrapper) {
    return ConstantStruct::get(
        entryTy, {string(signature.name),
                  ConstantInt::get(i32Ty, signature.inputs.size()),
                  ConstantInt::get(i32Ty, signature.outputs.size()),
                  tensorTable(signature.inputs), tensorTable(signature.outputs),
                  wrapper, ConstantInt::get(i32Ty, signature.errors.size()),
                  stringTable(signature.errors),
                  ConstantInt::get(i64Ty, signature.scratchSize)});
  }

  Constant *artifact(ArrayRef<Constant *> entries) {
    Constant *table = global(
        ConstantArray::get(ArrayType::get(entryTy, entries.size()), entries),
        ".kiln.entries");
    return global(ConstantStruct::get(
                      artifactTy, {ConstantInt::get(i32Ty, KILN_ABI_VERSION),
                                   ConstantInt::get(i32Ty, entries.size()),
                                   table, ConstantInt::get(i64Ty, 0),
                                   string("kiln " KILN_VERSION)}),
                  ".kiln.artifact");
  }

  Module &module;
  LLVMContext &ctx;
  PointerType *ptrTy;
  IntegerType *i32Ty, *i64Ty;
  StructType *tensorTy, *entryTy, *artifactTy;
};

/// `int32_t wrapper(void *state, void *scratch, void *const *inputs,
/// void *const *outputs, kiln_abi_executor *executor)` unpacking the pointer
/// arrays into the generated function's parameters (inputs, outputs, status,
/// scratch, executor) and returning the status the function writes.
Function *createEntryWrapper(Module &module, Function *impl,
                             const kiln::EntrySignature &signature) {
  LLVMContext &ctx = module.getContext();
  PointerType *ptrTy = PointerType::getUnqual(ctx);
  auto *type = FunctionType::get(Type::getInt32Ty(ctx),
                                 {ptrTy, ptrTy, ptrTy, ptrTy, ptrTy}, false);
  Function *wrapper = Function::Create(type, GlobalValue::InternalLinkage,
                                       "kiln_entry." + signature.name, module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", wrapper));
  std::vector<Value *> args;
  auto unpack = [&](Value *array, size_t count) {
    for (size_t i = 0; i < count; ++i)
      args.push_back(
          b.CreateLoad(ptrTy, b.CreateConstInBoundsGEP1_64(ptrTy, array, i)));
  };
  unpack(wrapper->getArg(2), signature.inputs.size());
  unpack(wrapper->getArg(3), signature.outputs.size());
  Value *status = b.CreateAlloca(b.getInt32Ty(), nullptr, "status");
  args.push_back(status);
  args.push_back(wrapper->getArg(1));
  args.push_back(wrapper->getArg(4));
  b.CreateCall(impl, args);
  b.CreateRet(b.CreateLoad(b.getInt32Ty(), status));
  return wrapper;
}

} // namespace

std::string kiln::addArtifactGlue(Module &module,
                                  const std::vector<EntrySignature> &entries) {
  DescriptorBuilder descriptor(module);
  std::vector<Constant *> entryConstants;
  for (const EntrySignature &signature : entries) {
    Function *impl = module.getFunction(signature.name);
    size_t numParams = signature.inputs.size() + signature.outputs.size() + 3;
    if (!impl || impl->arg_size() != numParams ||
        !impl->getReturnType()->isVoidTy())
      return "lowered function '" + signature.name +
             "' does not take one pointer per input and output, a status "
             "a scratch arena and an executor";
    impl->setName("kiln_impl." + signature.name);
    entryConstants.push_back(descriptor.entry(
        signature, createEntryWrapper(module, impl, signature)));
  }
  Constant *artifact = descriptor.artifact(entryConstants);

  for (Function &function : module)
    if (!function.isDeclaration())
      function.setLinkage(GlobalValue::InternalLinkage);
  for (GlobalVariable &global : module.globals())
    if (!global.isDeclaration())
      global.setLinkage(GlobalValue::InternalLinkage);

  // The one exported symbol: `const kiln_abi_artifact *kiln_artifact_v2(void)`.
  LLVMContext &ctx = module.getContext();
  auto *getterType = FunctionType::get(PointerType::getUnqual(ctx), false);
  Function *getter = Function::Create(getterType, GlobalValue::ExternalLinkage,
                                      KILN_ABI_ARTIFACT_SYMBOL, module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", getter));
  b.CreateRet(artifact);
  return "";
}
