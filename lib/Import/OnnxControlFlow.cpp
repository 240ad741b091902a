//===- OnnxControlFlow.cpp - importers of ONNX If, Loop and Scan ----------===//
//
// Kiln compiles static graphs, so control flow is resolved at import time:
// an If whose condition is a compile-time constant imports the branch it
// takes; one decided at run time imports both branches and selects their
// outputs (kiln ops have no side effects, so computing both is only
// work). A Loop with a compile-time trip count (and a condition that
// folds to a constant every iteration) and a Scan over a static sequence
// are unrolled: the body's nodes are imported once per iteration with its
// inputs bound to that iteration's values, as the recurrent layers are.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;

/// The most iterations a Loop or Scan is unrolled to.
static constexpr int64_t kMaxIterations = 4096;

namespace {

/// The subgraph attribute `name` of the node, or an error.
FailureOr<const onnx::GraphProto *> getSubgraph(NodeImporter &node,
                                                StringRef name) {
  const onnx::AttributeProto *attr = node.getAttr(name);
  if (!attr || !attr->has_g())
    return node.emitError() << "needs the graph attribute '" << name << "'";
  return &attr->g();
}

/// The name of the node's location, for naming its subgraph's nodes.
std::string getNodeName(NodeImporter &node) {
  if (auto name = dyn_cast<NameLoc>(node.loc))
    return name.getName().str();
  return node.node.op_type();
}

/// Imports `body`'s nodes where the node is, its inputs bound to `inputs`
/// (its outer-scope references see the enclosing graph's values); returns
/// its outputs.
FailureOr<SmallVector<Value>> importSubgraph(NodeImporter &node,
                                             const onnx::GraphProto &body,
                                             ValueRange inputs) {
  if (body.input_size() != static_cast<int>(inputs.size()))
    return node.emitError()
           << "the subgraph '" << body.name() << "' takes " << body.input_size()
           << " inputs; the node gives " << inputs.size();
  GraphImporter &graph = node.graph;
  for (auto [info, value] : llvm::zip(body.input(), inputs)) {
    graph.bindValue(info.name(), value);
    if (info.type().has_tensor_type())
      graph.setValueType(info.name(), info.type().tensor_type().elem_type());
  }
  for (const onnx::TensorProto &initializer : body.initializer())
    graph.bindOwnedConstant(initializer.name(), initializer);
  MLIRContext *context = node.b.getContext();
  std::string prefix = getNodeName(node) + "/";
  for (auto [index, bodyNode] : llvm::enumerate(body.node())) {
    std::string name = bodyNode.name().empty()
                           ? bodyNode.op_type() + "#" + std::to_string(index)
                           : bodyNode.name();
    Location loc = NameLoc::get(StringAttr::get(context, prefix + name));
    if (failed(graph.importNode(bodyNode, loc)))
      return failure();
  }
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : body.output()) {
    FailureOr<Value> value = graph.lookup(output.name(), node.loc);
    if (failed(value))
      return failure();
    outputs.push_back(*value);
  }
  return outputs;
}

/// The value of the boolean scalar `value` if it is a compile-time
/// constant.
std::optional<bool> getConstantBool(Value value) {
  DenseElementsAttr dense;
  if (!value || !matchPattern(value, m_Constant(&dense)) ||
      dense.getNumElements() != 1)
    return std::nullopt;
  return dense.getValues<APInt>()[0].getBoolValue();
}

/// A rank-0 int64 constant.
Value createIndex(NodeImporter &node, int64_t value) {
  return createScalar(node, node.b.getI64Type(), static_cast<double>(value));
}

/// `x` without its dimension `axis`, at index `index`.
Value takeAlong(NodeImporter &node, Value x, int64_t axis, int64_t index) {
  Value slice = createAxisSlice(node, x, axis, index, index + 1);
  SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getShape());
  shape.erase(shape.begin() + axis);
  return createReshape(node, slice, shape);
}

