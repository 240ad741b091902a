//===- OnnxGradient.cpp - ONNX's preview-training Gradient ---------------===//
//
// Gradient (domain ai.onnx.preview.training) outputs the derivatives of the
// graph value `y` with respect to each of `xs`, as the graph computes `y`
// from them. The importer already holds the nodes between them, so it
// differentiates in reverse: `y`'s adjoint starts as ones, and each node,
// last first, adds its inputs' shares (Add, Sub, Mul, Div, Neg, Identity
// on operands of the result's shape); an x that `y` does not depend on
// gets zeros.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The nodes `y` is computed by from `xs`, each after the nodes computing
/// its inputs.
SmallVector<const onnx::NodeProto *>
getNodesBetween(const GraphImporter &graph, StringRef y,
                const llvm::StringSet<> &xs) {
  SmallVector<const onnx::NodeProto *> order;
  llvm::DenseSet<const onnx::NodeProto *> visited;
  std::function<void(StringRef)> visit = [&](StringRef name) {
    if (xs.contains(name))
      return;
    const onnx::NodeProto *producer = graph.getProducer(name);
    if (!producer || !visited.insert(producer).second)
      return;
    for (const std::string &input : producer->input())
      visit(input);
    order.push_back(producer);
  };
  visit(y);
  return order;
}

/// Builds the adjoints of the values between `y` and `xs`.
class Differentiator {
public:
  Differentiator(NodeImporter &node, Value y) : node(node), f(node, y) {}

  /// Adds `share` to the adjoint of `name`.
  LogicalResult accumulate(StringRef name, FailureOr<Value> share) {
    if (failed(share))
      return failure();
    auto [it, inserted] = adjoints.try_emplace(name, *share);
    if (!inserted) {
      FailureOr<Value> sum = f.apply<AddOp>(it->second, *share);
      if (failed(sum))
        return failure();
      it->second = *sum;
    }
    return success();
  }

  /// Propagates the adjoint of `op`'s output to its inputs.
  LogicalResult propagate(const onnx::NodeProto &op) {
    if (op.output_size() != 1)
      return unsupported(op);
    auto found = adjoints.find(op.output(0));
    if (found == adjoints.end())
      return success();
    Value g = found->second;
    SmallVector<Value> inputs;
    for (const std::string &name : op.input()) {
      FailureOr<Value> value = node.graph.lookup(name, node.loc);
      if (failed(value))
        return failure();
      // Broadcast operands would need their adjoints summed back.
      if (value->getType() != g.getType())
        return node.emitError()
               << "Kiln differentiates operands of their result's shape; "
                  "node '"
               << op.name() << "' has " << value->getType() << " and "
               << g.getType();
      inputs.push_back(*value);
    }
    StringRef type = op.op_type();
    bool binary = inputs.size() == 2, unary = inputs.size() == 1;
    if (unary && type == "Identity")
      return accumulate(op.input(0), g);
    if (unary && type == "Neg")
      return accumulate(op.input(0), f.apply<NegOp>(g));
    if (binary && (type == "Add" || type == "Sub")) {
      if (failed(accumulate(op.input(0), g)))
        return failure();
      return accumulate(op.input(1), type == "Add" ? FailureOr<Value>(g)
                                                   : f.apply<NegOp>(g));
    }
    if (binary && type == "Mul") {
      if (failed(accumulate(op.input(0), f.apply<MulOp>(g, inputs[1]))))
        return failure();
      return accumulate(op.input(1), f.apply<MulOp>(g, inputs[0]));
    }
    if (binary && type == "Div") {
      // d(a / b) = da / b - db * (a / b) / b
      FailureOr<Value> share = f.apply<DivOp>(g, inputs[1]);
      if (failed(accumulate(op.input(0), share)))
        return failure();
      FailureOr<Value> quotient = f.apply<DivOp>(inputs[0], inputs[1]);
      return accumulate(op.input(1),
                        f.apply<NegOp>(f.apply<MulOp>(share, quotient)));
    }
    return unsupported(op);
  }

  LogicalResult unsupported(const onnx::NodeProto &op) {
    return node.emitError() << "Kiln differentiates Add, Sub, Mul, Div, Neg "
                               "and Identity; node '"
                            << op.name() << "' is " << op.op_type();
  }

  llvm::StringMap<Value> adjoints;

private:
  NodeImporter &node;
  Formula f;
};

LogicalResult importGradient(NodeImporter &node) {
  const onnx::AttributeProto *xsAttr = node.getAttr("xs");
  std::string y = node.getStringAttr("y", "");
  if (!xsAttr || y.empty())
    return node.emitError() << "needs the xs and y attributes";
  if (xsAttr->strings_size() != node.node.output_size())
    return node.emitError()
           << "has " << node.node.output_size() << " outputs for "
           << xsAttr->strings_size() << " xs";
  llvm::StringSet<> xs;
  for (const std::string &x : xsAttr->strings())
    xs.insert(x);
  FailureOr<Value> yValue = node.graph.lookup(y, node.loc);
  if (failed(yValue))
    return failure();
  auto yType = cast<RankedTensorType>(yValue->getType());
  if (!yType.hasStaticShape() || !isa<FloatType>(yType.getElementType()))
    return node.emitError() << "y must be a statically shaped float tensor; "
                               "it is "
                            << yType;
  Differentiator differentiator(node, *yValue);
  auto fill = [&](RankedTensorType type, double value) -> Value {
    return BroadcastOp::create(node.b, node.loc, type,
                               createScalar(node, type.getElementType(), value),
                               ValueRange());
  };
  differentiator.adjoints[y] = fill(yType, 1);
  for (const onnx::NodeProto *op :
       llvm::reverse(getNodesBetween(node.graph, y, xs)))
    if (failed(differentiator.propagate(*op)))
      return failure();
  for (const std::string &x : xsAttr->strings()) {
    Value adjoint = differentiator.adjoints.lookup(x);
    if (!adjoint) {
      FailureOr<Value> value = node.graph.lookup(x, node.loc);
      if (failed(value))
        return failure();
      auto type = cast<RankedTensorType>(value->getType());
      if (!type.hasStaticShape())
        return node.emitError() << "x '" << x << "' must be statically shaped";
      adjoint = fill(type, 0);
    }
    node.results.push_back(adjoint);
  }
  return success();
}

} // namespace

OpImportFn kiln::lookupTrainingOpImporter(StringRef opType) {
  return opType == "Gradient" ? importGradient : nullptr;
}
