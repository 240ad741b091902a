//===- TensorFile.h - ONNX TensorProto files <-> runtime tensors -*- C++ -*-===//
#ifndef KILN_LIB_TENSORFILE_TENSORFILE_H
#define KILN_LIB_TENSORFILE_TENSORFILE_H

#include "kiln/runtime.h"

#include <memory>
#include <string>

namespace kiln {

struct TensorDeleter {
  void operator()(kiln_tensor *tensor) const { kiln_tensor_destroy(tensor); }
};
using TensorPtr = std::unique_ptr<kiln_tensor, TensorDeleter>;

/// Reads a serialized onnx.TensorProto (.pb). On failure returns null and
/// sets `error`.
TensorPtr readTensorFile(const std::string &path, std::string &name,
                         std::string &error);

/// Writes `tensor` as a serialized onnx.TensorProto named `name` (raw
/// data). Returns an empty string on success, else the problem.
std::string writeTensorFile(const std::string &path, const std::string &name,
                            const kiln_tensor *tensor);

} // namespace kiln

#endif // KILN_LIB_TENSORFILE_TENSORFILE_H
