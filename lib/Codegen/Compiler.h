//===- Compiler.h - from a kiln module to an artifact on disk ---*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_COMPILER_H
#define KILN_LIB_CODEGEN_COMPILER_H

#include "lib/Codegen/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include <string>

namespace kiln {

enum class EmitKind {
  Mlir,    ///< the kiln-dialect module, as imported
  Llvm,    ///< optimized LLVM IR with the artifact glue
  Object,  ///< a relocatable object file
  Library, ///< a shared library loadable by the runtime
};

struct CompileOptions {
  EmitKind emit = EmitKind::Library;
  /// Where the result goes; "-" writes text output to stdout. Files are
  /// written under a temporary name and renamed, so a failed compile never
  /// leaves a partial file behind.
  std::string outputPath;
  /// LLVM CPU name to generate code for when the module names no target;
  /// "host" is the machine compiling, with the features it has.
  std::string targetCpu = "host";
  OptLevel optLevel = OptLevel::O2;
  /// Called on the lowering pass manager before it runs (for instance to
  /// apply MLIR's --mlir-print-ir-after-all and --mlir-timing options).
  std::function<llvm::LogicalResult(mlir::PassManager &)> configurePassManager;
  /// Where each compilation phase reports its time (--mlir-timing); the
  /// lowering's passes nest under it. Null when timing is off.
  mlir::TimingScope *timing = nullptr;
};

/// Lowers `module` (kiln dialect, consumed) and writes what `options.emit`
/// asks for. Errors go to the context's diagnostic handler.
llvm::LogicalResult compileModule(mlir::ModuleOp module,
                                  const CompileOptions &options);

/// Registers the dialects and LLVM IR translations compilation needs.
void registerCompilerDialects(mlir::DialectRegistry &registry);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_COMPILER_H
