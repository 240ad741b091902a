//===- kiln/compiler.hpp - Kiln's compiler as a C++ library -----*- C++ -*-===//
//
// Two levels, for two kinds of callers:
//
// - Whole compiles: compileOnnxFile / compileOnnxBytes take an ONNX model
//   (compileSplatScene a Gaussian splatting scene) and produce an artifact (a
//   shared library the runtime in kiln/runtime.h loads), reporting every
//   problem through a DiagnosticHandler. Each call has its own MLIR context;
//   calls may run on several threads at once.
//
// - MLIR-level, for tools that hold their own MLIRContext: register Kiln's
//   dialects in the context's registry, import an ONNX model into a
//   kiln-dialect module (importOnnxFile / importOnnxBytes; a scene with
//   importSplatScene), inspect or
//   rewrite it, and lower it with compileModule. Errors go to the context's
//   diagnostic engine, located at the ONNX node (an mlir::NameLoc naming
//   it, inside the model file's mlir::FileLineColLoc).
//
// Nothing here changes process-wide state (MLIR's global pass registry,
// command-line options), except LLVM's target registry, which the first
// compile initializes once.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_HPP
#define KILN_COMPILER_HPP

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// How much Kiln optimizes. -O0 is the reference path: the straightforward
/// lowering with none of Kiln's own rewrites (LLVM still optimizes it), so
/// every optimized build can be checked against it.
enum class OptLevel { O0, O1, O2, O3 };

/// A sanitizer to instrument the generated code with. An instrumented
/// artifact leaves the sanitizer runtime's symbols to the process that
/// loads it, so it loads only into one built with the same -fsanitize=.
enum class Sanitizer {
  None,
  /// AddressSanitizer: the kernels' out-of-bounds and use-after-free
  /// accesses.
  Address,
  /// ThreadSanitizer: data races between the threads a parallel loop runs
  /// on, and with the runtime's own.
  Thread,
};

/// How a decoder's KV cache (CompileOptions::maxContext) stores its keys
/// and values.
enum class KvCacheType {
  Float,
  /// int8 with one float scale per head and position.
  Int8,
};

/// How a compile quantizes a float model.
enum class Quantization {
  None,
  /// Matrix products with constant weights: int8 weights (7-bit, one
  /// scale per output column), each row of the other operand quantized to
  /// uint8 when the model runs.
  Int8Dynamic,
  /// Matrix products with constant weights: 4-bit weights with one scale
  /// per block of 32 rows of a column, rows of the other operand quantized
  /// to uint8 when the model runs. For memory-bound products (decoders).
  Int4Weight,
  /// As Int8Dynamic, but each product's input is quantized with one scale
  /// and zero point chosen on the calibration inputs (needs
  /// CompileOptions::calibrationDir): no range pass over each row at run
  /// time.
  Int8Static,
};

/// The sampler a diffusion pipeline runs (CompileOptions::diffusion).
enum class SamplerKind {
  Ddim,        ///< deterministic DDIM (eta 0), evenly spaced timesteps
  Euler,       ///< Euler's method over Karras et al.'s sigmas
  DpmSolver2M, ///< DPM-Solver++(2M), DDIM's timesteps
};

/// A sampling loop compiled around a denoiser: the artifact gets the entry
/// `sample(noise[, labels]) -> sample` running every step in generated
/// code (see kiln-capture-sampler for what the denoiser must look like).
struct DiffusionOptions {
  SamplerKind sampler = SamplerKind::Ddim;
  int64_t steps = 50;
  /// Classifier-free guidance scale; 1: none. Guidance runs the
  /// conditional and unconditional predictions as one batch.
  double cfgScale = 1.0;
  /// The unconditional class label; -1: the last row of the label table.
  int64_t nullLabel = -1;
  /// Compute the denoiser's transformer blocks [cacheFirst, cacheLast)
  /// only every cacheInterval-th step and reuse what they added to the
  /// residual stream in between (kiln-cache-block-residuals); 1: every
  /// step. cacheLast -1: to the last block.
  int64_t cacheInterval = 1;
  int64_t cacheFirst = 0;
  int64_t cacheLast = -1;
  /// Above 0: decide at run time instead of every cacheInterval-th step;
  /// the blocks run once the relative L1 change of their first one's
  /// normalized input, summed since they last ran, reaches this.
  double cacheThreshold = 0;
  /// Above 0: the steps between predict what the blocks add by the
  /// polynomial through the last cacheForecast + 1 computed residuals
  /// (1: linear, 2: quadratic) instead of reusing the last one.
  int64_t cacheForecast = 0;
  /// Choose the interval and the blocks instead (CacheSearch.h): needs
  /// CompileOptions::calibrationDir (noise and labels) and a PSNR
  /// qualityBudget.
  bool chooseCache = false;
};

