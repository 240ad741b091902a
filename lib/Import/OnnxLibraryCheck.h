//===- OnnxLibraryCheck.h - libonnx's checker, shape inference --*- C++ -*-===//
//
// libonnx's checker and shape inference read models that a user may have
// downloaded from anywhere, and the version Debian ships checks little: some
// malformed attributes and shapes crash it. Kiln runs them in a child
// process by default, so that such a crash costs only their results.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_IMPORT_ONNXLIBRARYCHECK_H
#define KILN_LIB_IMPORT_ONNXLIBRARYCHECK_H

#include <onnx/onnx_pb.h>

#include <string>

namespace kiln {

struct OnnxLibraryCheck {
  enum class Outcome {
    /// The checker accepted the model; the shapes libonnx inferred are in
    /// its graphs' value_info and outputs.
    Inferred,
    /// The checker refused the model; `message` says why.
    Rejected,
    /// libonnx crashed (in the child process) or its results could not be
    /// read back; the model is unchanged.
    Crashed,
  };
  Outcome outcome;
  std::string message;
};

/// Runs libonnx's checker, then its shape inference unless `inferShapes` is
/// false, on `model`: in a child process, whose inferred types are copied
/// into `model`, when `inChildProcess`; otherwise in this process.
OnnxLibraryCheck runOnnxLibraryCheck(onnx::ModelProto &model, bool inferShapes,
                                     bool inChildProcess);

} // namespace kiln

#endif // KILN_LIB_IMPORT_ONNXLIBRARYCHECK_H
