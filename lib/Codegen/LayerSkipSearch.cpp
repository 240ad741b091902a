//===- LayerSkipSearch.cpp - blocks to skip within a quality budget -------===//
#include "lib/Codegen/LayerSkipSearch.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/SearchCandidate.h"
#include "lib/TensorFile/TensorFile.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"

#include <algorithm>
#include <cmath>
#include <memory>

using namespace mlir;
using namespace kiln;

FailureOr<std::vector<TokenSequence>>
kiln::readTokenSequences(StringRef dir, StringRef search, Location loc) {
  FailureOr<std::vector<std::vector<std::string>>> sets =
      findCalibrationSets(dir, 1, loc);
  if (failed(sets))
    return failure();
  std::vector<TokenSequence> sequences;
  for (const std::vector<std::string> &files : *sets) {
    std::string name, error;
    TensorPtr tokens = readTensorFile(files.front(), name, error);
    if (!tokens)
      return emitError(loc) << search << ": " << error;
    const int64_t *dims = kiln_tensor_dims(tokens.get());
    if (kiln_tensor_dtype(tokens.get()) != KILN_DTYPE_I64 ||
        kiln_tensor_rank(tokens.get()) != 2 || dims[0] != 1 || dims[1] < 2)
      return emitError(loc) << search << ": calibration set '" << files.front()
                            << "' is not token ids, int64 [1, n] with n >= 2";
    sequences.push_back({files.front(), std::move(tokens)});
  }
  return sequences;
}

FailureOr<int64_t> kiln::countDecoderBlocks(ModuleOp module, StringRef search) {
  func::FuncOp model;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func) && !func.getBody().getOps<LayerNormOp>().empty())
      model = func;
  if (!model)
    return emitError(module.getLoc())
           << search << ": no entry point has layer norms";
  return countSkippableBlocks(model);
}

FailureOr<double> kiln::measurePerplexity(StringRef path,
                                          ArrayRef<TokenSequence> sequences,
                                          StringRef search, Location loc) {
  FailureOr<ArtifactRunner> runner = ArtifactRunner::open(
      path, "decode", "the decoder without the skipped blocks", loc);
  if (failed(runner))
    return failure();
  // Sequences longer than one call takes go in pieces: the cache joins
  // them.
  int64_t mostPerCall = runner->getLargestInputDim(0, 1);
  if (mostPerCall < 1)
    return emitError(loc) << search << ": decode takes no tokens per call";
  double negativeLogLikelihood = 0;
  int64_t predicted = 0;
  for (const TokenSequence &sequence : sequences) {
    if (failed(runner->reset()))
      return failure();
    int64_t length = kiln_tensor_dims(sequence.tokens.get())[1];
    const int64_t *ids = static_cast<const int64_t *>(
        kiln_tensor_const_data(sequence.tokens.get()));
    for (int64_t start = 0; start < length; start += mostPerCall) {
      int64_t count = std::min(mostPerCall, length - start);
      int64_t dims[2] = {1, count};
      kiln_tensor *piece = nullptr;
      if (kiln_tensor_create(KILN_DTYPE_I64, 2, dims, &piece) != KILN_OK)
        return emitError(loc) << search << ": " << kiln_last_error();
      TensorPtr owned(piece);
      std::copy(ids + start, ids + start + count,
                static_cast<int64_t *>(kiln_tensor_data(piece)));
      FailureOr<std::vector<TensorPtr>> outputs =
          runner->run({piece}, sequence.file);
      if (failed(outputs))
        return failure();
      const kiln_tensor *logits = outputs->front().get();
      int64_t vocab = kiln_tensor_dims(logits)[2];
      const float *rows =
          static_cast<const float *>(kiln_tensor_const_data(logits));
      for (int64_t i = 0; i < count && start + i + 1 < length; ++i) {
        const float *row = rows + i * vocab;
        int64_t next = ids[start + i + 1];
        if (next < 0 || next >= vocab)
          return emitError(loc) << search << ": calibration set '"
                                << sequence.file << "' holds token " << next
                                << ", outside the vocabulary of " << vocab;
        double largest = *std::max_element(row, row + vocab), sum = 0;
        for (int64_t v = 0; v < vocab; ++v)
          sum += std::exp(double(row[v]) - largest);
        negativeLogLikelihood += std::log(sum) + largest - row[next];
        ++predicted;
      }
    }
  }
  return std::exp(negativeLogLikelihood / double(predicted));
}

FailureOr<LayerSkipChoice>
kiln::chooseSkippedLayers(ModuleOp module, const CompileOptions &options) {
  Location loc = module.getLoc();
  FailureOr<int64_t> blocks = countDecoderBlocks(module, "layer-skip search");
  if (failed(blocks))
    return failure();
  FailureOr<std::vector<TokenSequence>> sequences =
      readTokenSequences(options.calibrationDir, "layer-skip search", loc);
  if (failed(sequences))
    return failure();

  SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "kiln-layer-search", "so", path))
    return emitError(loc) << "layer-skip search: cannot create a temporary "
                             "file: "
                          << ec.message();
  TemporaryFileRemover remover(path);
  llvm::json::Array tried;
  auto measure = [&](const std::vector<int64_t> &skipped) -> FailureOr<double> {
    CompileOptions trial = candidateOptions(options, path);
    trial.skipLayers = skipped;
    if (failed(compileCandidate(module, trial)))
      return failure();
    FailureOr<double> perplexity =
        measurePerplexity(path, *sequences, "layer-skip search", loc);
    if (succeeded(perplexity))
      tried.push_back(llvm::json::Object{
          {"skipped", llvm::json::Array(skipped)},
          {"perplexity", *perplexity}});
    return perplexity;
  };

  FailureOr<double> baseline = measure({});
  if (failed(baseline))
    return failure();
  double limit = *baseline * (1 + options.qualityBudget);
  std::vector<std::pair<double, int64_t>> singles;
  for (int64_t k = 0; k < *blocks; ++k) {
    FailureOr<double> perplexity = measure({k});
    if (failed(perplexity))
      return failure();
    singles.push_back({*perplexity, k});
  }
  llvm::sort(singles);
  LayerSkipChoice choice;
  // The cheapest blocks first; the first set over the budget stops the
  // search (adding a block rarely costs less than it did alone).
  for (auto [alone, k] : singles) {
    if (alone > limit ||
        static_cast<int64_t>(choice.skipped.size()) + 1 >= *blocks)
      break;
    std::vector<int64_t> grown = choice.skipped;
    grown.push_back(k);
    double perplexity = alone;
    if (grown.size() > 1) {
      FailureOr<double> measured = measure(grown);
      if (failed(measured))
        return failure();
      perplexity = *measured;
    }
    if (perplexity > limit)
      break;
    choice.skipped = std::move(grown);
  }
  llvm::sort(choice.skipped);
  choice.report = llvm::json::Object{
      {"metric", "perplexity"},
      {"calibration_sets", static_cast<int64_t>(sequences->size())},
      {"quality_budget", options.qualityBudget},
      {"blocks", *blocks},
      {"baseline_perplexity", *baseline},
      {"tried", std::move(tried)},
      {"skipped", llvm::json::Array(choice.skipped)}};
  return choice;
}