/// How token merging (CompileOptions::mergeTokens) spreads its merges over
/// an encoder's blocks.
enum class TokenMergeSchedule {
  /// The same count in every block.
  Constant,
  /// Twice the count in the first block, falling linearly to 0 in the
  /// last.
  Decreasing,
};

/// Where token merging's merges hold (CompileOptions::mergeScope).
enum class TokenMergeScope {
  /// From the block on; outputs get every token back (ViT, BERT).
  Model,
  /// Around each attention only, the residual stream keeping every token
  /// (ToMe-SD: denoisers and other dense outputs).
  Attention,
};

/// What token pruning (CompileOptions::pruneKeepRate) ranks tokens by.
enum class TokenImportance {
  /// The first token's (a class token's) attention to each token; the
  /// first token is always kept.
  ClassAttention,
  /// The norm of each token's key, for encoders without a class token.
  KeyNorm,
};

/// What CompileOptions::qualityBudget bounds.
enum class QualityMetric {
  /// A relative error: a product's RMS error (quantization), or the
  /// perplexity increase (layer skipping).
  Relative,
  /// The least PSNR in dB of samples against the unaccelerated ones
  /// (diffusion caching, splat pruning).
  Psnr,
  /// The least mean cosine similarity of the outputs with the
  /// unaccelerated model's (token merging and pruning).
  Cosine,
};

/// An acceleration whose strength a compile chooses by measuring the
/// model on calibration inputs within CompileOptions::qualityBudget.
enum class Acceleration {
  None,
  /// Token merging (mergeTokens and mergeSchedule chosen).
  TokenMerge,
  /// Token pruning (pruneKeepRate and pruneBlocks chosen).
  TokenPrune,
  /// Gaussian splatting pruning: the least-contributing Gaussians of a
  /// scene with constant Gaussians leave it (SplatPruneSearch.h); needs
  /// camera views as calibrationDir and a Psnr qualityBudget.
  SplatPrune,
};

/// What a compile produces.
enum class EmitKind {
  Mlir,    ///< the kiln-dialect module, as imported
  Llvm,    ///< optimized LLVM IR with the artifact glue
  Object,  ///< a relocatable object file
  Library, ///< a shared library loadable by the runtime (the artifact)
};

/// The sizes a named dimension may take, bounds included; one size when
/// min == max.
struct DimRange {
  int64_t min = 0;
  int64_t max = 0;
};

/// How the model's inputs are shaped, where the file leaves it open.
/// The largest ImportOptions::maxGraphDepth: protobuf parses a model
/// nested this deep, and the checks after it recurse with bounded stack.
constexpr unsigned kMaxGraphDepthLimit = 256;

struct ImportOptions {
  /// Fixes every dimension of an input (by name).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Fixes a named dimension (ONNX dim_param) to one size, or makes it a
  /// dynamic dimension with a range: buffers are planned for its maximum,
  /// and each call's size is checked against the range.
  std::map<std::string, DimRange> dims;
  /// The largest tensor, in bytes, a model may declare or compute (inputs,
  /// initializers, external data, every result): a model past it is
  /// refused before anything is allocated for it.
  uint64_t maxTensorBytes = uint64_t(4) << 30;
  /// The most nodes a model may have, its subgraphs' included.
  uint64_t maxGraphNodes = 1000000;
  /// How deep subgraphs (If branches, Loop and Scan bodies) may nest: 0
  /// allows none, 1 the bodies of the main graph's nodes. At most
  /// kMaxGraphDepthLimit.
  unsigned maxGraphDepth = 32;
  /// Runs libonnx's checker and shape inference in a child process, so
  /// that a model that crashes them costs only their results, not the
  /// compiler (or the program that embeds it). Off, they run in this
  /// process: a fuzzer sees their crashes.
  bool onnxLibraryInChildProcess = true;
};

