//===- ModelError.cpp - the compiled model against the float one ----------===//
#include "lib/Codegen/ModelError.h"

#include "lib/Codegen/ArtifactRunner.h"

#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace kiln;

FailureOr<llvm::json::Object>
kiln::measureModelError(StringRef path, const CalibrationReference &reference,
                        Location loc) {
  FailureOr<ArtifactRunner> runner =
      ArtifactRunner::open(path, reference.entryName, "the compiled model", loc);
  if (failed(runner))
    return failure();
  assert(runner->numOutputs() == reference.numOutputs &&
         "the compiled model has the float model's outputs");
  struct Summary {
    double errorSum = 0, errorMax = 0, cosineSum = 0, cosineMin = 1;
  };
  std::vector<Summary> summaries(reference.numOutputs);
  for (size_t set = 0; set < reference.inputFiles.size(); ++set) {
    FailureOr<std::vector<TensorPtr>> outputs =
        runner->run(reference.inputFiles[set]);
    if (failed(outputs))
      return failure();
    for (int32_t o = 0; o < reference.numOutputs; ++o) {
      const kiln_tensor *expected = reference.outputs[set][o].get();
      const kiln_tensor *actual = (*outputs)[o].get();
      size_t count = kiln_tensor_num_elements(expected);
      if (kiln_tensor_dtype(expected) != KILN_DTYPE_F32 ||
          kiln_tensor_num_elements(actual) != count)
        continue;
      auto *f = static_cast<const float *>(kiln_tensor_const_data(expected));
      auto *y = static_cast<const float *>(kiln_tensor_const_data(actual));
      double errorSquares = 0, floatSquares = 0, squares = 0, dot = 0;
      for (size_t i = 0; i < count; ++i) {
        errorSquares += double(y[i] - f[i]) * (y[i] - f[i]);
        floatSquares += double(f[i]) * f[i];
        squares += double(y[i]) * y[i];
        dot += double(y[i]) * f[i];
      }
      double error = floatSquares > 0 ? std::sqrt(errorSquares / floatSquares)
                                      : std::sqrt(errorSquares);
      double cosine = floatSquares > 0 && squares > 0
                          ? dot / std::sqrt(floatSquares * squares)
                          : (errorSquares == 0 ? 1.0 : 0.0);
      Summary &summary = summaries[o];
      summary.errorSum += error;
      summary.errorMax = std::max(summary.errorMax, error);
      summary.cosineSum += cosine;
      summary.cosineMin = std::min(summary.cosineMin, cosine);
    }
  }
  double sets = double(reference.inputFiles.size());
  llvm::json::Array outputs;
  for (int32_t o = 0; o < reference.numOutputs; ++o) {
    const kiln_tensor *first = reference.outputs.front()[o].get();
    if (kiln_tensor_dtype(first) != KILN_DTYPE_F32)
      continue;
    const Summary &summary = summaries[o];
    outputs.push_back(llvm::json::Object{
        {"name", runner->getOutputName(o)},
        {"relative_error_mean", summary.errorSum / sets},
        {"relative_error_max", summary.errorMax},
        {"cosine_mean", summary.cosineSum / sets},
        {"cosine_min", summary.cosineMin}});
  }
  return llvm::json::Object{{"calibration_sets", int64_t(sets)},
                            {"outputs", std::move(outputs)}};
}
