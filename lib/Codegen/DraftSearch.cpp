//===- DraftSearch.cpp - the self-speculative draft that pays -------------===//
#include "lib/Codegen/DraftSearch.h"

#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/LayerSkipSearch.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/SearchCandidate.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include <algorithm>
#include <chrono>

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kSearch = "draft search";
/// K from 1 to this: longer rounds rarely pay, since the chance that all K
/// proposals hold falls geometrically while a round's cost grows with K.
constexpr int32_t kMostDraftTokens = 5;
/// Tokens generated after each prompt, at most (the context permitting).
constexpr int64_t kNewTokens = 64;
/// Runs of each prompt, plain and speculative alternately; the fastest of
/// each counts. On a shared machine other work only ever adds time, and
/// it drifts within seconds: medians of a few runs still differed by more
/// than the candidates did.
constexpr int kRuns = 3;
/// A draft is kept only this much faster than plain decoding: less is
/// within what repeated measurements of the same artifact differ by.
constexpr double kLeastSpeedUp = 1.05;

/// A prompt and the tokens to generate after it.
struct Prompt {
  std::vector<int64_t> tokens;
  int32_t newTokens;
};

/// The first half of each calibration sequence, with room in the context
/// for at least two new tokens.
std::vector<Prompt> makePrompts(ArrayRef<TokenSequence> sequences,
                                int64_t maxContext) {
  std::vector<Prompt> prompts;
  for (const TokenSequence &sequence : sequences) {
    int64_t length = kiln_tensor_dims(sequence.tokens.get())[1];
    const auto *ids = static_cast<const int64_t *>(
        kiln_tensor_const_data(sequence.tokens.get()));
    int64_t half = std::max<int64_t>(1, length / 2);
    int64_t room = std::min(kNewTokens, maxContext - half);
    if (room >= 2)
      prompts.push_back(
          {std::vector<int64_t>(ids, ids + half), static_cast<int32_t>(room)});
  }
  return prompts;
}

/// Seconds from the first new token to the last, and the tokens.
struct Timed {
  double seconds = 0;
  std::vector<int64_t> tokens;
  kiln_generate_stats stats{};
};

using Clock = std::chrono::steady_clock;

int32_t stampToken(void *userData, int64_t, int32_t index) {
  auto *stamps =
      static_cast<std::pair<Clock::time_point, Clock::time_point> *>(userData);
  (index == 0 ? stamps->first : stamps->second) = Clock::now();
  return 0;
}

FailureOr<Timed> timeGeneration(ArtifactRunner &runner, const Prompt &prompt,
                                int32_t draftTokens) {
  kiln_generate_options options;
  kiln_generate_options_init(&options);
  options.max_new_tokens = prompt.newTokens;
  options.draft_tokens = draftTokens;
  std::pair<Clock::time_point, Clock::time_point> stamps;
  options.on_token = stampToken;
  options.user_data = &stamps;
  Timed timed;
  options.stats = &timed.stats;
  if (failed(runner.generate(prompt.tokens, options, timed.tokens)))
    return failure();
  timed.seconds =
      std::chrono::duration<double>(stamps.second - stamps.first).count();
  return timed;
}

/// Plain and speculative decoding of one candidate at one K.
struct Comparison {
  double plainSeconds = 0, draftSeconds = 0;
  int64_t generated = 0, drafted = 0, accepted = 0, sameTokens = 0;
};

FailureOr<Comparison> compare(ArtifactRunner &runner, ArrayRef<Prompt> prompts,
                              int32_t draftTokens) {
  Comparison comparison;
  for (const Prompt &prompt : prompts) {
    std::vector<double> plain, draft;
    Timed lastPlain, lastDraft;
    for (int run = 0; run < kRuns; ++run) {
      FailureOr<Timed> p = timeGeneration(runner, prompt, 0);
      if (failed(p))
        return failure();
      FailureOr<Timed> d = timeGeneration(runner, prompt, draftTokens);
      if (failed(d))
        return failure();
      plain.push_back(p->seconds);
      draft.push_back(d->seconds);
      lastPlain = std::move(*p);
      lastDraft = std::move(*d);
    }
    comparison.plainSeconds += *llvm::min_element(plain);
    comparison.draftSeconds += *llvm::min_element(draft);
    comparison.generated += int64_t(lastPlain.tokens.size()) - 1;
    comparison.drafted += lastDraft.stats.drafted;
    comparison.accepted += lastDraft.stats.accepted;
    comparison.sameTokens += lastPlain.tokens == lastDraft.tokens;
  }
  return comparison;
}

llvm::StringRef quantizationName(Quantization quantization) {
  return quantization == Quantization::Int4Weight ? "int4-weight" : "f32";
}

} // namespace

