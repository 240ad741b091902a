//===- kiln-opt.cpp - mlir-opt with the kiln dialect and passes -----------===//
#include "kiln/compiler.hpp"
#include "lib/Codegen/Pipeline.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  kiln::registerKilnPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
