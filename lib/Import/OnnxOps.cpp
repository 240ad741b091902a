//===- OnnxOps.cpp - importers of individual ONNX ops ---------------------===//
//
// One function per ONNX op (or family), mapping it onto kiln ops. Opset
// differences (attributes that became inputs, changed defaults) are handled
// here so the kiln dialect sees one spelling.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

template <typename OpTy> LogicalResult importBinary(NodeImporter &node) {
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
    auto cast = CastOp::create(node.b, node.loc, castType, right);
    if (node.isUnsignedOperand(1))
      cast.setInputUnsigned(true);
    right = cast;
  }
  if (failed(requireSameElementType(node, *lhs, right)))
    return failure();
  return addInferredResult<OpTy>(node, {*lhs, right});
}

template <typename OpTy, bool floatOnly>
LogicalResult importUnary(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input) || (floatOnly && failed(requireReal(node, *input))))
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
  return addInferredResult<MatMulOp>(node, {*lhs, *rhs});
}

/// Gemm: Y = alpha * op(A) * op(B) + beta * C, with op = optional transpose.
LogicalResult importGemm(NodeImporter &node) {
  FailureOr<Value> a = node.getOperand(0), b = node.getOperand(1);
  if (failed(a) || failed(b) || failed(requireSameElementType(node, *a, *b)))
    return failure();
  Type elementType = node.getOperandType(0).getElementType();
  if (node.getOperandType(0).getRank() != 2 ||
      node.getOperandType(1).getRank() != 2)
    return node.emitError() << "operands A and B must be matrices";
  Value lhs = *a, rhs = *b;
  if (node.getIntAttr("transA", 0))
    lhs = createTranspose(node, lhs, {1, 0});
  if (node.getIntAttr("transB", 0))
    rhs = createTranspose(node, rhs, {1, 0});
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

/// `OpTy` (a kiln reduction) of `input` over `axis`, kept as size 1.
template <typename OpTy>
FailureOr<Value> reduceKeepingAxis(NodeImporter &node, Value input,
                                   int64_t axis) {
  typename OpTy::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr({axis});
  props.keep_dims = node.b.getUnitAttr();
  return createInferred<OpTy>(node, input, props);
}

} // namespace

FailureOr<Value> kiln::createLogSoftmax(NodeImporter &node, Value x,
                                        int64_t axis) {
  FailureOr<Value> max = reduceKeepingAxis<ReduceMaxOp>(node, x, axis);
  if (failed(max))
    return failure();
  FailureOr<Value> shifted = createInferred<SubOp>(node, {x, *max});
  if (failed(shifted))
    return failure();
  FailureOr<Value> sum = reduceKeepingAxis<ReduceSumOp>(
      node, ExpOp::create(node.b, node.loc, *shifted), axis);
  if (failed(sum))
    return failure();
  return createInferred<SubOp>(
      node, {*shifted, LogOp::create(node.b, node.loc, *sum).getResult()});
}

namespace {

/// Softmax, or LogSoftmax with `logarithm`.
template <bool logarithm>
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
  SymbolicInts shape = node.graph.getShape(operand);
  // Before opset 13, Softmax works on the input flattened to 2-D at `axis`.
  if (flattened) {
    FailureOr<Value> flat = createReshape(
        node, operand, getFlattenedShape(node.b.getContext(), shape, *axis));
    if (failed(flat))
      return failure();
    operand = *flat;
    softmaxAxis = 1;
  }
  Value result;
  if (logarithm) {
    FailureOr<Value> log = createLogSoftmax(node, operand, softmaxAxis);
    if (failed(log))
      return failure();
    result = *log;
  } else {
    result = SoftmaxOp::create(node.b, node.loc, operand.getType(), operand,
                               node.b.getI64IntegerAttr(softmaxAxis));
  }
  if (flattened) {
    FailureOr<Value> reshaped = createReshape(node, result, shape);
    if (failed(reshaped))
      return failure();
    result = *reshaped;
  }
  node.results.push_back(result);
  return success();
}

