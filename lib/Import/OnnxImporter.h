//===- OnnxImporter.h - ONNX model to kiln dialect --------------*- C++ -*-===//
#ifndef KILN_LIB_IMPORT_ONNXIMPORTER_H
#define KILN_LIB_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

/// The sizes a named dimension may take, bounds included; one size when
/// min == max.
struct DimRange {
  int64_t min = 0;
  int64_t max = 0;
};

/// How the model's inputs are shaped, where the file leaves it open.
struct ImportOptions {
  /// Fixes every dimension of an input (by name).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Fixes a named dimension (ONNX dim_param) to one size, or makes it a
  /// dynamic dimension with a range.
  std::map<std::string, DimRange> dims;
};

/// Reads the ONNX model at `path`, loads its external data (only from files
/// inside the model's folder), applies `options` to the inputs' shapes, runs
/// ONNX's checker and shape inference, and imports the graph as
/// `func.func @main` of kiln ops. Named dimensions with a range stay dynamic
/// (the module's `kiln.dims`); every other input dimension must have a size.
/// Problems are reported through `context`'s diagnostic engine, located at
/// the ONNX node; returns null after any error.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(llvm::StringRef path, mlir::MLIRContext &context,
                const ImportOptions &options = {});

} // namespace kiln

#endif // KILN_LIB_IMPORT_ONNXIMPORTER_H