FailureOr<DraftChoice> kiln::chooseDraft(ModuleOp module,
                                         const CompileOptions &options) {
  Location loc = module.getLoc();
  FailureOr<int64_t> blocks = countDecoderBlocks(module, kSearch);
  if (failed(blocks))
    return failure();
  FailureOr<std::vector<TokenSequence>> sequences =
      readTokenSequences(options.calibrationDir, kSearch, loc);
  if (failed(sequences))
    return failure();
  std::vector<Prompt> prompts = makePrompts(*sequences, options.maxContext);
  if (prompts.empty())
    return emitError(loc) << kSearch
                          << ": no calibration sequence leaves room in the "
                             "context for two new tokens after its first half";

  SmallString<256> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("kiln-draft-search", "so", path))
    return emitError(loc) << kSearch << ": cannot create a temporary file: "
                          << ec.message();
  TemporaryFileRemover remover(path);

  // Blocks in order of what skipping each alone costs in perplexity.
  llvm::json::Array perplexities;
  std::vector<std::pair<double, int64_t>> ranked;
  for (int64_t k = 0; k < *blocks; ++k) {
    CompileOptions trial = candidateOptions(options, path);
    trial.skipLayers = {k};
    if (failed(compileCandidate(module, trial)))
      return failure();
    FailureOr<double> perplexity =
        measurePerplexity(path, *sequences, kSearch, loc);
    if (failed(perplexity))
      return failure();
    ranked.push_back({*perplexity, k});
    perplexities.push_back(llvm::json::Object{{"skipped", llvm::json::Array{k}},
                                              {"perplexity", *perplexity}});
  }
  llvm::sort(ranked);

  // Skipping none, the cheapest or the two cheapest blocks (a draft keeps
  // at least one), in float and with int4 weights; none skipped in float
  // is the model itself.
  std::vector<std::vector<int64_t>> skipSets = {{}};
  for (size_t count = 1; count <= 2 && count < ranked.size(); ++count) {
    std::vector<int64_t> set;
    for (size_t i = 0; i < count; ++i)
      set.push_back(ranked[i].second);
    llvm::sort(set);
    skipSets.push_back(std::move(set));
  }
  DraftChoice choice;
  double best = kLeastSpeedUp;
  llvm::json::Array tried;
  for (const std::vector<int64_t> &skipped : skipSets) {
    for (Quantization quantization :
         {Quantization::None, Quantization::Int4Weight}) {
      if (skipped.empty() && quantization == Quantization::None)
        continue;
      CompileOptions trial = candidateOptions(options, path);
      trial.draftSkipLayers = skipped;
      trial.draftQuantization = quantization;
      if (failed(compileCandidate(module, trial)))
        return failure();
      FailureOr<ArtifactRunner> runner =
          ArtifactRunner::open(path, "decode", "the candidate draft", loc);
      if (failed(runner) || failed(runner->setNumThreads(1)))
        return failure();
      // Generation checks K drafted tokens in one decode call of K + 1.
      int64_t mostTokens = std::min<int64_t>(
          kMostDraftTokens, runner->getLargestInputDim(0, 1) - 1);
      for (int32_t k = 1; k <= mostTokens; ++k) {
        FailureOr<Comparison> measured = compare(*runner, prompts, k);
        if (failed(measured))
          return failure();
        double speedUp = measured->plainSeconds / measured->draftSeconds;
        tried.push_back(llvm::json::Object{
            {"skipped", llvm::json::Array(skipped)},
            {"quantization", quantizationName(quantization)},
            {"draft_tokens", k},
            {"accepted", double(measured->accepted) /
                             double(std::max<int64_t>(measured->drafted, 1))},
            {"plain_tokens_per_second",
             double(measured->generated) / measured->plainSeconds},
            {"speculative_tokens_per_second",
             double(measured->generated) / measured->draftSeconds},
            {"speed_up", speedUp},
            {"same_tokens", measured->sameTokens}});
        if (speedUp > best) {
          best = speedUp;
          choice.skipped = skipped;
          choice.quantization = quantization;
          choice.tokens = k;
        }
      }
    }
  }
  llvm::json::Value chosen = nullptr;
  if (choice.tokens > 0)
    chosen = llvm::json::Object{
        {"skipped", llvm::json::Array(choice.skipped)},
        {"quantization", quantizationName(choice.quantization)},
        {"draft_tokens", choice.tokens},
        {"speed_up", best}};
  choice.report =
      llvm::json::Object{{"threads", 1},
                         {"prompts", static_cast<int64_t>(prompts.size())},
                         {"least_speed_up", kLeastSpeedUp},
                         {"blocks", *blocks},
                         {"perplexity_without_block", std::move(perplexities)},
                         {"tried", std::move(tried)},
                         {"chosen", std::move(chosen)}};
  return choice;
}
