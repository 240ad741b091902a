//===- ModelChecks.cpp - checks before libonnx reads a model -------------===//
#include "lib/Import/ModelChecks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

Location kiln::getNodeLoc(const onnx::NodeProto &node, int index,
                          MLIRContext *ctx) {
  std::string name = node.name();
  if (name.empty())
    name = node.op_type() + "#" + std::to_string(index);
  return NameLoc::get(StringAttr::get(ctx, name));
}

/// The most dimensions a tensor may have: the runtime's limit
/// (KILN_MAX_RANK), so no axis of a model Kiln can run lies beyond it.
namespace {
constexpr int64_t kMaxRank = 64;
} // namespace

/// An error at the node if an ONNX op's stride, dilation or kernel size is
/// not positive, or an axis lies beyond any tensor's rank. They are checked
/// before libonnx's shape inference, which divides by them and indexes
/// dimensions with them unchecked (a zero stride is a SIGFPE, a
/// LayerNormalization axis of 2^62 a SIGSEGV): in its child process that
/// would only cost its results, but this error names the node.
LogicalResult kiln::checkAttributeRanges(const onnx::GraphProto &graph,
                                         Location fileLoc) {
  MLIRContext *ctx = fileLoc.getContext();
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    bool onnxOp = node.domain().empty() || node.domain() == "ai.onnx";
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g() && failed(checkAttributeRanges(attr.g(), fileLoc)))
        return failure();
      for (const onnx::GraphProto &subgraph : attr.graphs())
        if (failed(checkAttributeRanges(subgraph, fileLoc)))
          return failure();
      if (!onnxOp)
        continue;
      if (llvm::is_contained({"strides", "dilations", "kernel_shape"},
                             attr.name()))
        for (int64_t value : attr.ints())
          if (value <= 0)
            return emitError(getNodeLoc(node, index, ctx))
                   << node.op_type() << ": attribute '" << attr.name()
                   << "' holds " << value << "; it must be positive";
      if (attr.name() != "axis" && attr.name() != "axes")
        continue;
      SmallVector<int64_t> axes(attr.ints().begin(), attr.ints().end());
      if (attr.has_i())
        axes.push_back(attr.i());
      for (int64_t axis : axes)
        if (axis < -kMaxRank || axis >= kMaxRank)
          return emitError(getNodeLoc(node, index, ctx))
                 << node.op_type() << ": attribute '" << attr.name()
                 << "' holds " << axis << ", beyond the " << kMaxRank
                 << " dimensions a tensor may have";
    }
  }
  return success();
}

/// An error at the node if a convolution's weights and input, where the
/// graph declares both, differ in rank: libonnx 1.12's shape inference
/// reads the weights' dimensions by the input's rank unchecked (SIGSEGV;
/// fuzz-import found it for ConvTranspose, then for ConvInteger).
LogicalResult kiln::checkConvWeightRanks(const onnx::GraphProto &graph,
                                         Location fileLoc) {
  llvm::StringMap<int> ranks;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (input.type().tensor_type().has_shape())
      ranks[input.name()] = input.type().tensor_type().shape().dim_size();
  for (const onnx::TensorProto &initializer : graph.initializer())
    ranks[initializer.name()] = initializer.dims_size();
  MLIRContext *ctx = fileLoc.getContext();
  // The weights' operand of each convolution whose shape inference is
  // libonnx's convPoolShapeInference.
  const llvm::StringMap<int> weightsOperand = {{"Conv", 1},
                                               {"ConvInteger", 1},
                                               {"ConvTranspose", 1},
                                               {"QLinearConv", 3}};
  for (auto [index, node] : llvm::enumerate(graph.node())) {
    auto operand = weightsOperand.find(node.op_type());
    if (operand == weightsOperand.end() ||
        node.input_size() <= operand->second ||
        !(node.domain().empty() || node.domain() == "ai.onnx"))
      continue;
    auto input = ranks.find(node.input(0));
    auto weights = ranks.find(node.input(operand->second));
    if (input != ranks.end() && weights != ranks.end() &&
        input->second != weights->second)
      return emitError(getNodeLoc(node, index, ctx))
             << node.op_type() << ": the weights have rank " << weights->second
             << " and the input rank " << input->second
             << "; they must be equal";
  }
  return success();
}

LogicalResult kiln::checkGraphLimits(const onnx::GraphProto &graph,
                                     uint64_t maxNodes, unsigned maxDepth,
                                     Location fileLoc) {
  // Walked with a stack of its own: a model nested past the limit must get
  // its error, not overflow the compiler's stack.
  struct Pending {
    const onnx::GraphProto *graph;
    unsigned depth;
    const onnx::NodeProto *owner;
  };
  SmallVector<Pending> pending{{&graph, 0, nullptr}};
  uint64_t nodes = 0;
  while (!pending.empty()) {
    Pending next = pending.pop_back_val();
    if (next.depth > maxDepth) {
      const onnx::NodeProto &owner = *next.owner;
      InFlightDiagnostic error = emitError(fileLoc) << "a subgraph of ";
      if (owner.name().empty())
        error << "an unnamed " << owner.op_type() << " node";
      else
        error << "node '" << owner.name() << "' (" << owner.op_type() << ")";
      return error << " is nested " << next.depth << " deep, past the limit of "
                   << maxDepth << " (--max-graph-depth)";
    }
    nodes += uint64_t(next.graph->node_size());
    if (nodes > maxNodes)
      return emitError(fileLoc)
             << "the model has more than " << maxNodes
             << " nodes, counting its subgraphs' (--max-graph-nodes)";
    for (const onnx::NodeProto &node : next.graph->node())
      for (const onnx::AttributeProto &attr : node.attribute()) {
        if (attr.has_g())
          pending.push_back({&attr.g(), next.depth + 1, &node});
        for (const onnx::GraphProto &subgraph : attr.graphs())
          pending.push_back({&subgraph, next.depth + 1, &node});
      }
  }
  return success();
}
