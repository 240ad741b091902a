//===- Calibration.cpp - quantization error measured on real inputs -------===//
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/CalibrationCapture.h"
#include "lib/Codegen/StaticQuantization.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/OutputFile.h"
#include "passes/Passes.h"
#include "passes/QuantizableProducts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;
using namespace kiln;

namespace {

/// The quantization passes' defaults: the fewest weight rows a product
/// needs to be quantized, and int4's block.
constexpr int64_t kMinDepth = 64;
constexpr int64_t kInt4BlockSize = 32;
/// Rows of each product's input measured per calibration set: evenly
/// spaced, enough for the error's second digit and cheap to multiply.
constexpr int64_t kRowsPerSet = 32;
/// The most bytes the float model returns of one product input whose rows
/// depend on the call (a buffer of its largest row count).
constexpr int64_t kMaxCaptureBytes = int64_t(256) << 20;

/// A product's weights, and its error summed over the calibration rows.
struct Product {
  ConstantWeights weights{};
  /// Which extra result holds its input.
  size_t input = 0;
  /// The weights as the quantization rounds them, `[k, n]`.
  std::vector<float> quantized;
  double errorSquares = 0, outputSquares = 0;
  /// For int8-static: what entered it, to choose its quantization on.
  std::optional<StaticInputs> inputs;
};

/// `row` quantized to uint8 with `scale` and `zero` (multiplying by the
/// scale's inverse, as the per-row quantization does) and back.
void roundRow(ArrayRef<float> row, float scale, float zero,
              MutableArrayRef<float> rounded) {
  float inverse = scale > 0 ? 1 / scale : 0;
  for (size_t i = 0; i < row.size(); ++i)
    rounded[i] =
        (std::clamp(std::nearbyint(row[i] * inverse) + zero, 0.0f, 255.0f) -
         zero) *
        scale;
}

std::vector<float> roundWeights(const ConstantWeights &weights,
                                Quantization quantization) {
  std::vector<float> rounded(weights.k * weights.n);
  if (quantization == Quantization::Int4Weight) {
    Int4Quantization int4(weights, kInt4BlockSize, /*withZeroPoints=*/true);
    for (int64_t row = 0; row < weights.k; ++row)
      for (int64_t col = 0; col < weights.n; ++col)
        rounded[row * weights.n + col] =
            int4.integer(row, col) * int4.scale(row / kInt4BlockSize, col);
    return rounded;
  }
  std::vector<float> scales = getWeightScales(weights, weights.k, kMaxInt8Weight);
  for (int64_t row = 0; row < weights.k; ++row)
    for (int64_t col = 0; col < weights.n; ++col)
      rounded[row * weights.n + col] =
          quantizeWeight(weights.at(row, col), scales[col], kMaxInt8Weight, 0) *
          scales[col];
  return rounded;
}

/// Measures `product` on some of the `m` rows of `x`. For int8-static it
/// keeps them (and the range of all of `x`) to choose the quantization on;
/// otherwise it adds the error of the quantized output, each row quantized
/// to uint8 over its range widened to 0 as the kernels do at run time,
/// against the float product.
void measure(Product &product, const float *x, int64_t m) {
  int64_t k = product.weights.k;
  int64_t step = std::max<int64_t>(1, m / kRowsPerSet);
  if (product.inputs) {
    product.inputs->add(x, m, step);
    return;
  }
  std::vector<float> rows, rounded;
  for (int64_t r = 0; r < m; r += step) {
    ArrayRef<float> row(x + r * k, k);
    auto [low, high] = std::minmax_element(row.begin(), row.end());
    auto [scale, zero] = getUint8Range(*low, *high);
    rows.insert(rows.end(), row.begin(), row.end());
    rounded.resize(rows.size());
    roundRow(row, scale, zero,
             MutableArrayRef<float>(rounded).take_back(k));
  }
  std::vector<float> exact =
      multiplyRows(rows, product.weights.values, k, product.weights.n);
  std::vector<float> approximate =
      multiplyRows(rounded, product.quantized.data(), k, product.weights.n);
  for (size_t i = 0; i < exact.size(); ++i) {
    double error = double(approximate[i]) - exact[i];
    product.errorSquares += error * error;
    product.outputSquares += double(exact[i]) * exact[i];
  }
}

/// Runs the artifact at `path` (the float model returning each product's
/// input as capture `i` after its own results, CalibrationCapture.h) on
/// every calibration set, measuring each product; keeps the model's own
/// outputs in `reference`.
LogicalResult runCalibration(StringRef path, StringRef entryName,
                             StringRef dir, MutableArrayRef<Product> products,
                             CalibrationReference &reference, Location loc) {
  FailureOr<ArtifactRunner> runner =
      ArtifactRunner::open(path, entryName, "the float model", loc);
  if (failed(runner))
    return failure();
  int32_t numOutputs = runner->numOutputs();
  std::vector<int32_t> outputOf(products.size(), -1),
      rowsOf(products.size(), -1);
  for (int32_t o = 0; o < numOutputs; ++o) {
    std::string name = runner->getOutputName(o);
    for (size_t i = 0; i < products.size(); ++i) {
      if (name == getCaptureName(products[i].input))
        outputOf[i] = o;
      if (name == getCaptureRowsName(products[i].input))
        rowsOf[i] = o;
    }
  }
  assert(llvm::all_of(outputOf, [](int32_t o) { return o >= 0; }) &&
         "every product's input is a result");

  FailureOr<std::vector<std::vector<std::string>>> sets =
      findCalibrationSets(dir, runner->numInputs(), loc);
  if (failed(sets))
    return failure();
  reference.entryName = entryName.str();
  for (const std::vector<std::string> &files : *sets) {
    FailureOr<std::vector<TensorPtr>> outputs = runner->run(files);
    if (failed(outputs))
      return failure();
    for (size_t i = 0; i < products.size(); ++i) {
      const kiln_tensor *x = (*outputs)[outputOf[i]].get();
      // A buffer of the largest row count holds the call's rows first.
      int64_t m = rowsOf[i] >= 0
                      ? *static_cast<const int64_t *>(kiln_tensor_const_data(
                            (*outputs)[rowsOf[i]].get()))
                      : kiln_tensor_num_elements(x) / products[i].weights.k;
      measure(products[i], static_cast<const float *>(kiln_tensor_const_data(x)),
              m);
    }
    outputs->resize(reference.numOutputs);
    reference.inputFiles.push_back(files);
    reference.outputs.push_back(std::move(*outputs));
  }
  return success();
}

} // namespace

