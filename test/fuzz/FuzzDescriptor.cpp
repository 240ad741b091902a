//===- FuzzDescriptor.cpp - artifact descriptors and calls, under libFuzzer
//===//
//
// Builds an artifact descriptor (kiln/abi.h) from the fuzzer's bytes, well
// formed as far as the ABI's pointers go (every table as long as its count,
// strings and dimension programs terminated) but with any values in it:
// versions, sizes, counts, dtypes, ranks, dims, dimension ranges and
// programs. The runtime must refuse it cleanly or accept it; an accepted
// one is then run through sessions with inputs of fitting and unfitting
// shapes, its entries a stub that touches every byte of every buffer the
// runtime says it passed (so AddressSanitizer sees a short one).
//
//===----------------------------------------------------------------------===//
extern "C" {
#include "internal.h"
}

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

// What the stub entry reads: the entry being called and the session's
// state size.
thread_local const kiln_abi_entry *calledEntry;
thread_local uint64_t calledStateSize;
thread_local int32_t stubResult;

// Elements of a tensor the runtime accepted: their bytes fit in size_t,
// though a product taken in order may pass that before a 0 dim.
size_t elements(const kiln_abi_tensor &tensor, const int64_t *dims) {
  size_t count = 1;
  for (int32_t d = 0; d < tensor.rank; ++d)
    if (dims[d] == 0)
      return 0;
  for (int32_t d = 0; d < tensor.rank; ++d)
    count *= static_cast<size_t>(dims[d]);
  return count;
}

volatile unsigned char sink;

void touch(void *data, size_t bytes) {
  auto *p = static_cast<unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i) {
    sink = p[i];
    p[i] = static_cast<unsigned char>(i);
  }
}

int32_t stubEntry(const kiln_abi_call *call) {
  const kiln_abi_entry *entry = calledEntry;
  for (int32_t i = 0; i < entry->num_inputs; ++i) {
    const kiln_abi_tensor &t = entry->inputs[i];
    size_t bytes = kiln_packed_byte_size(static_cast<kiln_dtype>(t.dtype),
                                         elements(t, call->inputs[i].dims));
    const auto *p = static_cast<const unsigned char *>(call->inputs[i].data);
    for (size_t k = 0; k < bytes; ++k)
      sink = p[k];
  }
  for (int32_t o = 0; o < entry->num_outputs; ++o) {
    const kiln_abi_tensor &t = entry->outputs[o];
    touch(call->outputs[o].data,
          kiln_packed_byte_size(static_cast<kiln_dtype>(t.dtype),
                                elements(t, call->outputs[o].dims)));
  }
  if (calledStateSize)
    touch(call->state, calledStateSize);
  touch(call->scratch, entry->scratch_size);
  return stubResult;
}

// Owns everything a descriptor points to.
struct Descriptor {
  kiln_abi_artifact artifact = {};
  std::deque<std::string> strings;
  std::vector<kiln_abi_dim> dims;
  std::vector<std::vector<int64_t>> programs;
  std::vector<const int64_t *> programPointers;
  std::vector<char> entries; // entry_size apart
  std::deque<std::vector<kiln_abi_tensor>> tensors;
  std::deque<std::vector<int64_t>> shapes;
  std::deque<std::vector<const char *>> errors;
  std::vector<unsigned char> stateInit;

  const char *string(FuzzedDataProvider &in) {
    if (in.ConsumeIntegralInRange<int>(0, 15) == 0)
      return nullptr;
    strings.push_back(in.ConsumeRandomLengthString(12));
    return strings.back().c_str();
  }
};

int64_t plus(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

int64_t anySize(FuzzedDataProvider &in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return in.ConsumeIntegral<int64_t>();
  case 1:
    return INT64_MAX - in.ConsumeIntegralInRange<int>(0, 2);
  default:
    return in.ConsumeIntegralInRange<int64_t>(-2, 9);
  }
}

std::vector<kiln_abi_tensor> makeTensors(FuzzedDataProvider &in,
                                         Descriptor &desc, int32_t count) {
  std::vector<kiln_abi_tensor> tensors(count > 0 ? count : 0);
  for (kiln_abi_tensor &t : tensors) {
    t.name = desc.string(in);
    t.dtype = in.ConsumeBool() ? KILN_DTYPE_F32
                               : in.ConsumeIntegralInRange<int>(-1, 23);
    t.rank = in.ConsumeIntegralInRange<int>(-1, 5);
    std::vector<int64_t> shape(t.rank > 0 ? t.rank : 0);
    for (int64_t &dim : shape)
      dim = in.ConsumeBool()
                ? KILN_ABI_DIM_REF(in.ConsumeIntegralInRange<int64_t>(
                      0, static_cast<int64_t>(desc.dims.size())))
                : anySize(in);
    desc.shapes.push_back(std::move(shape));
    t.dims = desc.shapes.back().empty() && t.rank != 0
                 ? nullptr
                 : desc.shapes.back().data();
  }
  return tensors;
}

