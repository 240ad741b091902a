//===- QuantizationReport.cpp - what quantization did, as JSON ------------===//
#include "lib/Codegen/QuantizationReport.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/ConstantMatch.h"
#include "passes/Passes.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

std::string getNodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// The entry point a product is in: a decoder's draft may be quantized
/// while its `decode` is not.
std::string getEntryName(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  return func ? func.getName().str() : "";
}

} // namespace

llvm::json::Object kiln::describeQuantization(ModuleOp module) {
  llvm::json::Array layers;
  int64_t floatBytes = 0, int8Bytes = 0, int4Bytes = 0;
  // The smallest and largest scale of the first `n` columns in a constant
  // `scales` tensor: [columns] for int8, [panels, blocks, width] for int4
  // (the padded columns past `n` are 0).
  auto scaleRange = [](Value scales, int64_t n) -> std::pair<float, float> {
    auto constant = scales.getDefiningOp<ConstantOp>();
    auto values = constant ? dyn_cast<DenseElementsAttr>(constant.getValue())
                           : DenseElementsAttr();
    if (!values)
      return {0, 0};
    ArrayRef<int64_t> shape = values.getType().getShape();
    int64_t width = shape.back(), perPanel = values.getNumElements() / shape[0];
    if (shape.size() == 1)
      perPanel = width;
    float low = INFINITY, high = -INFINITY;
    int64_t i = 0;
    for (float v : values.getValues<float>()) {
      int64_t column = (i / perPanel) * width + i % width;
      ++i;
      if (column < n) {
        low = std::min(low, v);
        high = std::max(high, v);
      }
    }
    return {low, high};
  };
  // What every quantized product reports; k and n set for the byte count.
  int64_t k = 0, n = 0;
  auto describe = [&](Operation *product, Value input, Value scales,
                      StringRef precision, StringRef weights) {
    k = cast<RankedTensorType>(input.getType()).getShape().back();
    n = cast<RankedTensorType>(product->getResult(0).getType()).getShape().back();
    auto [low, high] = scaleRange(scales, n);
    auto error = product->getAttrOfType<FloatAttr>(kWeightErrorAttr);
    return llvm::json::Object{
        {"node", getNodeName(product->getLoc())},
        {"entry", getEntryName(product)},
        {"k", k},
        {"n", n},
        {"precision", precision},
        {"weights", weights},
        {"activations", "uint8, one scale and zero point per row, at run time"},
        {"weight_scale_min", low},
        {"weight_scale_max", high},
        // -1 where the weights came quantized (an imported int4 model).
        {"weight_error", error ? error.getValueAsDouble() : -1.0}};
  };
  // The error calibration measured on the product's output, if it ran, or
  // why it could not.
  auto addCalibration = [](llvm::json::Object &layer, Operation *product) {
    if (auto measured =
            product->getAttrOfType<FloatAttr>(kCalibrationErrorAttr))
      layer["calibration_error"] = measured.getValueAsDouble();
    if (auto skipped =
            product->getAttrOfType<StringAttr>(kCalibrationSkippedAttr))
      layer["calibration_skipped"] = skipped.getValue();
  };
  module.walk([&](Operation *op) {
    if (auto product = dyn_cast<QuantizedMatMulOp>(op)) {
      llvm::json::Object layer =
          describe(product, product.getInput(), product.getScales(), "int8",
                   "7-bit symmetric, one scale per output column");
      if (Value scale = product.getInputScale()) {
        layer["activations"] = "uint8, one scale and zero point for every "
                               "row (a QDQ model's, or int8-static's "
                               "calibration's)";
        if (DenseElementsAttr value = getConstantElements(scale))
          layer["input_scale"] = *value.getValues<float>().begin();
        if (DenseElementsAttr value =
                getConstantElements(product.getInputZeroPoint()))
          layer["input_zero_point"] =
              int64_t(uint8_t(*value.getValues<int8_t>().begin()));
      }
      if (DenseElementsAttr factors = product.getSmoothing()
                                          ? getConstantElements(product.getSmoothing())
                                          : DenseElementsAttr()) {
        auto values = llvm::to_vector(factors.getValues<float>());
        auto [low, high] = std::minmax_element(values.begin(), values.end());
        layer["smoothing_min"] = *low;
        layer["smoothing_max"] = *high;
      }
      if (auto alpha = product->getAttrOfType<FloatAttr>(kSmoothingAlphaAttr))
        layer["smoothing_alpha"] = alpha.getValueAsDouble();
      addCalibration(layer, product);
      layers.push_back(std::move(layer));
      int8Bytes += k * n;
      return;
    }
    if (auto product = dyn_cast<Int4MatMulOp>(op)) {
      llvm::json::Object layer = describe(
          product, product.getInput(), product.getScales(), "int4",
          product.getZeroPoints()
              ? "4-bit with a scale and zero point per block of rows of a "
                "column"
              : "4-bit symmetric, one scale per block of rows of a column");
      layer["block_size"] = product.getBlockSize();
      if (product.getFloatInput())
        layer["activations"] = "float32";
      addCalibration(layer, product);
      layers.push_back(std::move(layer));
      int4Bytes += llvm::divideCeil(k * n, 2);
      return;
    }
    auto matmul = dyn_cast<MatMulOp>(op);
    auto reason = matmul ? matmul->getAttrOfType<StringAttr>(kKeptFloatAttr)
                         : StringAttr();
    if (!reason)
      return;
    auto type = cast<RankedTensorType>(matmul.getRhs().getType());
    layers.push_back(llvm::json::Object{{"node", getNodeName(matmul.getLoc())},
                                        {"entry", getEntryName(matmul)},
                                        {"k", type.getDimSize(0)},
                                        {"n", type.getDimSize(1)},
                                        {"precision", "float32"},
                                        {"reason", reason.getValue()}});
    floatBytes += type.getNumElements() * 4;
  });
  return llvm::json::Object{
      {"layers", std::move(layers)},
      {"weight_bytes", llvm::json::Object{{"int8", int8Bytes},
                                          {"int4", int4Bytes},
                                          {"float32", floatBytes}}}};
}

std::string kiln::renderQuantizationReport(llvm::json::Object report) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.value(std::move(report));
  os << "\n";
  return text;
}
