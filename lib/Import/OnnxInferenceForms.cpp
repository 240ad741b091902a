//===- OnnxInferenceForms.cpp - training-time ONNX ops for inference ------===//
//
// Dropout, BatchNormalization and the loss ops in the form they take when a
// model is run rather than trained: Dropout passes its input through,
// BatchNormalization scales by its running statistics, and the losses are
// formulas over gathers and reductions. Training modes (random masks,
// updated statistics) are refused with an error.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// A tensor of `like`'s shape and `elementType` with every element `value`.
FailureOr<Value> createFilled(NodeImporter &node, Value like, Type elementType,
                              double value) {
  return createBroadcast(node, createScalar(node, elementType, value),
                         node.graph.getShape(like));
}

/// Whether output `i` of the node is used (named).
bool hasOutput(NodeImporter &node, int i) {
  return node.node.output_size() > i && !node.node.output(i).empty();
}

/// The sum of all elements of `x`, as a scalar.
FailureOr<Value> createSumOfAll(NodeImporter &node, Value x) {
  ReduceSumOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(llvm::to_vector(
      llvm::seq<int64_t>(0, cast<RankedTensorType>(x.getType()).getRank())));
  return createInferred<ReduceSumOp>(node, x, props);
}

} // namespace

/// Inference Dropout is the identity; its mask (when asked for) is all
/// true, or all ones in the input's type before opset 10.
LogicalResult kiln::importDropout(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x))
    return failure();
  if (node.getOpset() >= 12 && node.operands.size() > 2 && node.operands[2])
    return node.emitError()
           << "a training_mode input is not supported; Kiln compiles "
              "inference, where Dropout passes its input through";
  node.results.push_back(*x);
  if (!hasOutput(node, 1))
    return success();
  Type maskType = node.getOpset() >= 10 ? Type(node.b.getI1Type())
                                        : getElementTypeOrSelf(x->getType());
  FailureOr<Value> mask = createFilled(node, *x, maskType, 1);
  if (failed(mask))
    return failure();
  node.results.push_back(*mask);
  return success();
}

/// Y = X * a + (B - mean * a) with a = scale / sqrt(var + epsilon), the
/// per-channel parameters (axis 1) broadcast over the other axes.
LogicalResult kiln::importBatchNormalization(NodeImporter &node) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> input = node.getOperand(i);
    if (failed(input) || failed(requireFloat(node, *input)))
      return failure();
    inputs.push_back(*input);
  }
  if (node.getIntAttr("training_mode", 0) != 0 || hasOutput(node, 1))
    return node.emitError() << "training mode (updated running statistics) "
                               "is not supported; Kiln compiles inference";
  if (node.getOpset() < 9 && node.getIntAttr("spatial", 1) == 0)
    return node.emitError()
           << "spatial=0 (statistics per element) is not supported";
  int64_t rank = node.getOperandType(0).getRank();
  if (rank < 2)
    return node.emitError() << "input must have rank >= 2, got " << rank;
  for (unsigned i = 1; i < 5; ++i)
    if (node.getOperandType(i).getRank() != 1)
      return node.emitError() << "input " << i << " must be 1-D (one value "
                              << "per channel)";
  Formula f(node, inputs[0]);
  FailureOr<Value> factor = f.apply<DivOp>(
      inputs[1],
      f.apply<SqrtOp>(f.apply<AddOp>(
          inputs[4], f.constant(node.getFloatAttr("epsilon", 1e-5f)))));
  FailureOr<Value> shift =
      f.apply<SubOp>(inputs[2], f.apply<MulOp>(inputs[3], factor));
  if (failed(factor) || failed(shift))
    return failure();
  // [C] -> [C, 1, ..., 1], aligning the channel with axis 1 of X.
  if (rank > 2) {
    SymbolicInts perChannel(rank - 1,
                            getAffineConstantExpr(1, node.b.getContext()));
    perChannel[0] = node.graph.getShape(inputs[1])[0];
    factor = createReshape(node, *factor, perChannel);
    if (succeeded(factor))
      shift = createReshape(node, *shift, perChannel);
    if (failed(factor) || failed(shift))
      return failure();
  }
  return f.result(f.apply<AddOp>(f.apply<MulOp>(inputs[0], factor), shift));
}

