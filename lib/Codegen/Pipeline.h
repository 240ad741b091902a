//===- Pipeline.h - Kiln's pass pipelines -----------------------*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_PIPELINE_H
#define KILN_LIB_CODEGEN_PIPELINE_H

#include "kiln/compiler.hpp"
#include "lib/Codegen/CpuTarget.h"

#include "mlir/Pass/PassManager.h"

namespace kiln {

/// Registers every pass Kiln's pipelines use in MLIR's global registry, so
/// tools such as kiln-opt can name them on their command lines. The
/// compiler itself builds its pipelines from the passes' constructors and
/// registers nothing.
void registerKilnPasses();

/// Adds the target-independent graph passes on the kiln dialect up to
/// quantization: constant folding (from -O1), the recognition of layer
/// norms and attention (from -O2) and of a QDQ model's int8 products (from
/// -O1). Calibration measures the products this leaves.
void buildGraphPipeline(mlir::OpPassManager &pm, OptLevel level,
                        bool exactSplatCulling = true);

/// Adds the rest: `quantization` of the products left (at every level),
/// and the run-time checks that give every entry point its status result.
void buildQuantizationPipeline(mlir::OpPassManager &pm,
                               Quantization quantization);

/// Adds the passes lowering a kiln-dialect module to the LLVM dialect for
/// a CPU with `layout`: from -O2, weights packed into panels and matrix
/// products fused with their epilogues, tiled and vectorized, exp/erf/tanh
/// approximated by polynomials and parallel loops run on the runtime's
/// executor; at every level linalg on tensors, bufferization with
/// out-parameters, memory planning, loops, each entry's ABI wrapper and the
/// artifact descriptor (kiln-export-entries), then LLVM. With
/// `externalWeights`, large constants are declared external and listed in
/// the module's `kiln.weights` for the backend to write separately. The
/// descriptor records `cpuFeatures` as the features the code needs.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm, OptLevel level,
                              const CpuLayout &layout, bool externalWeights,
                              llvm::StringRef cpuFeatures);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_PIPELINE_H
