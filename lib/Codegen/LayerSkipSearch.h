//===- LayerSkipSearch.h - blocks to skip within a quality budget -*- C++ -*-===//
//
// Which transformer blocks a decoder can do without depends on the model
// and on what it reads: the search measures it. Each candidate is compiled
// (the cached decoder with those blocks skipped) and run on the
// calibration sequences; the metric is their perplexity, and a set is kept
// while it stays within the quality budget of the full model's.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_LAYERSKIPSEARCH_H
#define KILN_LIB_CODEGEN_LAYERSKIPSEARCH_H

#include "kiln/compiler.hpp"
#include "lib/TensorFile/TensorFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <vector>

namespace kiln {

/// One calibration token sequence, int64 [1, n] with n >= 2.
struct TokenSequence {
  std::string file;
  TensorPtr tokens;
};

/// The token sequences in `dir` (folders of input_0.pb, int64 [1, n] with
/// n >= 2); errors start with `search` ("layer-skip search").
mlir::FailureOr<std::vector<TokenSequence>>
readTokenSequences(llvm::StringRef dir, llvm::StringRef search,
                   mlir::Location loc);

/// The entry point that has layer norms (the decoder) and its number of
/// skippable blocks.
mlir::FailureOr<int64_t> countDecoderBlocks(mlir::ModuleOp module,
                                            llvm::StringRef search);

/// The perplexity of the cached decoder at `path` on `sequences`: each from
/// an empty cache in one decode call.
mlir::FailureOr<double>
measurePerplexity(llvm::StringRef path, llvm::ArrayRef<TokenSequence> sequences,
                  llvm::StringRef search, mlir::Location loc);

struct LayerSkipChoice {
  std::vector<int64_t> skipped;
  /// What the search measured, for the report: the budget, the full
  /// model's perplexity and each set tried with its own.
  llvm::json::Object report;
};

/// For options.chooseSkipLayers: measures the perplexity of the decoder in
/// `module` (a with-past graph, cached with options.maxContext) on the
/// token sequences in options.calibrationDir (folders of input_0.pb, int64
/// [1, n]) with all blocks, then with each block skipped alone; adds blocks
/// in order of the least perplexity, measuring each growing set, while the
/// perplexity stays within (1 + options.qualityBudget) of the full model's.
/// `module` is not changed (each candidate compiles a clone).
mlir::FailureOr<LayerSkipChoice>
chooseSkippedLayers(mlir::ModuleOp module, const CompileOptions &options);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_LAYERSKIPSEARCH_H
