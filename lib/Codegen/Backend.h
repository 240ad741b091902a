//===- Backend.h - what generates an artifact for a target ------*- C++ -*-===//
//
// The compiler runs the target-independent graph pipeline, then hands the
// module to the backend of its #kiln.target: the backend adds the passes
// that lower it for that target (layouts and block sizes are its choices)
// and writes the artifact. The CPU backend is the one Kiln has; a CUDA
// backend implements the same interface.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_BACKEND_H
#define KILN_LIB_CODEGEN_BACKEND_H

#include "kiln/compiler.hpp"
#include "lib/Codegen/OutputFile.h"

#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace kiln {

class Backend {
public:
  virtual ~Backend() = default;

  /// Adds the passes that take a module from the graph pipeline to what
  /// emit() takes, for `options.emit`.
  virtual void buildPipeline(mlir::OpPassManager &pm,
                             const CompileOptions &options) const = 0;

  /// Writes what `options.emit` asks for (not the kiln-dialect module,
  /// which the compiler prints itself) from the lowered `module` to
  /// `output`, which the compiler commits.
  virtual mlir::LogicalResult emit(mlir::ModuleOp module,
                                   const CompileOptions &options,
                                   OutputFile &output) const = 0;
};

/// The CPU backend, for `target` (a CPU target).
std::unique_ptr<Backend> createCpuBackend(TargetAttr target);

/// The backend for `target`; an error at `loc` if Kiln has none for it.
mlir::FailureOr<std::unique_ptr<Backend>> createBackend(TargetAttr target,
                                                        mlir::Location loc);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_BACKEND_H
