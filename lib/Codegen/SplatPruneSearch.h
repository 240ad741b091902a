//===- SplatPruneSearch.h - Gaussians to prune within a budget --*- C++ -*-===//
//
// A trained splatting scene holds many Gaussians that barely show: tiny,
// faint, or hidden behind others. How many can go depends on the scene and
// on where it is seen from, so the search measures it: each Gaussian's
// share of the image (kiln.splat_contributions) summed over calibration
// views ranks them, and the largest share of the least-contributing ones
// whose removal keeps held-out views within the PSNR budget is pruned.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_SPLATPRUNESEARCH_H
#define KILN_LIB_CODEGEN_SPLATPRUNESEARCH_H

#include "kiln/compiler.hpp"
#include "lib/Codegen/SplatAttributeStorage.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <vector>

namespace kiln {

/// The attributes pruning may store at fewer bits, in the search's order.
inline constexpr llvm::StringLiteral kSplatAttributes[] = {
    "opacity_logits", "sh", "log_scales", "rotations"};

struct SplatPruneChoice {
  /// For each Gaussian of the scene, whether it stays.
  std::vector<bool> keep;
  /// The SH coefficients per channel each Gaussian keeps (1, 4, 9 or 16:
  /// degree 0-3), the lowest of its degree's.
  int64_t shCoefficients = 0;
  /// How the opacity logits, SH coefficients, log scales and rotations
  /// are stored (kSplatAttributes' order), and for int8 their maps (over
  /// every Gaussian and every SH coefficient given).
  std::array<SplatStorage, 4> storage = {
      SplatStorage::Float32, SplatStorage::Float32, SplatStorage::Float32,
      SplatStorage::Float32};
  std::array<SplatInt8Map, 4> int8Maps;
  /// What the search measured: the views, each fraction tried with its
  /// PSNR on every held-out view, the choice and the pruned Gaussians'
  /// indices.
  llvm::json::Object report;
};

/// For options.accelerate == SplatPrune: `module`'s entry renders a scene
/// whose Gaussians are constants (a .ply compiled without --splat-inputs).
/// The calibration sets in options.calibrationDir are camera views, the
/// entry's inputs (view, intrinsics, background) in folders of input_0.pb
/// to input_2.pb: the even-numbered ones (in name order) rank the
/// Gaussians by their summed blending weight alpha T over all pixels, the
/// odd-numbered ones are held out. The search prunes the least-ranked
/// fraction, in steps of 1% up to 99% (bisection: PSNR falls as the
/// fraction grows), and keeps the largest whose render of every held-out
/// view has a PSNR against the unpruned render of at least
/// options.qualityBudget dB (both clamped to [0, 1], peak 1). The
/// candidates are one artifact with the opacities and the SH coefficients
/// as inputs: a pruned Gaussian gets opacity 0, which culls it, and a cut
/// degree zero coefficients, so each candidate renders exactly as the
/// pruned scene does. With options.reduceSplatShDegree the search first
/// lowers the SH degree while the unpruned scene keeps the budget; with
/// options.halfSplatAttributes it then rounds the scales, rotations,
/// opacities and SH coefficients to float16 if that keeps the budget (the
/// candidates round their inputs as the stored scene will be rounded);
/// with options.int8SplatAttributes it first tries each of the SH
/// coefficients, opacities, rotations and scales as int8 in turn (an affine
/// map per column fitted to the scene), keeping each that keeps the budget
/// with those kept before; then it prunes within what is left. `module` is
/// not changed.
mlir::FailureOr<SplatPruneChoice>
chooseSplatPruning(mlir::ModuleOp module, const CompileOptions &options);

/// Removes the Gaussians `choice` does not keep from the scene's constants
/// in `module` (which chooseSplatPruning accepted), and their SH
/// coefficients past the kept degree; stores the other attributes as
/// choice.storage says (positions stay float32), which the projection
/// widens as it reads them.
mlir::LogicalResult pruneSplats(mlir::ModuleOp module,
                                const SplatPruneChoice &choice);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_SPLATPRUNESEARCH_H
