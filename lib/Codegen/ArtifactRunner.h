//===- ArtifactRunner.h - run a compiled artifact in the compiler -*- C++ -*-===//
//
// Calibration runs the float model on the user's inputs while compiling,
// and the report measures the compiled model against it: both open an
// artifact in this process through the C runtime and run one entry on
// input files.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_ARTIFACTRUNNER_H
#define KILN_LIB_CODEGEN_ARTIFACTRUNNER_H

#include "kiln/runtime.h"
#include "lib/TensorFile/TensorFile.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

class ArtifactRunner {
public:
  /// Opens the artifact at `path` and a session on its entry `entryName`.
  /// Errors start with "calibration: " and name the model as `what`.
  static mlir::FailureOr<ArtifactRunner> open(llvm::StringRef path,
                                              llvm::StringRef entryName,
                                              llvm::StringRef what,
                                              mlir::Location loc);

  int32_t numInputs() const;
  int32_t numOutputs() const;
  /// The largest size input `index`'s dimension `dim` may take (its
  /// named dimension's range, or its fixed size).
  int64_t getLargestInputDim(int32_t index, int32_t dim) const;
  /// The name of output `index`.
  std::string getOutputName(int32_t index) const;
  /// The entry's outputs on the tensors in `files` (one per input, in
  /// order).
  mlir::FailureOr<std::vector<TensorPtr>>
  run(llvm::ArrayRef<std::string> files);
  /// The entry's outputs on `inputs`; `source` names them in errors.
  mlir::FailureOr<std::vector<TensorPtr>>
  run(llvm::ArrayRef<const kiln_tensor *> inputs, llvm::StringRef source);
  /// Empties the session's state (a decoder's cache).
  mlir::LogicalResult reset();
  /// Runs the session's model on this many threads.
  mlir::LogicalResult setNumThreads(int32_t threads);
  /// kiln_session_generate on the session (a decoder's) after `prompt`,
  /// with room for options.max_new_tokens; `tokens` receives the new ones.
  mlir::LogicalResult generate(llvm::ArrayRef<int64_t> prompt,
                               const kiln_generate_options &options,
                               std::vector<int64_t> &tokens);

private:
  struct ArtifactCloser {
    void operator()(kiln_artifact *artifact) const {
      kiln_artifact_close(artifact);
    }
  };
  struct SessionDestroyer {
    void operator()(kiln_session *session) const {
      kiln_session_destroy(session);
    }
  };
  ArtifactRunner(mlir::Location loc, llvm::StringRef what)
      : loc(loc), what(what.str()) {}
  mlir::LogicalResult fail(const llvm::Twine &problem) const;

  mlir::Location loc;
  std::string what;
  std::unique_ptr<kiln_artifact, ArtifactCloser> artifact;
  std::unique_ptr<kiln_session, SessionDestroyer> session;
  int32_t entry = 0;
};

} // namespace kiln

#endif // KILN_LIB_CODEGEN_ARTIFACTRUNNER_H
