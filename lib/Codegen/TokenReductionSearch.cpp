//===- TokenReductionSearch.cpp - fewer tokens within a quality budget ----===//
#include "lib/Codegen/TokenReductionSearch.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/SearchCandidate.h"
#include "lib/TensorFile/TensorFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include <chrono>
#include <cmath>
#include <thread>

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kSearch = "token-reduction search";
/// r per block, tried in order for each schedule until the budget breaks
/// (kiln-merge-tokens takes at most half a block's tokens, so the larger
/// ones may compile to the same model on short sequences).
constexpr int64_t kMergeLadder[] = {2, 4, 8, 12, 16, 24, 32, 48, 64};
/// Keep rates, tried in order for each placement until the budget breaks.
constexpr double kPruneLadder[] = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};
/// Pruning's second placement: every other block from the second (blocks
/// past the model's last are ignored).
constexpr int64_t kAlternateBlocks = 64;
/// A choice must beat the unmerged model by this factor to be worth its
/// quality loss.
constexpr double kLeastSpeedUp = 1.05;

/// The calibration sets' input tensors, read once.
struct InputSets {
  std::vector<std::vector<TensorPtr>> tensors;
  std::vector<std::vector<const kiln_tensor *>> pointers;
  std::vector<std::string> names;
};

FailureOr<InputSets> readSets(ArrayRef<std::vector<std::string>> sets,
                              Location loc) {
  InputSets inputs;
  for (const std::vector<std::string> &files : sets) {
    std::vector<TensorPtr> &tensors = inputs.tensors.emplace_back();
    std::vector<const kiln_tensor *> &pointers = inputs.pointers.emplace_back();
    for (const std::string &file : files) {
      std::string name, error;
      tensors.push_back(readTensorFile(file, name, error));
      if (!tensors.back())
        return emitError(loc)
               << kSearch << ": calibration input '" << file << "': " << error;
      pointers.push_back(tensors.back().get());
    }
    inputs.names.push_back(files.empty() ? std::string() : files.front());
  }
  return inputs;
}

/// What an artifact gave on the calibration sets.
struct Ran {
  /// Per set, every f32 output's elements in order.
  std::vector<std::vector<float>> outputs;
  /// Per set, the argmax of each row of the first output's last axis.
  std::vector<std::vector<int64_t>> top1;
};

FailureOr<Ran> runSets(ArtifactRunner &runner, const InputSets &inputs,
                       Location loc) {
  Ran ran;
  for (auto [pointers, name] : llvm::zip(inputs.pointers, inputs.names)) {
    FailureOr<std::vector<TensorPtr>> outputs = runner.run(pointers, name);
    if (failed(outputs))
      return failure();
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
  return ran;
}

/// A candidate's time beside the unreduced model's.
struct Timing {
  /// The median over the sets of the candidate's time of a call.
  double milliseconds = 0;
  /// The median over the sets of the unreduced model's time over the
  /// candidate's.
  double speedUp = 0;
  double unreducedMilliseconds = 0;
};

double median(std::vector<double> values) {
  llvm::sort(values);
  return values[values.size() / 2];
}

/// Times `candidate` against `unreduced` on each set: calls alternate
/// between the two, and per set the least of 5 calls of each counts (one
/// interrupted is longer). Side by side, a machine that slows down for a
/// while slows both.
FailureOr<Timing> timeAgainst(ArtifactRunner &candidate,
                              ArtifactRunner &unreduced,
                              const InputSets &inputs) {
  auto timeCall = [&](ArtifactRunner &runner,
                      ArrayRef<const kiln_tensor *> pointers,
                      StringRef name) -> FailureOr<double> {
    // A session's idle workers spin for 2 ms after a call (the runtime's
    // thread pool): the other model's are asleep after 3.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    auto started = std::chrono::steady_clock::now();
    if (failed(runner.run(pointers, name)))
      return failure();
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - started)
        .count();
  };
  std::vector<double> times, ratios, unreducedTimes;
  for (auto [pointers, name] : llvm::zip(inputs.pointers, inputs.names)) {
    double least = INFINITY, leastUnreduced = INFINITY;
    for (int run = 0; run < 5; ++run) {
      FailureOr<double> time = timeCall(candidate, pointers, name);
      FailureOr<double> reference = timeCall(unreduced, pointers, name);
      if (failed(time) || failed(reference))
        return failure();
      least = std::min(least, *time);
      leastUnreduced = std::min(leastUnreduced, *reference);
    }
    times.push_back(least);
    unreducedTimes.push_back(leastUnreduced);
    ratios.push_back(leastUnreduced / least);
  }
  return Timing{median(times), median(ratios), median(unreducedTimes)};
}

struct Quality {
  /// Mean cosine over the sets, and that less twice its standard error.
  double cosine, cosineLower;
  double top1Agreement;
  /// The largest |candidate - unreduced| over the largest |unreduced|.
  double maxRelativeError;
};

