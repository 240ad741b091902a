//===- ModelError.h - the compiled model against the float one -*- C++ -*-===//
//
// Each product's calibration error says what quantizing it costs there;
// what a user needs to know is what the whole model loses. After
// compiling, the artifact runs on the calibration inputs and its outputs
// are compared with the float model's, for the quantization report.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_MODELERROR_H
#define KILN_LIB_CODEGEN_MODELERROR_H

#include "lib/Codegen/Calibration.h"

#include "llvm/Support/JSON.h"

namespace kiln {

/// Runs the artifact at `path` on `reference`'s calibration sets and
/// compares each float32 output with the float model's: per output, the
/// relative RMS error (`sqrt(sum (y - f)^2 / sum f^2)` over the tensor)
/// and the cosine similarity of the two tensors, their mean and worst over
/// the sets.
mlir::FailureOr<llvm::json::Object>
measureModelError(llvm::StringRef path, const CalibrationReference &reference,
                  mlir::Location loc);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_MODELERROR_H
