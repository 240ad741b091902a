//===- CacheSearch.cpp - a sampler's cache within a quality budget --------===//
#include "lib/Codegen/CacheSearch.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/SearchCandidate.h"
#include "passes/ResidualStream.h"
#include "passes/SampleCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <tuple>

using namespace mlir;
using namespace kiln;

namespace {

/// What a candidate's artifact did on the calibration sets.
struct Sampled {
  std::vector<std::vector<float>> samples;
  /// The time of one sampling loop: per set the least of 3 runs (the
  /// loop is deterministic; a longer run was interrupted), the median
  /// over the sets, after an untimed run.
  double milliseconds = 0;
};

/// The samples of the artifact at `path` on each calibration set, timed.
FailureOr<Sampled> sampleSets(StringRef path,
                              ArrayRef<std::vector<std::string>> sets,
                              Location loc) {
  FailureOr<ArtifactRunner> runner =
      ArtifactRunner::open(path, "sample", "the sampling loop", loc);
  if (failed(runner) || failed(runner->run(sets.front())))
    return failure();
  Sampled sampled;
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
    const kiln_tensor *sample = outputs->front().get();
    const auto *data =
        static_cast<const float *>(kiln_tensor_const_data(sample));
    int64_t count = 1;
    for (int32_t d = 0; d < kiln_tensor_rank(sample); ++d)
      count *= kiln_tensor_dims(sample)[d];
    sampled.samples.emplace_back(data, data + count);
  }
  llvm::sort(times);
  sampled.milliseconds = times[times.size() / 2];
  return sampled;
}

/// PSNR of `sample` against `reference`, peak the reference's range;
/// capped at 200 dB (identical samples).
double psnr(ArrayRef<float> sample, ArrayRef<float> reference) {
  auto [low, high] = std::minmax_element(reference.begin(), reference.end());
  double range = double(*high) - double(*low), squared = 0;
  for (auto [a, b] : llvm::zip(sample, reference))
    squared += (double(a) - double(b)) * (double(a) - double(b));
  double mse = squared / double(reference.size());
  if (mse == 0 || range == 0)
    return 200.0;
  return std::min(200.0, 10.0 * std::log10(range * range / mse));
}

/// A candidate's quality and time on the calibration sets.
struct Measured {
  /// The mean PSNR of its samples against the uncached ones, and that
  /// mean less twice its standard error: what the budget must hold, so
  /// that it holds on samples the search did not see.
  double psnr, psnrLower;
  double milliseconds;
};

struct Candidate {
  int64_t interval, first, forecast;
  /// The share of the blocks' work a sampling run still does.
  double cost;
};

} // namespace

FailureOr<CacheKind>
kiln::denoiserCacheKind(ModuleOp module, const DiffusionOptions &options) {
  func::FuncOp denoiser;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func))
      denoiser = func;
  if (!denoiser)
    return emitError(module.getLoc()) << "the module has no entry point";
  Location loc = denoiser.getLoc();
  llvm::Expected<SmallVector<Value>> stream =
      matchResidualStream(denoiser.getBody());
  if (stream)
    return CacheKind::BlockResiduals;
  std::string why = llvm::toString(stream.takeError());
  bool skips = false;
  denoiser.walk([&](ConcatOp concat) { skips |= isSkipConcat(concat); });
  if (!skips)
    return emitError(loc)
           << "cannot cache: the denoiser has neither pre-LN transformer "
              "blocks ("
           << why << ") nor a UNet's skip concatenations";
  if (options.cacheThreshold > 0 || options.cacheFirst != 0 ||
      options.cacheLast != -1)
    return emitError(loc) << "a UNet's deeper levels are cached every "
                             "--cache-interval-th step: --cache-threshold "
                             "and --cache-blocks need transformer blocks";
  return CacheKind::DeepFeatures;
}

