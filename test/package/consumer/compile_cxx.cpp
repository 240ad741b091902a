// compile_cxx MODEL ARTIFACT
//
// Kiln as a compiler backend: imports MODEL into a context of the caller's
// own, looks at the module, and compiles it into the artifact ARTIFACT
// through the C++ API; then checks that a missing model is an llvm::Error
// carrying the diagnostic.
#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL ARTIFACT\n", argv[0]);
    return 2;
  }
  mlir::DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importOnnxFile(argv[1], context);
  if (!module) {
    std::fprintf(stderr, "import failed\n");
    return 1;
  }
  if (!module->lookupSymbol("main")) {
    std::fprintf(stderr, "the imported module has no @main\n");
    return 1;
  }
  kiln::CompileOptions options;
  options.outputPath = argv[2];
  options.optLevel = kiln::OptLevel::O2;
  if (mlir::failed(kiln::compileModule(*module, options))) {
    std::fprintf(stderr, "compile failed\n");
    return 1;
  }

  std::vector<kiln::Diagnostic> diagnostics;
  llvm::Error error = kiln::compileOnnxFile(
      std::string(argv[1]) + ".missing", {}, options,
      [&](const kiln::Diagnostic &d) { diagnostics.push_back(d); });
  if (!error) {
    std::fprintf(stderr, "a missing model compiled\n");
    return 1;
  }
  std::string message = llvm::toString(std::move(error));
  if (diagnostics.empty() || diagnostics[0].message.empty() ||
      message.find(diagnostics[0].message) == std::string::npos) {
    std::fprintf(stderr, "the error (%s) is not the diagnostic\n",
                 message.c_str());
    return 1;
  }
  std::printf("Kiln %s: compiled %s; a missing model: %s\n",
              kiln::getVersion(), argv[2], message.c_str());
  return 0;
}
