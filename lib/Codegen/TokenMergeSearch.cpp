//===- TokenMergeSearch.cpp - token merging within a quality budget -------===//
#include "lib/Codegen/TokenMergeSearch.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/SearchCandidate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include <chrono>
#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kSearch = "token-merge search";
/// r per block, tried in order for each schedule until the budget breaks
/// (kiln-merge-tokens takes at most half a block's tokens, so the larger
/// ones may compile to the same model on short sequences).
constexpr int64_t kLadder[] = {2, 4, 8, 12, 16, 24, 32, 48, 64};
/// A choice must beat the unmerged model by this factor to be worth its
/// quality loss.
constexpr double kLeastSpeedUp = 1.05;

/// What an artifact gave on the calibration sets.
struct Ran {
  /// Per set, every f32 output's elements in order.
  std::vector<std::vector<float>> outputs;
  /// Per set, the argmax of each row of the first output's last axis.
  std::vector<std::vector<int64_t>> top1;
  /// A call's time: per set the least of 3 runs (one interrupted is
  /// longer), the median over the sets, after an untimed call.
  double milliseconds = 0;
};

FailureOr<Ran> runSets(StringRef path, StringRef entry,
                       ArrayRef<std::vector<std::string>> sets, Location loc) {
  FailureOr<ArtifactRunner> runner =
      ArtifactRunner::open(path, entry, "a token-merge candidate", loc);
  if (failed(runner) || failed(runner->run(sets.front())))
    return failure();
  Ran ran;
  std::vector<double> times;
  for (const std::vector<std::string> &files : sets) {
    FailureOr<std::vector<TensorPtr>> outputs;
    double least = INFINITY;
    for (int run = 0; run < 3; ++run) {
      auto started = std::chrono::steady_clock::now();
      outputs = runner->run(files);
      if (failed(outputs))
        return failure();
      least = std::min(least, std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - started)
                                  .count());
    }
    times.push_back(least);
    std::vector<float> values;
    std::vector<int64_t> top1;
    for (const TensorPtr &output : *outputs) {
      const kiln_tensor *tensor = output.get();
      if (kiln_tensor_dtype(tensor) != KILN_DTYPE_F32)
        continue;
      int64_t count = 1, last = 1;
      for (int32_t d = 0; d < kiln_tensor_rank(tensor); ++d)
        count *= last = kiln_tensor_dims(tensor)[d];
      const auto *data =
          static_cast<const float *>(kiln_tensor_const_data(tensor));
      if (values.empty() && last > 0)
        for (int64_t row = 0; row < count; row += last)
          top1.push_back(std::max_element(data + row, data + row + last) -
                         (data + row));
      values.insert(values.end(), data, data + count);
    }
    if (values.empty())
      return emitError(loc) << kSearch
                            << ": the model has no f32 output to "
                               "measure quality on";
    ran.outputs.push_back(std::move(values));
    ran.top1.push_back(std::move(top1));
  }
  llvm::sort(times);
  ran.milliseconds = times[times.size() / 2];
  return ran;
}

struct Quality {
  /// Mean cosine over the sets, and that less twice its standard error.
  double cosine, cosineLower;
  double top1Agreement;
  /// The largest |candidate - unmerged| over the largest |unmerged|.
  double maxRelativeError;
};

