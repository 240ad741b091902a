//===- OnnxOps.cpp - importers of individual ONNX ops ---------------------===//
//
// One function per ONNX op (or family), mapping it onto kiln ops. Opset
// differences (attributes that became inputs, changed defaults) are handled
// here so the kiln dialect sees one spelling.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/GraphImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

/// Creates `OpTy` with its result type inferred; a shape error becomes a
/// diagnostic at the node instead of a failed assertion in the builder.
template <typename OpTy>
FailureOr<Value> createInferred(NodeImporter &node, ValueRange operands,
                                typename OpTy::Properties props = {}) {
  SmallVector<Type> types;
  typename OpTy::Adaptor adaptor(operands, nullptr, props);
  if (failed(OpTy::inferReturnTypes(node.b.getContext(), node.loc, adaptor,
                                    types)))
    return failure();
  OperationState state(node.loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addTypes(types);
  state.useProperties(props);
  return node.b.create(state)->getResult(0);
}

Value createReshape(NodeImporter &node, Value input, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(input.getType()).getElementType());
  if (type == input.getType())
    return input;
  return ReshapeOp::create(node.b, node.loc, type, input);
}

Value createScalar(NodeImporter &node, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr = isa<FloatType>(elementType)
                       ? Attribute(node.b.getFloatAttr(elementType, value))
                       : Attribute(node.b.getIntegerAttr(
                             elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(node.b, node.loc, DenseElementsAttr::get(type, attr));
}

LogicalResult requireFloat(NodeImporter &node, Value value) {
  if (cast<RankedTensorType>(value.getType()).getElementType().isF32())
    return success();
  return node.emitError() << "input of type "
                          << cast<RankedTensorType>(value.getType())
                                 .getElementType()
                          << " is not supported; Kiln computes it in f32 only";
}

LogicalResult requireSameElementType(NodeImporter &node, Value lhs, Value rhs) {
  Type l = cast<RankedTensorType>(lhs.getType()).getElementType();
  Type r = cast<RankedTensorType>(rhs.getType()).getElementType();
  if (l == r)
    return success();
  return node.emitError() << "inputs have different element types " << l
                          << " and " << r;
}

template <typename OpTy>
LogicalResult importBinary(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  Value right = *rhs;
  Type lhsElement = cast<RankedTensorType>(lhs->getType()).getElementType();
  // Pow alone allows an exponent of another type; compute in the base's type.
  if (std::is_same_v<OpTy, PowOp> &&
      cast<RankedTensorType>(right.getType()).getElementType() != lhsElement) {
    auto castType = RankedTensorType::get(
        cast<RankedTensorType>(right.getType()).getShape(), lhsElement);
    right = CastOp::create(node.b, node.loc, castType, right);
  }
  if (failed(requireSameElementType(node, *lhs, right)))
    return failure();
  FailureOr<Value> result = createInferred<OpTy>(node, {*lhs, right});
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

template <typename OpTy, bool floatOnly>
LogicalResult importUnary(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || (floatOnly && failed(requireFloat(node, *input))))
    return failure();
  node.results.push_back(OpTy::create(node.b, node.loc, *input));
  return success();
}

LogicalResult importIdentity(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  node.results.push_back(*input);
  return success();
}

LogicalResult importMatMul(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs) ||
      failed(requireSameElementType(node, *lhs, *rhs)))
    return failure();
  FailureOr<Value> result = createInferred<MatMulOp>(node, {*lhs, *rhs});
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// Gemm: Y = alpha * op(A) * op(B) + beta * C, with op = optional transpose.
LogicalResult importGemm(NodeImporter &node) {
  FailureOr<Value> a = node.getOperand(0), b = node.getOperand(1);
  if (failed(a) || failed(b) || failed(requireSameElementType(node, *a, *b)))
    return failure();
  Type elementType = node.getOperandType(0).getElementType();
  auto transpose = [&](Value v) -> FailureOr<Value> {
    if (cast<RankedTensorType>(v.getType()).getRank() != 2)
      return node.emitError() << "operands A and B must be matrices";
    TransposeOp::Properties props;
    props.perm = node.b.getDenseI64ArrayAttr({1, 0});
    return createInferred<TransposeOp>(node, v, props);
  };
  Value lhs = *a, rhs = *b;
  if (node.getIntAttr("transA", 0)) {
    FailureOr<Value> t = transpose(lhs);
    if (failed(t))
      return failure();
    lhs = *t;
  }
  if (node.getIntAttr("transB", 0)) {
    FailureOr<Value> t = transpose(rhs);
    if (failed(t))
      return failure();
    rhs = *t;
  }
  if (node.getOperandType(0).getRank() != 2 || node.getOperandType(1).getRank() != 2)
    return node.emitError() << "operands A and B must be matrices";
  FailureOr<Value> product = createInferred<MatMulOp>(node, {lhs, rhs});
  if (failed(product))
    return failure();
  Value result = *product;
  float alpha = node.getFloatAttr("alpha", 1.0f);
  float beta = node.getFloatAttr("beta", 1.0f);
  if (alpha != 1.0f)
    result = MulOp::create(node.b, node.loc, result,
                           createScalar(node, elementType, alpha));
  if (node.operands.size() > 2 && node.operands[2] && beta != 0.0f) {
    Value c = node.operands[2];
    if (failed(requireSameElementType(node, result, c)))
      return failure();
    if (beta != 1.0f)
      c = MulOp::create(node.b, node.loc, c,
                        createScalar(node, elementType, beta));
    FailureOr<Value> sum = createInferred<AddOp>(node, {result, c});
    if (failed(sum))
      return failure();
    if (sum->getType() != result.getType())
      return node.emitError() << "C does not broadcast to the product's shape";
    result = *sum;
  }
  node.results.push_back(result);
  return success();
}

LogicalResult importSoftmax(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || failed(requireFloat(node, *input)))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  if (rank == 0)
    return node.emitError() << "input must have rank >= 1";
  bool flattened = node.getOpset() < 13;
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", flattened ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  Value operand = *input;
  int64_t softmaxAxis = *axis;
  // Before opset 13, Softmax works on the input flattened to 2-D at `axis`.
  if (flattened) {
    ArrayRef<int64_t> shape = type.getShape();
    int64_t outer = std::accumulate(shape.begin(), shape.begin() + *axis,
                                    int64_t(1), std::multiplies<int64_t>());
    int64_t inner = std::accumulate(shape.begin() + *axis, shape.end(),
                                    int64_t(1), std::multiplies<int64_t>());
    operand = createReshape(node, operand, {outer, inner});
    softmaxAxis = 1;
  }
  Value result = SoftmaxOp::create(node.b, node.loc, operand.getType(), operand,
                                   node.b.getI64IntegerAttr(softmaxAxis));
  node.results.push_back(createReshape(node, result, type.getShape()));
  return success();
}

