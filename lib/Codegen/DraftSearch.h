//===- DraftSearch.h - the self-speculative draft that pays -----*- C++ -*-===//
//
// A draft pays when K of its calls and one call of decode verifying K + 1
// positions take less time than plain decoding of the tokens they yield.
// That depends on how often the draft agrees with the model (its weights,
// the text), on what a draft call costs against a decode call, and on how
// the cost of a call grows with its positions (the CPU's register tiles):
// the search measures it instead of predicting it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_DRAFTSEARCH_H
#define KILN_LIB_CODEGEN_DRAFTSEARCH_H

#include "kiln/compiler.hpp"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <vector>

namespace kiln {

struct DraftChoice {
  /// The draft: decode without these blocks, its products quantized this
  /// way. No blocks and Quantization::None: no draft paid.
  std::vector<int64_t> skipped;
  Quantization quantization = Quantization::None;
  /// Tokens it proposes per round; 0 when no draft paid.
  int64_t tokens = 0;
  /// What the search measured, for the report.
  llvm::json::Object report;
};

/// For options.chooseDraft. Ranks the blocks of the decoder in `module` (a
/// with-past graph, cached with options.maxContext) by the perplexity of
/// the token sequences in options.calibrationDir without each; candidate
/// drafts skip none, the cheapest or the two cheapest blocks, in float and
/// with int4 weights. Each candidate generates greedily after the first
/// half of each sequence, proposing K = 1..5 tokens per round, alternately
/// with plain decoding, on one thread; the fastest against plain decoding
/// wins if it is at least 5% faster. `module` is not changed.
mlir::FailureOr<DraftChoice> chooseDraft(mlir::ModuleOp module,
                                         const CompileOptions &options);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_DRAFTSEARCH_H