FailureOr<std::vector<std::vector<std::string>>>
kiln::findCalibrationSets(StringRef dir, int32_t numInputs, Location loc) {
  auto inputsOf = [&](StringRef folder) {
    std::vector<std::string> files;
    for (int32_t i = 0; i < numInputs; ++i) {
      SmallString<256> path(folder);
      llvm::sys::path::append(path, "input_" + std::to_string(i) + ".pb");
      files.push_back(path.str().str());
    }
    return files;
  };
  auto hasInputs = [&](StringRef folder) {
    SmallString<256> path(folder);
    llvm::sys::path::append(path, "input_0.pb");
    return llvm::sys::fs::exists(path);
  };
  if (!llvm::sys::fs::is_directory(dir))
    return emitError(loc) << "calibration folder '" << dir
                          << "' is not a folder";
  std::vector<std::string> folders;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::is_directory(it->path()) && hasInputs(it->path()))
      folders.push_back(it->path());
  if (ec)
    return emitError(loc) << "cannot read calibration folder '" << dir
                          << "': " << ec.message();
  std::sort(folders.begin(), folders.end());
  if (folders.empty() && hasInputs(dir))
    folders.push_back(dir.str());
  if (folders.empty())
    return emitError(loc) << "calibration folder '" << dir
                          << "' holds no input sets (input_0.pb, ... or "
                             "folders of them)";
  std::vector<std::vector<std::string>> sets;
  for (const std::string &folder : folders)
    sets.push_back(inputsOf(folder));
  return sets;
}

