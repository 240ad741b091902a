//===- OnnxShapeOps.cpp - importers of ONNX data-movement ops -------------===//
//
// Ops that only move or reshape data. Their shape-deciding inputs (Reshape's
// shape, Squeeze/Unsqueeze axes) must be compile-time constants.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Traits.h"

#include <numeric>

using namespace mlir;
using namespace kiln;

LogicalResult kiln::importTranspose(NodeImporter &node) {
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
  return addInferredResult<TransposeOp>(node, *input, props);
}

LogicalResult kiln::importConcat(NodeImporter &node) {
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
  return addInferredResult<ConcatOp>(node, inputs, props);
}

LogicalResult kiln::importGather(NodeImporter &node) {
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
  return addInferredResult<GatherOp>(node, {*data, *indices}, props);
}

/// Computes Reshape's output shape: 0 copies the input dimension (unless
/// allowzero) and one -1 takes the remaining elements.
LogicalResult kiln::importReshape(NodeImporter &node) {
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
        return node.emitError()
               << "shape entry " << i << " is 0 but the input has rank "
               << type.getRank();
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
    return node.emitError()
           << "cannot reshape " << type << " (" << type.getNumElements()
           << " elements) into " << known << " elements";
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult kiln::importFlatten(NodeImporter &node) {
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
  node.results.push_back(
      createReshape(node, *input, getFlattenedShape(type.getShape(), axis)));
  return success();
}

LogicalResult kiln::importUnsqueeze(NodeImporter &node) {
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
  FailureOr<SmallVector<int64_t>> inserted =
      normalizeAxes(node, **axesOrNone, outRank);
  if (failed(inserted))
    return failure();
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(*inserted, d) ? 1 : inShape[next++]);
  node.results.push_back(createReshape(node, *input, shape));
  return success();
}

LogicalResult kiln::importSqueeze(NodeImporter &node) {
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
    FailureOr<SmallVector<int64_t>> axes =
        normalizeAxes(node, **axesOrNone, rank);
    if (failed(axes))
      return failure();
    for (int64_t axis : *axes) {
      if (inShape[axis] != 1)
        return node.emitError() << "cannot squeeze axis " << axis << " of size "
                                << inShape[axis];
      removed[axis] = true;
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

LogicalResult kiln::importExpand(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> targetOrNone =
      node.getIntsFromAttrOrInput("shape", 1);
  if (failed(targetOrNone))
    return failure();
  if (!*targetOrNone)
    return node.emitError() << "missing the target shape";
  const SmallVector<int64_t> *target = &**targetOrNone;
  RankedTensorType type = node.getOperandType(0);
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(type.getShape(), *target, shape))
    return node.emitError() << "cannot expand " << type << " to shape ["
                            << ArrayRef<int64_t>(*target) << "]";
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  node.results.push_back(
      resultType == type
          ? *input
          : BroadcastOp::create(node.b, node.loc, resultType, *input)
                .getResult());
  return success();
}

/// Slice with positive steps; starts and ends clamp into range as ONNX
/// specifies, so every slice the importer builds is in bounds.
LogicalResult kiln::importSlice(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  // Stop at the first input that isn't a constant: one error per node.
  SmallVector<std::optional<SmallVector<int64_t>>> params;
  for (auto [index, name] : llvm::enumerate(
           ArrayRef<StringRef>{"starts", "ends", "axes", "steps"})) {
    FailureOr<std::optional<SmallVector<int64_t>>> values =
        node.getIntsFromAttrOrInput(name, index + 1);
    if (failed(values))
      return failure();
    params.push_back(std::move(*values));
  }
  std::optional<SmallVector<int64_t>> &starts = params[0], &ends = params[1],
                                      &axesOrNone = params[2],
                                      &steps = params[3];
  if (!starts || !ends || starts->size() != ends->size())
    return node.emitError() << "starts and ends must be given, of one length";
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (axesOrNone)
    axes = *axesOrNone;
  else
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  if (axes.size() != starts->size() || (steps && steps->size() != axes.size()))
    return node.emitError() << "starts, ends, axes and steps differ in length";
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();

  SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
      strides(rank, 1);
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    int64_t dim = type.getDimSize(axis);
    int64_t step = steps ? (*steps)[i] : 1;
    if (step <= 0)
      return node.emitError() << "step " << step
                              << " is not supported; Kiln slices with "
                                 "positive steps";
    auto clamp = [&](int64_t index) {
      if (index < 0)
        index = index < -dim ? 0 : index + dim;
      return std::min(index, dim);
    };
    int64_t start = clamp((*starts)[i]), end = clamp((*ends)[i]);
    int64_t size = end > start ? (end - start + step - 1) / step : 0;
    offsets[axis] = size > 0 ? start : 0;
    sizes[axis] = size;
    strides[axis] = step;
  }
  SliceOp::Properties props;
  props.offsets = node.b.getDenseI64ArrayAttr(offsets);
  props.sizes = node.b.getDenseI64ArrayAttr(sizes);
  props.strides = node.b.getDenseI64ArrayAttr(strides);
  return addInferredResult<SliceOp>(node, *input, props);
}