/// `slices` (of one shape) stacked along a new dimension `axis`.
FailureOr<Value> stack(NodeImporter &node, ArrayRef<Value> slices,
                       int64_t axis) {
  SmallVector<Value> expanded;
  for (Value slice : slices) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(slice.getType()).getShape());
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(createReshape(node, slice, shape));
  }
  if (expanded.size() == 1)
    return expanded.front();
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  return createInferred<ConcatOp>(node, expanded, props);
}

/// Checks that every iteration's scan output `k` has one static shape.
LogicalResult checkScanOutputs(NodeImporter &node,
                               ArrayRef<SmallVector<Value>> perOutput) {
  for (auto [k, slices] : llvm::enumerate(perOutput)) {
    Type first = slices.front().getType();
    if (!cast<RankedTensorType>(first).hasStaticShape() ||
        llvm::any_of(slices, [&](Value v) { return v.getType() != first; }))
      return node.emitError() << "scan output " << k
                              << " must have one static shape in every "
                                 "iteration";
  }
  return success();
}

} // namespace

LogicalResult kiln::importIf(NodeImporter &node) {
  FailureOr<Value> condition = node.getOperand(0);
  FailureOr<const onnx::GraphProto *> thenBranch =
      getSubgraph(node, "then_branch");
  FailureOr<const onnx::GraphProto *> elseBranch =
      getSubgraph(node, "else_branch");
  if (failed(condition) || failed(thenBranch) || failed(elseBranch))
    return failure();
  auto conditionType = cast<RankedTensorType>(condition->getType());
  if (!conditionType.getElementType().isInteger(1) ||
      conditionType.getNumElements() != 1)
    return node.emitError()
           << "the condition must be one boolean; it is " << conditionType;
  if (std::optional<bool> taken = getConstantBool(*condition)) {
    FailureOr<SmallVector<Value>> outputs =
        importSubgraph(node, **(*taken ? thenBranch : elseBranch), {});
    if (failed(outputs))
      return failure();
    node.results = std::move(*outputs);
    return success();
  }
  FailureOr<SmallVector<Value>> thenOutputs =
      importSubgraph(node, **thenBranch, {});
  if (failed(thenOutputs))
    return failure();
  FailureOr<SmallVector<Value>> elseOutputs =
      importSubgraph(node, **elseBranch, {});
  if (failed(elseOutputs))
    return failure();
  if (thenOutputs->size() != elseOutputs->size())
    return node.emitError() << "the branches give " << thenOutputs->size()
                            << " and " << elseOutputs->size() << " outputs";
  Value scalar = createReshape(node, *condition, ArrayRef<int64_t>{});
  for (auto [k, yes, no] : llvm::enumerate(*thenOutputs, *elseOutputs)) {
    if (yes.getType() != no.getType() ||
        !cast<RankedTensorType>(yes.getType()).hasStaticShape())
      return node.emitError()
             << "the condition is known only at run time, so both branches "
                "must give output "
             << k << " one static type; they give " << yes.getType() << " and "
             << no.getType();
    if (failed(addInferredResult<SelectOp>(node, {scalar, yes, no})))
      return failure();
  }
  return success();
}

