//===- FuzzImport.cpp - ONNX models into the compiler, under libFuzzer
//-----===//
//
// Two targets from one source:
//
// fuzz-import        the fuzzer's bytes as a model file: importOnnxBytes
//                    must refuse them with an error or import them.
// fuzz-import-model  structure-aware: the inputs are serialized ModelProtos
//                    (the seed corpus: ONNX's node test models), and a
//                    custom mutator (KILN_FUZZ_MODEL_MUTATOR) parses one
//                    and changes what a hostile model changes (dims, types,
//                    attributes, op types, names, initializers' bytes,
//                    opsets, nodes) before serializing it again. A model
//                    that imports and has at most four nodes is compiled
//                    end to end into an artifact, which the runtime opens
//                    and runs on zero-filled inputs.
//
// Either must never crash, hang or leak; a compiler error is a fine answer.
// Tensors are capped at 64 MiB so a model cannot make a fuzzing process
// allocate past libFuzzer's memory limit by asking politely.
//
//===----------------------------------------------------------------------===//
#include "kiln/compiler.hpp"
#include "kiln/runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <memory>
#include <random>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

kiln::ImportOptions importOptions() {
  kiln::ImportOptions options;
  options.maxTensorBytes = uint64_t(64) << 20;
  // In this process, so that a crash in libonnx is a finding: each one
  // gets a check of Kiln's, with an error that names the node.
  options.onnxLibraryInChildProcess = false;
  return options;
}

/// A context per input, as each compile has its own: a shared one would
/// keep every input's names and types, and grow without end.
std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  kiln::registerCompilerDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  return context;
}

#ifdef KILN_FUZZ_MODEL_MUTATOR
// Runs an artifact's first entry on zero-filled inputs of its smallest
// shapes.
void runArtifact(const std::vector<char> &bytes) {
  int fd = memfd_create("fuzz.so", MFD_CLOEXEC);
  if (fd < 0 || write(fd, bytes.data(), bytes.size()) !=
                    static_cast<ssize_t>(bytes.size())) {
    if (fd >= 0)
      close(fd);
    return;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  kiln_artifact *artifact = nullptr;
  if (kiln_artifact_open(path.c_str(), &artifact) == KILN_OK) {
    kiln_session *session = nullptr;
    if (kiln_session_create(artifact, &session) == KILN_OK) {
      kiln_session_set_num_threads(session, 1);
      std::vector<kiln_tensor *> inputs;
      for (int32_t i = 0; i < kiln_entry_num_inputs(artifact, 0); ++i) {
        kiln_tensor_info info;
        kiln_entry_input_info(artifact, 0, i, &info);
        std::vector<int64_t> dims(info.dims, info.dims + info.rank);
        for (int64_t &dim : dims)
          if (dim < 0) {
            kiln_dim_info named;
            kiln_artifact_dim_info(artifact, -static_cast<int32_t>(dim) - 1,
                                   &named);
            dim = named.min;
          }
        kiln_tensor *tensor = nullptr;
        if (kiln_tensor_create(info.dtype, info.rank, dims.data(), &tensor) ==
            KILN_OK)
          inputs.push_back(tensor);
      }
      int32_t numOutputs = kiln_entry_num_outputs(artifact, 0);
      std::vector<kiln_tensor *> outputs(numOutputs, nullptr);
      if (kiln_session_run(session, 0, inputs.data(),
                           static_cast<int32_t>(inputs.size()), outputs.data(),
                           numOutputs) == KILN_OK)
        for (kiln_tensor *output : outputs)
          kiln_tensor_destroy(output);
      for (kiln_tensor *input : inputs)
        kiln_tensor_destroy(input);
      kiln_session_destroy(session);
    }
    kiln_artifact_close(artifact);
  }
  close(fd);
}

// Values a hostile model puts where a size or an index goes.
int64_t hostileInt(std::mt19937_64 &random) {
  const int64_t values[] = {
      0,  -1,      1,         2,         3,         -2,        7,
      64, 1 << 20, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, -(1 << 20)};
  return random() % 4 == 0 ? static_cast<int64_t>(random())
                           : values[random() % std::size(values)];
}

const char *const kOpTypes[] = {"Relu",
                                "Add",
                                "MatMul",
                                "Reshape",
                                "Transpose",
                                "Concat",
                                "Slice",
                                "Gather",
                                "Conv",
                                "MaxPool",
                                "Softmax",
                                "Expand",
                                "Tile",
                                "Split",
                                "Squeeze",
                                "Unsqueeze",
                                "Pad",
                                "Resize",
                                "Cast",
                                "ReduceSum",
                                "LayerNormalization",
                                "Where",
                                "Range",
                                "TopK",
                                "ConstantOfShape",
                                "Einsum",
                                "Gemm",
                                "Flatten"};

// One change of the kind a malformed or hostile model makes.
void mutateModel(onnx::ModelProto &model, std::mt19937_64 &random) {
  onnx::GraphProto &graph = *model.mutable_graph();
  auto pick = [&](int n) {
    return n > 0 ? static_cast<int>(random() % n) : -1;
  };
  switch (random() % 10) {
  case 0: { // a dimension of a graph input or output
    auto &values =
        random() % 2 ? *graph.mutable_input() : *graph.mutable_output();
    int v = pick(values.size());
    if (v < 0 || !values[v].type().has_tensor_type())
      break;
    auto *shape =
        values[v].mutable_type()->mutable_tensor_type()->mutable_shape();
    int d = pick(shape->dim_size());
    if (d >= 0)
      shape->mutable_dim(d)->set_dim_value(hostileInt(random));
    else
      shape->add_dim()->set_dim_value(hostileInt(random));
    break;
  }
  case 1: { // an element type
    auto &values =
        random() % 2 ? *graph.mutable_input() : *graph.mutable_output();
    int v = pick(values.size());
    if (v >= 0)
      values[v].mutable_type()->mutable_tensor_type()->set_elem_type(
          static_cast<int>(random() % 26));
    break;
  }
  case 2: { // an attribute's value
    int n = pick(graph.node_size());
    if (n < 0)
      break;
    onnx::NodeProto &node = *graph.mutable_node(n);
    int a = pick(node.attribute_size());
    if (a < 0)
      break;
    onnx::AttributeProto &attr = *node.mutable_attribute(a);
    if (attr.ints_size() > 0)
      attr.set_ints(pick(attr.ints_size()), hostileInt(random));
    else if (attr.has_i())
      attr.set_i(hostileInt(random));
    else if (attr.has_f())
      attr.set_f(static_cast<float>(hostileInt(random)));
    else
      attr.add_ints(hostileInt(random));
    break;
  }
  case 3: { // an op type
    int n = pick(graph.node_size());
    if (n >= 0)
      graph.mutable_node(n)->set_op_type(
          kOpTypes[random() % std::size(kOpTypes)]);
    break;
  }
  case 4: { // a node's input or output name
    int n = pick(graph.node_size());
    if (n < 0)
      break;
    onnx::NodeProto &node = *graph.mutable_node(n);
    int other = pick(graph.node_size());
    const onnx::NodeProto &from = *graph.mutable_node(other);
    std::string name = from.output_size() ? from.output(0) : "undefined";
    if (random() % 2 && node.input_size())
      node.set_input(pick(node.input_size()), name);
    else if (node.output_size())
      node.set_output(pick(node.output_size()), random() % 2 ? name : "");
    break;
  }
  case 5: { // an initializer's dims or bytes
    int i = pick(graph.initializer_size());
    if (i < 0)
      break;
    onnx::TensorProto &tensor = *graph.mutable_initializer(i);
    if (random() % 2 && tensor.dims_size())
      tensor.set_dims(pick(tensor.dims_size()), hostileInt(random));
    else if (tensor.has_raw_data())
      tensor.mutable_raw_data()->resize(random() %
                                        (tensor.raw_data().size() + 9));
    else
      tensor.set_data_type(static_cast<int>(random() % 26));
    break;
  }
  case 6: { // the opset
    if (model.opset_import_size())
      model.mutable_opset_import(0)->set_version(
          random() % 2 ? hostileInt(random) : 1 + random() % 30);
    break;
  }
  case 7: { // a node duplicated or removed
    int n = pick(graph.node_size());
    if (n < 0)
      break;
    if (random() % 2) {
      *graph.add_node() = graph.node(n);
    } else {
      graph.mutable_node()->SwapElements(n, graph.node_size() - 1);
      graph.mutable_node()->RemoveLast();
    }
    break;
  }
  case 8: { // nodes swapped (order, cycles)
    int a = pick(graph.node_size()), b = pick(graph.node_size());
    if (a >= 0)
      graph.mutable_node()->SwapElements(a, b);
    break;
  }
  default: { // a graph output listed again, or a graph input dropped
    if (random() % 2 && graph.output_size())
      *graph.add_output() = graph.output(pick(graph.output_size()));
    else if (graph.input_size()) {
      graph.mutable_input()->SwapElements(pick(graph.input_size()),
                                          graph.input_size() - 1);
      graph.mutable_input()->RemoveLast();
    }
    break;
  }
  }
}
#endif

} // namespace