Quality compare(const Ran &candidate, const Ran &unreduced) {
  std::vector<double> cosines;
  double largestError = 0, largest = 0;
  int64_t rows = 0, agreeing = 0;
  for (auto [got, expected] : llvm::zip(candidate.outputs, unreduced.outputs)) {
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
  for (auto [got, expected] : llvm::zip(candidate.top1, unreduced.top1))
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

/// The ladders of candidates options.accelerate tries, weakest first.
std::vector<std::vector<TokenReduction>>
candidateLadders(const CompileOptions &options) {
  std::vector<std::vector<TokenReduction>> ladders;
  if (options.accelerate == Acceleration::TokenMerge) {
    for (TokenMergeSchedule schedule :
         {TokenMergeSchedule::Constant, TokenMergeSchedule::Decreasing}) {
      std::vector<TokenReduction> &ladder = ladders.emplace_back();
      for (int64_t tokens : kMergeLadder)
        ladder.push_back(
            TokenReduction{tokens, schedule, 1.0, std::vector<int64_t>()});
    }
    return ladders;
  }
  std::vector<int64_t> alternate;
  for (int64_t k = 1; k < kAlternateBlocks; k += 2)
    alternate.push_back(k);
  for (const std::vector<int64_t> &blocks :
       {std::vector<int64_t>(), alternate}) {
    std::vector<TokenReduction> &ladder = ladders.emplace_back();
    for (double rate : kPruneLadder)
      ladder.push_back(
          TokenReduction{0, TokenMergeSchedule::Constant, rate, blocks});
  }
  return ladders;
}

} // namespace

void TokenReduction::applyTo(CompileOptions &options) const {
  options.mergeTokens = mergeTokens;
  options.mergeSchedule = mergeSchedule;
  options.pruneKeepRate = pruneKeepRate;
  options.pruneBlocks = pruneBlocks;
}

llvm::json::Object TokenReduction::describe(Acceleration acceleration) const {
  if (acceleration == Acceleration::TokenPrune)
    return llvm::json::Object{{"keep_rate", pruneKeepRate},
                              {"blocks", pruneKeepRate == 1.0 ? "none"
                                         : pruneBlocks.empty()
                                             ? "every third from the fourth"
                                             : "every other from the second"}};
  return llvm::json::Object{
      {"tokens", mergeTokens},
      {"schedule", mergeSchedule == TokenMergeSchedule::Constant
                       ? "constant"
                       : "decreasing"}};
}

FailureOr<TokenReductionChoice>
kiln::chooseTokenReduction(ModuleOp module, const CompileOptions &options) {
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

  FailureOr<InputSets> inputs = readSets(*sets, loc);
  if (failed(inputs))
    return failure();

  // The unreduced model stays open at its own path; each candidate is
  // compiled to the other.
  SmallString<256> unreducedPath, candidatePath;
  for (SmallString<256> *path : {&unreducedPath, &candidatePath})
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "kiln-token-reduction-search", "so", *path))
      return emitError(loc)
             << kSearch << ": cannot create a temporary file: " << ec.message();
  TemporaryFileRemover unreducedRemover(unreducedPath),
      candidateRemover(candidatePath);
  auto open = [&](const TokenReduction &reduction,
                  StringRef path) -> FailureOr<ArtifactRunner> {
    CompileOptions trial = candidateOptions(options, path);
    reduction.applyTo(trial);
    if (failed(compileCandidate(module, trial)))
      return failure();
    FailureOr<ArtifactRunner> runner = ArtifactRunner::open(
        path, entry.getSymName(), "a token-reduction candidate", loc);
    // One untimed call first: the first call of a session sets it up.
    if (failed(runner) ||
        failed(runner->run(inputs->pointers.front(), inputs->names.front())))
      return failure();
    return runner;
  };

  FailureOr<ArtifactRunner> unreducedRunner =
      open(TokenReduction(), unreducedPath);
  if (failed(unreducedRunner))
    return failure();
  FailureOr<Ran> unreduced = runSets(*unreducedRunner, *inputs, loc);
  if (failed(unreduced))
    return failure();
  TokenReductionChoice choice;
  double chosenSpeedUp = kLeastSpeedUp;
  std::vector<double> unreducedTimes;
  llvm::json::Array tried;
  for (const std::vector<TokenReduction> &ladder : candidateLadders(options)) {
    for (const TokenReduction &candidate : ladder) {
      FailureOr<ArtifactRunner> runner = open(candidate, candidatePath);
      if (failed(runner))
        return failure();
      FailureOr<Ran> ran = runSets(*runner, *inputs, loc);
      if (failed(ran))
        return failure();
      FailureOr<Timing> timing =
          timeAgainst(*runner, *unreducedRunner, *inputs);
      if (failed(timing))
        return failure();
      unreducedTimes.push_back(timing->unreducedMilliseconds);
      Quality quality = compare(*ran, *unreduced);
      bool within = quality.cosineLower >= options.qualityBudget;
      llvm::json::Object row = candidate.describe(options.accelerate);
      row.insert({"milliseconds", timing->milliseconds});
      row.insert({"speed_up", timing->speedUp});
      row.insert({"cosine", quality.cosine});
      row.insert({"cosine_lower", quality.cosineLower});
      row.insert({"top1_agreement", quality.top1Agreement});
      row.insert({"max_relative_error", quality.maxRelativeError});
      row.insert({"within_budget", within});
      tried.push_back(std::move(row));
      if (!within)
        break;
      if (timing->speedUp > chosenSpeedUp) {
        chosenSpeedUp = timing->speedUp;
        choice.chosen = candidate;
      }
    }
  }
  bool merging = options.accelerate == Acceleration::TokenMerge;
  choice.report = llvm::json::Object{
      {"acceleration", merging ? "token-merge" : "token-prune"},
      {"metric", "cosine"},
      {"quality_budget", options.qualityBudget},
      {"calibration_sets", static_cast<int64_t>(sets->size())},
      {"unreduced_milliseconds", median(unreducedTimes)},
      {"tried", std::move(tried)},
      {"chosen", choice.chosen.describe(options.accelerate)}};
  return choice;
}