struct CompileOptions {
  EmitKind emit = EmitKind::Library;
  /// Where the result goes; "-" writes text output to stdout. Files are
  /// written under a temporary name and renamed, so a failed compile never
  /// leaves a partial file behind.
  std::string outputPath;
  /// The library's soname; empty: the output's file name.
  std::string libraryName;
  /// LLVM CPU name to generate code for when the module names no target;
  /// "host" is the machine compiling, with the features it has.
  std::string targetCpu = "host";
  OptLevel optLevel = OptLevel::O2;
  /// Gaussian splatting renderers bin each splat only to the tiles it can
  /// reach (kiln-cull-splats-exactly, at -O2 and above; the image does not
  /// change); off, to every tile of its 3-sigma square, as the reference
  /// rasterizer does.
  bool exactSplatCulling = true;
  /// The sanitizer the generated code is instrumented with.
  Sanitizer sanitizer = Sanitizer::None;
  /// Quantization of the model's float products, at every level: it
  /// changes what the model computes (-O0 runs it on plain loops).
  Quantization quantization = Quantization::None;
  /// Where to write the quantization report (JSON: every product with
  /// constant weights, its precision, scales and weight error); empty:
  /// none.
  std::string quantizationReportPath;
  /// A folder of calibration inputs (ONNX test-data layout: folders of
  /// input_0.pb, input_1.pb, ... in the model's input order, or those files
  /// directly): the float model runs on them at compile time, and each
  /// product's error under `quantization` is measured on what flows into it
  /// (reported as calibration_error). Empty: none.
  std::string calibrationDir;
  /// With calibration, the largest relative RMS error a product's output
  /// may take from quantization; products above it stay in float. 0: no
  /// limit.
  double qualityBudget = 0;
  QualityMetric qualityMetric = QualityMetric::Relative;
  /// For a decoder exported with past keys and values (inputs
  /// `past_key_values.N.key/value`, outputs `present.N.key/value`): keep
  /// them in the session's state, `maxContext` positions long, and make the
  /// entry `decode(input_ids)` that appends the new tokens. 0: compile the
  /// graph as it is.
  int64_t maxContext = 0;
  KvCacheType kvCache = KvCacheType::Float;
  /// Transformer blocks to drop (numbered from 0; pre-LN blocks, see
  /// kiln-skip-layers): faster, and less accurate.
  std::vector<int64_t> skipLayers;
  /// Token merging in an encoder (kiln-merge-tokens, -O2 and up): after
  /// each block's attention, this many of its most similar tokens merge
  /// into others, so the rest of the model runs on fewer; outputs get every
  /// token back. Faster, and less accurate. 0: no merging.
  int64_t mergeTokens = 0;
  TokenMergeSchedule mergeSchedule = TokenMergeSchedule::Constant;
  TokenMergeScope mergeScope = TokenMergeScope::Model;
  /// Tokens merged block by block, overriding mergeTokens and
  /// mergeSchedule; empty: those decide.
  std::vector<int64_t> mergeTokensPerBlock;
  /// Token pruning in an encoder (kiln-prune-tokens, -O2 and up; EViT):
  /// after the attention of each of pruneBlocks, this share of the tokens
  /// the importance ranks keep their own, and the others fuse into one
  /// token, so the rest of the model runs on fewer; outputs get every token
  /// back. Faster, and less accurate. 1: no pruning.
  double pruneKeepRate = 1.0;
  /// The blocks that prune (numbered from 0); empty: every third from the
  /// fourth (EViT's placement).
  std::vector<int64_t> pruneBlocks;
  /// Tokens kept block by block besides the class token (negative: the
  /// block does not prune), overriding pruneKeepRate and pruneBlocks.
  std::vector<int64_t> pruneKeepPerBlock;
  TokenImportance pruneImportance = TokenImportance::ClassAttention;
  /// With calibrationDir (the model's inputs) and a Cosine qualityBudget:
  /// compile candidates of this acceleration, run them on the inputs and
  /// keep the fastest whose outputs stay within the budget
  /// (TokenReductionSearch.h). SplatPrune takes camera views and a Psnr
  /// qualityBudget instead (SplatPruneSearch.h).
  Acceleration accelerate = Acceleration::None;
  /// Where to write what that search measured (JSON); empty: nowhere.
  std::string accelerateReportPath;
  /// With accelerate == SplatPrune: first lower the scene's SH degree as
  /// far as the budget allows, then prune within what is left.
  bool reduceSplatShDegree = false;
  /// With accelerate == SplatPrune: store the scene's scales, rotations,
  /// opacities and SH coefficients as float16 if the budget allows (after
  /// reduceSplatShDegree, before pruning); positions stay float32.
  bool halfSplatAttributes = false;
  /// With accelerate == SplatPrune: store each of the scene's SH
  /// coefficients, opacities, rotations and scales as int8 (an affine map
  /// per column) where the budget allows, one after the other, before
  /// halfSplatAttributes takes the rest.
  bool int8SplatAttributes = false;
  /// With maxContext: also make the entry `draft(input_ids)`, `decode`
  /// with these blocks dropped, sharing its cache, for self-speculative
  /// decoding (kiln_generate_options.draft_tokens). Empty: no draft.
  std::vector<int64_t> draftSkipLayers;
  /// With maxContext: also make the entry `draft` (with draftSkipLayers'
  /// blocks dropped, if any) and quantize its float products this way
  /// (Int8Dynamic or Int4Weight): a draft that reads a fraction of the
  /// weights' bytes. `decode` keeps the model's precision, so speculative
  /// greedy output is still the model's own. None: the draft, if any, is
  /// in the model's precision.
  Quantization draftQuantization = Quantization::None;
  /// With a draft: the tokens it proposes per round when generation leaves
  /// the choice to the artifact (KILN_DRAFT_TOKENS_AUTO); 0: plain decoding
  /// unless the caller asks for a draft.
  int64_t draftTokens = 0;
  /// With maxContext and calibrationDir (token sequences): choose the
  /// draft (draftSkipLayers, draftQuantization) and draftTokens by
  /// measuring speculative generation against plain decoding on the
  /// sequences (DraftSearch.h); no draft when none is faster.
  bool chooseDraft = false;
  /// Where to write what that search measured (JSON); empty: nowhere.
  std::string draftReportPath;
  /// With maxContext, calibrationDir (token sequences) and qualityBudget:
  /// choose skipLayers by measuring perplexity on the sequences, dropping
  /// the cheapest blocks while it stays within (1 + qualityBudget) of the
  /// full model's (LayerSkipSearch.h).
  bool chooseSkipLayers = false;
  /// Where to write what that search measured (JSON); empty: nowhere.
  std::string skipLayersReportPath;
  /// For a diffusion denoiser: also compile its sampling loop.
  std::optional<DiffusionOptions> diffusion;
  /// Where to write what the cache search measured (JSON); empty: nowhere.
  std::string cacheReportPath;
  /// Called on each pass manager before it runs (for instance to apply
  /// MLIR's --mlir-print-ir-after-all and --mlir-timing options).
  std::function<llvm::LogicalResult(mlir::PassManager &)> configurePassManager;
  /// Where each compilation phase reports its time; the passes nest under
  /// it. Null when timing is off.
  mlir::TimingScope *timing = nullptr;
};

