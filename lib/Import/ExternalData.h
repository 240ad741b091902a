//===- ExternalData.h - loading tensor data stored beside a model -*- C++
//-*-===//
#ifndef KILN_LIB_IMPORT_EXTERNALDATA_H
#define KILN_LIB_IMPORT_EXTERNALDATA_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace kiln {

/// Replaces the external data reference of `tensor` by the bytes it names,
/// read from a file inside `modelDir`. The location must be a relative path
/// that stays inside `modelDir` and contains no symbolic links; the file must
/// be a regular file with a single hard link, and offset/length must lie
/// inside it, holding exactly the bytes the tensor's dims and type need,
/// at most `maxBytes` (checked before anything is read). Returns an empty
/// string on success, otherwise the reason.
std::string loadExternalData(onnx::TensorProto &tensor,
                             const std::string &modelDir, uint64_t maxBytes);

} // namespace kiln

#endif // KILN_LIB_IMPORT_EXTERNALDATA_H
