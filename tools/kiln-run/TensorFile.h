//===- TensorFile.h - ONNX TensorProto files <-> runtime tensors -*- C++
//-*-===//
#ifndef KILN_TOOLS_KILN_RUN_TENSORFILE_H
#define KILN_TOOLS_KILN_RUN_TENSORFILE_H

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

} // namespace kiln

#endif // KILN_TOOLS_KILN_RUN_TENSORFILE_H
