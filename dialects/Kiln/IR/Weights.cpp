//===- Weights.cpp - large constants as resource blobs --------------------===//
#include "dialects/Kiln/IR/Weights.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"

#include <cstring>

using namespace mlir;

int64_t kiln::getElementBytes(Type type) {
  if (type.isF32() || type.isInteger(32))
    return 4;
  if (type.isF64() || type.isInteger(64))
    return 8;
  if (type.isF16() || type.isBF16() || type.isInteger(16))
    return 2;
  if (type.isInteger(8))
    return 1;
  return 0;
}

std::optional<ArrayRef<char>> kiln::getRawBytes(ElementsAttr elements) {
  if (getElementBytes(elements.getElementType()) == 0)
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(elements)) {
    if (dense.isSplat())
      return std::nullopt;
    return dense.getRawData();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(elements))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

static int64_t getByteSize(RankedTensorType type) {
  return type.getNumElements() * kiln::getElementBytes(type.getElementType());
}

ElementsAttr
kiln::createElements(RankedTensorType type,
                     function_ref<void(MutableArrayRef<char>)> fill) {
  int64_t bytes = getByteSize(type);
  if (bytes < kResourceBytes) {
    std::vector<char> data(bytes);
    fill(data);
    return DenseElementsAttr::getFromRawBuffer(type, data);
  }
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(bytes, kWeightAlignment);
  fill(blob.getMutableData());
  return DenseResourceElementsAttr::get(type, "kiln_weight", std::move(blob));
}

ElementsAttr kiln::createElements(RankedTensorType type,
                                  std::unique_ptr<std::string> data) {
  if (static_cast<int64_t>(data->size()) < kResourceBytes)
    return DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(data->data(), data->size()));
  // malloc'd memory is aligned for any element type.
  std::string *owned = data.release();
  AsmResourceBlob blob(
      ArrayRef<char>(owned->data(), owned->size()), alignof(std::max_align_t),
      [owned](void *, size_t, size_t) { delete owned; },
      /*dataIsMutable=*/false);
  return DenseResourceElementsAttr::get(type, "kiln_weight", std::move(blob));
}

void kiln::releaseUnusedWeights(Operation *root,
                                ArrayRef<DenseResourceElementsAttr> candidates) {
  auto module = dyn_cast<ModuleOp>(root);
  if (!module)
    module = root->getParentOfType<ModuleOp>();
  if (candidates.empty() || (module && module->hasAttr(kSharedWeightsAttr)))
    return;
  llvm::DenseSet<StringRef> used;
  root->walk([&](Operation *op) {
    // Inherent and discardable attributes, nested ones included.
    op->getAttrDictionary().walk([&](DenseResourceElementsAttr resource) {
      used.insert(resource.getRawHandle().getKey());
    });
  });
  auto &manager =
      DenseResourceElementsHandle::getManagerInterface(root->getContext());
  for (DenseResourceElementsAttr candidate : candidates) {
    StringRef key = candidate.getRawHandle().getKey();
    if (!used.contains(key))
      manager.getBlobManager().update(key, AsmResourceBlob());
  }
}

void kiln::eraseIfUnused(RewriterBase &rewriter, Operation *constant,
                         ElementsAttr value) {
  if (!constant->use_empty())
    return;
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  auto module = constant->getParentOfType<ModuleOp>();
  rewriter.eraseOp(constant);
  if (resource && module)
    releaseUnusedWeights(module, resource);
}
