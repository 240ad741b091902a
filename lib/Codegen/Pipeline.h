//===- Pipeline.h - kiln dialect to LLVM dialect ----------------*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_PIPELINE_H
#define KILN_LIB_CODEGEN_PIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace kiln {

/// Registers every pass the Kiln pipelines use, so they can be named in
/// textual pipelines (and on kiln-opt's command line).
void registerKilnPasses();

/// How much Kiln optimizes. -O0 is the reference path: the straightforward
/// lowering with none of Kiln's own rewrites (LLVM still optimizes it), so
/// every optimized build can be checked against it.
enum class OptLevel { O0, O1, O2, O3 };

/// Adds the graph passes on the kiln dialect: constant folding (from -O1)
/// and the run-time checks that give every entry point its status result.
llvm::LogicalResult buildGraphPipeline(mlir::OpPassManager &pm, OptLevel level);

/// Adds the passes lowering a kiln-dialect module to the LLVM dialect for
/// the CPU: linalg on tensors, bufferization with out-parameters and
/// deallocation, memory planning, loops, each entry's ABI wrapper and the
/// artifact descriptor (kiln-export-entries), then LLVM. From -O2, matrix
/// products are tiled and vectorized, exp/erf/tanh approximated by
/// polynomials and parallel loops run on the runtime's executor.
/// With `externalWeights`, large constants are declared external and listed
/// in the module's `kiln.weights` for the compiler to write separately.
llvm::LogicalResult buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                                             OptLevel level,
                                             bool externalWeights);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_PIPELINE_H
