//===- ExternalizeWeights.cpp - large constants out of the code object ----===//
//
// Bufferization makes every constant tensor a memref.global. Large ones
// (weights) become external declarations here, aligned for vector loads,
// and are listed in the module's `kiln.weights` attribute; the compiler
// writes them into a data-only object (lib/Codegen/WeightsObject.h) instead
// of letting LLVM emit them as constants, element by element.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/Weights.h"

namespace kiln {
#define GEN_PASS_DEF_EXTERNALIZEWEIGHTSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct ExternalizeWeightsPass
    : kiln::impl::ExternalizeWeightsPassBase<ExternalizeWeightsPass> {
  using ExternalizeWeightsPassBase::ExternalizeWeightsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder b(&getContext());
    SmallVector<Attribute> weights;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      auto value =
          dyn_cast_if_present<ElementsAttr>(global.getInitialValueAttr());
      std::optional<ArrayRef<char>> bytes =
          value ? kiln::getRawBytes(value) : std::nullopt;
      if (!global.getConstant() || !bytes ||
          static_cast<int64_t>(bytes->size()) < minBytes)
        continue;
      weights.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", global.getSymNameAttr()),
           b.getNamedAttr("value", value)}));
      global.setInitialValueAttr(Attribute());
      global.setPublic();
      global.setAlignment(kiln::kWeightAlignment);
    }
    if (!weights.empty())
      module->setAttr(kiln::kWeightsAttr, b.getArrayAttr(weights));
  }
};

} // namespace
