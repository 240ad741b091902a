//===- CacheSearch.h - a sampler's cache within a quality budget -*- C++
//-*-===//
//
// How long a denoiser's blocks can be reused across steps depends on the
// model, the sampler and the guidance: the search measures it. Each
// candidate (an interval, the blocks it caches and how the steps between
// forecast what the blocks add) is compiled with the
// sampling loop and run on the calibration noise; its samples are compared
// with the uncached loop's, and the cheapest candidate whose PSNR meets the
// budget is kept.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_CACHESEARCH_H
#define KILN_LIB_CODEGEN_CACHESEARCH_H

#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

/// What a denoiser's steps between full computations reuse: a DiT's
/// transformer blocks' residual (kiln-cache-block-residuals) or a UNet's
/// deeper levels' features (kiln-cache-deep-features).
enum class CacheKind { BlockResiduals, DeepFeatures };

/// The cache the entry point of `module` (the plain denoiser) takes:
/// block residuals where it has pre-LN transformer blocks, otherwise deep
/// features where it has skip concatenations; an error where it has
/// neither, or where `options` ask a UNet for what only blocks support
/// (an adaptive threshold, a block range).
mlir::FailureOr<CacheKind> denoiserCacheKind(mlir::ModuleOp module,
                                             const DiffusionOptions &options);

struct CacheChoice {
  /// The chosen interval and blocks (interval 1: nothing met the budget).
  int64_t interval = 1;
  int64_t first = 0;
  int64_t last = -1;
  /// The forecast order (0: reuse).
  int64_t forecast = 0;
  /// Above 0: the blocks run when their input changed this much instead
  /// (interval 1).
  double threshold = 0;
  /// What the search measured, for the report.
  llvm::json::Object report;
};

/// For options.diffusion->chooseCache: samples the calibration sets in
/// options.calibrationDir (folders of input_0.pb, the noise, and for a
/// conditional denoiser input_1.pb, the labels, as the entry `sample`
/// takes them) with the uncached loop, then tries intervals 2-8, cheapest
/// first (by the share of block work left), each with linear, quadratic
/// and no forecast (in that order: the cost is the same), until one's mean
/// PSNR against the uncached samples, less twice its standard error over
/// the sets, reaches options.qualityBudget dB. A
/// DiT's candidates cache all its blocks or all but the first; a UNet's
/// cache its deeper levels, counted as one block. A DiT then tries
/// adaptive caching (linear forecast) at thresholds 1.0 down to 0.1; the
/// largest within the budget replaces the interval choice if its sampling
/// loop measured at least 10% faster (medians over the calibration sets, after an
/// untimed run). PSNR per sample:
/// 10 log10(range^2 / MSE), range the uncached sample's max - min.
/// `module` is not changed.
mlir::FailureOr<CacheChoice> chooseSampleCache(mlir::ModuleOp module,
                                               const CompileOptions &options);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_CACHESEARCH_H
