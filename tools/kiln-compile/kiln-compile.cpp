//===- kiln-compile.cpp - compile an ONNX model into an artifact ----------===//
//
//   kiln-compile model.onnx -o model.so [--emit=mlir|llvm|obj|lib]
//
// Also accepts a kiln-dialect .mlir file. MLIR's pass-manager options
// (--mlir-print-ir-after-all, --mlir-timing, ...) apply to the lowering.
//
//===----------------------------------------------------------------------===//
#include "kiln/compiler.hpp"

#include "CompileDeadline.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {

llvm::cl::opt<std::string>
    inputPath(llvm::cl::Positional,
              llvm::cl::desc("<model.onnx | module.mlir | scene.ply>"),
              llvm::cl::Required);
llvm::cl::opt<std::string> outputPath("o", llvm::cl::desc("Output file"),
                                      llvm::cl::value_desc("path"));
llvm::cl::opt<kiln::EmitKind>
    emitKind("emit", llvm::cl::desc("What to produce"),
             llvm::cl::values(
                 clEnumValN(kiln::EmitKind::Mlir, "mlir",
                            "the imported kiln-dialect module"),
                 clEnumValN(kiln::EmitKind::Llvm, "llvm", "optimized LLVM IR"),
                 clEnumValN(kiln::EmitKind::Object, "obj", "an object file"),
                 clEnumValN(kiln::EmitKind::Library, "lib",
                            "a shared library (default)")),
             llvm::cl::init(kiln::EmitKind::Library));
llvm::cl::opt<kiln::OptLevel> optLevel(
    llvm::cl::desc("Optimization level (default -O2):"),
    llvm::cl::values(
        clEnumValN(kiln::OptLevel::O0, "O0",
                   "reference path: no Kiln optimizations"),
        clEnumValN(kiln::OptLevel::O1, "O1", "constant folding"),
        clEnumValN(kiln::OptLevel::O2, "O2",
                   "tiled, vectorized matrix products; vectorizable math"),
        clEnumValN(kiln::OptLevel::O3, "O3", "-O2 with LLVM's O3")),
    llvm::cl::init(kiln::OptLevel::O2));
llvm::cl::list<std::string> inputShapes(
    "shape",
    llvm::cl::desc("Fix every dimension of an input: NAME=D0,D1,... "
                   "(repeatable)"),
    llvm::cl::value_desc("name=dims"));
llvm::cl::list<std::string> dimSizes(
    "dim",
    llvm::cl::desc("Fix a named input dimension (SYMBOL=N), or keep it "
                   "dynamic within a range (SYMBOL=MIN..MAX; buffers are "
                   "sized for MAX) (repeatable)"),
    llvm::cl::value_desc("symbol=size"));
llvm::cl::opt<std::string> splatImage(
    "splat-image",
    llvm::cl::desc("The image a Gaussian splatting scene (.ply) renders: "
                   "WIDTHxHEIGHT pixels (default 1920x1080)"),
    llvm::cl::value_desc("WxH"), llvm::cl::init("1920x1080"));
llvm::cl::opt<bool> splatSizeInput(
    "splat-size-input",
    llvm::cl::desc("Take a .ply renderer's image size at run time, as its "
                   "last input image_size (int64 [height, width]), up to "
                   "--splat-image"));
llvm::cl::opt<bool> splatInputs(
    "splat-inputs",
    llvm::cl::desc("Take a .ply scene's Gaussians as the renderer's inputs "
                   "instead of compiling them in as constants"));
llvm::cl::opt<bool> splatSquareCulling(
    "splat-square-culling",
    llvm::cl::desc("Bin each Gaussian splat to every tile of its 3-sigma "
                   "square, as the reference rasterizer does, instead of "
                   "only to the tiles it can reach (same image, slower)"));
llvm::cl::opt<std::string> maxTensorSize(
    "max-tensor-size",
    llvm::cl::desc("Refuse a model with a tensor (input, weight or result) "
                   "larger than this: bytes, or with a K, M or G suffix "
                   "(powers of 1024; default 4G)"),
    llvm::cl::value_desc("bytes"), llvm::cl::init("4G"));
llvm::cl::opt<uint64_t> maxGraphNodes(
    "max-graph-nodes",
    llvm::cl::desc("Refuse a model with more nodes than this, its subgraphs' "
                   "included (default 1000000)"),
    llvm::cl::value_desc("count"), llvm::cl::init(1000000));
