//===- Pipeline.cpp - Kiln's pass pipelines -------------------------------===//
#include "lib/Codegen/Pipeline.h"

#include "lib/Conversion/Passes.h"
#include "passes/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kiln::registerKilnPasses() {
  registerAllPasses();
  registerKilnConversionPasses();
  registerKilnGraphPasses();
}

void kiln::buildGraphPipeline(OpPassManager &pm, OptLevel level,
                              bool exactSplatCulling) {
  if (level >= OptLevel::O1) {
    // Before folding dequantizes the 4-bit weights to f32.
    pm.addPass(createFuseInt4WeightProductsPass());
    pm.addPass(createFoldConstantsPass());
    pm.addPass(createFloatIntegerProductsPass());
    // Constants to the right of commutative ops: the fusions match one
    // operand order.
    pm.addPass(createCanonicalizerPass());
  }
  if (level >= OptLevel::O2) {
    pm.addPass(createStripFloatQdqPass());
    pm.addPass(createFuseLayerNormPass());
    pm.addPass(createFuseGroupNormPass());
    pm.addPass(createFuseAttentionPass());
    pm.addPass(createFoldAttentionTransposesPass());
    // A batch norm's scale, computed by kiln-fold-constants, into the
    // filter before it packs or transforms.
    pm.addPass(createFoldConvolutionScalesPass());
    if (exactSplatCulling)
      pm.addNestedPass<func::FuncOp>(createCullSplatsExactlyPass());
  }
  // A QDQ model asks for int8 products itself; -O0 runs it as written.
  if (level >= OptLevel::O1)
    pm.addPass(createFuseQuantizedProductsPass());
}

void kiln::buildQuantizationPipeline(OpPassManager &pm,
                                     Quantization quantization) {
  // Asked-for quantization changes the results, so -O0 gets it too: the
  // reference path is the quantized model on plain loops.
  // int8-static's scales, chosen by calibration, are on the products.
  if (quantization == Quantization::Int8Dynamic ||
      quantization == Quantization::Int8Static)
    pm.addPass(createQuantizeInt8DynamicPass());
  if (quantization == Quantization::Int4Weight)
    pm.addPass(createQuantizeInt4WeightPass());
  pm.addPass(createInsertRuntimeChecksPass());
}

namespace {

/// Kiln's own passes on the kiln dialect and on linalg, down to bufferized
/// loops with entry points described.
void addKilnLowering(OpPassManager &pm, kiln::OptLevel level,
                     const kiln::CpuLayout &layout, bool externalWeights,
                     StringRef cpuFeatures) {
  using namespace kiln;
  bool optimize = level >= OptLevel::O2;
  pm.addPass(createLowerSampleLoopsPass());
  if (optimize) {
    // Before packing: the transposed filters it makes are packed weights.
    pm.addPass(createFewPixelConvolutionsPass({layout.patchColumns / 2}));
    pm.addPass(createPackWeightsPass({layout.registerCols}));
    WinogradConvolutionsPassOptions winograd;
    winograd.panelWidth = layout.patchColumns;
    pm.addPass(createWinogradConvolutionsPass(winograd));
    pm.addPass(createFuseMatMulEpiloguePass());
  }
  pm.addPass(createLowerStatePass());
  ConvertKilnToLinalgPassOptions toLinalg;
  toLinalg.attentionQueryRows = layout.attentionQueryRows;
  toLinalg.attentionKeyColumns = layout.attentionKeyColumns;
  toLinalg.attentionMaskedKeyColumns = layout.attentionMaskedKeyColumns;
  toLinalg.patchColumns = optimize ? layout.patchColumns : 0;
  pm.addPass(createConvertKilnToLinalgPass(toLinalg));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createBindDimensionsPass());
  if (optimize) {
    pm.addPass(createFuseElementwisePass());
    pm.addPass(createTileDynamicDimsPass(
        {layout.registerRows, layout.dynamicGenericRows}));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createTileAndVectorizeContractionsPass(
        {layout.registerRows, layout.registerCols, layout.narrowRows,
         layout.narrowCols, layout.cacheDepth, layout.threadRows,
         layout.threadCols}));
    VectorizeGenericsPassOptions generics;
    generics.vectorWidth = layout.genericVectorWidth;
    pm.addPass(createVectorizeGenericsPass(generics));
  }

  pm.addPass(createSplitForBufferizationPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createInlineBufferizationPartsPass());
  pm.addPass(createBindDimensionsPass());
  pm.addPass(createPromoteLoopBuffersPass());
  pm.addPass(createAllocateResultBuffersPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.addResultAttribute = true;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createPlanMemoryPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createMemRefCopyToLinalgPass());
  if (optimize)
    pm.addNestedPass<func::FuncOp>(createPrefetchNextPanelPass());
  SmallVector<StringRef> features;
  cpuFeatures.split(features, ',');
  if (optimize && llvm::is_contained(features, "avx2")) {
    pm.addPass(createLowerInt8PanelProductsPass());
    LowerInt4PanelProductsPassOptions int4;
    if (llvm::is_contained(features, "avx512bw")) {
      int4.lanes = 16;
      int4.vnni = llvm::is_contained(features, "avx512vnni");
    }
    pm.addPass(createLowerInt4PanelProductsPass(int4));
  }
  if (optimize)
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  else
    pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  VectorTransferToSCFOptions vectorToScf;
  vectorToScf.unroll = true;
  vectorToScf.targetRank = 1;
  pm.addPass(createConvertVectorToSCFPass(vectorToScf));
  pm.addPass(createForallToParallelLoopPass());
  if (optimize) {
    pm.addPass(createOutlineParallelLoopsPass());
    pm.addPass(createApproximateMathPass());
  }
  pm.addPass(createSplitLargeFunctionsPass());
  if (externalWeights)
    pm.addPass(createExternalizeWeightsPass());
  pm.addPass(createExportEntriesPass({cpuFeatures.str()}));
  pm.addPass(createScopeLoopAllocasPass());
}

/// Upstream conversions from what Kiln's passes leave to the LLVM dialect.
void addLlvmConversion(OpPassManager &pm) {
  // bf16 conversions as integer shifts and rounding: LLVM would call
  // compiler-rt's __truncsfbf2, which artifacts don't link.
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(kiln::createLowerDynamicExpandShapesPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  ConvertVectorToLLVMPassOptions vectorToLlvm;
  vectorToLlvm.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorToLlvm));
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // Libm calls on vectors (acosh, asinh, atanh of a vectorized loop) are
  // one call per lane, between vector.extract and vector.insert.
  pm.addPass(createConvertVectorToLLVMPass(vectorToLlvm));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

} // namespace

void kiln::buildCpuLoweringPipeline(OpPassManager &pm, OptLevel level,
                                    const CpuLayout &layout,
                                    bool externalWeights,
                                    StringRef cpuFeatures) {
  addKilnLowering(pm, level, layout, externalWeights, cpuFeatures);
  addLlvmConversion(pm);
}
