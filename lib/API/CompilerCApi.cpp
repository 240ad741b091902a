//===- CompilerCApi.cpp - the C API over the C++ one ----------------------===//
#include "kiln/compiler.h"
#include "kiln/compiler.hpp"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <new>

using namespace kiln;

struct kiln_compiler_options {
  ImportOptions importOptions;
  CompileOptions compileOptions;
  kiln_diagnostic_callback callback = nullptr;
  void *userData = nullptr;
};

namespace {

kiln_diagnostic_severity convertSeverity(Diagnostic::Severity severity) {
  switch (severity) {
  case Diagnostic::Severity::Error:
    return KILN_DIAGNOSTIC_ERROR;
  case Diagnostic::Severity::Warning:
    return KILN_DIAGNOSTIC_WARNING;
  case Diagnostic::Severity::Note:
    return KILN_DIAGNOSTIC_NOTE;
  case Diagnostic::Severity::Remark:
    return KILN_DIAGNOSTIC_REMARK;
  }
  return KILN_DIAGNOSTIC_ERROR;
}

const char *getSeverityName(Diagnostic::Severity severity) {
  switch (severity) {
  case Diagnostic::Severity::Error:
    return "error";
  case Diagnostic::Severity::Warning:
    return "warning";
  case Diagnostic::Severity::Note:
    return "note";
  case Diagnostic::Severity::Remark:
    return "remark";
  }
  return "error";
}

/// Hands each diagnostic to the options' callback, or prints it.
DiagnosticHandler getHandler(const kiln_compiler_options &options) {
  kiln_diagnostic_callback callback = options.callback;
  void *userData = options.userData;
  return [callback, userData](const Diagnostic &diagnostic) {
    if (!callback) {
      llvm::errs() << "kiln: " << getSeverityName(diagnostic.severity)
                   << ": " << diagnostic.file;
      if (!diagnostic.node.empty())
        llvm::errs() << ": node '" << diagnostic.node << "'";
      llvm::errs() << ": " << diagnostic.message << "\n";
      return;
    }
    kiln_diagnostic converted;
    converted.size = sizeof(converted);
    converted.severity = convertSeverity(diagnostic.severity);
    converted.message = diagnostic.message.c_str();
    converted.file = diagnostic.file.c_str();
    converted.node = diagnostic.node.c_str();
    converted.line = diagnostic.line;
    converted.column = diagnostic.column;
    callback(&converted, userData);
  };
}

const kiln_compiler_options &getOptions(const kiln_compiler_options *options) {
  static const kiln_compiler_options defaults;
  return options ? *options : defaults;
}

} // namespace

const char *kiln_compiler_version(void) { return getVersion(); }

int32_t kiln_compiler_api_version(void) { return KILN_COMPILER_API_VERSION; }

kiln_compiler_options *kiln_compiler_options_create(void) {
  return new (std::nothrow) kiln_compiler_options();
}

void kiln_compiler_options_destroy(kiln_compiler_options *options) {
  delete options;
}

