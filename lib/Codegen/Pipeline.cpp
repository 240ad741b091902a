//===- Pipeline.cpp - kiln dialect to LLVM dialect ------------------------===//
#include "lib/Codegen/Pipeline.h"

#include "lib/Conversion/Passes.h"
#include "passes/Passes.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void kiln::registerKilnPasses() {
  static bool registered = [] {
    registerAllPasses();
    kiln::registerKilnConversionPasses();
    kiln::registerKilnGraphPasses();
    return true;
  }();
  (void)registered;
}

LogicalResult kiln::buildGraphPipeline(OpPassManager &pm, OptLevel level) {
  registerKilnPasses();
  std::string pipeline = "kiln-insert-runtime-checks";
  if (level >= OptLevel::O2)
    pipeline = "kiln-fuse-layer-norm,kiln-fuse-attention,"
               "kiln-fold-attention-transposes,kiln-pack-weights,kiln-fuse-matmul-bias,"
               "kiln-fuse-matmul-activation,kiln-fuse-matmul-residual," +
               pipeline;
  if (level >= OptLevel::O1)
    pipeline = "kiln-fold-constants," + pipeline;
  return parsePassPipeline(pipeline, pm, llvm::errs());
}

LogicalResult kiln::buildCpuLoweringPipeline(OpPassManager &pm,
                                             OptLevel level,
                                             bool externalWeights) {
  registerKilnPasses();
  bool optimize = level >= OptLevel::O2;
  // Written as text so --mlir-print-ir-after-all names each step as a user
  // would type it into kiln-opt.
  std::string pipeline =
      std::string("kiln-lower-state,"
                  "convert-kiln-to-linalg,"
                  "canonicalize,"
                  "kiln-bind-dimensions,") +
      (optimize ? "kiln-fuse-elementwise,"
                  "kiln-tile-dynamic-dims,"
                  "canonicalize,"
                  "kiln-tile-and-vectorize-contractions,"
                  "kiln-vectorize-generics,"
                : "") +
      "eliminate-empty-tensors,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "kiln-bind-dimensions,"
      "kiln-promote-loop-buffers,"
      "kiln-allocate-result-buffers,"
      "buffer-results-to-out-params{add-result-attr hoist-static-allocs "
      "modify-public-functions},"
      "kiln-plan-memory,"
      "buffer-deallocation-pipeline,"
      "kiln-memref-copy-to-linalg," +
      (optimize ? "func.func(convert-linalg-to-parallel-loops),"
                : "func.func(convert-linalg-to-loops),") +
      "convert-vector-to-scf{full-unroll target-rank=1},"
      "scf-forall-to-parallel," +
      (optimize ? "kiln-outline-parallel-loops,"
                  "kiln-approximate-math,"
                : "") +
      (externalWeights ? "kiln-externalize-weights," : "") +
      "kiln-export-entries,"
      "kiln-scope-loop-allocas,"
      "convert-math-to-funcs,"
      "convert-scf-to-cf,"
      "expand-strided-metadata,"
      "lower-affine,"
      "convert-vector-to-llvm{reassociate-fp-reductions},"
      "convert-ub-to-llvm,"
      "convert-math-to-llvm,"
      "convert-math-to-libm,"
      "convert-arith-to-llvm,"
      "convert-cf-to-llvm,"
      "finalize-memref-to-llvm,"
      "convert-func-to-llvm,"
      "reconcile-unrealized-casts";
  return parsePassPipeline(pipeline, pm, llvm::errs());
}
