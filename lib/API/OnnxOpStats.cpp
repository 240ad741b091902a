//===- OnnxOpStats.cpp - which ONNX ops a model uses, and which Kiln takes -===//
//
// Reads only the graph: no external data, checker or shape inference, so it
// also answers for models that don't import.
//
//===----------------------------------------------------------------------===//
#include "kiln/compiler.hpp"

#include "lib/Import/GraphImporter.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

#include <algorithm>
#include <map>

using namespace kiln;

namespace {

/// Counts the nodes of `graph` and of the subgraphs its nodes hold (If's
/// branches, Loop's and Scan's bodies) by (domain, op type).
void countNodes(const onnx::GraphProto &graph,
                std::map<std::pair<std::string, std::string>, int64_t> &counts) {
  for (const onnx::NodeProto &node : graph.node()) {
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    ++counts[{domain, node.op_type()}];
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g())
        countNodes(attribute.g(), counts);
      for (const onnx::GraphProto &subgraph : attribute.graphs())
        countNodes(subgraph, counts);
    }
  }
}

bool isImported(const std::string &domain, const std::string &opType) {
  if (domain.empty())
    return lookupOpImporter(opType) != nullptr;
  if (domain == "com.microsoft")
    return lookupMicrosoftOpImporter(opType) != nullptr;
  if (domain == kKilnOnnxDomain)
    return lookupKilnOpImporter(opType) != nullptr;
  return false;
}

} // namespace

llvm::Expected<std::vector<OnnxOpUsage>>
kiln::countOnnxOps(llvm::StringRef path) {
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd))
    return llvm::createStringError(ec, "%s: cannot read the model: %s",
                                   path.str().c_str(), ec.message().c_str());
  onnx::ModelProto model;
  bool parsed = model.ParseFromFileDescriptor(fd);
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  if (!parsed)
    return llvm::createStringError(
        std::errc::invalid_argument,
        "%s: not a valid ONNX model: the protobuf data is truncated or corrupt",
        path.str().c_str());
  std::map<std::string, int64_t> opsets;
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] =
        opset.version();
  std::map<std::pair<std::string, std::string>, int64_t> counts;
  countNodes(model.graph(), counts);
  std::vector<OnnxOpUsage> usage;
  for (const auto &[key, nodes] : counts) {
    const auto &[domain, opType] = key;
    auto opset = opsets.find(domain);
    usage.push_back({domain.empty() ? "ai.onnx" : domain, opType,
                     opset == opsets.end() ? 0 : opset->second, nodes,
                     isImported(domain, opType)});
  }
  std::stable_sort(usage.begin(), usage.end(),
                   [](const OnnxOpUsage &a, const OnnxOpUsage &b) {
                     return a.nodes > b.nodes;
                   });
  return usage;
}