llvm::cl::opt<unsigned> maxGraphDepth(
    "max-graph-depth",
    llvm::cl::desc("Refuse a model whose subgraphs (If, Loop, Scan bodies) "
                   "nest deeper than this (default 32, at most 256)"),
    llvm::cl::value_desc("levels"), llvm::cl::init(32));
llvm::cl::opt<unsigned> maxCompileSeconds(
    "max-compile-seconds",
    llvm::cl::desc("Stop with an error, leaving no output, if the compile "
                   "takes longer than this (default 0: no limit)"),
    llvm::cl::value_desc("seconds"), llvm::cl::init(0));
// A sanitizer build's kiln-compile instruments what it generates with ASan
// by default, so that its tests check the generated code too.
#ifndef KILN_TOOLS_SANITIZE_ADDRESS
#define KILN_TOOLS_SANITIZE_ADDRESS 0
#endif
llvm::cl::opt<kiln::Sanitizer> sanitizer(
    "sanitize",
    llvm::cl::desc("Instrument the generated code with a sanitizer; the "
                   "artifact then loads only into a process built with the "
                   "same -fsanitize="),
    llvm::cl::values(
        clEnumValN(kiln::Sanitizer::None, "none", "no instrumentation"),
        clEnumValN(kiln::Sanitizer::Address, "address", "AddressSanitizer"),
        clEnumValN(kiln::Sanitizer::Thread, "thread", "ThreadSanitizer")),
    llvm::cl::init(KILN_TOOLS_SANITIZE_ADDRESS ? kiln::Sanitizer::Address
                                               : kiln::Sanitizer::None));
llvm::cl::opt<kiln::Quantization> quantization(
    "quantize", llvm::cl::desc("Quantize the model's float products"),
    llvm::cl::values(clEnumValN(kiln::Quantization::Int8Dynamic, "int8-dynamic",
                                "int8 weights, rows quantized at run time"),
                     clEnumValN(kiln::Quantization::Int8Static, "int8-static",
                                "int8 weights, inputs quantized and smoothed "
                                "(SmoothQuant) as chosen on --calibration "
                                "inputs"),
                     clEnumValN(kiln::Quantization::Int4Weight, "int4-weight",
                                "4-bit weights with a scale and zero point "
                                "per block of 32 rows, for memory-bound "
                                "decoders")),
    llvm::cl::init(kiln::Quantization::None));
llvm::cl::opt<std::string> quantizeReport(
    "quantize-report",
    llvm::cl::desc("Write what quantization did to each product, and with "
                   "--calibration what the model loses (JSON)"),
    llvm::cl::value_desc("path"));
llvm::cl::opt<std::string> calibration(
    "calibration",
    llvm::cl::desc("Measure each product's quantization error on these "
                   "inputs (folders of input_0.pb, ...), running the float "
                   "model; for --choose-skip-layers and --choose-draft, "
                   "token sequences; for --accelerate=splat-prune, camera "
                   "views (view, intrinsics, background)"),
    llvm::cl::value_desc("dir"));
llvm::cl::opt<std::string> qualityBudget(
    "quality-budget",
    llvm::cl::desc("With --calibration: the largest relative RMS error a "
                   "product's output may take (products above stay float), "
                   "the relative perplexity increase skipped layers may "
                   "cost, psnr=DB, the least PSNR of --choose-cache's "
                   "samples against the uncached ones (or of "
                   "--accelerate=splat-prune's renders against the "
                   "unpruned ones), or cos=C, the least "
                   "mean cosine of --accelerate's outputs with the "
                   "unaccelerated ones"),
    llvm::cl::value_desc("error|psnr=DB|cos=C"));
llvm::cl::opt<int64_t> maxContext(
    "max-context",
    llvm::cl::desc("For a decoder (with past_key_values inputs, or a plain "
                   "graph of token ids to logits): keep the KV cache in the "
                   "session, this many positions long, behind an entry "
                   "decode(input_ids)"),
    llvm::cl::value_desc("positions"), llvm::cl::init(0));
llvm::cl::opt<kiln::KvCacheType> kvCache(
    "kv-cache",
    llvm::cl::desc("How --max-context's cache stores keys and values"),
    llvm::cl::values(clEnumValN(kiln::KvCacheType::Float, "f32",
                                "as the model's floats"),
                     clEnumValN(kiln::KvCacheType::Int8, "int8",
                                "int8 with one scale per head and position")),
    llvm::cl::init(kiln::KvCacheType::Float));
llvm::cl::list<int64_t> skipLayers(
    "skip-layers",
    llvm::cl::desc("Drop these transformer blocks (from 0; pre-LN blocks)"),
    llvm::cl::value_desc("k,..."), llvm::cl::CommaSeparated);
