//===- OnnxLibraryCheck.cpp - libonnx's checker and shape inference -------===//
//
// The child process inherits the parsed model (copy-on-write, so nothing is
// copied up front), runs the checker and shape inference on it, and sends
// back through a pipe only what they add: the type of every input, output
// and intermediate value, graph by graph, in a GraphProto shaped like the
// model's with nodes reduced to their subgraph attributes. A model of
// gigabytes of weights thus costs the pipe kilobytes.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxLibraryCheck.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;

namespace {

using Outcome = OnnxLibraryCheck::Outcome;

/// The reply's first byte: what follows it.
constexpr char kInferredTag = 'I'; // a shadow GraphProto
constexpr char kRejectedTag = 'R'; // the checker's message

OnnxLibraryCheck checkInThisProcess(onnx::ModelProto &model, bool inferShapes) {
  try {
    onnx::checker::check_model(model);
    if (inferShapes) {
      // Type checking stays off: exporters wrote models (an int64 Constant
      // at opset 6, say) that other runtimes accept, and Kiln's own
      // verifier checks every type it computes with.
      onnx::ShapeInferenceOptions options{/*check_type=*/false,
                                          /*error_mode=*/0,
                                          /*enable_data_propagation=*/false};
      onnx::shape_inference::InferShapes(
          model, onnx::OpSchemaRegistry::Instance(), options);
    }
  } catch (const std::exception &e) {
    std::string message = e.what();
    // The checker's messages end with a redundant "==> Context: ..." block.
    if (size_t context = message.find("\n\n==> Context");
        context != std::string::npos)
      message.resize(context);
    return {Outcome::Rejected, message};
  }
  return {Outcome::Inferred, {}};
}

bool hasSubgraphs(const onnx::AttributeProto &attr) {
  return attr.has_g() || attr.graphs_size() > 0;
}

/// Writes into `shadow` the value types of `graph` and, node by node, the
/// shadows of its subgraph attributes.
void makeShadow(const onnx::GraphProto &graph, onnx::GraphProto &shadow) {
  *shadow.mutable_input() = graph.input();
  *shadow.mutable_output() = graph.output();
  *shadow.mutable_value_info() = graph.value_info();
  for (const onnx::NodeProto &node : graph.node()) {
    onnx::NodeProto *shadowNode = shadow.add_node();
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (!hasSubgraphs(attr))
        continue;
      onnx::AttributeProto *shadowAttr = shadowNode->add_attribute();
      shadowAttr->set_name(attr.name());
      if (attr.has_g())
        makeShadow(attr.g(), *shadowAttr->mutable_g());
      for (const onnx::GraphProto &subgraph : attr.graphs())
        makeShadow(subgraph, *shadowAttr->add_graphs());
    }
  }
}

/// Whether `shadow` has the shape of `graph`, down to every subgraph; with
/// `apply`, also copies its value types into `graph`.
bool matchShadow(const onnx::GraphProto &shadow, onnx::GraphProto &graph,
                 bool apply) {
  if (shadow.input_size() != graph.input_size() ||
      shadow.output_size() != graph.output_size() ||
      shadow.node_size() != graph.node_size())
    return false;
  for (int i = 0; i < graph.input_size(); ++i)
    if (shadow.input(i).name() != graph.input(i).name())
      return false;
  for (int i = 0; i < graph.output_size(); ++i)
    if (shadow.output(i).name() != graph.output(i).name())
      return false;
  if (apply) {
    *graph.mutable_input() = shadow.input();
    *graph.mutable_output() = shadow.output();
    *graph.mutable_value_info() = shadow.value_info();
  }
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto &shadowNode = shadow.node(n);
    int next = 0;
    for (onnx::AttributeProto &attr :
         *graph.mutable_node(n)->mutable_attribute()) {
      if (!hasSubgraphs(attr))
        continue;
      if (next == shadowNode.attribute_size())
        return false;
      const onnx::AttributeProto &shadowAttr = shadowNode.attribute(next++);
      if (shadowAttr.name() != attr.name() ||
          shadowAttr.has_g() != attr.has_g() ||
          shadowAttr.graphs_size() != attr.graphs_size())
        return false;
      if (attr.has_g() &&
          !matchShadow(shadowAttr.g(), *attr.mutable_g(), apply))
        return false;
      for (int k = 0; k < attr.graphs_size(); ++k)
        if (!matchShadow(shadowAttr.graphs(k), *attr.mutable_graphs(k), apply))
          return false;
    }
    if (next != shadowNode.attribute_size())
      return false;
  }
  return true;
}

bool writeAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

bool readAll(int fd, std::string &bytes) {
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    if (n == 0)
      return true;
    bytes.append(buffer, size_t(n));
  }
}

/// The child's side: never returns.
[[noreturn]] void runChild(onnx::ModelProto &model, bool inferShapes,
                           pid_t parent, int replyFd) {
  // The parent's handlers (LLVM's remove its output files and print a stack
  // trace; a sanitizer's print a report) must not run for a crash here,
  // and nothing of libonnx's may reach the user's terminal.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS,
                  SIGXCPU, SIGXFSZ, SIGQUIT, SIGINT, SIGTERM, SIGHUP, SIGUSR2})
    std::signal(sig, SIG_DFL);
  std::signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(1);
  if (int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }

  OnnxLibraryCheck check = checkInThisProcess(model, inferShapes);
  std::string reply;
  if (check.outcome == Outcome::Rejected) {
    reply = kRejectedTag + check.message;
  } else {
    onnx::GraphProto shadow;
    makeShadow(model.graph(), shadow);
    reply = kInferredTag;
    if (!shadow.AppendToString(&reply))
      _exit(1);
  }
  _exit(writeAll(replyFd, reply) ? 0 : 1);
}

OnnxLibraryCheck checkInChildProcess(onnx::ModelProto &model,
                                     bool inferShapes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return checkInThisProcess(model, inferShapes);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return checkInThisProcess(model, inferShapes);
  }
  if (child == 0) {
    ::close(fds[0]);
    runChild(model, inferShapes, parent, fds[1]);
  }
  ::close(fds[1]);
  std::string reply;
  bool read = readAll(fds[0], reply);
  ::close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR)
    ;
  OnnxLibraryCheck crashed{Outcome::Crashed, {}};
  if (WIFSIGNALED(status)) {
    crashed.message =
        "libonnx died of signal " + std::to_string(WTERMSIG(status));
    return crashed;
  }
  if (!read || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      reply.empty()) {
    crashed.message = "libonnx's checker ended without an answer";
    return crashed;
  }
  if (reply[0] == kRejectedTag)
    return {Outcome::Rejected, reply.substr(1)};
  onnx::GraphProto shadow;
  crashed.message = "libonnx's inferred types could not be read back";
  if (reply[0] != kInferredTag || reply.size() - 1 > size_t(INT32_MAX) ||
      !shadow.ParseFromArray(reply.data() + 1, int(reply.size() - 1)) ||
      !matchShadow(shadow, *model.mutable_graph(), /*apply=*/false))
    return crashed;
  matchShadow(shadow, *model.mutable_graph(), /*apply=*/true);
  return {Outcome::Inferred, {}};
}

} // namespace

OnnxLibraryCheck kiln::runOnnxLibraryCheck(onnx::ModelProto &model,
                                           bool inferShapes,
                                           bool inChildProcess) {
  return inChildProcess ? checkInChildProcess(model, inferShapes)
                        : checkInThisProcess(model, inferShapes);
}
