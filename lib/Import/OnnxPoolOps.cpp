//===- OnnxPoolOps.cpp - ONNX pooling ops ---------------------------------===//
//
// MaxPool, AveragePool and LpPool become kiln.pool (LpPool as a sum pool
// between elementwise powers); the global pools are reductions over the
// spatial axes; LRN sums squares over a window of channels.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The node's input, which must be f32 of rank 3 to 5 (N, C and 1-3
/// spatial dimensions).
FailureOr<Value> getPoolInput(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireFloat(node, *input)))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  if (rank < 3 || rank > 5)
    return node.emitError() << "expects an input [N, C, 1 to 3 spatial "
                               "dimensions], got rank "
                            << rank;
  return input;
}

/// kiln.pool of `kind` over `input` with the node's window attributes.
FailureOr<Value> createPool(NodeImporter &node, Value input, PoolKind kind,
                            bool countIncludePad) {
  auto type = cast<RankedTensorType>(input.getType());
  std::optional<SmallVector<int64_t>> kernel = node.getIntsAttr("kernel_shape");
  if (!kernel || static_cast<int64_t>(kernel->size()) != type.getRank() - 2)
    return node.emitError() << "needs kernel_shape with one size per spatial "
                               "dimension";
  ArrayRef<int64_t> spatialSizes = type.getShape().drop_front(2);
  if (llvm::any_of(spatialSizes, ShapedType::isDynamic) &&
      node.getIntAttr("ceil_mode", 0))
    return node.emitError() << "ceil_mode needs static spatial dimensions; "
                               "give named ones with --dim";
  FailureOr<WindowAttrs> window = getWindowAttrs(node, spatialSizes, *kernel);
  if (failed(window))
    return failure();
  PoolOp::Properties props;
  props.kind = PoolKindAttr::get(node.b.getContext(), kind);
  props.kernel = node.b.getDenseI64ArrayAttr(*kernel);
  props.strides = node.b.getDenseI64ArrayAttr(window->strides);
  props.dilations = node.b.getDenseI64ArrayAttr(window->dilations);
  props.pads = node.b.getDenseI64ArrayAttr(window->pads);
  if (node.getIntAttr("ceil_mode", 0))
    props.ceil_mode = node.b.getUnitAttr();
  if (countIncludePad)
    props.count_include_pad = node.b.getUnitAttr();
  return createInferred<PoolOp>(node, input, props);
}

/// LpPool's exponent: a float attribute in opset 1, an integer since.
float getLpExponent(NodeImporter &node) {
  if (node.getOpset() < 2)
    return node.getFloatAttr("p", 2.0f);
  return static_cast<float>(node.getIntAttr("p", 2));
}

/// |x|^p, and its inverse root (p = 1 and 2 without pow).
FailureOr<Value> raiseToLp(Formula &f, Value x, float p) {
  if (p == 2.0f)
    return f.apply<MulOp>(x, x);
  FailureOr<Value> magnitude = f.apply<AbsOp>(x);
  return p == 1.0f ? magnitude : f.apply<PowOp>(magnitude, f.constant(p));
}
FailureOr<Value> takeLpRoot(Formula &f, FailureOr<Value> sum, float p) {
  if (p == 2.0f)
    return f.apply<SqrtOp>(sum);
  return p == 1.0f ? sum : f.apply<PowOp>(sum, f.constant(1.0 / p));
}

/// Reduces the spatial axes of the pool input, keeping them as size 1.
template <typename OpTy>
FailureOr<Value> reduceSpatial(NodeImporter &node, FailureOr<Value> input) {
  if (failed(input))
    return failure();
  typename OpTy::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(llvm::to_vector(llvm::seq<int64_t>(
      2, cast<RankedTensorType>(input->getType()).getRank())));
  props.keep_dims = node.b.getUnitAttr();
  return createInferred<OpTy>(node, *input, props);
}

} // namespace