LogicalResult kiln::calibrateProducts(ModuleOp module,
                                      const CompileOptions &options,
                                      CalibrationReference &reference) {
  Location loc = module.getLoc();
  if (options.quantization == Quantization::None)
    return emitError(loc) << "calibration measures a quantization: give one "
                             "(--quantize)";
  SmallVector<func::FuncOp> entries;
  module.walk([&](func::FuncOp function) {
    if (isEntryPoint(function))
      entries.push_back(function);
  });
  if (entries.size() != 1)
    return emitError(loc) << "calibration needs a model with one entry "
                             "point, not "
                          << entries.size();
  // The products the quantization would take, in walk order (the same in
  // the clone).
  auto collect = [&](Operation *root) {
    SmallVector<MatMulOp> found;
    root->walk([&](MatMulOp op) {
      if (matchQuantizableProduct(op, kMinDepth))
        found.push_back(op);
    });
    return found;
  };
  OwningOpRef<ModuleOp> clone = module.clone();
  (*clone)->setAttr(kSharedWeightsAttr, UnitAttr::get(module.getContext()));
  SmallVector<MatMulOp> allOriginals = collect(module);
  SmallVector<MatMulOp> allCopies = collect(*clone);
  assert(allCopies.size() == allOriginals.size() &&
         "a clone has the same products");
  func::FuncOp entry = *clone->getOps<func::FuncOp>().begin();
  for (func::FuncOp function : clone->getOps<func::FuncOp>())
    if (isEntryPoint(function))
      entry = function;

  // Each distinct input (products often share one: a layer's query, key
  // and value) captured once, if its rows are bounded and its buffer not
  // too large; the products' index into them. The others are quantized
  // unmeasured (int8-static's keep per-row quantization); the report says
  // why.
  MLIRContext *ctx = module.getContext();
  SmallVector<MatMulOp> originals;
  llvm::MapVector<Value, size_t> inputs;
  SmallVector<size_t> inputOf;
  int64_t skipped = 0;
  for (auto [original, copy] : llvm::zip(allOriginals, allCopies)) {
    Value lhs = copy.getLhs();
    auto type = cast<RankedTensorType>(lhs.getType());
    std::optional<int64_t> rows =
        type.hasStaticShape() ? type.getNumElements() / type.getShape().back()
                              : getRowBound(lhs, entry);
    bool tooLarge = rows && !type.hasStaticShape() &&
                    *rows * type.getShape().back() * 4 > kMaxCaptureBytes;
    if (!rows || tooLarge) {
      std::string reason;
      llvm::raw_string_ostream os(reason);
      os << "its input " << type;
      if (rows)
        os << " can have " << *rows
           << " rows, too many to capture: give smaller ranges with --dim";
      else
        os << " has dynamic dimensions that the named dims' ranges do not "
              "bound";
      original->setAttr(kCalibrationSkippedAttr, StringAttr::get(ctx, reason));
      ++skipped;
      continue;
    }
    auto [it, inserted] = inputs.insert({lhs, inputs.size()});
    if (inserted)
      addCaptureResults(entry, lhs, it->second, *rows);
    originals.push_back(original);
    inputOf.push_back(it->second);
  }
  if (skipped && options.quantization == Quantization::Int8Static)
    emitWarning(loc) << skipped
                     << " products have inputs calibration cannot capture; "
                        "they keep per-row quantization (see the "
                        "quantization report)";
  if (originals.empty())
    return success();

  SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-calibration", "so", path))
    return emitError(loc) << "calibration: cannot create a temporary file: "
                          << ec.message();
  TemporaryFileRemover remover(path);
  CompileOptions floatOptions = options;
  floatOptions.emit = EmitKind::Library;
  floatOptions.outputPath = path.str().str();
  floatOptions.libraryName = "kiln-calibration.so";
  floatOptions.quantization = Quantization::None;
  floatOptions.quantizationReportPath.clear();
  floatOptions.calibrationDir.clear();
  if (failed(compileModule(*clone, floatOptions)))
    return failure();

  bool isStatic = options.quantization == Quantization::Int8Static;
  std::vector<Product> products;
  for (auto [op, input] : llvm::zip(originals, inputOf)) {
    ConstantWeights weights = *matchQuantizableProduct(op, kMinDepth);
    Product product;
    product.weights = weights;
    product.input = input;
    if (isStatic)
      product.inputs.emplace(weights.k);
    else
      product.quantized = roundWeights(weights, options.quantization);
    products.push_back(std::move(product));
  }
  reference.numOutputs = entries[0].getNumResults();
  if (failed(runCalibration(path, entries[0].getSymName(),
                            options.calibrationDir, products, reference, loc)))
    return failure();
  // int8-static's choices: independent searches, one per product.
  std::vector<StaticQuantization> choices(isStatic ? products.size() : 0);
  parallelFor(ctx, 0, choices.size(), [&](size_t i) {
    choices[i] = chooseStaticQuantization(products[i].weights,
                                          *products[i].inputs);
  });
  for (size_t i = 0; i < originals.size(); ++i) {
    double error = products[i].outputSquares > 0
                       ? std::sqrt(products[i].errorSquares /
                                   products[i].outputSquares)
                       : 0;
    if (isStatic) {
      const StaticQuantization &choice = choices[i];
      error = choice.error;
      originals[i]->setAttr(kInputScaleAttr,
                            FloatAttr::get(Float32Type::get(ctx), choice.scale));
      originals[i]->setAttr(
          kInputZeroPointAttr,
          IntegerAttr::get(IntegerType::get(ctx, 64), choice.zeroPoint));
      if (!choice.smoothing.empty()) {
        auto type = RankedTensorType::get(
            {int64_t(choice.smoothing.size())}, Float32Type::get(ctx));
        originals[i]->setAttr(
            kInputSmoothingAttr,
            DenseElementsAttr::get(type, ArrayRef<float>(choice.smoothing)));
        originals[i]->setAttr(
            kSmoothingAlphaAttr,
            FloatAttr::get(Float32Type::get(ctx), choice.alpha));
      }
    }
    if (options.qualityBudget > 0 && error > options.qualityBudget)
      originals[i]->setAttr(
          kKeptFloatAttr,
          StringAttr::get(ctx, llvm::formatv("calibration error {0:F4} "
                                             "exceeds the quality budget {1}",
                                             error, options.qualityBudget)
                                   .str()));
    else
      originals[i]->setAttr(kCalibrationErrorAttr,
                            FloatAttr::get(Float32Type::get(ctx), error));
  }
  return success();
}
