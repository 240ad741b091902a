//===- FuzzExternalData.cpp - external data loading, under libFuzzer ------===//
//
// The input is a tensor's external-data reference as text, a `key=value`
// per line: `type=` and `dims=` (comma-separated) set the tensor, every
// other key (location, offset, length, or any other) becomes an entry of
// its external_data. It is loaded from a model folder made once per process:
//
//   outside.bin          bytes that must never be read
//   model/weights.bin    4096 bytes of a known pattern
//   model/sub/inner.bin  64 bytes of another
//   model/link.bin       a symbolic link to weights.bin
//   model/up             a symbolic link to ..
//   model/hard.bin       a hard link to outside.bin
//   model/fifo           a FIFO (must be refused, not waited on)
//   model/dir            a folder
//
// Whatever loads must be one of the two data files, read at the offset the
// input names, exactly as many bytes as the tensor's shape needs; anything
// else must be refused with a reason.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ExternalData.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr uint64_t kMaxBytes = uint64_t(1) << 20;

std::string makeBytes(size_t count, unsigned multiplier, unsigned offset) {
  std::string bytes(count, '\0');
  for (size_t i = 0; i < count; ++i)
    bytes[i] = static_cast<char>((i * multiplier + offset) & 0xff);
  return bytes;
}

const std::string &weightsBytes() {
  static const std::string bytes = makeBytes(4096, 7, 3);
  return bytes;
}

const std::string &innerBytes() {
  static const std::string bytes = makeBytes(64, 13, 5);
  return bytes;
}

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file ||
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() ||
      std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
}

void check(bool ok, const char *what) {
  if (!ok) {
    std::perror(what);
    std::abort();
  }
}

std::string &rootFolder() {
  static std::string root;
  return root;
}

void removeFolder() {
  const std::string &root = rootFolder();
  for (const char *entry :
       {"model/weights.bin", "model/sub/inner.bin", "model/link.bin",
        "model/up", "model/hard.bin", "model/fifo", "outside.bin"})
    unlink((root + "/" + entry).c_str());
  for (const char *folder : {"model/sub", "model/dir", "model", ""})
    rmdir((root + "/" + folder).c_str());
}

/// The model folder, made on first use and removed at exit.
const std::string &modelFolder() {
  static const std::string folder = [] {
    char base[] = "/tmp/kiln-fuzz-external-data-XXXXXX";
    check(mkdtemp(base) != nullptr, "mkdtemp");
    rootFolder() = base;
    std::atexit(removeFolder);
    std::string root = base, model = root + "/model";
    writeFile(root + "/outside.bin", std::string(4096, '\xaa'));
    check(mkdir(model.c_str(), 0755) == 0, "mkdir model");
    check(mkdir((model + "/sub").c_str(), 0755) == 0, "mkdir sub");
    check(mkdir((model + "/dir").c_str(), 0755) == 0, "mkdir dir");
    writeFile(model + "/weights.bin", weightsBytes());
    writeFile(model + "/sub/inner.bin", innerBytes());
    check(symlink("weights.bin", (model + "/link.bin").c_str()) == 0,
          "symlink");
    check(symlink("..", (model + "/up").c_str()) == 0, "symlink up");
    check(link((root + "/outside.bin").c_str(),
               (model + "/hard.bin").c_str()) == 0,
          "link");
    check(mkfifo((model + "/fifo").c_str(), 0644) == 0, "mkfifo");
    return model;
  }();
  return folder;
}

/// `location` with "." and empty components dropped and "x/.." pairs
/// resolved, as a path inside the folder; empty if it is absolute or
/// climbs out.
std::string normalize(const std::string &location) {
  if (location.empty() || location[0] == '/')
    return "";
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos)
      end = location.size();
    std::string part = location.substr(start, end - start);
    if (part == "..") {
      if (parts.empty())
        return "";
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = end + 1;
  }
  std::string path;
  for (const std::string &part : parts)
    path += (path.empty() ? "" : "/") + part;
  return path;
}

int64_t elementBits(int32_t type) {
  switch (type) {
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::INT64:
    return 64;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
    return 32;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::INT16:
    return 16;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::BOOL:
    return 8;
  default:
    return 0; // not checked here
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &folder = modelFolder();
  std::string text(reinterpret_cast<const char *>(data), size);
  onnx::TensorProto tensor;
  tensor.set_name("w");
  tensor.set_data_type(onnx::TensorProto::UINT8);
  tensor.set_data_location(onnx::TensorProto::EXTERNAL);
  std::string location;
  int64_t offset = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    size_t equals = line.find('=');
    if (equals == std::string::npos)
      continue;
    std::string key = line.substr(0, equals), value = line.substr(equals + 1);
    if (key == "type") {
      tensor.set_data_type(std::atoi(value.c_str()));
    } else if (key == "dims") {
      size_t from = 0;
      while (from <= value.size()) {
        size_t comma = value.find(',', from);
        if (comma == std::string::npos)
          comma = value.size();
        tensor.add_dims(std::strtoll(value.c_str() + from, nullptr, 10));
        from = comma + 1;
      }
    } else {
      onnx::StringStringEntryProto *entry = tensor.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    if (entry.key() == "offset")
      offset = std::strtoll(entry.value().c_str(), nullptr, 10);
  }

  std::string error = kiln::loadExternalData(tensor, folder, kMaxBytes);
  if (!error.empty())
    return 0;
  // Loaded: it must be one of the two data files, read where the input
  // said, as many bytes as the shape needs.
  std::string path = normalize(location);
  const std::string *file = path == "weights.bin"     ? &weightsBytes()
                            : path == "sub/inner.bin" ? &innerBytes()
                                                      : nullptr;
  const std::string &raw = tensor.raw_data();
  if (!file || offset < 0 || uint64_t(offset) + raw.size() > file->size() ||
      file->compare(size_t(offset), raw.size(), raw) != 0 ||
      tensor.external_data_size() != 0 ||
      tensor.data_location() != onnx::TensorProto::DEFAULT)
    std::abort();
  if (int64_t bits = elementBits(tensor.data_type())) {
    uint64_t elements = 1;
    for (int64_t dim : tensor.dims())
      elements *= uint64_t(dim);
    if (elements * uint64_t(bits) / 8 != raw.size())
      std::abort();
  }
  return 0;
}