template <typename OpTy>
LogicalResult importReduce(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  SmallVector<int64_t> axes;
  if (*axesOrNone && !(*axesOrNone)->empty()) {
    for (int64_t axis : **axesOrNone) {
      FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      axes.push_back(*normalized);
    }
    llvm::sort(axes);
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      return node.emitError() << "axes contain a repeated axis";
  } else if (node.getIntAttr("noop_with_empty_axes", 0)) {
    node.results.push_back(*input);
    return success();
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  typename OpTy::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(axes);
  if (node.getIntAttr("keepdims", 1))
    props.keep_dims = node.b.getUnitAttr();
  FailureOr<Value> result = createInferred<OpTy>(node, *input, props);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

LogicalResult importTranspose(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  int64_t rank = node.getOperandType(0).getRank();
  SmallVector<int64_t> perm;
  if (std::optional<SmallVector<int64_t>> attr = node.getIntsAttr("perm"))
    perm = *attr;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  TransposeOp::Properties props;
  props.perm = node.b.getDenseI64ArrayAttr(perm);
  FailureOr<Value> result = createInferred<TransposeOp>(node, *input, props);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

LogicalResult importConcat(NodeImporter &node) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.operands.size(); ++i) {
    FailureOr<Value> input = node.getOperand(i);
    if (failed(input))
      return failure();
    if (i > 0 && failed(requireSameElementType(node, inputs[0], *input)))
      return failure();
    inputs.push_back(*input);
  }
  if (inputs.empty())
    return node.emitError() << "needs at least one input";
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  FailureOr<Value> result = createInferred<ConcatOp>(node, inputs, props);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

LogicalResult importGather(NodeImporter &node) {
  FailureOr<Value> data = node.getOperand(0), indices = node.getOperand(1);
  if (failed(data) || failed(indices))
    return failure();
  if (!node.getOperandType(1).getElementType().isInteger(64))
    return node.emitError() << "indices must be int64";
  FailureOr<int64_t> axis = node.normalizeAxis(
      node.getIntAttr("axis", 0), node.getOperandType(0).getRank());
  if (failed(axis))
    return failure();
  GatherOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*axis);
  FailureOr<Value> result = createInferred<GatherOp>(node, {*data, *indices}, props);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

LogicalResult importCast(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  int64_t to = node.getIntAttr("to", 0);
  Type elementType = getElementType(node.b.getContext(), to);
  if (!elementType)
    return node.emitError() << "cast to " << getOnnxTypeName(to)
                            << " is not supported; Kiln supports FLOAT and INT64";
  auto type = RankedTensorType::get(node.getOperandType(0).getShape(), elementType);
  node.results.push_back(CastOp::create(node.b, node.loc, type, *input));
  return success();
}

LogicalResult importConstant(NodeImporter &node) {
  onnx::TensorProto tensor;
  if (const onnx::AttributeProto *value = node.getAttr("value")) {
    tensor = value->t();
  } else if (const onnx::AttributeProto *f = node.getAttr("value_float")) {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(f->f());
  } else if (const onnx::AttributeProto *fs = node.getAttr("value_floats")) {
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(fs->floats_size());
    *tensor.mutable_float_data() = fs->floats();
  } else if (const onnx::AttributeProto *i = node.getAttr("value_int")) {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(i->i());
  } else if (const onnx::AttributeProto *is = node.getAttr("value_ints")) {
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(is->ints_size());
    *tensor.mutable_int64_data() = is->ints();
  } else {
    return node.emitError() << "only dense tensor, float and int values are "
                               "supported";
  }
  tensor.set_name(node.node.output(0));
  node.graph.bindOwnedConstant(node.node.output(0), std::move(tensor));
  return success();
}

/// Computes Reshape's output shape: 0 copies the input dimension (unless
/// allowzero) and one -1 takes the remaining elements.
LogicalResult importReshape(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> shapeOrNone =
      node.getOpset() < 5 ? FailureOr<std::optional<SmallVector<int64_t>>>(
                                node.getIntsAttr("shape"))
                          : node.getIntsFromAttrOrInput("shape", 1);
  if (failed(shapeOrNone))
    return failure();
  if (!*shapeOrNone)
    return node.emitError() << "missing the target shape";
  RankedTensorType type = node.getOperandType(0);
  SmallVector<int64_t> shape = **shapeOrNone;
  bool allowZero = node.getIntAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (dim == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return node.emitError() << "shape entry " << i
                                << " is 0 but the input has rank " << type.getRank();
      dim = type.getDimSize(i);
    }
    if (dim == -1) {
      if (inferred != -1)
        return node.emitError() << "shape has more than one -1";
      inferred = i;
      continue;
    }
    if (dim < 0)
      return node.emitError() << "shape entry " << i << " is " << dim;
    known *= dim;
  }
  if (inferred != -1) {
    if (known == 0 || type.getNumElements() % known != 0)
      return node.emitError() << "cannot infer the -1 dimension of the shape";
    shape[inferred] = type.getNumElements() / known;
    known *= shape[inferred];
  }
  if (known != type.getNumElements())
    return node.emitError() << "cannot reshape " << type << " ("
                            << type.getNumElements() << " elements) into "
                            << known << " elements";
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult importFlatten(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  int64_t axis = node.getIntAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return node.emitError() << "axis " << axis << " is out of range";
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> shape = type.getShape();
  int64_t outer = std::accumulate(shape.begin(), shape.begin() + axis,
                                  int64_t(1), std::multiplies<int64_t>());
  int64_t inner = std::accumulate(shape.begin() + axis, shape.end(), int64_t(1),
                                  std::multiplies<int64_t>());
  node.results.push_back(createReshape(node, *input, {outer, inner}));
  return success();
}

LogicalResult importUnsqueeze(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  if (!*axesOrNone)
    return node.emitError() << "missing axes";
  ArrayRef<int64_t> inShape = node.getOperandType(0).getShape();
  int64_t outRank = inShape.size() + (*axesOrNone)->size();
  SmallVector<bool> inserted(outRank, false);
  for (int64_t axis : **axesOrNone) {
    FailureOr<int64_t> normalized = node.normalizeAxis(axis, outRank);
    if (failed(normalized))
      return failure();
    if (inserted[*normalized])
      return node.emitError() << "axes contain a repeated axis";
    inserted[*normalized] = true;
  }
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(inserted[d] ? 1 : inShape[next++]);
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult importSqueeze(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 1);
  if (failed(axesOrNone))
    return failure();
  ArrayRef<int64_t> inShape = node.getOperandType(0).getShape();
  int64_t rank = inShape.size();
  SmallVector<bool> removed(rank, false);
  if (*axesOrNone) {
    for (int64_t axis : **axesOrNone) {
      FailureOr<int64_t> normalized = node.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      if (inShape[*normalized] != 1)
        return node.emitError() << "cannot squeeze axis " << axis << " of size "
                                << inShape[*normalized];
      removed[*normalized] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = inShape[d] == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      shape.push_back(inShape[d]);
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

} // namespace

OpImportFn kiln::lookupOpImporter(StringRef opType) {
  return llvm::StringSwitch<OpImportFn>(opType)
      .Case("Add", importBinary<AddOp>)
      .Case("Sub", importBinary<SubOp>)
      .Case("Mul", importBinary<MulOp>)
      .Case("Div", importBinary<DivOp>)
      .Case("Pow", importBinary<PowOp>)
      .Case("Neg", importUnary<NegOp, false>)
      .Case("Abs", importUnary<AbsOp, false>)
      .Case("Relu", importUnary<ReluOp, false>)
      .Case("Exp", importUnary<ExpOp, true>)
      .Case("Log", importUnary<LogOp, true>)
      .Case("Sqrt", importUnary<SqrtOp, true>)
      .Case("Sigmoid", importUnary<SigmoidOp, true>)
      .Case("Tanh", importUnary<TanhOp, true>)
      .Case("Erf", importUnary<ErfOp, true>)
      .Case("MatMul", importMatMul)
      .Case("Gemm", importGemm)
      .Case("Softmax", importSoftmax)
      .Case("ReduceMean", importReduce<ReduceMeanOp>)
      .Case("ReduceSum", importReduce<ReduceSumOp>)
      .Case("Reshape", importReshape)
      .Case("Flatten", importFlatten)
      .Case("Transpose", importTranspose)
      .Case("Unsqueeze", importUnsqueeze)
      .Case("Squeeze", importSqueeze)
      .Case("Concat", importConcat)
      .Case("Gather", importGather)
      .Case("Constant", importConstant)
      .Case("Identity", importIdentity)
      .Case("Cast", importCast)
      .Default(nullptr);
}