/// One problem (or note) a compile reports.
struct Diagnostic {
  enum class Severity { Error, Warning, Note, Remark };
  Severity severity = Severity::Error;
  /// One line of text.
  std::string message;
  /// The model (or .mlir) file, or the name given for bytes; may be empty.
  std::string file;
  /// The ONNX node the problem is at; empty if none.
  std::string node;
  /// Position in a text input (.mlir); 0 if none.
  unsigned line = 0, column = 0;
};

using DiagnosticHandler = std::function<void(const Diagnostic &)>;

/// `diagnostic` as the library reports it: node and file from its location,
/// the message on one line.
Diagnostic convertDiagnostic(const mlir::Diagnostic &diagnostic,
                             llvm::StringRef defaultFile);

/// Registers the dialects and LLVM IR translations compilation needs.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Reads the ONNX model at `path`, loads its external data (only from files
/// inside the model's folder), applies `options` to the inputs' shapes, runs
/// ONNX's checker and shape inference, and imports the graph as
/// `func.func @main` of kiln ops. Named dimensions with a range stay dynamic
/// (the module's `kiln.dims`); every other input dimension must have a size.
/// Returns null after any error, reported through `context`.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(llvm::StringRef path, mlir::MLIRContext &context,
               const ImportOptions &options = {});

