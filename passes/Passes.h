//===- Passes.h - graph passes on the kiln dialect --------------*- C++ -*-===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

/// How kiln-merge-tokens spreads its merges over the blocks.
enum class MergeSchedule { Constant, Decreasing };

/// Where kiln-merge-tokens' merges hold: the rest of the model, or the
/// attention they were made for.
enum class MergeScope { Model, Attention };

/// What kiln-prune-tokens ranks tokens by.
enum class PruneImportance { ClassAttention, KeyNorm };

/// What the quantization passes tell the quantization report, as
/// discardable attributes: a quantized product's relative RMS weight error
/// (f32), and why a product with constant weights stayed in float (string).
inline constexpr llvm::StringLiteral kWeightErrorAttr = "kiln.weight_error";
inline constexpr llvm::StringLiteral kKeptFloatAttr = "kiln.kept_float";
/// The static quantization calibration chose for a product's input (an f32
/// scale and a uint8 zero point as an integer): int8-static.
inline constexpr llvm::StringLiteral kInputScaleAttr = "kiln.input_scale";
inline constexpr llvm::StringLiteral kInputZeroPointAttr =
    "kiln.input_zero_point";
/// SmoothQuant's per-channel smoothing calibration chose for a product's
/// input (int8-static): the factors (f32 elements, one per input column)
/// and the migration strength alpha they were computed with (f32).
inline constexpr llvm::StringLiteral kInputSmoothingAttr =
    "kiln.input_smoothing";
inline constexpr llvm::StringLiteral kSmoothingAlphaAttr =
    "kiln.smoothing_alpha";
/// A product's quantization error measured on calibration inputs (relative
/// RMS error of its output), for the report.
inline constexpr llvm::StringLiteral kCalibrationErrorAttr =
    "kiln.calibration_error";
/// Why calibration could not measure a product it would have (string).
inline constexpr llvm::StringLiteral kCalibrationSkippedAttr =
    "kiln.calibration_skipped";

/// The error a `kiln.state_update` that would leave its state reports
/// (string; kiln-build-kv-cache sets it, kiln-insert-runtime-checks checks
/// the updates that carry it).
inline constexpr llvm::StringLiteral kOverflowErrorAttr = "kiln.overflow_error";

/// How many pre-LN transformer blocks kiln-skip-layers finds in `func`; an
/// error at `func` if its layer norms are not such blocks.
mlir::FailureOr<int64_t> countSkippableBlocks(mlir::FunctionOpInterface func);

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
