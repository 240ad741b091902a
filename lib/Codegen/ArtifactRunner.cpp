//===- ArtifactRunner.cpp - run a compiled artifact in the compiler -------===//
#include "lib/Codegen/ArtifactRunner.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace kiln;

LogicalResult ArtifactRunner::fail(const Twine &problem) const {
  return emitError(loc) << "calibration: " << problem << ": "
                        << kiln_last_error();
}

FailureOr<ArtifactRunner> ArtifactRunner::open(StringRef path,
                                               StringRef entryName,
                                               StringRef what, Location loc) {
  ArtifactRunner runner(loc, what);
  kiln_artifact *artifact = nullptr;
  if (kiln_artifact_open(path.str().c_str(), &artifact) != KILN_OK)
    return runner.fail("cannot open " + what);
  runner.artifact.reset(artifact);
  kiln_session *session = nullptr;
  if (kiln_session_create(artifact, &session) != KILN_OK ||
      kiln_artifact_find_entry(artifact, entryName.str().c_str(),
                               &runner.entry) != KILN_OK)
    return runner.fail("cannot start " + what);
  runner.session.reset(session);
  return runner;
}

int32_t ArtifactRunner::numInputs() const {
  return kiln_entry_num_inputs(artifact.get(), entry);
}

int64_t ArtifactRunner::getLargestInputDim(int32_t index, int32_t dim) const {
  kiln_tensor_info info;
  kiln_status status =
      kiln_entry_input_info(artifact.get(), entry, index, &info);
  assert(status == KILN_OK && dim < info.rank && "an input's dimension");
  (void)status;
  int64_t size = info.dims[dim];
  if (size >= 0)
    return size;
  kiln_dim_info range;
  if (kiln_artifact_dim_info(artifact.get(),
                             static_cast<int32_t>(KILN_ABI_DIM_INDEX(size)),
                             &range) != KILN_OK)
    return 0;
  return range.max;
}

int32_t ArtifactRunner::numOutputs() const {
  return kiln_entry_num_outputs(artifact.get(), entry);
}

std::string ArtifactRunner::getOutputName(int32_t index) const {
  kiln_tensor_info info;
  if (kiln_entry_output_info(artifact.get(), entry, index, &info) != KILN_OK ||
      !info.name)
    return "";
  return info.name;
}

FailureOr<std::vector<TensorPtr>>
ArtifactRunner::run(ArrayRef<std::string> files) {
  std::vector<TensorPtr> inputs;
  std::vector<const kiln_tensor *> inputPointers;
  for (const std::string &file : files) {
    std::string name, error;
    inputs.push_back(readTensorFile(file, name, error));
    if (!inputs.back())
      return emitError(loc) << "calibration input '" << file << "': " << error;
    inputPointers.push_back(inputs.back().get());
  }
  return run(inputPointers,
             llvm::sys::path::parent_path(files.empty() ? "" : files[0]));
}

FailureOr<std::vector<TensorPtr>>
ArtifactRunner::run(ArrayRef<const kiln_tensor *> inputs, StringRef source) {
  std::vector<kiln_tensor *> outputs(numOutputs(), nullptr);
  kiln_status status =
      kiln_session_run(session.get(), entry, inputs.data(),
                       int32_t(inputs.size()), outputs.data(),
                       int32_t(outputs.size()));
  std::vector<TensorPtr> owned;
  for (kiln_tensor *output : outputs)
    owned.emplace_back(output);
  if (status != KILN_OK)
    return fail(Twine(what) + " failed on '" + source + "'");
  return owned;
}

LogicalResult ArtifactRunner::setNumThreads(int32_t threads) {
  if (kiln_session_set_num_threads(session.get(), threads) != KILN_OK)
    return fail("cannot set the threads of " + what);
  return success();
}

LogicalResult ArtifactRunner::generate(ArrayRef<int64_t> prompt,
                                       const kiln_generate_options &options,
                                       std::vector<int64_t> &tokens) {
  tokens.assign(std::max(options.max_new_tokens, 0), 0);
  int32_t count = 0;
  if (kiln_session_generate(session.get(), prompt.data(),
                            int32_t(prompt.size()), &options, tokens.data(),
                            &count) != KILN_OK)
    return fail(Twine(what) + " failed to generate");
  tokens.resize(count);
  return success();
}

LogicalResult ArtifactRunner::reset() {
  if (kiln_session_reset(session.get()) != KILN_OK)
    return fail("cannot reset " + what);
  return success();
}
