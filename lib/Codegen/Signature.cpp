//===- Signature.cpp - entry point signatures -----------------------------===//
#include "lib/Codegen/Signature.h"

#include "kiln/abi.h"
#include "lib/Import/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace kiln;

static FailureOr<TensorSignature> describe(func::FuncOp func, Type type,
                                           DictionaryAttr attrs,
                                           const std::string &fallbackName) {
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType || !tensorType.hasStaticShape())
    return func.emitError() << "entry point '" << func.getSymName()
                            << "' has a parameter of type " << type
                            << "; artifacts take statically shaped tensors";
  TensorSignature signature;
  Type element = tensorType.getElementType();
  if (element.isF32())
    signature.dtype = KILN_DTYPE_F32;
  else if (element.isInteger(64))
    signature.dtype = KILN_DTYPE_I64;
  else if (element.isInteger(1))
    signature.dtype = KILN_DTYPE_BOOL;
  else
    return func.emitError() << "entry point '" << func.getSymName()
                            << "' has a parameter of element type " << element;
  auto name = attrs ? attrs.getAs<StringAttr>(kNameAttr) : StringAttr();
  signature.name = name ? name.str() : fallbackName;
  signature.dims.assign(tensorType.getShape().begin(),
                        tensorType.getShape().end());
  return signature;
}

FailureOr<std::vector<EntrySignature>>
kiln::collectEntrySignatures(ModuleOp module) {
  std::vector<EntrySignature> entries;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func.isPublic() || func.isExternal())
      continue;
    EntrySignature entry;
    entry.name = func.getSymName().str();
    FunctionType type = func.getFunctionType();
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      FailureOr<TensorSignature> input =
          describe(func, type.getInput(i), func.getArgAttrDict(i),
                   "input_" + std::to_string(i));
      if (failed(input))
        return failure();
      entry.inputs.push_back(*input);
    }
    unsigned numResults = type.getNumResults();
    if (numResults == 0 || !func.getResultAttr(numResults - 1, kStatusAttr))
      return func.emitError() << "internal error: entry point '"
                              << func.getSymName() << "' has no status result";
    for (unsigned i = 0; i + 1 < numResults; ++i) {
      FailureOr<TensorSignature> output =
          describe(func, type.getResult(i), func.getResultAttrDict(i),
                   "output_" + std::to_string(i));
      if (failed(output))
        return failure();
      entry.outputs.push_back(*output);
    }
    if (auto errors = func->getAttrOfType<ArrayAttr>(kErrorsAttr))
      for (auto message : errors.getAsRange<StringAttr>())
        entry.errors.push_back(message.str());
    entries.push_back(std::move(entry));

    // Names and messages live on in the signature; LLVM has no use for them.
    for (unsigned i = 0; i < type.getNumInputs(); ++i)
      func.removeArgAttr(i, kNameAttr);
    for (unsigned i = 0; i < numResults; ++i) {
      func.removeResultAttr(i, kNameAttr);
      func.removeResultAttr(i, kStatusAttr);
    }
    func->removeAttr(kErrorsAttr);
  }
  if (entries.empty())
    return module.emitError() << "the module has no public function to export";
  return entries;
}