/// MaxPool, in f32; 8-bit and int16 inputs, exact in f32, pool there. The
/// Indices output is spelled out (OnnxPoolIndices.cpp).
LogicalResult kiln::importMaxPool(NodeImporter &node) {
  FailureOr<Value> operand = node.getOperand(0);
  if (failed(operand))
    return failure();
  auto type = cast<RankedTensorType>(operand->getType());
  Type element = type.getElementType();
  bool isUnsigned = node.isUnsignedOperand(0);
  bool widened = element.isInteger(8) || (element.isInteger(16) && !isUnsigned);
  Value pooledInput = *operand;
  if (widened) {
    auto widen = CastOp::create(node.b, node.loc,
                                type.clone(node.b.getF32Type()), *operand);
    if (isUnsigned)
      widen.setInputUnsigned(true);
    pooledInput = widen;
  }
  node.operands[0] = pooledInput;
  FailureOr<Value> input = getPoolInput(node);
  if (failed(input))
    return failure();
  FailureOr<Value> pooled = createPool(node, *input, PoolKind::Max, false);
  if (failed(pooled))
    return failure();
  Value result = *pooled;
  if (widened) {
    auto narrow = CastOp::create(
        node.b, node.loc,
        cast<RankedTensorType>(result.getType()).clone(element), result);
    if (isUnsigned)
      narrow.setResultUnsigned(true);
    result = narrow;
  }
  node.results.push_back(result);
  if (node.node.output_size() < 2 || node.node.output(1).empty())
    return success();
  std::optional<SmallVector<int64_t>> kernel = node.getIntsAttr("kernel_shape");
  FailureOr<WindowAttrs> window =
      getWindowAttrs(node, type.getShape().drop_front(2), *kernel);
  if (failed(window))
    return failure();
  return addResult(
      node, createMaxPoolIndices(node, *input, *pooled, *window, *kernel));
}

LogicalResult kiln::importAveragePool(NodeImporter &node) {
  FailureOr<Value> input = getPoolInput(node);
  if (failed(input))
    return failure();
  return addResult(node,
                   createPool(node, *input, PoolKind::Average,
                              node.getIntAttr("count_include_pad", 0) != 0));
}

/// (sum over the window of |x|^p)^(1/p).
LogicalResult kiln::importLpPool(NodeImporter &node) {
  FailureOr<Value> input = getPoolInput(node);
  if (failed(input))
    return failure();
  float p = getLpExponent(node);
  Formula f(node, *input);
  FailureOr<Value> powered = raiseToLp(f, *input, p);
  if (failed(powered))
    return failure();
  return f.result(
      takeLpRoot(f, createPool(node, *powered, PoolKind::Sum, false), p));
}

LogicalResult kiln::importGlobalAveragePool(NodeImporter &node) {
  FailureOr<Value> input = getPoolInput(node);
  return addResult(node, reduceSpatial<ReduceMeanOp>(node, input));
}

LogicalResult kiln::importGlobalMaxPool(NodeImporter &node) {
  FailureOr<Value> input = getPoolInput(node);
  return addResult(node, reduceSpatial<ReduceMaxOp>(node, input));
}

LogicalResult kiln::importGlobalLpPool(NodeImporter &node) {
  FailureOr<Value> input = getPoolInput(node);
  if (failed(input))
    return failure();
  float p = getLpExponent(node);
  Formula f(node, *input);
  return f.result(takeLpRoot(
      f, reduceSpatial<ReduceSumOp>(node, raiseToLp(f, *input, p)), p));
}

/// LRN: x / (bias + alpha / size * s)^beta, s the sum of squares over a
/// window of `size` channels around each (floor((size - 1) / 2) before,
/// the rest after), as the sum of `size` shifted slices of the squares
/// with zero channels around them.
LogicalResult kiln::importLRN(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireFloat(node, *x)))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t size = node.getIntAttr("size", 0);
  if (type.getRank() < 3 || !type.hasStaticShape() || size < 1)
    return node.emitError() << "LRN needs a static [N, C, ...] input and a "
                               "positive size";
  float alpha = node.getFloatAttr("alpha", 1e-4f);
  float beta = node.getFloatAttr("beta", 0.75f);
  float bias = node.getFloatAttr("bias", 1.0f);
  Formula f(node, *x);
  FailureOr<Value> squares = f.apply<MulOp>(*x, *x);
  if (failed(squares))
    return failure();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value padded = createAxisPad(node, *squares, 1, before, after, 0);
  FailureOr<Value> sum;
  for (int64_t o = 0; o < size; ++o) {
    Value window = createAxisSlice(node, padded, 1, o, o + type.getDimSize(1));
    sum = o == 0 ? FailureOr<Value>(window) : f.apply<AddOp>(sum, window);
  }
  FailureOr<Value> base = f.apply<AddOp>(
      f.constant(bias), f.apply<MulOp>(f.constant(alpha / size), sum));
  return f.result(f.apply<DivOp>(*x, f.apply<PowOp>(base, f.constant(beta))));
}