void makeDescriptor(FuzzedDataProvider &in, Descriptor &desc) {
  kiln_abi_artifact &a = desc.artifact;
  a.abi_version = in.ConsumeIntegralInRange<int>(0, 31) == 0
                      ? in.ConsumeIntegral<uint32_t>()
                      : KILN_ABI_VERSION;
  const uint32_t sizes[] = {sizeof(kiln_abi_artifact),
                            offsetof(kiln_abi_artifact, cpu_features),
                            offsetof(kiln_abi_artifact, dim_exprs),
                            offsetof(kiln_abi_artifact, draft_tokens), 8};
  a.size = in.PickValueInArray(sizes);
  a.entry_size =
      sizeof(kiln_abi_entry) + 8 * in.ConsumeIntegralInRange<int>(0, 2);
  if (in.ConsumeIntegralInRange<int>(0, 31) == 0)
    a.entry_size =
        in.ConsumeIntegralInRange<uint32_t>(0, sizeof(kiln_abi_entry));
  const char *features[] = {"",      "sse4.1",   "avx2,fma", "nonsense",
                            "avx2,", "amx-tile", ",,"};
  a.cpu_features = in.PickValueInArray(features);
  a.producer = desc.string(in);

  desc.dims.resize(in.ConsumeIntegralInRange<int>(0, 4));
  for (kiln_abi_dim &dim : desc.dims) {
    dim.name = desc.string(in);
    dim.min = anySize(in);
    dim.max = in.ConsumeBool()
                  ? plus(dim.min, in.ConsumeIntegralInRange<int>(0, 8))
                  : anySize(in);
  }
  a.num_dims = static_cast<uint32_t>(desc.dims.size());
  a.dims = desc.dims.empty() && in.ConsumeBool() ? nullptr : desc.dims.data();
  if (in.ConsumeBool()) {
    for (size_t k = 0; k < desc.dims.size(); ++k) {
      std::vector<int64_t> program;
      if (in.ConsumeBool())
        for (int i = in.ConsumeIntegralInRange<int>(0, 12); i > 0; --i) {
          program.push_back(in.ConsumeIntegralInRange<int>(0, 8));
          program.push_back(in.ConsumeBool()
                                ? in.ConsumeIntegralInRange<int>(-1, 4)
                                : anySize(in));
        }
      program.push_back(KILN_ABI_EXPR_END);
      program.push_back(0);
      desc.programs.push_back(std::move(program));
    }
    for (size_t k = 0; k < desc.dims.size(); ++k)
      desc.programPointers.push_back(
          desc.programs[k].size() > 2 ? desc.programs[k].data() : nullptr);
    a.dim_exprs = desc.programPointers.data();
  }
  a.state_size = in.ConsumeIntegralInRange<int>(0, 3) == 0
                     ? in.ConsumeIntegralInRange<uint64_t>(1, 512)
                     : 0;
  if (a.state_size && in.ConsumeBool()) {
    desc.stateInit.assign(a.state_size, 7);
    a.state_init = desc.stateInit.data();
  }

  uint32_t numEntries = in.ConsumeIntegralInRange<int>(0, 3);
  desc.entries.assign(
      std::max<size_t>(a.entry_size, sizeof(kiln_abi_entry)) * numEntries, 0);
  for (uint32_t e = 0; e < numEntries; ++e) {
    auto *entry = reinterpret_cast<kiln_abi_entry *>(
        desc.entries.data() + static_cast<size_t>(e) * a.entry_size);
    if (a.entry_size < sizeof(kiln_abi_entry))
      break;
    entry->name = desc.string(in);
    entry->fn =
        in.ConsumeIntegralInRange<int>(0, 15) == 0 ? nullptr : stubEntry;
    entry->num_inputs = in.ConsumeIntegralInRange<int>(-1, 4);
    entry->num_outputs = in.ConsumeIntegralInRange<int>(-1, 3);
    desc.tensors.push_back(makeTensors(in, desc, entry->num_inputs));
    entry->inputs = desc.tensors.back().data();
    desc.tensors.push_back(makeTensors(in, desc, entry->num_outputs));
    entry->outputs = desc.tensors.back().data();
    entry->num_errors = in.ConsumeIntegralInRange<int>(-1, 2);
    std::vector<const char *> messages;
    for (int32_t i = 0; i < entry->num_errors; ++i)
      messages.push_back(desc.string(in));
    desc.errors.push_back(std::move(messages));
    entry->errors = desc.errors.back().data();
    entry->scratch_size = in.ConsumeIntegralInRange<uint64_t>(0, 256);
  }
  a.num_entries = numEntries;
  a.entries =
      numEntries && in.ConsumeIntegralInRange<int>(0, 15) != 0
          ? reinterpret_cast<const kiln_abi_entry *>(desc.entries.data())
          : nullptr;
}

