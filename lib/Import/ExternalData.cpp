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
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY);
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

} // namespace

std::string kiln::loadExternalData(onnx::TensorProto &tensor,
                                   const std::string &modelDir) {
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
  std::string error;
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
