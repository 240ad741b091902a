//===- FuzzTensorFile.cpp - kiln-run's .pb reader, under libFuzzer
//---------===//
//
// Feeds the fuzzer's bytes to readTensorFile as a file (a memfd, which is a
// regular file). A tensor it accepts is written back and read again: the
// round trip must keep its dtype, shape and bytes.
//
//===----------------------------------------------------------------------===//
#include "lib/TensorFile/TensorFile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

std::string memoryFile(const char *name, int &fd) {
  fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    std::perror("memfd_create");
    std::abort();
  }
  return "/proc/self/fd/" + std::to_string(fd);
}

} // namespace

// A failed allocation is an answer the code under test handles (an out of
// memory error), not a finding.
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd;
  std::string path = memoryFile("input.pb", fd);
  if (write(fd, data, size) != static_cast<ssize_t>(size))
    std::abort();
  std::string name, error;
  kiln::TensorPtr tensor = kiln::readTensorFile(path, name, error);
  close(fd);
  if (!tensor) {
    if (error.empty() || error.find('\n') != std::string::npos)
      std::abort(); // every refusal says why, on one line
    return 0;
  }
  int copyFd;
  std::string copyPath = memoryFile("copy.pb", copyFd);
  if (!kiln::writeTensorFile(copyPath, name, tensor.get()).empty())
    std::abort();
  std::string copyName;
  kiln::TensorPtr copy = kiln::readTensorFile(copyPath, copyName, error);
  close(copyFd);
  if (!copy || copyName != name ||
      kiln_tensor_dtype(copy.get()) != kiln_tensor_dtype(tensor.get()) ||
      kiln_tensor_rank(copy.get()) != kiln_tensor_rank(tensor.get()) ||
      std::memcmp(kiln_tensor_dims(copy.get()), kiln_tensor_dims(tensor.get()),
                  sizeof(int64_t) * kiln_tensor_rank(tensor.get())) != 0 ||
      kiln_tensor_byte_size(copy.get()) !=
          kiln_tensor_byte_size(tensor.get()) ||
      std::memcmp(kiln_tensor_const_data(copy.get()),
                  kiln_tensor_const_data(tensor.get()),
                  kiln_tensor_byte_size(tensor.get())) != 0)
    std::abort();
  return 0;
}
