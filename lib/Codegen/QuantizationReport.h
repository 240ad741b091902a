//===- QuantizationReport.h - what quantization did, as JSON ----*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H
#define KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

/// The quantization report of `module` after the quantization passes:
/// "layers", one entry per matrix product with constant weights, in
/// program order, with its ONNX node, shape, precision (with the reason
/// where it stayed float), weight scales and relative RMS weight error
/// (and what calibration measured and chose), and "weight_bytes", the
/// weights' bytes by precision.
llvm::json::Object describeQuantization(mlir::ModuleOp module);

/// `report` as the text of the report file.
std::string renderQuantizationReport(llvm::json::Object report);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H