/// One op an ONNX model uses.
struct OnnxOpUsage {
  /// "ai.onnx" for the default domain.
  std::string domain;
  std::string opType;
  /// The model's opset for the domain; 0 if it imports none.
  int64_t opset = 0;
  /// Nodes of this op, in subgraphs (If, Loop, Scan) too.
  int64_t nodes = 0;
  /// Whether Kiln's importer has the op (it may still refuse a node of it
  /// for its types or attributes, with an error naming the node).
  bool supported = false;
};

/// The ops of the ONNX model at `path`, most used first. Reads the graph
/// only, so it answers for models that don't import.
llvm::Expected<std::vector<OnnxOpUsage>> countOnnxOps(llvm::StringRef path);

/// The same for a model in memory, called `name` in diagnostics. External
/// data is read from files inside `externalDataDir`; with an empty one, a
/// model with external data is an error.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBytes(llvm::StringRef bytes, llvm::StringRef name,
                llvm::StringRef externalDataDir, mlir::MLIRContext &context,
                const ImportOptions &options = {});

/// How a 3D Gaussian splatting scene becomes a renderer.
struct SplatSceneOptions {
  /// The image the renderer draws, in pixels (1 to 16384 a side).
  int64_t width = 1920;
  int64_t height = 1080;
  /// The Gaussians as the entry's first inputs (positions [N, 3],
  /// log_scales [N, 3], rotations [N, 4], opacity_logits [N], sh
  /// [N, K, 3]) instead of constants compiled into the artifact.
  bool gaussiansAsInputs = false;
  /// The image's size as the entry's last input, `image_size` (int64
  /// [height, width]), at most width x height: the image is [height, width,
  /// 3] at the call's size.
  bool imageSizeInput = false;
};

/// Reads the 3DGS scene at `path` (a binary .ply whose vertices carry x y z,
/// f_dc_0-2, f_rest_* for SH degree 1-3, opacity, scale_0-2, rot_0-3) and
/// builds `func.func @main(view [4, 4], intrinsics [4], background [3]
/// [, image_size [2]]) -> image [height, width, 3]` from kiln.splat_project and
/// kiln.splat_rasterize (docs/splatting.md). A malformed file (its header,
/// property list or size, a non-finite value, a quaternion that cannot be
/// normalized) is an error naming what and where. Returns null after any
/// error, reported through `context`.
mlir::OwningOpRef<mlir::ModuleOp>
importSplatScene(llvm::StringRef path, mlir::MLIRContext &context,
                 const SplatSceneOptions &options = {});

/// Lowers `module` (kiln dialect, consumed) for its `kiln.target`, or for
/// `options.targetCpu` if it names none, and writes what `options.emit`
/// asks for. Errors go to the context's diagnostic handler.
llvm::LogicalResult compileModule(mlir::ModuleOp module,
                                  const CompileOptions &options);

/// Compiles the ONNX model at `modelPath` as `options` say (outputPath
/// included). Every diagnostic goes to `handler` (when set); the error
/// returned carries the first error's message.
llvm::Error compileOnnxFile(llvm::StringRef modelPath,
                            const ImportOptions &importOptions,
                            const CompileOptions &options,
                            const DiagnosticHandler &handler = {});

/// Compiles the 3DGS scene (.ply) at `scenePath` into a renderer, as
/// importSplatScene and `options` say. Diagnostics as compileOnnxFile's.
llvm::Error compileSplatScene(llvm::StringRef scenePath,
                              const SplatSceneOptions &sceneOptions,
                              const CompileOptions &options,
                              const DiagnosticHandler &handler = {});

/// Compiles a model in memory into an artifact in memory (options.emit and
/// options.outputPath are ignored: the result is a shared library's bytes).
llvm::Expected<std::vector<char>>
compileOnnxBytes(llvm::StringRef model, llvm::StringRef name,
                 llvm::StringRef externalDataDir,
                 const ImportOptions &importOptions,
                 const CompileOptions &options,
                 const DiagnosticHandler &handler = {});

/// Kiln's version, "major.minor.patch".
const char *getVersion();

} // namespace kiln

#endif // KILN_COMPILER_HPP
