//===- ConvertKilnToLinalg.cpp - the kiln-to-linalg lowering pass ---------===//
#include "dialects/Kiln/IR/KilnDialect.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_CONVERTKILNTOLINALGPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct ConvertKilnToLinalgPass
    : kiln::impl::ConvertKilnToLinalgPassBase<ConvertKilnToLinalgPass> {
  using ConvertKilnToLinalgPassBase::ConvertKilnToLinalgPassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<kiln::KilnDialect>();
    // Bufferization and memref for prefetches (the splat blend's), which
    // address a tensor's buffer.
    target.addLegalDialect<affine::AffineDialect, arith::ArithDialect,
                           bufferization::BufferizationDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect,
                           tensor::TensorDialect, vector::VectorDialect>();
    target.addLegalOp<ModuleOp, func::FuncOp, func::ReturnOp>();

    RewritePatternSet patterns(ctx);
    kiln::populateCompositeLoweringPatterns(patterns, patchColumns);
    kiln::populateDepthwiseConvLoweringPatterns(patterns);
    kiln::populateNormalizationLoweringPatterns(patterns);
    kiln::populateElementwiseLoweringPatterns(patterns);
    kiln::populateStructuredLoweringPatterns(patterns);
    kiln::populatePackedMatMulLoweringPatterns(patterns);
    kiln::populateWinogradLoweringPatterns(patterns, patchColumns);
    kiln::populateQuantLoweringPatterns(patterns);
    kiln::populateQuantizedMatMulLoweringPatterns(patterns);
    kiln::populateAttentionLoweringPatterns(patterns, attentionQueryRows,
                                            attentionKeyColumns,
                                            attentionMaskedKeyColumns);
    kiln::populateDataMovementLoweringPatterns(patterns);
    kiln::populatePoolLoweringPatterns(patterns);
    kiln::populateIndexedLoweringPatterns(patterns);
    kiln::populateTokenMergeLoweringPatterns(patterns);
    kiln::populateSplatLoweringPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
