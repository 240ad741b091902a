//===- TensorFile.cpp - ONNX TensorProto files <-> runtime tensors --------===//
#include "lib/TensorFile/TensorFile.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

using namespace kiln;

TensorPtr kiln::readTensorFile(const std::string &path, std::string &name,
                               std::string &error) {
  // A FIFO or device would block the read or never end.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    error = "'" + path + "' is not a regular file";
    return nullptr;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = "cannot open '" + path + "'";
    return nullptr;
  }
  onnx::TensorProto proto;
  // Protobuf skips unknown fields, so other messages can parse; a tensor
  // always has an element type.
  if (!proto.ParseFromIstream(&file) ||
      proto.data_type() == onnx::TensorProto::UNDEFINED) {
    error = "'" + path + "' is not a serialized ONNX TensorProto";
    return nullptr;
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "'" + path +
            "' keeps its data externally, which kiln-run does not read";
    return nullptr;
  }
  // kiln_dtype numbers its types as TensorProto does; a number past its
  // largest is not a kiln_dtype value at all.
  int32_t type = proto.data_type();
  kiln_dtype dtype = type > 0 && type <= KILN_DTYPE_I4
                         ? static_cast<kiln_dtype>(type)
                         : KILN_DTYPE_INVALID;
  if (kiln_dtype_bits(dtype) == 0) {
    error =
        "'" + path + "' holds element type " +
        (onnx::TensorProto_DataType_IsValid(proto.data_type())
             ? onnx::TensorProto_DataType_Name(
                   static_cast<onnx::TensorProto_DataType>(proto.data_type()))
             : std::to_string(proto.data_type())) +
        "; Kiln supports FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, UINT64, "
        "INT32, UINT32, INT16, UINT16, INT8, UINT8, INT4, UINT4 and BOOL";
    return nullptr;
  }
  // The payload must hold what the dims say before anything is allocated
  // from them: a corrupt file can claim any shape.
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0 || (dim != 0 && count > UINT64_MAX / uint64_t(dim))) {
      error = "'" + path + "' has an invalid shape (dimension " +
              std::to_string(dim) + ")";
      return nullptr;
    }
    count *= uint64_t(dim);
  }
  // raw_data holds the packed bytes; the typed fields floats, doubles,
  // int64s, uint32s and uint64s as uint64s, and every narrower type one
  // element per int32 (halves as their bits).
  bool hasRawData = proto.has_raw_data();
  int32_t bits = kiln_dtype_bits(dtype);
  if (!hasRawData && bits == 4) {
    error = "'" + path + "': 4-bit tensors are read from raw_data only";
    return nullptr;
  }
  bool inUint64s = dtype == KILN_DTYPE_U32 || dtype == KILN_DTYPE_U64;
  uint64_t stored = hasRawData                ? proto.raw_data().size()
                    : dtype == KILN_DTYPE_F32 ? proto.float_data_size()
                    : dtype == KILN_DTYPE_F64 ? proto.double_data_size()
                    : dtype == KILN_DTYPE_I64 ? proto.int64_data_size()
                    : inUint64s               ? proto.uint64_data_size()
                                              : proto.int32_data_size();
  bool tooLarge = count > UINT64_MAX / 64;
  uint64_t needed = hasRawData ? (count * uint64_t(bits) + 7) / 8 : count;
  if (tooLarge || stored != needed) {
    const char *unit = hasRawData ? " bytes" : " elements";
    error = "'" + path + "' holds " + std::to_string(stored) + unit +
            " but its shape needs " +
            (tooLarge ? std::string("more") : std::to_string(needed) + unit);
    return nullptr;
  }
  kiln_tensor *raw = nullptr;
  if (kiln_tensor_create(dtype, static_cast<int32_t>(dims.size()), dims.data(),
                         &raw) != KILN_OK) {
    error = "'" + path + "': " + kiln_last_error();
    return nullptr;
  }
  TensorPtr tensor(raw);
  size_t bytes = kiln_tensor_byte_size(raw);
  if (proto.has_raw_data()) {
    if (bytes)
      std::memcpy(kiln_tensor_data(raw), proto.raw_data().data(), bytes);
  } else if (dtype == KILN_DTYPE_F32) {
    std::copy(proto.float_data().begin(), proto.float_data().end(),
              static_cast<float *>(kiln_tensor_data(raw)));
  } else if (dtype == KILN_DTYPE_F64) {
    std::copy(proto.double_data().begin(), proto.double_data().end(),
              static_cast<double *>(kiln_tensor_data(raw)));
  } else if (dtype == KILN_DTYPE_I64) {
    std::copy(proto.int64_data().begin(), proto.int64_data().end(),
              static_cast<int64_t *>(kiln_tensor_data(raw)));
  } else if (dtype == KILN_DTYPE_U64) {
    std::copy(proto.uint64_data().begin(), proto.uint64_data().end(),
              static_cast<uint64_t *>(kiln_tensor_data(raw)));
  } else if (dtype == KILN_DTYPE_U32) {
    std::copy(proto.uint64_data().begin(), proto.uint64_data().end(),
              static_cast<uint32_t *>(kiln_tensor_data(raw)));
  } else {
    void *data = kiln_tensor_data(raw);
    for (size_t i = 0; i < count; ++i) {
      int32_t value = proto.int32_data(i);
      if (dtype == KILN_DTYPE_BOOL)
        static_cast<uint8_t *>(data)[i] = value != 0;
      else if (bits == 8)
        static_cast<uint8_t *>(data)[i] = static_cast<uint8_t>(value);
      else if (bits == 16)
        static_cast<uint16_t *>(data)[i] = static_cast<uint16_t>(value);
      else
        static_cast<int32_t *>(data)[i] = value;
    }
  }
  name = proto.name();
  return tensor;
}

std::string kiln::writeTensorFile(const std::string &path,
                                  const std::string &name,
                                  const kiln_tensor *tensor) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(kiln_tensor_dtype(tensor)));
  for (int32_t d = 0; d < kiln_tensor_rank(tensor); ++d)
    proto.add_dims(kiln_tensor_dims(tensor)[d]);
  proto.set_raw_data(kiln_tensor_const_data(tensor),
                     kiln_tensor_byte_size(tensor));
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !proto.SerializeToOstream(&file) || !file.flush())
    return "cannot write '" + path + "'";
  return "";
}