LogicalResult kiln::importLoop(NodeImporter &node) {
  FailureOr<const onnx::GraphProto *> body = getSubgraph(node, "body");
  if (failed(body))
    return failure();
  auto input = [&](unsigned i) {
    return node.operands.size() > i ? node.operands[i] : Value();
  };
  std::optional<int64_t> tripCount;
  if (input(0)) {
    std::optional<SmallVector<int64_t>> count =
        node.graph.getConstantInts(node.node.input(0));
    if (!count || count->size() != 1)
      return node.emitError() << "the trip count M must be a compile-time "
                                 "constant (Kiln unrolls loops)";
    tripCount = std::max<int64_t>(count->front(), 0);
  }
  std::optional<bool> keepGoing = true;
  if (input(1))
    keepGoing = getConstantBool(input(1));
  if (!keepGoing)
    return node.emitError() << "the loop condition must be a compile-time "
                               "constant (Kiln unrolls loops)";
  SmallVector<Value> carried(node.operands.begin() + 2, node.operands.end());
  if (llvm::is_contained(carried, Value()))
    return node.emitError() << "loop-carried values must all be given";
  if ((*body)->output_size() < static_cast<int>(1 + carried.size()))
    return node.emitError() << "the body must return the condition and "
                            << carried.size() << " loop-carried values";
  size_t numScanOutputs = (*body)->output_size() - 1 - carried.size();
  SmallVector<SmallVector<Value>> scanned(numScanOutputs);
  Value condition = createScalar(node, node.b.getI1Type(), 1);
  int64_t iteration = 0;
  for (; *keepGoing && (!tripCount || iteration < *tripCount); ++iteration) {
    if (iteration == kMaxIterations)
      return node.emitError() << "the loop runs more than " << kMaxIterations
                              << " iterations, the most Kiln unrolls";
    SmallVector<Value> inputs = {createIndex(node, iteration), condition};
    inputs.append(carried);
    FailureOr<SmallVector<Value>> outputs =
        importSubgraph(node, **body, inputs);
    if (failed(outputs))
      return failure();
    condition = outputs->front();
    keepGoing = getConstantBool(condition);
    if (!keepGoing)
      return node.emitError() << "the body's condition output must fold to a "
                                 "constant (Kiln unrolls loops)";
    for (size_t k = 0; k < carried.size(); ++k) {
      Value next = (*outputs)[1 + k];
      if (next.getType() != carried[k].getType())
        return node.emitError()
               << "loop-carried value " << k << " changes its type from "
               << carried[k].getType() << " to " << next.getType();
      carried[k] = next;
    }
    for (size_t k = 0; k < numScanOutputs; ++k)
      scanned[k].push_back((*outputs)[1 + carried.size() + k]);
  }
  if (numScanOutputs && iteration == 0)
    return node.emitError() << "the loop runs no iteration, so its scan "
                               "outputs have no shape Kiln can tell";
  if (failed(checkScanOutputs(node, scanned)))
    return failure();
  node.results.append(carried);
  for (ArrayRef<Value> slices : scanned)
    if (failed(addResult(node, stack(node, slices, 0))))
      return failure();
  return success();
}

namespace {

/// One Scan over scan inputs `xs` (with the node's axes and directions) and
/// initial states `states`; appends the final states and the scan outputs
/// to `results`.
LogicalResult scan(NodeImporter &node, const onnx::GraphProto &body,
                   SmallVector<Value> states, ArrayRef<Value> xs,
                   ArrayRef<int64_t> inputAxes,
                   ArrayRef<int64_t> inputDirections,
                   SmallVectorImpl<Value> &results) {
  int64_t length = -1;
  for (auto [x, axis] : llvm::zip(xs, inputAxes)) {
    int64_t size = cast<RankedTensorType>(x.getType()).getDimSize(axis);
    if (ShapedType::isDynamic(size) || (length >= 0 && size != length))
      return node.emitError() << "the scan inputs must have one static "
                                 "length along their scan axes";
    length = size;
  }
  if (length <= 0)
    return node.emitError() << "the scan is empty; Kiln cannot tell the "
                               "shapes of its outputs";
  if (length > kMaxIterations)
    return node.emitError()
           << "the scan runs " << length << " iterations; Kiln unrolls at most "
           << kMaxIterations;
  size_t numScanOutputs = body.output_size() - states.size();
  SmallVector<SmallVector<Value>> scanned(numScanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> inputs(states);
    for (auto [x, axis, direction] : llvm::zip(xs, inputAxes, inputDirections))
      inputs.push_back(
          takeAlong(node, x, axis, direction ? length - 1 - t : t));
    FailureOr<SmallVector<Value>> outputs = importSubgraph(node, body, inputs);
    if (failed(outputs))
      return failure();
    for (size_t k = 0; k < states.size(); ++k)
      states[k] = (*outputs)[k];
    for (size_t k = 0; k < numScanOutputs; ++k)
      scanned[k].push_back((*outputs)[states.size() + k]);
  }
  if (failed(checkScanOutputs(node, scanned)))
    return failure();
  results.append(states);
  std::optional<SmallVector<int64_t>> outputAxes =
      node.getIntsAttr("scan_output_axes");
  std::optional<SmallVector<int64_t>> outputDirections =
      node.getIntsAttr("scan_output_directions");
  for (auto [k, slices] : llvm::enumerate(scanned)) {
    int64_t rank = cast<RankedTensorType>(slices.front().getType()).getRank();
    int64_t axis = outputAxes && k < outputAxes->size() ? (*outputAxes)[k] : 0;
    FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank + 1);
    if (failed(normalized))
      return failure();
    if (outputDirections && k < outputDirections->size() &&
        (*outputDirections)[k])
      std::reverse(slices.begin(), slices.end());
    FailureOr<Value> stacked = stack(node, slices, *normalized);
    if (failed(stacked))
      return failure();
    results.push_back(*stacked);
  }
  return success();
}

} // namespace

