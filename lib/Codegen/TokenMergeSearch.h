//===- TokenMergeSearch.h - token merging within a quality budget -*- C++
//-*-===//
//
// How many tokens an encoder can merge depends on the model and on its
// inputs: the search measures it. Each candidate schedule is compiled and
// run on the calibration inputs; its quality is the cosine of its outputs
// with the unmerged model's, its cost the time of a call. The fastest
// candidate that keeps the budget wins.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_TOKENMERGESEARCH_H
#define KILN_LIB_CODEGEN_TOKENMERGESEARCH_H

#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace kiln {

struct TokenMergeChoice {
  /// 0: no schedule paid for itself within the budget.
  int64_t tokens = 0;
  TokenMergeSchedule schedule = TokenMergeSchedule::Constant;
  /// What the search measured, for the report: the budget, the unmerged
  /// model's time and each candidate with its time and quality.
  llvm::json::Object report;
};

/// For options.accelerate == Acceleration::TokenMerge: runs the unmerged
/// model and candidates (r merged per block, a constant and a decreasing
/// schedule, r rising until the budget breaks) on the inputs in
/// options.calibrationDir. A candidate keeps the budget when the mean
/// cosine of its outputs with the unmerged model's, less twice its
/// standard error (so that it holds on inputs the search did not see),
/// reaches options.qualityBudget. The fastest such candidate is chosen if
/// it is at least 5% faster than the unmerged model. Also reported per
/// candidate: top-1 agreement of the first output's last axis and the
/// largest error relative to the largest output. `module` is not changed
/// (each candidate compiles a clone).
mlir::FailureOr<TokenMergeChoice>
chooseTokenMerging(mlir::ModuleOp module, const CompileOptions &options);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_TOKENMERGESEARCH_H