llvm::cl::opt<bool> chooseSkipLayers(
    "choose-skip-layers",
    llvm::cl::desc("With --max-context: choose the blocks to drop, those "
                   "whose removal keeps the perplexity of the --calibration "
                   "token sequences within --quality-budget"));
llvm::cl::opt<std::string> skipLayersReport(
    "skip-layers-report",
    llvm::cl::desc("Write what --choose-skip-layers measured (JSON)"),
    llvm::cl::value_desc("path"));
llvm::cl::opt<int64_t> mergeTokens(
    "merge-tokens",
    llvm::cl::desc("Token merging in an encoder (ToMe): after each block's "
                   "attention, merge this many of its most similar tokens "
                   "into others, so the rest runs on fewer (outputs get "
                   "every token back)"),
    llvm::cl::value_desc("r"), llvm::cl::init(0));
llvm::cl::opt<kiln::TokenMergeSchedule> mergeSchedule(
    "merge-schedule",
    llvm::cl::desc("How --merge-tokens' r changes over the "
                   "blocks"),
    llvm::cl::values(
        clEnumValN(kiln::TokenMergeSchedule::Constant, "constant",
                   "r in every block"),
        clEnumValN(kiln::TokenMergeSchedule::Decreasing, "decreasing",
                   "2r in the first block, falling linearly to 0")),
    llvm::cl::init(kiln::TokenMergeSchedule::Constant));
llvm::cl::opt<kiln::TokenMergeScope> mergeScope(
    "merge-scope", llvm::cl::desc("Where --merge-tokens' merges hold"),
    llvm::cl::values(
        clEnumValN(kiln::TokenMergeScope::Model, "model",
                   "from the block on, every token back at the outputs"),
        clEnumValN(kiln::TokenMergeScope::Attention, "attention",
                   "around each attention only (ToMe-SD, for denoisers)")),
    llvm::cl::init(kiln::TokenMergeScope::Model));
llvm::cl::list<int64_t> mergeTokensPerBlock(
    "merge-tokens-per-block",
    llvm::cl::desc("Tokens to merge block by block (overrides "
                   "--merge-tokens and --merge-schedule)"),
    llvm::cl::value_desc("r0,r1,..."), llvm::cl::CommaSeparated);
llvm::cl::opt<double> pruneTokens(
    "prune-tokens",
    llvm::cl::desc("Token pruning in an encoder (EViT): in the pruning "
                   "blocks, keep this share of the tokens after the "
                   "attention and fuse the least important others into one "
                   "(outputs get every token back)"),
    llvm::cl::value_desc("keep-rate"), llvm::cl::init(1.0));
llvm::cl::list<int64_t> pruneBlocks(
    "prune-blocks",
    llvm::cl::desc("The blocks --prune-tokens prunes after, numbered from 0 "
                   "(default: every third from the fourth)"),
    llvm::cl::value_desc("k0,k1,..."), llvm::cl::CommaSeparated);
llvm::cl::list<int64_t> pruneTokensPerBlock(
    "prune-tokens-per-block",
    llvm::cl::desc("Tokens each block keeps besides the class token, -1 "
                   "where it does not prune (overrides --prune-tokens and "
                   "--prune-blocks)"),
    llvm::cl::value_desc("k0,k1,..."), llvm::cl::CommaSeparated);
llvm::cl::opt<kiln::TokenImportance> pruneImportance(
    "prune-importance", llvm::cl::desc("What ranks the tokens pruning keeps"),
    llvm::cl::values(
        clEnumValN(kiln::TokenImportance::ClassAttention, "class-attention",
                   "the first token's attention (it is kept)"),
        clEnumValN(kiln::TokenImportance::KeyNorm, "key-norm",
                   "the norm of each token's key (no class token)")),
    llvm::cl::init(kiln::TokenImportance::ClassAttention));
llvm::cl::opt<kiln::Acceleration> accelerate(
    "accelerate",
    llvm::cl::desc("Choose this acceleration's strength by running "
                   "candidates on the --calibration inputs: the fastest "
                   "whose outputs keep --quality-budget cos=C"),
    llvm::cl::values(clEnumValN(kiln::Acceleration::TokenMerge, "token-merge",
                                "token merging (--merge-tokens, "
                                "--merge-schedule)"),
                     clEnumValN(kiln::Acceleration::TokenPrune, "token-prune",
                                "token pruning (--prune-tokens, "
                                "--prune-blocks)"),
                     clEnumValN(kiln::Acceleration::SplatPrune, "splat-prune",
                                "pruning a .ply scene's least-contributing "
                                "Gaussians, keeping --quality-budget "
                                "psnr=DB on held-out --calibration views")),
    llvm::cl::init(kiln::Acceleration::None));
