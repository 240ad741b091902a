//===- OnnxReduceOps.cpp - ONNX Reduce* ops -------------------------------===//
//
// ReduceSum, Mean, Max, Min and Prod map onto kiln reductions; ReduceL1, L2,
// SumSquare, LogSum and LogSumExp are sums with elementwise ops before and
// after, as ONNX defines them; CumSum and CumProd are masked reductions.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The node's reduction: its sorted axes (every axis by default) and
/// keepdims, or none for an identity (empty axes with
/// noop_with_empty_axes).
struct ReduceAttrs {
  SmallVector<int64_t> axes;
  bool keepDims;
};

FailureOr<std::optional<ReduceAttrs>> getReduceAttrs(NodeImporter &node,
                                                     int64_t rank) {
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  ReduceAttrs attrs{{}, node.getIntAttr("keepdims", 1) != 0};
  if (*axesOrNone && !(*axesOrNone)->empty()) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(node, **axesOrNone, rank);
    if (failed(normalized))
      return failure();
    attrs.axes = std::move(*normalized);
    llvm::sort(attrs.axes);
  } else if (node.getIntAttr("noop_with_empty_axes", 0)) {
    return std::optional<ReduceAttrs>();
  } else {
    attrs.axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  return std::optional<ReduceAttrs>(std::move(attrs));
}

template <typename OpTy>
FailureOr<Value> createReduce(NodeImporter &node, Value input,
                              const ReduceAttrs &attrs) {
  typename OpTy::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(attrs.axes);
  if (attrs.keepDims)
    props.keep_dims = node.b.getUnitAttr();
  return createInferred<OpTy>(node, input, props);
}

/// after(OpTy(before(x))): the reduction of the node's input with
/// elementwise steps around it (each the identity when not given).
template <typename OpTy, typename Before, typename After>
LogicalResult importComposedReduce(NodeImporter &node, Before before,
                                   After after) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<ReduceAttrs>> attrs =
      getReduceAttrs(node, node.getOperandType(0).getRank());
  if (failed(attrs))
    return failure();
  FailureOr<Value> value = before(*input);
  if (succeeded(value) && *attrs)
    value = createReduce<OpTy>(node, *value, **attrs);
  if (succeeded(value))
    value = after(*value);
  if (failed(value))
    return failure();
  node.results.push_back(*value);
  return success();
}

FailureOr<Value> identity(Value value) { return value; }

template <typename OpTy> LogicalResult importReduce(NodeImporter &node) {
  return importComposedReduce<OpTy>(node, identity, identity);
}

/// The composite reductions compute in f32 or f64.
template <typename Build>
LogicalResult importFloatReduce(NodeImporter &node, Build build) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireReal(node, *input)))
    return failure();
  return build(node);
}

FailureOr<Value> square(NodeImporter &node, Value x) {
  return createInferred<MulOp>(node, {x, x});
}

LogicalResult importReduceL1(NodeImporter &node) {
  return importFloatReduce(node, [](NodeImporter &node) {
    return importComposedReduce<ReduceSumOp>(
        node,
        [&](Value x) -> FailureOr<Value> {
          return AbsOp::create(node.b, node.loc, x).getResult();
        },
        identity);
  });
}

LogicalResult importReduceL2(NodeImporter &node) {
  return importFloatReduce(node, [](NodeImporter &node) {
    return importComposedReduce<ReduceSumOp>(
        node, [&](Value x) { return square(node, x); },
        [&](Value sum) -> FailureOr<Value> {
          return SqrtOp::create(node.b, node.loc, sum).getResult();
        });
  });
}

LogicalResult importReduceSumSquare(NodeImporter &node) {
  return importFloatReduce(node, [](NodeImporter &node) {
    return importComposedReduce<ReduceSumOp>(
        node, [&](Value x) { return square(node, x); }, identity);
  });
}

LogicalResult importReduceLogSum(NodeImporter &node) {
  return importFloatReduce(node, [](NodeImporter &node) {
    return importComposedReduce<ReduceSumOp>(
        node, identity, [&](Value sum) -> FailureOr<Value> {
          return LogOp::create(node.b, node.loc, sum).getResult();
        });
  });
}

