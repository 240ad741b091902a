//===- Calibration.h - quantization error measured on real inputs -*- C++ -*-===//
//
// A product's quantization error depends on what flows into it: the same
// int4 weights cost little on smooth activations and much on ones with
// outlier channels. Calibration runs the float model on the user's inputs,
// captures what enters each product with constant weights, and measures
// the error the chosen quantization would make on exactly those rows; the
// products whose error exceeds the quality budget stay in float.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_CALIBRATION_H
#define KILN_LIB_CODEGEN_CALIBRATION_H

#include "kiln/compiler.hpp"
#include "lib/TensorFile/TensorFile.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace kiln {

/// The float model's own outputs on each calibration set, which calibration
/// keeps to measure the compiled model against (ModelError.h).
struct CalibrationReference {
  std::string entryName;
  int32_t numOutputs = 0;
  /// Per set: its input files, and the float model's outputs.
  std::vector<std::vector<std::string>> inputFiles;
  std::vector<std::vector<TensorPtr>> outputs;
};

/// The input files of each calibration set in `dir`: its subfolders that
/// hold input_0.pb (in name order), or `dir` itself; `numInputs` files each.
mlir::FailureOr<std::vector<std::vector<std::string>>>
findCalibrationSets(llvm::StringRef dir, int32_t numInputs,
                    mlir::Location loc);

/// Marks each product of `module` (after the graph passes that precede
/// quantization) that `options.quantization` would quantize with its error
/// measured on the inputs in `options.calibrationDir`: `kiln.calibration_error`
/// (the relative RMS error of its output), or `kiln.kept_float` with the
/// reason when that exceeds `options.qualityBudget` (0: no limit). For
/// int8-static it also chooses each product's input scale and zero point
/// (`kiln.input_scale`, `kiln.input_zero_point`) and SmoothQuant smoothing
/// (`kiln.input_smoothing`, `kiln.smoothing_alpha`): the migration strength
/// and clipped range with the least output error (StaticQuantization.h).
/// The float model is compiled and run for it, with the product inputs as
/// extra results; its own outputs are kept in `reference`.
mlir::LogicalResult calibrateProducts(mlir::ModuleOp module,
                                      const CompileOptions &options,
                                      CalibrationReference &reference);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_CALIBRATION_H