llvm::cl::opt<bool> splatReduceSh(
    "splat-reduce-sh",
    llvm::cl::desc("With --accelerate=splat-prune: first lower the scene's "
                   "SH degree as far as --quality-budget allows, then prune "
                   "within what is left"));
llvm::cl::opt<bool> splatHalfAttributes(
    "splat-half-attributes",
    llvm::cl::desc("With --accelerate=splat-prune: store the scene's "
                   "scales, rotations, opacities and SH coefficients as "
                   "float16 if --quality-budget allows (before pruning)"));
llvm::cl::opt<bool> splatInt8Attributes(
    "splat-int8-attributes",
    llvm::cl::desc("With --accelerate=splat-prune: store each of the "
                   "scene's SH coefficients, opacities, rotations and "
                   "scales as int8 where --quality-budget allows (before "
                   "pruning)"));
llvm::cl::opt<std::string>
    accelerateReport("accelerate-report",
                     llvm::cl::desc("Write what --accelerate measured (JSON)"),
                     llvm::cl::value_desc("path"));
llvm::cl::list<int64_t> draftSkipLayers(
    "draft-skip-layers",
    llvm::cl::desc("With --max-context, also make the entry draft: decode "
                   "without these blocks, sharing its cache, for "
                   "self-speculative decoding"),
    llvm::cl::value_desc("k,..."), llvm::cl::CommaSeparated);
llvm::cl::opt<kiln::Quantization> draftQuantization(
    "draft-quantize",
    llvm::cl::desc("With --max-context, also make the entry draft (without "
                   "--draft-skip-layers' blocks, if any) and quantize its "
                   "products: a cheaper draft; decode keeps its precision"),
    llvm::cl::values(clEnumValN(kiln::Quantization::Int8Dynamic, "int8-dynamic",
                                "int8 weights, rows quantized at run time"),
                     clEnumValN(kiln::Quantization::Int4Weight, "int4-weight",
                                "4-bit weights, one scale per 32 rows")),
    llvm::cl::init(kiln::Quantization::None));
llvm::cl::opt<int64_t> draftTokens(
    "draft-tokens",
    llvm::cl::desc("Tokens the draft proposes per round when generation "
                   "leaves the choice to the artifact (kiln-run --generate "
                   "without --draft); default 0: plain decoding"),
    llvm::cl::value_desc("K"), llvm::cl::init(0));
llvm::cl::opt<bool> chooseDraft(
    "choose-draft",
    llvm::cl::desc("With --max-context: choose the draft (blocks skipped, "
                   "int4 weights or not) and --draft-tokens by timing "
                   "speculative against plain generation after the "
                   "--calibration token sequences; no draft if none pays"));
llvm::cl::opt<std::string>
    draftReport("draft-report",
                llvm::cl::desc("Write what --choose-draft measured (JSON)"),
                llvm::cl::value_desc("path"));
enum class PipelineKind { Model, Diffusion };
llvm::cl::opt<PipelineKind> pipelineKind(
    "pipeline", llvm::cl::desc("What the artifact runs"),
    llvm::cl::values(
        clEnumValN(PipelineKind::Model, "model", "the model's graph"),
        clEnumValN(PipelineKind::Diffusion, "diffusion",
                   "the denoiser and the entry sample(noise[, labels]) "
                   "running --sampler over --steps")),
    llvm::cl::init(PipelineKind::Model));
llvm::cl::opt<kiln::SamplerKind> sampler(
    "sampler", llvm::cl::desc("The diffusion pipeline's sampler"),
    llvm::cl::values(
        clEnumValN(kiln::SamplerKind::Ddim, "ddim", "DDIM (eta 0)"),
        clEnumValN(kiln::SamplerKind::Euler, "euler",
                   "Euler over Karras sigmas"),
        clEnumValN(kiln::SamplerKind::DpmSolver2M, "dpm++2m",
                   "DPM-Solver++(2M)")),
    llvm::cl::init(kiln::SamplerKind::Ddim));
llvm::cl::opt<int64_t> samplerSteps(
    "steps", llvm::cl::desc("The diffusion pipeline's denoising steps"),
    llvm::cl::value_desc("N"), llvm::cl::init(50));
llvm::cl::opt<double> cfgScale(
    "cfg-scale",
    llvm::cl::desc("Classifier-free guidance scale (1: none; guidance runs "
                   "the conditional and unconditional halves of the "
                   "denoiser's batch)"),
    llvm::cl::value_desc("S"), llvm::cl::init(1.0));
