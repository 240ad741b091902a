//===- SampleCache.h - what the sampler's caching passes share --*- C++ -*-===//
//
// The caching passes on kiln.sample (kiln-cache-block-residuals for a DiT's
// blocks, kiln-cache-deep-features for a UNet's deep branch) compute part
// of the denoiser only on some steps and stand in for it on the others,
// with a value carried from step to step. They share how values are added
// to the sample op's carry, the interval decision, and the forecast: the
// Newton polynomial through the last computed values, kept as divided
// differences, evaluated at a skipped step's index.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_SAMPLECACHE_H
#define KILN_PASSES_SAMPLECACHE_H

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Runs `cache` on every kiln.sample in `module`, collected first: it
/// replaces the op it is given. Fails at the first that fails.
mlir::LogicalResult
forEachSample(mlir::ModuleOp module,
              llvm::function_ref<mlir::LogicalResult(SampleOp)> cache);

/// Whether `concat` is a UNet's skip concatenation: two feature maps
/// (rank 4) joined along the channels.
bool isSkipConcat(ConcatOp concat);

/// Replaces `sample` by a sample op that also carries `initial` (added
/// after its own carried values, as arguments of its body). Returns it.
SampleOp carryMore(SampleOp sample, mlir::ValueRange initial);

/// Whether the blocks run at `step`: every interval-th step, from step 0.
mlir::Value everyIntervalStep(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value step, int64_t interval);

/// The step index `step` as an f32.
mlir::Value stepAsFloat(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value step);

/// The initial values a forecast of `order` carries for a value of `type`:
/// order + 1 zero tensors (the value and its divided differences), then
/// `order` rank-0 tensors holding -1 (the steps of the last computations:
/// none yet).
llvm::SmallVector<mlir::Value> forecastCarry(mlir::OpBuilder &b,
                                             mlir::Location loc,
                                             mlir::RankedTensorType type,
                                             int64_t order);

/// The value and its divided differences after it was computed at `step`
/// (f32) as `value`. A difference whose earlier step has not run yet (-1)
/// stays 0, so the first forecasts fall back to lower orders.
llvm::SmallVector<mlir::Value>
updateDifferences(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                  mlir::ValueRange differences, mlir::ValueRange computedAt,
                  mlir::Value step);

/// The steps of the last computations after `step`, where `computed` says
/// whether it computed. Scalar selects: a select of the carried tensors
/// themselves would keep them from being updated in place.
llvm::SmallVector<mlir::Value> updateComputedAt(mlir::OpBuilder &b,
                                                mlir::Location loc,
                                                mlir::ValueRange computedAt,
                                                mlir::Value computed,
                                                mlir::Value step);

/// The value the polynomial predicts at `step`:
/// d0 + d1 (step - s0) + d2 (step - s0)(step - s1) + ...
mlir::Value extrapolate(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::ValueRange differences,
                        mlir::ValueRange computedAt, mlir::Value step);

/// The part of a step a cache computes on some steps only.
struct CachedComputation {
  /// The ops that compute `result`, in block order: they move into the
  /// computing branch.
  llvm::ArrayRef<mlir::Operation *> span;
  mlir::Value result;
  /// Builds, in the computing branch, the value stored for later steps.
  llvm::function_ref<mlir::Value(mlir::OpBuilder &)> store;
  /// Builds, in the other branch, what stands in for `result` from the
  /// stored value as forecast for this step.
  llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Value)> reuse;
};

/// Builds `scf.if compute` at `b`'s insertion point in a sample op's body.
/// Computing, it runs the span and yields `result`, the stored value's
/// divided differences updated, then what `computingExtra` builds there;
/// otherwise `reuse` of the forecast, the differences as they were, then
/// `otherExtra`. Later uses of `result` take the choice's; the body's
/// kiln.yield gets the differences and the steps of the computations
/// (`differences` and `computedAt` are the body's arguments for them,
/// `step` the step index). Returns the scf.if.
mlir::scf::IfOp buildCacheChoice(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value compute,
    const CachedComputation &computation, mlir::ValueRange differences,
    mlir::ValueRange computedAt, mlir::Value step,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &)>
        computingExtra = nullptr,
    mlir::ValueRange otherExtra = {});

} // namespace kiln

#endif // KILN_PASSES_SAMPLECACHE_H