/// Split into consecutive slices along `axis`.
LogicalResult kiln::importSplit(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  FailureOr<int64_t> axis =
      node.normalizeAxis(node.getIntAttr("axis", 0), type.getRank());
  FailureOr<std::optional<SmallVector<int64_t>>> splitOrNone =
      node.getIntsFromAttrOrInput("split", 1);
  if (failed(axis) || failed(splitOrNone))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  int64_t parts = node.node.output_size();
  SmallVector<int64_t> split;
  if (*splitOrNone) {
    split = **splitOrNone;
  } else {
    if (dim % parts != 0)
      return node.emitError() << "cannot split " << dim << " elements into "
                              << parts << " equal parts";
    split.assign(parts, dim / parts);
  }
  if (static_cast<int64_t>(split.size()) != parts ||
      llvm::any_of(split, [](int64_t s) { return s < 0; }) ||
      std::accumulate(split.begin(), split.end(), int64_t(0)) != dim)
    return node.emitError()
           << "split sizes [" << ArrayRef<int64_t>(split)
           << "] do not add up to dimension " << *axis << " of size " << dim;
  int64_t offset = 0;
  for (int64_t size : split) {
    SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
        strides(type.getRank(), 1);
    offsets[*axis] = size > 0 ? offset : 0;
    sizes[*axis] = size;
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr(offsets);
    props.sizes = node.b.getDenseI64ArrayAttr(sizes);
    props.strides = node.b.getDenseI64ArrayAttr(strides);
    if (failed(addInferredResult<SliceOp>(node, *input, props)))
      return failure();
    offset += size;
  }
  return success();
}

/// Shape of a statically shaped tensor: a compile-time constant.
LogicalResult kiln::importShape(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> shape = node.getOperandType(0).getShape();
  int64_t rank = shape.size();
  auto clamp = [&](int64_t index) {
    if (index < 0)
      index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clamp(node.getIntAttr("start", 0));
  int64_t end = clamp(node.getIntAttr("end", rank));
  onnx::TensorProto tensor;
  tensor.set_name(node.node.output(0));
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(std::max<int64_t>(end - start, 0));
  for (int64_t d = start; d < end; ++d)
    tensor.add_int64_data(shape[d]);
  node.graph.bindOwnedConstant(node.node.output(0), std::move(tensor));
  return success();
}

/// A splat constant of the given (constant) shape.
LogicalResult kiln::importConstantOfShape(NodeImporter &node) {
  FailureOr<std::optional<SmallVector<int64_t>>> shapeOrNone =
      node.getIntsFromAttrOrInput("shape", 0);
  if (failed(shapeOrNone))
    return failure();
  if (!*shapeOrNone)
    return node.emitError() << "missing the shape";
  const SmallVector<int64_t> *shape = &**shapeOrNone;
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return node.emitError() << "the shape has a negative dimension";
  onnx::TensorProto value;
  if (const onnx::AttributeProto *attr = node.getAttr("value")) {
    value = attr->t();
  } else {
    value.set_data_type(onnx::TensorProto::FLOAT);
    value.add_float_data(0.0f);
  }
  DenseElementsAttr element =
      convertTensorProto(value, node.b.getContext(), node.loc);
  if (!element)
    return failure();
  if (element.getNumElements() != 1)
    return node.emitError() << "value must hold one element";
  auto type = RankedTensorType::get(*shape, element.getElementType());
  node.results.push_back(ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(type, element.getValues<Attribute>()[0])));
  return success();
}