LogicalResult kiln::importScan(NodeImporter &node) {
  FailureOr<const onnx::GraphProto *> body = getSubgraph(node, "body");
  if (failed(body))
    return failure();
  int64_t numScanInputs = node.getIntAttr("num_scan_inputs", 0);
  // Opset 8's Scan has a leading batch dimension on every input and an
  // optional sequence_lens input first.
  bool batched = node.getOpset() < 9;
  ArrayRef<Value> operands(node.operands);
  if (batched) {
    if (!operands.empty() && operands.front())
      return node.emitError() << "sequence_lens is not supported; every "
                                 "sequence runs its full length";
    operands = operands.drop_front();
  }
  if (numScanInputs < 1 ||
      numScanInputs > static_cast<int64_t>(operands.size()))
    return node.emitError() << "num_scan_inputs must be between 1 and the "
                               "number of inputs";
  if (llvm::is_contained(operands, Value()))
    return node.emitError() << "every state and scan input must be given";
  ArrayRef<Value> states = operands.drop_back(numScanInputs);
  ArrayRef<Value> xs = operands.take_back(numScanInputs);
  if ((*body)->output_size() < static_cast<int>(states.size()))
    return node.emitError()
           << "the body must return the " << states.size() << " states";
  SmallVector<int64_t> axes, directions;
  std::optional<SmallVector<int64_t>> givenAxes =
      node.getIntsAttr("scan_input_axes");
  std::optional<SmallVector<int64_t>> givenDirections =
      node.getIntsAttr(batched ? "directions" : "scan_input_directions");
  for (auto [j, x] : llvm::enumerate(xs)) {
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    int64_t axis = givenAxes && j < givenAxes->size() ? (*givenAxes)[j] : 0;
    FailureOr<int64_t> normalized =
        node.normalizeAxis(axis, batched ? rank - 1 : rank);
    if (failed(normalized))
      return failure();
    axes.push_back(*normalized);
    directions.push_back(givenDirections && j < givenDirections->size()
                             ? (*givenDirections)[j]
                             : 0);
  }
  if (!batched)
    return scan(node, **body, SmallVector<Value>(states), xs, axes, directions,
                node.results);

  int64_t batch = -1;
  for (Value v : operands) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() < 1 || type.isDynamicDim(0) ||
        (batch >= 0 && type.getDimSize(0) != batch))
      return node.emitError() << "every input must have one static batch "
                                 "size as its first dimension";
    batch = type.getDimSize(0);
  }
  SmallVector<SmallVector<Value>> perBatch;
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<Value> bStates, bXs, results;
    for (Value state : states)
      bStates.push_back(takeAlong(node, state, 0, b));
    for (Value x : xs)
      bXs.push_back(takeAlong(node, x, 0, b));
    if (failed(scan(node, **body, bStates, bXs, axes, directions, results)))
      return failure();
    perBatch.push_back(std::move(results));
  }
  for (size_t k = 0; k < perBatch.front().size(); ++k) {
    SmallVector<Value> slices;
    for (ArrayRef<Value> results : perBatch)
      slices.push_back(results[k]);
    if (failed(addResult(node, stack(node, slices, 0))))
      return failure();
  }
  return success();
}