Quality compare(const Ran &candidate, const Ran &unmerged) {
  std::vector<double> cosines;
  double largestError = 0, largest = 0;
  int64_t rows = 0, agreeing = 0;
  for (auto [got, expected] : llvm::zip(candidate.outputs, unmerged.outputs)) {
    double dot = 0, gotNorm = 0, expectedNorm = 0;
    for (auto [a, b] : llvm::zip(got, expected)) {
      dot += double(a) * double(b);
      gotNorm += double(a) * double(a);
      expectedNorm += double(b) * double(b);
      largestError = std::max(largestError, std::fabs(double(a) - double(b)));
      largest = std::max(largest, std::fabs(double(b)));
    }
    cosines.push_back(gotNorm == 0 && expectedNorm == 0
                          ? 1.0
                          : dot / std::sqrt(gotNorm * expectedNorm));
  }
  for (auto [got, expected] : llvm::zip(candidate.top1, unmerged.top1))
    for (auto [a, b] : llvm::zip(got, expected)) {
      ++rows;
      agreeing += a == b;
    }
  double n = double(cosines.size()), mean = 0, variance = 0;
  for (double c : cosines)
    mean += c / n;
  for (double c : cosines)
    variance += (c - mean) * (c - mean) / std::max(n - 1, 1.0);
  Quality quality;
  quality.cosine = mean;
  quality.cosineLower = mean - 2 * std::sqrt(variance / n);
  quality.top1Agreement = rows ? double(agreeing) / double(rows) : 1.0;
  quality.maxRelativeError = largest > 0 ? largestError / largest : 0;
  return quality;
}

} // namespace

FailureOr<TokenMergeChoice>
kiln::chooseTokenMerging(ModuleOp module, const CompileOptions &options) {
  Location loc = module.getLoc();
  func::FuncOp entry;
  int entries = 0;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func)) {
      entry = func;
      ++entries;
    }
  if (entries != 1)
    return emitError(loc) << kSearch
                          << ": needs a model with one entry "
                             "point, not "
                          << entries;
  FailureOr<std::vector<std::vector<std::string>>> sets = findCalibrationSets(
      options.calibrationDir,
      static_cast<int32_t>(entry.getFunctionType().getNumInputs()), loc);
  if (failed(sets))
    return failure();

  SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-token-merge-search", "so", path))
    return emitError(loc) << kSearch << ": cannot create a temporary file: "
                          << ec.message();
  llvm::FileRemover remover(path);
  auto measure = [&](int64_t tokens,
                     TokenMergeSchedule schedule) -> FailureOr<Ran> {
    CompileOptions trial = candidateOptions(options, path);
    trial.mergeTokens = tokens;
    trial.mergeSchedule = schedule;
    if (failed(compileCandidate(module, trial)))
      return failure();
    return runSets(path, entry.getSymName(), *sets, loc);
  };

  FailureOr<Ran> unmerged = measure(0, TokenMergeSchedule::Constant);
  if (failed(unmerged))
    return failure();
  TokenMergeChoice choice;
  double chosenTime = unmerged->milliseconds / kLeastSpeedUp;
  llvm::json::Array tried;
  for (TokenMergeSchedule schedule :
       {TokenMergeSchedule::Constant, TokenMergeSchedule::Decreasing}) {
    for (int64_t tokens : kLadder) {
      FailureOr<Ran> ran = measure(tokens, schedule);
      if (failed(ran))
        return failure();
      Quality quality = compare(*ran, *unmerged);
      bool kept = quality.cosineLower >= options.qualityBudget;
      tried.push_back(llvm::json::Object{
          {"tokens", tokens},
          {"schedule", schedule == TokenMergeSchedule::Constant ? "constant"
                                                                : "decreasing"},
          {"milliseconds", ran->milliseconds},
          {"speed_up", unmerged->milliseconds / ran->milliseconds},
          {"cosine", quality.cosine},
          {"cosine_lower", quality.cosineLower},
          {"top1_agreement", quality.top1Agreement},
          {"max_relative_error", quality.maxRelativeError},
          {"within_budget", kept}});
      if (!kept)
        break;
      if (ran->milliseconds < chosenTime) {
        chosenTime = ran->milliseconds;
        choice.tokens = tokens;
        choice.schedule = schedule;
      }
    }
  }
  choice.report = llvm::json::Object{
      {"acceleration", "token-merge"},
      {"metric", "cosine"},
      {"quality_budget", options.qualityBudget},
      {"calibration_sets", static_cast<int64_t>(sets->size())},
      {"unmerged_milliseconds", unmerged->milliseconds},
      {"tried", std::move(tried)},
      {"chosen",
       llvm::json::Object{
           {"tokens", choice.tokens},
           {"schedule", choice.schedule == TokenMergeSchedule::Constant
                            ? "constant"
                            : "decreasing"}}}};
  return choice;
}
