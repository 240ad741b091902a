//===- QuantizationReport.h - what quantization did, as JSON ----*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H
#define KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The quantization report of `module` after the graph passes, as JSON:
/// one entry per matrix product with constant weights, in program order,
/// with its ONNX node, shape, precision (with the reason where it stayed
/// float), weight scales and relative RMS weight error, and totals of the
/// weights' bytes.
std::string renderQuantizationReport(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_QUANTIZATIONREPORT_H