/// log(sum(exp(x - m))) + m with m the maximum over the same axes, so that
/// exp does not overflow where the plain formula would.
LogicalResult importReduceLogSumExp(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireReal(node, *input)))
    return failure();
  FailureOr<std::optional<ReduceAttrs>> attrs =
      getReduceAttrs(node, node.getOperandType(0).getRank());
  if (failed(attrs))
    return failure();
  if (!*attrs) {
    node.results.push_back(*input);
    return success();
  }
  ReduceAttrs kept = **attrs;
  kept.keepDims = true;
  FailureOr<Value> shift = createReduce<ReduceMaxOp>(node, *input, kept);
  FailureOr<Value> result = createReduce<ReduceMaxOp>(node, *input, **attrs);
  if (failed(shift) || failed(result))
    return failure();
  FailureOr<Value> shifted = createInferred<SubOp>(node, {*input, *shift});
  if (failed(shifted))
    return failure();
  Value exp = ExpOp::create(node.b, node.loc, *shifted);
  FailureOr<Value> sum = createReduce<ReduceSumOp>(node, exp, **attrs);
  if (failed(sum))
    return failure();
  Value log = LogOp::create(node.b, node.loc, *sum);
  return addInferredResult<AddOp>(node, {log, *result});
}

/// CumSum (CumProd) as the sum (product) of the inputs the mask k <= i
/// (k < i when exclusive, >= and > when reverse) selects for output i, over
/// a new axis of k, the others replaced by 0 (1). That takes O(n^2) steps
/// along the axis, where a scan takes O(n), but keeps every step a plain
/// reduction.
template <typename ReduceOpTy, int Identity>
LogicalResult importCumulative(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), axisInput = node.getOperand(1);
  if (failed(input) || failed(axisInput) ||
      failed(requireNumeric(node, *input)))
    return failure();
  DenseElementsAttr axisAttr;
  if (!matchPattern(*axisInput, m_Constant(&axisAttr)) ||
      !isa<IntegerType>(axisAttr.getElementType()) ||
      axisAttr.getNumElements() != 1)
    return node.emitError() << "axis must be a constant integer scalar";
  int64_t rank = node.getOperandType(0).getRank();
  FailureOr<SmallVector<int64_t>> axes = normalizeAxes(
      node, {axisAttr.getSplatValue<APInt>().getSExtValue()}, rank);
  if (failed(axes))
    return failure();
  int64_t axis = (*axes)[0];
  SymbolicInts shape = node.graph.getShape(*input);
  // Output i along `axis`, input k along `axis + 1`.
  FailureOr<Value> outputIndex =
      createIndexSequence(node, shape[axis], axis, rank + 1);
  FailureOr<Value> inputIndex =
      createIndexSequence(node, shape[axis], axis + 1, rank + 1);
  if (failed(outputIndex) || failed(inputIndex))
    return failure();
  bool exclusive = node.getIntAttr("exclusive", 0) != 0;
  bool reverse = node.getIntAttr("reverse", 0) != 0;
  Value before = reverse ? *outputIndex : *inputIndex;
  Value after = reverse ? *inputIndex : *outputIndex;
  FailureOr<Value> mask =
      exclusive ? createInferred<LessOp>(node, {before, after})
                : createInferred<LessEqualOp>(node, {before, after});
  SymbolicInts spread(shape);
  spread.insert(spread.begin() + axis,
                getAffineConstantExpr(1, node.b.getContext()));
  FailureOr<Value> terms = createReshape(node, *input, spread);
  if (failed(mask) || failed(terms))
    return failure();
  Formula f(node, *input);
  FailureOr<Value> selected = f.select(*mask, *terms, f.constant(Identity));
  if (failed(selected))
    return failure();
  return addResult(node, createReduce<ReduceOpTy>(
                             node, *selected, ReduceAttrs{{axis + 1}, false}));
}

} // namespace

OpImportFn kiln::lookupReduceOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("ReduceSum", importReduce<ReduceSumOp>)
      .Case("ReduceMean", importReduce<ReduceMeanOp>)
      .Case("ReduceMax", importReduce<ReduceMaxOp>)
      .Case("ReduceMin", importReduce<ReduceMinOp>)
      .Case("ReduceProd", importReduce<ReduceProdOp>)
      .Case("ReduceL1", importReduceL1)
      .Case("ReduceL2", importReduceL2)
      .Case("ReduceSumSquare", importReduceSumSquare)
      .Case("ReduceLogSum", importReduceLogSum)
      .Case("ReduceLogSumExp", importReduceLogSumExp)
      .Case("CumSum", importCumulative<ReduceSumOp, 0>)
      .Case("CumProd", importCumulative<ReduceProdOp, 1>)
      .Default(nullptr);
}
