//===- TokenReductionSearch.h - fewer tokens within a budget ---*- C++ -*-===//
//-*-===//
//
// How many tokens an encoder can merge or prune depends on the model and
// on its inputs: the search measures it. Each candidate is compiled and
// run on the calibration inputs; its quality is the cosine of its outputs
// with the unreduced model's, its gain its speed-up over that model. The
// fastest candidate that keeps the budget wins.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_TOKENREDUCTIONSEARCH_H
#define KILN_LIB_CODEGEN_TOKENREDUCTIONSEARCH_H

#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

/// How hard a compile merges or prunes tokens: the CompileOptions fields a
/// candidate (and the choice) sets.
struct TokenReduction {
  int64_t mergeTokens = 0;
  TokenMergeSchedule mergeSchedule = TokenMergeSchedule::Constant;
  /// 1: no pruning.
  double pruneKeepRate = 1.0;
  /// Empty: CompileOptions::pruneBlocks' default.
  std::vector<int64_t> pruneBlocks;

  void applyTo(CompileOptions &options) const;
  /// The fields `acceleration` chooses, for the report.
  llvm::json::Object describe(Acceleration acceleration) const;
};

struct TokenReductionChoice {
  /// Nothing reduced where no candidate paid for itself within the budget.
  TokenReduction chosen;
  /// What the search measured: the budget, the unreduced model's time and
  /// each candidate with its time and quality.
  llvm::json::Object report;
};

/// For options.accelerate == TokenMerge or TokenPrune: runs the unreduced
/// model and ladders of candidates on the inputs in options.calibrationDir,
/// each ladder growing stronger until the budget breaks. Merging: r merged
/// per block, with a constant and a decreasing schedule. Pruning: keep
/// rates from 0.9 down, in every third block from the fourth (EViT's
/// placement) and in every other block from the second. A candidate keeps
/// the budget when the mean cosine of its outputs with the unreduced
/// model's, less twice its standard error (so that it holds on inputs the
/// search did not see), reaches options.qualityBudget. Each candidate is
/// timed side by side with the unreduced model (calls alternating, per
/// input the least of 5 of each, the median ratio over the inputs), and
/// the one with the largest speed-up within the budget is chosen if that
/// is above 1.05. Also reported per candidate: top-1 agreement of the
/// first output's last axis and the largest error relative to the largest
/// output. `module` is not changed (each candidate compiles a clone).
mlir::FailureOr<TokenReductionChoice>
chooseTokenReduction(mlir::ModuleOp module, const CompileOptions &options);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_TOKENREDUCTIONSEARCH_H