/// Input 0 cast to the ONNX element type `to`.
LogicalResult importCastTo(NodeImporter &node, int64_t to) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  Type elementType = getElementType(node.b.getContext(), to);
  if (!elementType)
    return node.emitError() << "cast to " << getOnnxTypeName(to)
                            << " is not supported; Kiln supports "
                            << kSupportedTypes;
  auto type =
      RankedTensorType::get(node.getOperandType(0).getShape(), elementType);
  auto cast = CastOp::create(node.b, node.loc, type, *input);
  Type inputElement = node.getOperandType(0).getElementType();
  if (node.isUnsignedOperand(0) && isa<IntegerType>(inputElement) &&
      !inputElement.isInteger(1))
    cast.setInputUnsigned(true);
  if (to == onnx::TensorProto::UINT8 || to == onnx::TensorProto::UINT16 ||
      to == onnx::TensorProto::UINT32 || to == onnx::TensorProto::UINT64)
    cast.setResultUnsigned(true);
  node.graph.setValueType(node.node.output(0), to);
  node.results.push_back(cast);
  return success();
}

LogicalResult importCast(NodeImporter &node) {
  return importCastTo(node, node.getIntAttr("to", 0));
}

/// Cast to the element type of input 1: as the model declares it (which
/// tells uint8 from int8), else as kiln typed it.
LogicalResult importCastLike(NodeImporter &node) {
  if (failed(node.getOperand(1)))
    return failure();
  int32_t to = node.graph.getValueType(node.node.input(1));
  if (to == 0)
    to = getOnnxType(node.getOperandType(1).getElementType(),
                     node.isUnsignedOperand(1));
  return importCastTo(node, to);
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
  node.graph.setValueType(node.node.output(0), tensor.data_type());
  node.graph.bindOwnedConstant(node.node.output(0), std::move(tensor));
  return success();
}

LogicalResult importEqual(NodeImporter &node) {
  FailureOr<Value> lhs = node.getOperand(0), rhs = node.getOperand(1);
  if (failed(lhs) || failed(rhs) ||
      failed(requireSameElementType(node, *lhs, *rhs)))
    return failure();
  return addInferredResult<EqualOp>(node, {*lhs, *rhs});
}

LogicalResult importWhere(NodeImporter &node) {
  FailureOr<Value> condition = node.getOperand(0), x = node.getOperand(1),
                   y = node.getOperand(2);
  if (failed(condition) || failed(x) || failed(y) ||
      failed(requireSameElementType(node, *x, *y)))
    return failure();
  if (!node.getOperandType(0).getElementType().isInteger(1))
    return node.emitError() << "the condition must be a bool tensor";
  return addInferredResult<SelectOp>(node, {*condition, *x, *y});
}

} // namespace