llvm::cl::opt<int64_t> nullLabel(
    "null-label",
    llvm::cl::desc("The unconditional class label for --cfg-scale "
                   "(default: the label table's last row)"),
    llvm::cl::value_desc("label"), llvm::cl::init(-1));
llvm::cl::opt<int64_t> cacheInterval(
    "cache-interval",
    llvm::cl::desc("With --pipeline=diffusion: compute the denoiser's "
                   "transformer blocks (a UNet: its deeper levels) only "
                   "every N-th step, reusing what they add to the residual "
                   "stream (a UNet: hand to the first level) in between "
                   "(1: every step)"),
    llvm::cl::value_desc("N"), llvm::cl::init(1));
llvm::cl::opt<double> cacheThreshold(
    "cache-threshold",
    llvm::cl::desc("With --pipeline=diffusion: decide at run time when the "
                   "blocks run: once the relative L1 change of the first "
                   "one's normalized input, summed since they last ran, "
                   "reaches this (0: every --cache-interval-th step)"),
    llvm::cl::value_desc("T"), llvm::cl::init(0.0));
llvm::cl::opt<int64_t> cacheForecast(
    "cache-forecast",
    llvm::cl::desc("With --cache-interval or --cache-threshold: predict what "
                   "the blocks add on the steps between by the polynomial "
                   "through their last N+1 results (1: linear, 2: "
                   "quadratic; 0: reuse the last as is)"),
    llvm::cl::value_desc("N"), llvm::cl::init(0));
llvm::cl::opt<std::string> cacheBlocks(
    "cache-blocks",
    llvm::cl::desc("The blocks --cache-interval caches, FIRST..END (END "
                   "excluded; default: all)"),
    llvm::cl::value_desc("first..end"));
llvm::cl::opt<bool> chooseCache(
    "choose-cache",
    llvm::cl::desc("With --pipeline=diffusion: choose --cache-interval, "
                   "--cache-blocks and --cache-forecast (or a "
                   "--cache-threshold), the cheapest whose samples of the "
                   "--calibration noise keep --quality-budget psnr=DB"));
llvm::cl::opt<std::string> cacheReport(
    "cache-report",
    llvm::cl::desc("Write what --choose-cache measured (JSON)"),
    llvm::cl::value_desc("path"));
llvm::cl::opt<bool> opStats(
    "op-stats",
    llvm::cl::desc("Print the ONNX ops the model uses, how many nodes of "
                   "each and whether Kiln imports them; compile nothing"));
llvm::cl::opt<std::string>
    targetCpu("target-cpu",
              llvm::cl::desc("LLVM CPU to generate code for (default: host)"),
              llvm::cl::init("host"));

/// Prints one line per diagnostic, naming the ONNX node where there is one:
///   kiln-compile: error: model.onnx: node 'MatMul_3': <message>
void printDiagnostic(const kiln::Diagnostic &diagnostic) {
  static const char *const severities[] = {"error", "warning", "note",
                                           "remark"};
  llvm::raw_ostream &os = llvm::errs();
  os << "kiln-compile: "
     << severities[static_cast<int>(diagnostic.severity)] << ": "
     << diagnostic.file;
  if (!diagnostic.node.empty())
    os << ": node '" << diagnostic.node << "'";
  else if (diagnostic.line)
    os << ":" << diagnostic.line << ":" << diagnostic.column;
  os << ": " << diagnostic.message << "\n";
}

/// Kiln's own options and MLIR's that apply to a compile; --help lists
/// these only (LLVM's code generators register hundreds more).
void hideOtherOptions() {
  // clang-format off
  static const char *const shown[] = {
      "o", "emit", "O0", "O1", "O2", "O3", "shape", "dim", "max-tensor-size",
      "max-graph-nodes", "max-graph-depth", "max-compile-seconds",
      "sanitize", "quantize",
      "quantize-report", "calibration", "quality-budget",
      "max-context", "kv-cache", "skip-layers", "choose-skip-layers",
      "skip-layers-report", "merge-tokens", "merge-schedule",
      "merge-tokens-per-block", "merge-scope", "prune-tokens", "prune-blocks",
      "prune-tokens-per-block", "prune-importance", "accelerate", "accelerate-report",
      "splat-reduce-sh", "splat-half-attributes", "splat-int8-attributes",
      "draft-skip-layers", "draft-quantize",
      "draft-tokens", "choose-draft", "draft-report",
      "pipeline", "sampler", "steps", "cfg-scale", "null-label",
      "cache-interval", "cache-threshold", "cache-forecast", "cache-blocks",
      "choose-cache", "cache-report", "splat-image", "splat-size-input", "splat-inputs",
      "splat-square-culling",
      "target-cpu", "op-stats",
      "mlir-timing", "mlir-timing-display", "mlir-print-ir-after-all",
      "mlir-print-ir-before-all", "mlir-print-ir-after-failure",
      "mlir-disable-threading", "help", "version"};
  // clang-format on
  for (auto &option : llvm::cl::getRegisteredOptions()) {
    if (llvm::is_contained(shown, option.first))
      option.second->setHiddenFlag(llvm::cl::NotHidden);
    else
      option.second->setHiddenFlag(llvm::cl::ReallyHidden);
  }
}