kiln_compile_status
kiln_compiler_options_set_opt_level(kiln_compiler_options *options,
                                    int32_t level) {
  if (!options || level < 0 || level > 3)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->compileOptions.optLevel = static_cast<OptLevel>(level);
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_quantization(kiln_compiler_options *options,
                                       int32_t quantization) {
  if (!options || quantization < KILN_QUANTIZE_NONE ||
      quantization > KILN_QUANTIZE_INT8_STATIC)
    return KILN_COMPILE_INVALID_ARGUMENT;
  switch (quantization) {
  case KILN_QUANTIZE_INT8_DYNAMIC:
    options->compileOptions.quantization = kiln::Quantization::Int8Dynamic;
    break;
  case KILN_QUANTIZE_INT4_WEIGHT:
    options->compileOptions.quantization = kiln::Quantization::Int4Weight;
    break;
  case KILN_QUANTIZE_INT8_STATIC:
    options->compileOptions.quantization = kiln::Quantization::Int8Static;
    break;
  default:
    options->compileOptions.quantization = kiln::Quantization::None;
  }
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_quantization_report(kiln_compiler_options *options,
                                              const char *path) {
  if (!options)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->compileOptions.quantizationReportPath = path ? path : "";
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_calibration(kiln_compiler_options *options,
                                      const char *dir, double quality_budget) {
  if (!options || !(quality_budget >= 0) ||
      (quality_budget > 0 && (!dir || !*dir)))
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->compileOptions.calibrationDir = dir ? dir : "";
  options->compileOptions.qualityBudget = quality_budget;
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_target_cpu(kiln_compiler_options *options,
                                     const char *cpu) {
  if (!options || !cpu || !*cpu)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->compileOptions.targetCpu = cpu;
  return KILN_COMPILE_OK;
}

kiln_compile_status kiln_compiler_options_set_dim(kiln_compiler_options *options,
                                                  const char *symbol,
                                                  int64_t min, int64_t max) {
  if (!options || !symbol || !*symbol || min < 0 || min > max)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->importOptions.dims[symbol] = DimRange{min, max};
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_input_shape(kiln_compiler_options *options,
                                      const char *input, const int64_t *dims,
                                      size_t rank) {
  if (!options || !input || !*input || (rank > 0 && !dims))
    return KILN_COMPILE_INVALID_ARGUMENT;
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] < 0)
      return KILN_COMPILE_INVALID_ARGUMENT;
  options->importOptions.inputShapes[input] =
      std::vector<int64_t>(dims, dims + rank);
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_max_tensor_bytes(kiln_compiler_options *options,
                                           uint64_t bytes) {
  if (!options || bytes == 0)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->importOptions.maxTensorBytes = bytes;
  return KILN_COMPILE_OK;
}

kiln_compile_status
kiln_compiler_options_set_graph_limits(kiln_compiler_options *options,
                                       uint64_t maxNodes, uint32_t maxDepth) {
  if (!options || maxNodes == 0 || maxDepth > kiln::kMaxGraphDepthLimit)
    return KILN_COMPILE_INVALID_ARGUMENT;
  options->importOptions.maxGraphNodes = maxNodes;
  options->importOptions.maxGraphDepth = maxDepth;
  return KILN_COMPILE_OK;
}

void kiln_compiler_options_set_diagnostic_callback(
    kiln_compiler_options *options, kiln_diagnostic_callback callback,
    void *userData) {
  if (!options)
    return;
  options->callback = callback;
  options->userData = callback ? userData : nullptr;
}

kiln_compile_status kiln_compile_file(const char *modelPath,
                                      const char *artifactPath,
                                      const kiln_compiler_options *options) {
  if (!modelPath || !artifactPath || !*artifactPath)
    return KILN_COMPILE_INVALID_ARGUMENT;
  const kiln_compiler_options &resolved = getOptions(options);
  CompileOptions compileOptions = resolved.compileOptions;
  compileOptions.emit = EmitKind::Library;
  compileOptions.outputPath = artifactPath;
  if (llvm::Error error =
          compileOnnxFile(modelPath, resolved.importOptions, compileOptions,
                          getHandler(resolved))) {
    llvm::consumeError(std::move(error));
    return KILN_COMPILE_FAILED;
  }
  return KILN_COMPILE_OK;
}

kiln_compile_status kiln_compile_buffer(const void *model, size_t modelSize,
                                        const char *modelName,
                                        const char *externalDataDir,
                                        const kiln_compiler_options *options,
                                        void **artifact, size_t *artifactSize) {
  if (!model || !artifact || !artifactSize)
    return KILN_COMPILE_INVALID_ARGUMENT;
  *artifact = nullptr;
  *artifactSize = 0;
  const kiln_compiler_options &resolved = getOptions(options);
  llvm::Expected<std::vector<char>> bytes = compileOnnxBytes(
      llvm::StringRef(static_cast<const char *>(model), modelSize),
      modelName ? modelName : "model.onnx",
      externalDataDir ? externalDataDir : "", resolved.importOptions,
      resolved.compileOptions, getHandler(resolved));
  if (!bytes) {
    llvm::consumeError(bytes.takeError());
    return KILN_COMPILE_FAILED;
  }
  void *copy = std::malloc(bytes->size());
  if (!copy) {
    getHandler(resolved)(Diagnostic{Diagnostic::Severity::Error,
                                    "out of memory for the artifact",
                                    modelName ? modelName : "", "", 0, 0});
    return KILN_COMPILE_FAILED;
  }
  std::memcpy(copy, bytes->data(), bytes->size());
  *artifact = copy;
  *artifactSize = bytes->size();
  return KILN_COMPILE_OK;
}

void kiln_compiler_free(void *artifact) { std::free(artifact); }
