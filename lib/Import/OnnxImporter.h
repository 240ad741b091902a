//===- OnnxImporter.h - ONNX model to kiln dialect --------------*- C++ -*-===//
#ifndef KILN_LIB_IMPORT_ONNXIMPORTER_H
#define KILN_LIB_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Reads the ONNX model at `path`, loads its external data (only from files
/// inside the model's folder), runs ONNX's checker and shape inference, and
/// imports the graph as `func.func @main` of kiln ops. Problems are reported
/// through `context`'s diagnostic engine, located at the ONNX node; returns
/// null after any error.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(llvm::StringRef path,
                                                  mlir::MLIRContext &context);

} // namespace kiln

#endif // KILN_LIB_IMPORT_ONNXIMPORTER_H