/// A size from the command line; false if `text` is not a count.
bool parseSize(StringRef text, int64_t &size) {
  return !text.getAsInteger(10, size) && size >= 0;
}

/// Reads --shape and --dim into `options`; returns the problem, or "".
std::string parseShapeOptions(kiln::ImportOptions &options) {
  for (StringRef option : inputShapes) {
    auto [name, dims] = option.split('=');
    if (name.empty() || dims.empty())
      return "--shape needs NAME=D0,D1,..., got '" + option.str() + "'";
    std::vector<int64_t> &shape = options.inputShapes[name.str()];
    SmallVector<StringRef> parts;
    dims.split(parts, ',');
    for (StringRef part : parts) {
      int64_t size;
      if (!parseSize(part.trim(), size))
        return "--shape " + name.str() + ": '" + part.str() +
               "' is not a size";
      shape.push_back(size);
    }
  }
  for (StringRef option : dimSizes) {
    auto [name, value] = option.split('=');
    auto [low, high] = value.split("..");
    kiln::DimRange range;
    if (name.empty() || !parseSize(low, range.min) ||
        !parseSize(high.empty() ? low : high, range.max))
      return "--dim needs SYMBOL=N or SYMBOL=MIN..MAX, got '" + option.str() +
             "'";
    options.dims[name.str()] = range;
  }
  StringRef size = maxTensorSize;
  unsigned shift = size.consume_back("K")   ? 10
                   : size.consume_back("M") ? 20
                   : size.consume_back("G") ? 30
                                            : 0;
  uint64_t bytes;
  if (size.getAsInteger(10, bytes) || bytes == 0 ||
      bytes > (UINT64_MAX >> shift))
    return "--max-tensor-size needs a positive number of bytes (with K, M "
           "or G), got '" +
           maxTensorSize + "'";
  options.maxTensorBytes = bytes << shift;
  if (maxGraphDepth > kiln::kMaxGraphDepthLimit)
    return "--max-graph-depth takes at most " +
           std::to_string(kiln::kMaxGraphDepthLimit) + " levels";
  options.maxGraphNodes = maxGraphNodes;
  options.maxGraphDepth = maxGraphDepth;
  return "";
}

std::string defaultOutputPath() {
  SmallString<256> path(llvm::sys::path::filename(inputPath));
  const char *extension = "so";
  switch (emitKind) {
  case kiln::EmitKind::Mlir:
    extension = "mlir";
    break;
  case kiln::EmitKind::Llvm:
    extension = "ll";
    break;
  case kiln::EmitKind::Object:
    extension = "o";
    break;
  case kiln::EmitKind::Library:
    break;
  }
  llvm::sys::path::replace_extension(path, extension);
  if (path == inputPath)
    path += ".out";
  return std::string(path);
}

