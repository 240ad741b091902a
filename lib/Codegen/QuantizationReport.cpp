//===- QuantizationReport.cpp - what quantization did, as JSON ------------===//
#include "lib/Codegen/QuantizationReport.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Passes.h"

#include "llvm/Support/JSON.h"

#include <algorithm>

using namespace mlir;
using namespace kiln;

namespace {

std::string getNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

} // namespace

std::string kiln::renderQuantizationReport(ModuleOp module) {
  llvm::json::Array layers;
  int64_t floatBytes = 0, quantizedBytes = 0;
  module.walk([&](Operation *op) {
    if (auto product = dyn_cast<QuantizedMatMulOp>(op)) {
      int64_t k = cast<RankedTensorType>(product.getInput().getType())
                      .getShape()
                      .back();
      int64_t n = product.getType().getShape().back();
      auto scales = dyn_cast_if_present<DenseElementsAttr>(
          product.getScales().getDefiningOp<ConstantOp>()
              ? product.getScales().getDefiningOp<ConstantOp>().getValue()
              : Attribute());
      float low = 0, high = 0;
      if (scales) {
        SmallVector<float> values(scales.getValues<float>());
        values.resize(n);
        auto [min, max] = std::minmax_element(values.begin(), values.end());
        low = *min;
        high = *max;
      }
      auto error = product->getAttrOfType<FloatAttr>(kWeightErrorAttr);
      layers.push_back(llvm::json::Object{
          {"node", getNodeName(product.getLoc())},
          {"k", k},
          {"n", n},
          {"precision", "int8"},
          {"weights", "7-bit symmetric, one scale per output column"},
          {"activations", "uint8, one scale and zero point per row, at run time"},
          {"weight_scale_min", low},
          {"weight_scale_max", high},
          {"weight_error", error ? error.getValueAsDouble() : -1.0}});
      quantizedBytes += k * n;
      return;
    }
    auto matmul = dyn_cast<MatMulOp>(op);
    auto reason = matmul ? matmul->getAttrOfType<StringAttr>(kKeptFloatAttr)
                         : StringAttr();
    if (!reason)
      return;
    auto type = cast<RankedTensorType>(matmul.getRhs().getType());
    layers.push_back(llvm::json::Object{
        {"node", getNodeName(matmul.getLoc())},
        {"k", type.getDimSize(0)},
        {"n", type.getDimSize(1)},
        {"precision", "float32"},
        {"reason", reason.getValue()}});
    floatBytes += type.getNumElements() * 4;
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.value(llvm::json::Object{
      {"layers", std::move(layers)},
      {"weight_bytes", llvm::json::Object{{"int8", quantizedBytes},
                                          {"float32", floatBytes}}}});
  os << "\n";
  return text;
}
