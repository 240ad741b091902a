//===- CalibrationCapture.h - product inputs as extra results --*- C++ -*-===//
//
// Calibration compiles the float model with what enters each product as
// extra results. An artifact's results must have static dims or one named
// dim, so an input whose rows depend on the call (a sequence length, a
// batch) comes back as a buffer of its largest row count, which the named
// dims' ranges bound, with the call's row count in a second result.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_CALIBRATIONCAPTURE_H
#define KILN_LIB_CODEGEN_CALIBRATIONCAPTURE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace kiln {

/// The name of the extra result that returns the `i`th captured value, and
/// of the one that returns its row count (when dynamic).
std::string getCaptureName(size_t i);
std::string getCaptureRowsName(size_t i);

/// The most rows (elements over the last dimension) `value`, a tensor in
/// `entry`, can have: its static size, or a bound from the ranges of the
/// named dims its shape follows from (reified, as the lowering sizes it).
/// nullopt if its shape does not follow from them. May create the ops that
/// compute its dims.
std::optional<int64_t> getRowBound(mlir::Value value, mlir::func::FuncOp entry);

/// Adds `value` to `entry`'s results as the `i`th capture: as it is if its
/// shape is static; else its rows in a `[rowBound, K]` buffer (zeros past
/// them) and their count as a 0-D i64 result.
void addCaptureResults(mlir::func::FuncOp entry, mlir::Value value, size_t i,
                       int64_t rowBound);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_CALIBRATIONCAPTURE_H