OpImportFn kiln::lookupOpImporter(StringRef opType) {
  if (OpImportFn importer = lookupElementwiseOpImporter(opType))
    return importer;
  if (OpImportFn importer = lookupReduceOpImporter(opType))
    return importer;
  if (OpImportFn importer = lookupGeneratorOpImporter(opType))
    return importer;
  if (OpImportFn importer = lookupSequenceOpImporter(opType))
    return importer;
  if (OpImportFn importer = lookupIndexOpImporter(opType))
    return importer;
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
      .Case("Sin", importUnary<SinOp, true>)
      .Case("Cos", importUnary<CosOp, true>)
      .Case("Tan", importUnary<TanOp, true>)
      .Case("Asin", importUnary<AsinOp, true>)
      .Case("Acos", importUnary<AcosOp, true>)
      .Case("Atan", importUnary<AtanOp, true>)
      .Case("Sinh", importUnary<SinhOp, true>)
      .Case("Cosh", importUnary<CoshOp, true>)
      .Case("Asinh", importUnary<AsinhOp, true>)
      .Case("Acosh", importUnary<AcoshOp, true>)
      .Case("Atanh", importUnary<AtanhOp, true>)
      .Case("MatMul", importMatMul)
      .Case("Gemm", importGemm)
      .Case("Softmax", importSoftmax</*logarithm=*/false>)
      .Case("LogSoftmax", importSoftmax</*logarithm=*/true>)
      .Case("Reshape", importReshape)
      .Case("Flatten", importFlatten)
      .Case("Transpose", importTranspose)
      .Case("Unsqueeze", importUnsqueeze)
      .Case("Squeeze", importSqueeze)
      .Case("Concat", importConcat)
      .Case("Gather", importGather)
      .Case("GatherElements", importGatherElements)
      .Case("GatherND", importGatherND)
      .Case("ScatterElements", importScatterElements)
      .Case("Scatter", importScatterElements)
      .Case("ScatterND", importScatterND)
      .Case("Compress", importCompress)
      .Case("Dropout", importDropout)
      .Case("BatchNormalization", importBatchNormalization)
      .Case("NegativeLogLikelihoodLoss", importNegativeLogLikelihoodLoss)
      .Case("SoftmaxCrossEntropyLoss", importSoftmaxCrossEntropyLoss)
      .Case("Size", importSize)
      .Case("Tile", importTile)
      .Case("Pad", importPad)
      .Case("DepthToSpace", importDepthToSpace)
      .Case("SpaceToDepth", importSpaceToDepth)
      .Case("ReverseSequence", importReverseSequence)
      .Case("CastLike", importCastLike)
      .Case("Constant", importConstant)
      .Case("Identity", importIdentity)
      .Case("Cast", importCast)
      .Case("Equal", importEqual)
      .Case("Where", importWhere)
      .Case("Attention", importAttention)
      .Case("RotaryEmbedding", importRotaryEmbedding)
      .Case("Einsum", importEinsum)
      .Case("LayerNormalization", importLayerNormalization)
      .Case("RMSNormalization", importRMSNormalization)
      .Case("InstanceNormalization", importInstanceNormalization)
      .Case("GroupNormalization", importGroupNormalization)
      .Case("MeanVarianceNormalization", importMeanVarianceNormalization)
      .Case("LpNormalization", importLpNormalization)
      .Case("Resize", importResize)
      .Case("GridSample", importGridSample)
      .Case("AffineGrid", importAffineGrid)
      .Case("CenterCropPad", importCenterCropPad)
      .Case("DFT", importDFT)
      .Case("Det", importDet)
      .Case("TfIdfVectorizer", importTfIdfVectorizer)
      .Case("If", importIf)
      .Case("Loop", importLoop)
      .Case("Scan", importScan)
      .Case("STFT", importSTFT)
      .Case("Upsample", importUpsample)
      .Case("Conv", importConv)
      .Case("ConvTranspose", importConvTranspose)
      .Case("MaxPool", importMaxPool)
      .Case("MaxUnpool", importMaxUnpool)
      .Case("AveragePool", importAveragePool)
      .Case("LpPool", importLpPool)
      .Case("GlobalAveragePool", importGlobalAveragePool)
      .Case("GlobalMaxPool", importGlobalMaxPool)
      .Case("GlobalLpPool", importGlobalLpPool)
      .Case("LRN", importLRN)
      .Case("RNN", importRNN)
      .Case("GRU", importGRU)
      .Case("LSTM", importLSTM)
      .Case("Expand", importExpand)
      .Case("Slice", importSlice)
      .Case("Split", importSplit)
      .Case("Shape", importShape)
      .Case("ConstantOfShape", importConstantOfShape)
      .Case("QuantizeLinear", importQuantizeLinear)
      .Case("DequantizeLinear", importDequantizeLinear)
      .Case("DynamicQuantizeLinear", importDynamicQuantizeLinear)
      .Case("MatMulInteger", importMatMulInteger)
      .Case("QLinearMatMul", importQLinearMatMul)
      .Case("ConvInteger", importConvInteger)
      .Case("QLinearConv", importQLinearConv)
      .Default(nullptr);
}