// Runs entry `index` with inputs sized from the fuzzer's choices of the
// named dimensions, some of them outside their ranges.
void runEntry(FuzzedDataProvider &in, kiln_session *session,
              const kiln_artifact &artifact, int32_t index) {
  const kiln_abi_entry *entry = kiln_descriptor_entry(artifact.desc, index);
  std::vector<int64_t> values(artifact.desc->num_dims);
  for (uint32_t k = 0; k < values.size(); ++k) {
    const kiln_abi_dim &dim = artifact.desc->dims[k];
    values[k] = in.ConsumeIntegralInRange<int>(0, 7) == 0
                    ? anySize(in)
                    : plus(dim.min, in.ConsumeIntegralInRange<int64_t>(0, 3));
    if (values[k] > dim.max)
      values[k] = dim.max;
  }
  std::vector<kiln_tensor *> inputs;
  bool tooLarge = false;
  for (int32_t i = 0; i < entry->num_inputs && !tooLarge; ++i) {
    const kiln_abi_tensor &t = entry->inputs[i];
    std::vector<int64_t> dims(t.rank);
    int64_t count = 1;
    for (int32_t d = 0; d < t.rank; ++d) {
      dims[d] =
          t.dims[d] >= 0 ? t.dims[d] : values[KILN_ABI_DIM_INDEX(t.dims[d])];
      if (dims[d] < 0 || (dims[d] > 0 && count > (1 << 16) / dims[d]))
        tooLarge = true;
      else
        count *= dims[d];
    }
    kiln_dtype dtype = static_cast<kiln_dtype>(t.dtype);
    if (in.ConsumeIntegralInRange<int>(0, 15) == 0)
      dtype = KILN_DTYPE_I8;
    kiln_tensor *tensor = nullptr;
    if (!tooLarge &&
        kiln_tensor_create(dtype, t.rank, dims.data(), &tensor) == KILN_OK)
      inputs.push_back(tensor);
    else
      tooLarge = true;
  }
  if (!tooLarge) {
    std::vector<kiln_tensor *> outputs(
        entry->num_outputs > 0 ? entry->num_outputs : 0, nullptr);
    calledEntry = entry;
    calledStateSize = artifact.desc->state_size;
    stubResult = in.ConsumeIntegralInRange<int>(0, 7) == 0
                     ? in.ConsumeIntegralInRange<int>(-1, 3)
                     : 0;
    if (kiln_session_run(session, index, inputs.data(),
                         static_cast<int32_t>(inputs.size()), outputs.data(),
                         static_cast<int32_t>(outputs.size())) == KILN_OK)
      for (kiln_tensor *output : outputs)
        kiln_tensor_destroy(output);
  }
  for (kiln_tensor *input : inputs)
    kiln_tensor_destroy(input);
}

} // namespace

// A failed allocation is an answer the code under test handles (an out of
// memory error), not a finding. A signature may declare outputs of
// gigabytes, which the runtime would rightly allocate and zero: past 64 MiB
// an allocation fails instead, so one input cannot take seconds.
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=64";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider in(data, size);
  Descriptor desc;
  makeDescriptor(in, desc);
  if (kiln_validate_descriptor("fuzz.so", &desc.artifact) != KILN_OK)
    return 0;
  kiln_artifact artifact = {nullptr, &desc.artifact};
  kiln_session *session = nullptr;
  if (kiln_session_create(&artifact, &session) != KILN_OK)
    return 0;
  kiln_session_set_num_threads(session, in.ConsumeIntegralInRange<int>(1, 2));
  for (int call = in.ConsumeIntegralInRange<int>(1, 4); call > 0; --call) {
    int32_t index = in.ConsumeIntegralInRange<int32_t>(
        0, static_cast<int32_t>(desc.artifact.num_entries) - 1);
    runEntry(in, session, artifact, index);
    if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
      kiln_session_reset(session);
  }
  kiln_session_destroy(session);
  return 0;
}