/// The --op-stats table: op, domain, opset, nodes, imported or not.
int printOpStats() {
  llvm::Expected<std::vector<kiln::OnnxOpUsage>> usage =
      kiln::countOnnxOps(inputPath);
  if (!usage) {
    llvm::errs() << "kiln-compile: error: " << llvm::toString(usage.takeError())
                 << "\n";
    return 1;
  }
  llvm::raw_ostream &os = llvm::outs();
  os << llvm::formatv("{0,-28} {1,-16} {2,5} {3,6}  {4}\n", "op", "domain",
                      "opset", "nodes", "imported");
  int64_t imported = 0;
  for (const kiln::OnnxOpUsage &op : *usage) {
    os << llvm::formatv("{0,-28} {1,-16} {2,5} {3,6}  {4}\n", op.opType,
                        op.domain, op.opset, op.nodes,
                        op.supported ? "yes" : "no");
    imported += op.supported;
  }
  os << imported << " of " << usage->size() << " ops imported\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  hideOtherOptions();
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "kiln-compile " << kiln::getVersion() << "\n";
  });
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "Kiln: compile ONNX models to native code\n");
  if (opStats)
    return printOpStats();
  if (quantization == kiln::Quantization::Int8Static && calibration.empty()) {
    llvm::errs() << "kiln-compile: error: --quantize=int8-static chooses its "
                    "scales on --calibration inputs: give some\n";
    return 1;
  }
  double budget = 0;
  kiln::QualityMetric metric = kiln::QualityMetric::Relative;
  StringRef budgetText = qualityBudget;
  if (budgetText.consume_front("psnr="))
    metric = kiln::QualityMetric::Psnr;
  else if (budgetText.consume_front("cos="))
    metric = kiln::QualityMetric::Cosine;
  if ((!budgetText.empty() &&
       (budgetText.getAsDouble(budget) || !(budget > 0))) ||
      (budget > 0 && calibration.empty())) {
    llvm::errs() << "kiln-compile: error: --quality-budget takes a positive "
                    "error, psnr=DB or cos=C, and --calibration inputs to "
                    "measure it on\n";
    return 1;
  }
  if (!accelerateReport.empty() && accelerate == kiln::Acceleration::None) {
    llvm::errs() << "kiln-compile: error: --accelerate-report reports what "
                    "--accelerate measures\n";
    return 1;
  }
  if (!cacheReport.empty() && !chooseCache) {
    llvm::errs() << "kiln-compile: error: --cache-report reports what "
                    "--choose-cache measures\n";
    return 1;
  }
  if (!draftReport.empty() && !chooseDraft) {
    llvm::errs() << "kiln-compile: error: --draft-report reports what "
                    "--choose-draft measures\n";
    return 1;
  }
  if (!skipLayersReport.empty() && !chooseSkipLayers) {
    llvm::errs() << "kiln-compile: error: --skip-layers-report reports what "
                    "--choose-skip-layers measures\n";
    return 1;
  }
  if (kvCache.getNumOccurrences() && maxContext <= 0) {
    llvm::errs() << "kiln-compile: error: --kv-cache applies to the cache "
                    "--max-context builds\n";
    return 1;
  }
  bool diffusion = pipelineKind == PipelineKind::Diffusion;
  if (!diffusion && (sampler.getNumOccurrences() ||
                     samplerSteps.getNumOccurrences() ||
                     cfgScale.getNumOccurrences() ||
                     nullLabel.getNumOccurrences() ||
                     cacheInterval.getNumOccurrences() ||
                     cacheThreshold.getNumOccurrences() ||
                     cacheForecast.getNumOccurrences() ||
                     cacheBlocks.getNumOccurrences() || chooseCache)) {
    llvm::errs() << "kiln-compile: error: --sampler, --steps, --cfg-scale, "
                    "--null-label and the --cache options describe "
                    "--pipeline=diffusion\n";
    return 1;
  }
  if (diffusion && (samplerSteps < 1 || !(cfgScale > 0) ||
                    cacheInterval < 1 || !(cacheThreshold >= 0) ||
                    (cacheThreshold > 0 && cacheInterval > 1))) {
    llvm::errs() << "kiln-compile: error: --steps and --cache-interval take "
                    "positive counts, --cfg-scale a positive scale and "
                    "--cache-threshold a positive threshold (not with "
                    "--cache-interval)\n";
    return 1;
  }
  if (cacheForecast < 0 || cacheForecast > 2 ||
      (cacheForecast > 0 && cacheInterval == 1 && cacheThreshold == 0)) {
    llvm::errs() << "kiln-compile: error: --cache-forecast takes 0, 1 or 2 "
                    "and applies to --cache-interval or --cache-threshold\n";
    return 1;
  }
  int64_t cacheFirst = 0, cacheLast = -1;
  if (!cacheBlocks.empty()) {
    auto [low, high] = StringRef(cacheBlocks).split("..");
    if (!parseSize(low, cacheFirst) || !parseSize(high, cacheLast)) {
      llvm::errs() << "kiln-compile: error: --cache-blocks needs FIRST..END, "
                      "got '"
                   << cacheBlocks << "'\n";
      return 1;
    }
  }
  if (maxContext < 0) {
    llvm::errs() << "kiln-compile: error: --max-context takes a positive "
                    "number of positions\n";
    return 1;
  }

  kiln::CompileDeadline deadline(
      maxCompileSeconds,
      llvm::formatv("kiln-compile: error: {0}: the compile took longer than "
                    "the {1} s --max-compile-seconds allows",
                    inputPath, maxCompileSeconds.getValue())
          .str());
  DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  MLIRContext context(registry);
  ScopedDiagnosticHandler diagnostics(&context, [](Diagnostic &diagnostic) {
    printDiagnostic(kiln::convertDiagnostic(diagnostic, inputPath));
    for (Diagnostic &note : diagnostic.getNotes())
      printDiagnostic(kiln::convertDiagnostic(note, inputPath));
    return success();
  });

  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();
  TimingScope importTiming = rootTiming.nest("Import");
  OwningOpRef<ModuleOp> module;
  if (StringRef(inputPath).ends_with(".mlir")) {
    llvm::SourceMgr sourceMgr;
    module =
        parseSourceFile<ModuleOp>(inputPath, sourceMgr, ParserConfig(&context));
  } else if (StringRef(inputPath).ends_with(".ply")) {
    kiln::SplatSceneOptions sceneOptions;
    sceneOptions.gaussiansAsInputs = splatInputs;
    sceneOptions.imageSizeInput = splatSizeInput;
    auto [width, height] = StringRef(splatImage).split('x');
    if (width.getAsInteger(10, sceneOptions.width) ||
        height.getAsInteger(10, sceneOptions.height)) {
      llvm::errs() << "kiln-compile: error: --splat-image takes "
                      "WIDTHxHEIGHT in pixels, not '"
                   << splatImage << "'\n";
      return 1;
    }
    module = kiln::importSplatScene(inputPath, context, sceneOptions);
  } else {
    kiln::ImportOptions importOptions;
    std::string problem = parseShapeOptions(importOptions);
    if (!problem.empty()) {
      llvm::errs() << "kiln-compile: error: " << problem << "\n";
      return 1;
    }
    module = kiln::importOnnxFile(inputPath, context, importOptions);
  }
  if (!module)
    return 1;
  importTiming.stop();

  kiln::CompileOptions options;
  options.emit = emitKind;
  options.outputPath = outputPath.empty() ? defaultOutputPath() : outputPath;
  options.targetCpu = targetCpu;
  options.optLevel = optLevel;
  options.exactSplatCulling = !splatSquareCulling;
  options.sanitizer = sanitizer;
  options.quantization = quantization;
  options.quantizationReportPath = quantizeReport;
  options.calibrationDir = calibration;
  options.qualityBudget = budget;
  options.qualityMetric = metric;
  options.cacheReportPath = cacheReport;
  options.maxContext = maxContext;
  options.kvCache = kvCache;
  options.skipLayers.assign(skipLayers.begin(), skipLayers.end());
  options.mergeTokens = mergeTokens;
  options.mergeSchedule = mergeSchedule;
  options.mergeScope = mergeScope;
  options.mergeTokensPerBlock.assign(mergeTokensPerBlock.begin(),
                                     mergeTokensPerBlock.end());
  options.pruneKeepRate = pruneTokens;
  options.pruneBlocks.assign(pruneBlocks.begin(), pruneBlocks.end());
  options.pruneKeepPerBlock.assign(pruneTokensPerBlock.begin(),
                                   pruneTokensPerBlock.end());
  options.pruneImportance = pruneImportance;
  options.accelerate = accelerate;
  options.accelerateReportPath = accelerateReport;
  options.reduceSplatShDegree = splatReduceSh;
  options.halfSplatAttributes = splatHalfAttributes;
  options.int8SplatAttributes = splatInt8Attributes;
  options.draftSkipLayers.assign(draftSkipLayers.begin(),
                                 draftSkipLayers.end());
  options.draftQuantization = draftQuantization;
  options.draftTokens = draftTokens;
  options.chooseDraft = chooseDraft;
  options.draftReportPath = draftReport;
  options.chooseSkipLayers = chooseSkipLayers;
  options.skipLayersReportPath = skipLayersReport;
  if (diffusion) {
    kiln::DiffusionOptions &d = options.diffusion.emplace();
    d.sampler = sampler;
    d.steps = samplerSteps;
    d.cfgScale = cfgScale;
    d.nullLabel = nullLabel;
    d.cacheInterval = cacheInterval;
    d.cacheFirst = cacheFirst;
    d.cacheLast = cacheLast;
    d.cacheThreshold = cacheThreshold;
    d.cacheForecast = cacheForecast;
    d.chooseCache = chooseCache;
  }
  options.configurePassManager = [](PassManager &pm) {
    return applyPassManagerCLOptions(pm);
  };
  options.timing = &rootTiming;
  return succeeded(kiln::compileModule(*module, options)) ? 0 : 1;
}