FailureOr<CacheChoice> kiln::chooseSampleCache(ModuleOp module,
                                               const CompileOptions &options) {
  Location loc = module.getLoc();
  func::FuncOp denoiser;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func))
      denoiser = func;
  if (!denoiser)
    return emitError(loc) << "cache search: the module has no entry point";
  FailureOr<CacheKind> kind = denoiserCacheKind(module, *options.diffusion);
  if (failed(kind))
    return failure();
  // A UNet's deeper levels are one unit of work; a DiT's blocks are
  // counted so that caching all but the first can be priced.
  int64_t blocks = 1;
  if (*kind == CacheKind::BlockResiduals)
    blocks = static_cast<int64_t>(
                 cantFail(matchResidualStream(denoiser.getBody())).size()) -
             1;
  int32_t numInputs = denoiser.getNumArguments() == 3 ? 2 : 1;
  FailureOr<std::vector<std::vector<std::string>>> sets =
      findCalibrationSets(options.calibrationDir, numInputs, loc);
  if (failed(sets))
    return failure();

  SmallString<256> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("kiln-cache-search", "so", path))
    return emitError(loc) << "cache search: cannot create a temporary file: "
                          << ec.message();
  TemporaryFileRemover remover(path);
  std::vector<std::vector<float>> reference;
  auto measure = [&](int64_t interval, int64_t first, int64_t forecast,
                     double threshold) -> FailureOr<Measured> {
    CompileOptions trial = candidateOptions(options, path);
    trial.diffusion->cacheInterval = interval;
    trial.diffusion->cacheFirst = first;
    trial.diffusion->cacheLast = -1;
    trial.diffusion->cacheForecast = forecast;
    trial.diffusion->cacheThreshold = threshold;
    if (failed(compileCandidate(module, trial)))
      return failure();
    FailureOr<Sampled> sampled = sampleSets(path, *sets, loc);
    if (failed(sampled))
      return failure();
    if (reference.empty())
      reference = sampled->samples;
    std::vector<double> values;
    for (auto [s, r] : llvm::zip(sampled->samples, reference))
      values.push_back(psnr(s, r));
    double n = double(values.size()), mean = 0, squares = 0;
    for (double v : values)
      mean += v / n;
    for (double v : values)
      squares += (v - mean) * (v - mean);
    double standardError =
        values.size() > 1 ? std::sqrt(squares / (n - 1) / n) : 0.0;
    return Measured{mean, mean - 2 * standardError, sampled->milliseconds};
  };

  FailureOr<Measured> uncached = measure(1, 0, 0, 0);
  if (failed(uncached))
    return failure();
  std::vector<Candidate> candidates;
  for (int64_t interval = 2; interval <= 8; ++interval)
    for (int64_t first = 0; first < std::min<int64_t>(2, blocks); ++first)
      for (int64_t forecast : {1, 2, 0})
        candidates.push_back(
            {interval, first, forecast,
             1.0 - (1.0 - 1.0 / double(interval)) * double(blocks - first) /
                       double(blocks)});
  // Within one cost the linear forecast first (it measured best), then
  // the quadratic, then none.
  auto forecastRank = [](int64_t forecast) { return (forecast + 2) % 3; };
  llvm::sort(candidates, [&](const Candidate &a, const Candidate &b) {
    return std::make_tuple(a.cost, a.first, a.interval,
                           forecastRank(a.forecast)) <
           std::make_tuple(b.cost, b.first, b.interval,
                           forecastRank(b.forecast));
  });

  CacheChoice choice;
  double chosenTime = uncached->milliseconds;
  llvm::json::Array tried;
  for (const Candidate &candidate : candidates) {
    FailureOr<Measured> measured = measure(
        candidate.interval, candidate.first, candidate.forecast, 0);
    if (failed(measured))
      return failure();
    tried.push_back(llvm::json::Object{{"interval", candidate.interval},
                                       {"first_block", candidate.first},
                                       {"forecast", candidate.forecast},
                                       {"block_work", candidate.cost},
                                       {"psnr", measured->psnr},
                                       {"psnr_lower", measured->psnrLower},
                                       {"ms", measured->milliseconds}});
    if (measured->psnrLower >= options.qualityBudget) {
      choice.interval = candidate.interval;
      choice.first = candidate.first;
      choice.forecast = candidate.forecast;
      chosenTime = measured->milliseconds;
      break;
    }
  }

  // A DiT's blocks may instead run when their input changed enough; how
  // often that is depends on the samples, so the adaptive candidate
  // (the largest threshold within the budget, linear forecast) wins only
  // if it measured at least 10% faster: its quality also varies more from
  // sample to sample (on the trained digits DiT, threshold 0.5 gave 32.2 dB
  // on 8 calibration seeds and 29.4 dB on 16 others).
  llvm::json::Array triedAdaptive;
  if (*kind == CacheKind::BlockResiduals) {
    for (double threshold : {1.0, 0.7, 0.5, 0.35, 0.25, 0.15, 0.1}) {
      FailureOr<Measured> measured = measure(1, 0, 1, threshold);
      if (failed(measured))
        return failure();
      triedAdaptive.push_back(
          llvm::json::Object{{"threshold", threshold},
                             {"forecast", 1},
                             {"psnr", measured->psnr},
                             {"psnr_lower", measured->psnrLower},
                             {"ms", measured->milliseconds}});
      if (measured->psnrLower < options.qualityBudget)
        continue;
      if (measured->milliseconds < 0.9 * chosenTime) {
        choice.interval = 1;
        choice.first = 0;
        choice.forecast = 1;
        choice.threshold = threshold;
      }
      break;
    }
  }
  choice.report = llvm::json::Object{
      {"metric", "psnr"},
      {"cache", *kind == CacheKind::BlockResiduals ? "block_residuals"
                                                    : "deep_features"},
      {"calibration_sets", static_cast<int64_t>(sets->size())},
      {"quality_budget_db", options.qualityBudget},
      {"blocks", blocks},
      {"uncached_ms", uncached->milliseconds},
      {"tried", std::move(tried)},
      {"tried_adaptive", std::move(triedAdaptive)},
      {"chosen", llvm::json::Object{{"interval", choice.interval},
                                    {"first_block", choice.first},
                                    {"forecast", choice.forecast},
                                    {"threshold", choice.threshold},
                                    {"last_block", blocks}}}};
  return choice;
}
