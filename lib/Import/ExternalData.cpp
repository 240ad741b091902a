//===- ExternalData.cpp - confined loading of external tensor data --------===//
//
// Every external-data file is opened through one function that walks the
// relative path component by component with openat(O_NOFOLLOW), so neither
// "..", an absolute path nor a symbolic link anywhere on the path can leave
// the model's folder, and a hard link to an outside file is refused.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ExternalData.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

/// Owns a file descriptor.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd = -1) : fd(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
  void reset(int newFd) {
    if (fd >= 0)
      ::close(fd);
    fd = newFd;
  }
  int get() const { return fd; }
  int release() {
    int released = fd;
    fd = -1;
    return released;
  }

private:
  int fd;
};

std::vector<std::string> splitPath(const std::string &path) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  std::string part;
  while (std::getline(stream, part, '/'))
    if (!part.empty() && part != ".")
      parts.push_back(part);
  return parts;
}

/// Opens `relative` beneath `dir`, or returns -1 with `error` set.
int openBeneath(const std::string &dir, const std::string &relative,
                std::string &error) {
  if (relative.empty() || relative[0] == '/') {
    error = "must be a relative path";
    return -1;
  }
  std::vector<std::string> parts = splitPath(relative);
  if (parts.empty()) {
    error = "names no file";
    return -1;
  }
  FileDescriptor current(
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (current.get() < 0) {
    error =
        "cannot open the model's folder: " + std::string(std::strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "..") {
      error = "leaves the model's folder";
      return -1;
    }
    bool last = i + 1 == parts.size();
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
    int flags =
        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    int next = ::openat(current.get(), parts[i].c_str(), flags);
    if (next < 0) {
      error = errno == ELOOP
                  ? "goes through a symbolic link"
                  : "cannot be opened: " + std::string(std::strerror(errno));
      return -1;
    }
    current.reset(next);
  }
  return current.release();
}

/// Bits per element of ONNX data type `type`; 0 where elements have no
/// fixed size (strings) or the type is unknown.
int64_t getElementBits(int32_t type) {
  switch (type) {
  case onnx::TensorProto::COMPLEX128:
    return 128;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::COMPLEX64:
    return 64;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 32;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
    return 16;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
  case 17: // the float8 types, newer than Debian's onnx.proto
  case 18:
  case 19:
  case 20:
    return 8;
  case 21: // uint4, int4 and float4e2m1, two per byte
  case 22:
  case 23:
    return 4;
  default:
    return 0;
  }
}

/// The bytes `tensor`'s dims and type need, or an error: a negative
/// dimension, a count past int64, or more than `maxBytes`.
std::string getNeededBytes(const onnx::TensorProto &tensor, uint64_t maxBytes,
                           uint64_t &needed) {
  int64_t elements = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      return "its shape has the negative dimension " + std::to_string(dim);
    if (__builtin_mul_overflow(elements, dim, &elements))
      return "its shape has more elements than an int64 can count";
  }
  // Unknown types count a byte per element here; their data's size is
  // bounded below.
  int64_t bits = getElementBits(tensor.data_type());
  if (bits == 0)
    bits = 8;
  uint64_t wholeBits;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements),
                             static_cast<uint64_t>(bits), &wholeBits) ||
      wholeBits / 8 > maxBytes)
    return "its shape needs more than the " + std::to_string(maxBytes) +
           " bytes a tensor may take (--max-tensor-size)";
  needed = (wholeBits + 7) / 8;
  return "";
}

} // namespace

std::string kiln::loadExternalData(onnx::TensorProto &tensor,
                                   const std::string &modelDir,
                                   uint64_t maxBytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    try {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    } catch (const std::exception &) {
      return "external data '" + entry.key() + "' is not a number: '" +
             entry.value() + "'";
    }
  }
  // The system would open the path up to the first NUL: another file than
  // the one the model names (found by fuzz-external-data).
  if (location.find('\0') != std::string::npos)
    return "external data location '" + location + "' holds a NUL byte";
  uint64_t needed = 0;
  std::string error = getNeededBytes(tensor, maxBytes, needed);
  if (!error.empty())
    return error;
  int rawFd = openBeneath(modelDir, location, error);
  if (rawFd < 0)
    return "external data file '" + location + "' " + error;
  FileDescriptor fd(rawFd);
  struct stat info;
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode))
    return "external data file '" + location + "' is not a regular file";
  if (info.st_nlink > 1)
    return "external data file '" + location + "' has several hard links";
  uint64_t size = static_cast<uint64_t>(info.st_size);
  if (offset < 0 || static_cast<uint64_t>(offset) > size)
    return "external data offset " + std::to_string(offset) +
           " lies outside '" + location + "'";
  uint64_t available = size - static_cast<uint64_t>(offset);
  uint64_t count = length < 0 ? available : static_cast<uint64_t>(length);
  if (count > available)
    return "external data range [" + std::to_string(offset) + ", +" +
           std::to_string(count) + ") lies outside '" + location + "' (" +
           std::to_string(size) + " bytes)";
  // Checked before reading: a sparse file may claim terabytes.
  if (count != needed && getElementBits(tensor.data_type()) != 0)
    return "external data in '" + location + "' holds " +
           std::to_string(count) + " bytes (from offset " +
           std::to_string(offset) + (length < 0 ? " to the file's end" : "") +
           ") but the tensor's shape needs " + std::to_string(needed);
  if (count > maxBytes)
    return "external data in '" + location + "' holds " +
           std::to_string(count) + " bytes, more than the " +
           std::to_string(maxBytes) +
           " bytes a tensor may take (--max-tensor-size)";
  std::string bytes(count, '\0');
  uint64_t done = 0;
  while (done < count) {
    ssize_t got = ::pread(fd.get(), bytes.data() + done, count - done,
                          static_cast<off_t>(offset + done));
    if (got <= 0)
      return "cannot read external data file '" + location + "'";
    done += static_cast<uint64_t>(got);
  }
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(onnx::TensorProto::DEFAULT);
  return "";
}