namespace {

/// The negative log-likelihood loss of `logProb` ([N, C, d1, ...]) at the
/// classes `target` ([N, d1, ...]), weighted by the node's per-class
/// `weight` (input 2, optional); targets equal to ignore_index count
/// nothing. Reduced as the node's `reduction` says.
FailureOr<Value> createNllLoss(NodeImporter &node, Value logProb, Value target,
                               Value weight) {
  auto inputType = cast<RankedTensorType>(logProb.getType());
  auto targetType = cast<RankedTensorType>(target.getType());
  if (inputType.getRank() < 2 ||
      targetType.getRank() != inputType.getRank() - 1)
    return node.emitError() << "expects input [N, C, d1, ...] and target "
                               "[N, d1, ...]";
  std::string reduction = node.getStringAttr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return node.emitError() << "unknown reduction '" << reduction << "'";

  // Targets equal to ignore_index count nothing; they may lie outside the
  // classes, so they read class 0 (then masked) instead.
  FailureOr<Value> ignored = Value(), safeTarget = target;
  if (const onnx::AttributeProto *ignore = node.getAttr("ignore_index")) {
    Type indexType = targetType.getElementType();
    ignored = createInferred<EqualOp>(
        node, {target, createScalar(node, indexType,
                                    static_cast<double>(ignore->i()))});
    if (failed(ignored))
      return failure();
    safeTarget = createInferred<SelectOp>(
        node, {*ignored, createScalar(node, indexType, 0), target});
    if (failed(safeTarget))
      return failure();
  }

  // The log-probability of each target class: gather along the class axis.
  SymbolicInts targetShape = node.graph.getShape(target);
  SymbolicInts withClassAxis = targetShape;
  withClassAxis.insert(withClassAxis.begin() + 1,
                       getAffineConstantExpr(1, node.b.getContext()));
  FailureOr<Value> index = createReshape(node, *safeTarget, withClassAxis);
  if (failed(index))
    return failure();
  GatherElementsOp::Properties gatherProps;
  gatherProps.axis = node.b.getI64IntegerAttr(1);
  FailureOr<Value> picked =
      createInferred<GatherElementsOp>(node, {logProb, *index}, gatherProps);
  if (failed(picked))
    return failure();
  picked = createReshape(node, *picked, targetShape);
  if (failed(picked))
    return failure();

  Formula f(node, logProb);
  FailureOr<Value> perElementWeight = Value();
  if (weight) {
    GatherOp::Properties props;
    props.axis = node.b.getI64IntegerAttr(0);
    perElementWeight =
        createInferred<GatherOp>(node, {weight, *safeTarget}, props);
  }
  if (*ignored)
    perElementWeight = f.select(*ignored, f.constant(0),
                                weight ? perElementWeight : f.constant(1));
  if (failed(perElementWeight))
    return failure();
  FailureOr<Value> loss = f.apply<NegOp>(*picked);
  if (*perElementWeight)
    loss = f.apply<MulOp>(loss, perElementWeight);
  if (failed(loss) || reduction == "none")
    return loss;
  FailureOr<Value> sum = createSumOfAll(node, *loss);
  if (failed(sum) || reduction == "sum")
    return sum;
  // The mean divides by the total weight (the count of targets counted
  // where there are no weights).
  if (!*perElementWeight)
    perElementWeight =
        createFilled(node, target, inputType.getElementType(), 1);
  if (failed(perElementWeight))
    return failure();
  return f.apply<DivOp>(sum, createSumOfAll(node, *perElementWeight));
}

/// The optional per-class weights (input 2), which must be f32 like the
/// input.
FailureOr<Value> getClassWeights(NodeImporter &node) {
  if (node.operands.size() < 3 || !node.operands[2])
    return Value();
  if (failed(requireFloat(node, node.operands[2])))
    return failure();
  return node.operands[2];
}

} // namespace

LogicalResult kiln::importNegativeLogLikelihoodLoss(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  FailureOr<Value> target = getIndicesOperand(node, 1);
  if (failed(input) || failed(target) || failed(requireFloat(node, *input)))
    return failure();
  FailureOr<Value> weight = getClassWeights(node);
  if (failed(weight))
    return failure();
  FailureOr<Value> loss = createNllLoss(node, *input, *target, *weight);
  if (failed(loss))
    return failure();
  node.results.push_back(*loss);
  return success();
}

/// The negative log-likelihood of LogSoftmax(scores) over the class axis;
/// the second output, if asked for, is that LogSoftmax.
LogicalResult kiln::importSoftmaxCrossEntropyLoss(NodeImporter &node) {
  FailureOr<Value> scores = node.getOperand(0);
  FailureOr<Value> labels = getIndicesOperand(node, 1);
  if (failed(scores) || failed(labels) || failed(requireFloat(node, *scores)))
    return failure();
  if (node.getOperandType(0).getRank() < 2)
    return node.emitError() << "scores must be [N, C, d1, ...]";
  FailureOr<Value> weight = getClassWeights(node);
  if (failed(weight))
    return failure();
  FailureOr<Value> logProb = createLogSoftmax(node, *scores, 1);
  if (failed(logProb))
    return failure();
  FailureOr<Value> loss = createNllLoss(node, *logProb, *labels, *weight);
  if (failed(loss))
    return failure();
  node.results.push_back(*loss);
  if (hasOutput(node, 1))
    node.results.push_back(*logProb);
  return success();
}