// A failed allocation is an answer the code under test handles (an out of
// memory error), not a finding. User poisoning is off as in the tools
// (tools/sanitizer-options.c): LLVM's headers poison allocator slabs that
// Debian's uninstrumented libLLVM and libMLIR then use.
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  std::unique_ptr<mlir::MLIRContext> context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      kiln::importOnnxBytes(bytes, "fuzz.onnx", "", *context, importOptions());
#ifdef KILN_FUZZ_MODEL_MUTATOR
  onnx::ModelProto model;
  if (!module || !model.ParseFromArray(data, static_cast<int>(size)) ||
      model.graph().node_size() > 4)
    return 0;
  module = nullptr;
  kiln::CompileOptions options;
  options.optLevel = kiln::OptLevel::O1;
#if __has_feature(address_sanitizer)
  // This process has ASan's runtime: the kernels it runs are checked too.
  options.sanitizer = kiln::Sanitizer::Address;
#endif
  llvm::Expected<std::vector<char>> artifact =
      kiln::compileOnnxBytes(bytes, "fuzz.onnx", "", importOptions(), options);
  if (!artifact) {
    llvm::consumeError(artifact.takeError());
    return 0;
  }
  runArtifact(*artifact);
#endif
  return 0;
}

#ifdef KILN_FUZZ_MODEL_MUTATOR
extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size)) || !model.has_graph())
    return LLVMFuzzerMutate(data, size, maxSize);
  std::mt19937_64 random(seed);
  for (int changes = 1 + random() % 3; changes > 0; --changes)
    mutateModel(model, random);
  std::string mutated = model.SerializeAsString();
  if (mutated.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::copy(mutated.begin(), mutated.end(), data);
  return mutated.size();
}
#endif
