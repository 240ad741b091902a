//===- OnnxShapeOps.cpp - importers of ONNX data-movement ops -------------===//
//
// Ops that only move or reshape data. Their shape-deciding inputs (Reshape's
// shape, Squeeze/Unsqueeze axes) must be compile-time constants.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Traits.h"

#include <limits>
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

/// Computes Reshape's output shape: 0 copies the input dimension (unless
/// allowzero) and one -1 takes the remaining elements. Entries may depend
/// on the named dimensions (the target shape computed from Shape ops).
LogicalResult kiln::importReshape(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  MLIRContext *context = node.b.getContext();
  FailureOr<std::optional<SymbolicInts>> shapeOrNone =
      node.getOpset() < 5
          ? FailureOr<std::optional<SymbolicInts>>(
                node.getIntsAttr("shape")
                    ? std::optional<SymbolicInts>(kiln::getConstantInts(
                          context, *node.getIntsAttr("shape")))
                    : std::nullopt)
          : node.getSymbolicIntsFromAttrOrInput("shape", 1);
  if (failed(shapeOrNone))
    return failure();
  if (!*shapeOrNone)
    return node.emitError() << "missing the target shape";
  SymbolicInts inShape = node.graph.getShape(*input);
  SymbolicInts shape = **shapeOrNone;
  bool allowZero = node.getIntAttr("allowzero", 0) != 0;
  AffineExpr known = getAffineConstantExpr(1, context);
  int64_t inferred = -1;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    auto constant = dyn_cast<AffineConstantExpr>(dim);
    if (constant && constant.getValue() == 0 && !allowZero) {
      if (i >= inShape.size())
        return node.emitError() << "shape entry " << i
                                << " is 0 but the input has rank "
                                << inShape.size();
      dim = inShape[i];
    } else if (constant && constant.getValue() == -1) {
      if (inferred != -1)
        return node.emitError() << "shape has more than one -1";
      inferred = i;
      continue;
    } else if (constant && constant.getValue() < 0) {
      return node.emitError() << "shape entry " << i << " is "
                              << constant.getValue();
    }
    known = known * dim;
  }
  AffineExpr total = simplify(getProduct(context, inShape));
  auto fixedKnown = dyn_cast<AffineConstantExpr>(simplify(known));
  // The run-time sizes must then give a whole number of rows of the known
  // sizes, or exactly the fixed element count: the runtime checks that.
  std::string where = node.describe();
  if (inferred != -1) {
    std::optional<AffineExpr> rest = divideExactly(total, known);
    bool divides = rest.has_value();
    if (!rest && fixedKnown && fixedKnown.getValue() > 0 &&
        !isa<AffineConstantExpr>(total))
      rest = simplify(total.floorDiv(fixedKnown.getValue()));
    if (!rest || (fixedKnown && fixedKnown.getValue() == 0))
      return node.emitError() << "cannot infer the -1 dimension of the shape";
    if (!divides)
      node.graph.require(simplify(total % fixedKnown.getValue()), 0, where);
    shape[inferred] = *rest;
    known = divides ? known * *rest : total;
  }
  if (simplify(known) != total) {
    if (isa<AffineConstantExpr>(total))
      return node.emitError()
             << "cannot reshape " << input->getType() << " ("
             << node.graph.describe(total) << " elements) into "
             << node.graph.describe(known) << " elements";
    fixedKnown = dyn_cast<AffineConstantExpr>(simplify(known));
    if (fixedKnown)
      node.graph.require(total, fixedKnown.getValue(), where);
    else
      node.graph.require(simplify(total - known), 0, where);
  }
  FailureOr<Value> result = createReshape(node, *input, shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

LogicalResult kiln::importFlatten(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  SymbolicInts shape = node.graph.getShape(*input);
  int64_t rank = shape.size();
  int64_t axis = node.getIntAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return node.emitError() << "axis " << axis << " is out of range";
  if (axis < 0)
    axis += rank;
  FailureOr<Value> result = createReshape(
      node, *input, getFlattenedShape(node.b.getContext(), shape, axis));
  if (failed(result))
    return failure();
  node.results.push_back(*result);
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
  SymbolicInts inShape = node.graph.getShape(*input);
  int64_t outRank = inShape.size() + (*axesOrNone)->size();
  FailureOr<SmallVector<int64_t>> inserted =
      normalizeAxes(node, **axesOrNone, outRank);
  if (failed(inserted))
    return failure();
  SymbolicInts shape;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(*inserted, d)
                        ? getAffineConstantExpr(1, node.b.getContext())
                        : inShape[next++]);
  FailureOr<Value> result = createReshape(node, *input, shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
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
  SymbolicInts inShape = node.graph.getShape(*input);
  SmallVector<int64_t> sizes = getStaticSizes(inShape);
  int64_t rank = inShape.size();
  SmallVector<bool> removed(rank, false);
  if (*axesOrNone) {
    FailureOr<SmallVector<int64_t>> axes =
        normalizeAxes(node, **axesOrNone, rank);
    if (failed(axes))
      return failure();
    for (int64_t axis : *axes) {
      if (sizes[axis] != 1)
        return node.emitError() << "cannot squeeze axis " << axis
                                << " of size "
                                << node.graph.describe(inShape[axis]);
      removed[axis] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      removed[d] = sizes[d] == 1;
  }
  SymbolicInts shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!removed[d])
      shape.push_back(inShape[d]);
  FailureOr<Value> result = createReshape(node, *input, shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

FailureOr<Value> kiln::createBroadcast(NodeImporter &node, Value input,
                                       ArrayRef<AffineExpr> shape) {
  auto type = RankedTensorType::get(
      getStaticSizes(shape),
      cast<RankedTensorType>(input.getType()).getElementType());
  if (type == input.getType() &&
      ArrayRef<AffineExpr>(node.graph.getShape(input)) == shape)
    return input;
  FailureOr<SmallVector<Value>> dims =
      node.graph.materializeDynamicSizes(shape, node.loc);
  if (failed(dims))
    return failure();
  Value result = BroadcastOp::create(node.b, node.loc, type, input, *dims);
  if (!type.hasStaticShape())
    node.graph.setShape(result, SymbolicInts(shape));
  return result;
}

LogicalResult kiln::importExpand(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  FailureOr<std::optional<SymbolicInts>> targetOrNone =
      node.getSymbolicIntsFromAttrOrInput("shape", 1);
  if (failed(targetOrNone))
    return failure();
  if (!*targetOrNone)
    return node.emitError() << "missing the target shape";
  FailureOr<SymbolicInts> shape =
      broadcastShapes(node.graph.getShape(*input), **targetOrNone);
  if (failed(shape))
    return node.emitError() << "cannot expand " << input->getType()
                            << " to the target shape";
  FailureOr<Value> result = createBroadcast(node, *input, *shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

/// A Slice start or end as ONNX reads it: from the end when negative, then
/// clamped to [0, dim].
static int64_t clampSliceIndex(int64_t index, int64_t dim) {
  if (index < 0)
    index = index < -dim ? 0 : index + dim;
  return std::min(index, dim);
}

/// Slice whose starts or ends are computed from named dimensions: a static
/// kiln.slice for the constant axes, then a kiln.dynamic_slice for the
/// others. Each run-time start and end must lie within its dimension for
/// every size the named dimensions may take, so ONNX's clamping never
/// applies.
static LogicalResult importDynamicSlice(NodeImporter &node, Value input,
                                        ArrayRef<AffineExpr> starts,
                                        ArrayRef<AffineExpr> ends,
                                        ArrayRef<int64_t> axes,
                                        ArrayRef<int64_t> steps) {
  RankedTensorType type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (const DimSymbol &symbol : node.graph.getSymbols())
    ranges.push_back({symbol.min, symbol.max});
  SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
      strides(rank, 1);
  SmallVector<int64_t> dynamicAxes;
  SmallVector<AffineExpr> dynamicOffsets, dynamicSizes;
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (!steps.empty() && steps[i] != 1)
      return node.emitError() << "a step other than 1 is not supported where "
                                 "starts or ends depend on named dimensions";
    int64_t dim = type.getDimSize(axis);
    if (ShapedType::isDynamic(dim))
      return node.emitError() << "slicing dimension " << axis << " of "
                              << type << " is not supported: it is dynamic";
    auto start = dyn_cast<AffineConstantExpr>(starts[i]);
    auto end = dyn_cast<AffineConstantExpr>(ends[i]);
    if (start && end) {
      int64_t first = clampSliceIndex(start.getValue(), dim),
              last = clampSliceIndex(end.getValue(), dim);
      sizes[axis] = std::max<int64_t>(last - first, 0);
      offsets[axis] = sizes[axis] > 0 ? first : 0;
      continue;
    }
    auto normalize = [&](AffineExpr expr) {
      if (auto constant = dyn_cast<AffineConstantExpr>(expr);
          constant && constant.getValue() < 0)
        return getAffineConstantExpr(
            std::max<int64_t>(constant.getValue() + dim, 0), node.b.getContext());
      if (auto constant = dyn_cast<AffineConstantExpr>(expr);
          constant && constant.getValue() > dim)
        return getAffineConstantExpr(dim, node.b.getContext());
      return expr;
    };
    AffineExpr first = normalize(starts[i]), last = normalize(ends[i]);
    AffineExpr size = simplify(last - first);
    for (auto [what, expr, low] :
         {std::tuple{"start", first, int64_t(0)},
          std::tuple{"end", last, int64_t(0)},
          std::tuple{"length", size, int64_t(0)}}) {
      std::optional<std::pair<int64_t, int64_t>> bounds =
          getBounds(expr, ranges);
      if (!bounds || bounds->first < low || bounds->second > dim)
        return node.emitError()
               << "the " << what << " " << node.graph.describe(expr)
               << " along axis " << axis << " may leave [0, " << dim
               << "] for the sizes the named dimensions allow; narrow their "
                  "ranges with --dim";
    }
    dynamicAxes.push_back(axis);
    dynamicOffsets.push_back(first);
    dynamicSizes.push_back(size);
  }
  SymbolicInts shape = node.graph.getShape(input);
  Value result = input;
  if (llvm::any_of(llvm::enumerate(sizes), [&](auto size) {
        return size.value() != type.getDimSize(size.index());
      })) {
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr(offsets);
    props.sizes = node.b.getDenseI64ArrayAttr(sizes);
    props.strides = node.b.getDenseI64ArrayAttr(strides);
    result = SliceOp::create(node.b, node.loc, result, props);
    for (int64_t d = 0; d < rank; ++d)
      if (!ShapedType::isDynamic(sizes[d]))
        shape[d] = getAffineConstantExpr(sizes[d], node.b.getContext());
    node.graph.setShape(result, shape);
  }
  SmallVector<Value> offsetValues, sizeValues;
  for (auto [axis, offset, size] :
       llvm::zip(dynamicAxes, dynamicOffsets, dynamicSizes)) {
    FailureOr<Value> offsetValue = node.graph.materialize(offset, node.loc);
    FailureOr<Value> sizeValue = node.graph.materialize(size, node.loc);
    if (failed(offsetValue) || failed(sizeValue))
      return failure();
    offsetValues.push_back(*offsetValue);
    sizeValues.push_back(*sizeValue);
    shape[axis] = size;
  }
  auto resultType = RankedTensorType::get(getStaticSizes(shape),
                                          type.getElementType());
  for (int64_t axis : dynamicAxes)
    if (!resultType.isDynamicDim(axis))
      return node.emitError() << "internal: a sliced size became static";
  result = DynamicSliceOp::create(node.b, node.loc, resultType, result,
                                  node.b.getDenseI64ArrayAttr(dynamicAxes),
                                  offsetValues, sizeValues);
  node.graph.setShape(result, shape);
  node.results.push_back(result);
  return success();
}

LogicalResult kiln::importSlice(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  // Stop at the first input that isn't usable: one error per node.
  FailureOr<std::optional<SymbolicInts>> symbolicStarts =
      node.getSymbolicIntsFromAttrOrInput("starts", 1);
  if (failed(symbolicStarts))
    return failure();
  FailureOr<std::optional<SymbolicInts>> symbolicEnds =
      node.getSymbolicIntsFromAttrOrInput("ends", 2);
  if (failed(symbolicEnds))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> axesOrNone =
      node.getIntsFromAttrOrInput("axes", 3);
  if (failed(axesOrNone))
    return failure();
  FailureOr<std::optional<SmallVector<int64_t>>> steps =
      node.getIntsFromAttrOrInput("steps", 4);
  if (failed(steps))
    return failure();
  if (!*symbolicStarts || !*symbolicEnds ||
      (*symbolicStarts)->size() != (*symbolicEnds)->size())
    return node.emitError() << "starts and ends must be given, of one length";
  auto constantValues =
      [](ArrayRef<AffineExpr> exprs) -> std::optional<SmallVector<int64_t>> {
    SmallVector<int64_t> values;
    for (AffineExpr expr : exprs) {
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (!constant)
        return std::nullopt;
      values.push_back(constant.getValue());
    }
    return values;
  };
  std::optional<SmallVector<int64_t>> starts = constantValues(**symbolicStarts),
                                      ends = constantValues(**symbolicEnds);
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes;
  if (*axesOrNone)
    axes = **axesOrNone;
  else
    for (size_t i = 0; i < (*symbolicStarts)->size(); ++i)
      axes.push_back(i);
  if (axes.size() != (*symbolicStarts)->size() ||
      (*steps && (*steps)->size() != axes.size()))
    return node.emitError() << "starts, ends, axes and steps differ in length";
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(node, axes, rank);
  if (failed(normalized))
    return failure();
  if (!starts || !ends)
    return importDynamicSlice(node, *input, **symbolicStarts, **symbolicEnds,
                              *normalized,
                              *steps ? ArrayRef<int64_t>(**steps)
                                     : ArrayRef<int64_t>());

  // Positive steps become one kiln.slice; a negative step picks its
  // elements, last first, with a gather along the axis.
  SmallVector<int64_t> offsets(rank, 0), sizes(type.getShape()),
      strides(rank, 1);
  SmallVector<std::pair<int64_t, SmallVector<int64_t>>> gathers;
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    int64_t dim = type.getDimSize(axis);
    if (ShapedType::isDynamic(dim)) {
      int64_t step = *steps ? (**steps)[i] : 1;
      int64_t start = (*starts)[i], end = (*ends)[i];
      bool toTheEnd = end >= std::numeric_limits<int32_t>::max();
      if (step == 1 && start == 0 && toTheEnd)
        continue;
      if (step < 1 || start < 0 || end < 0 || toTheEnd)
        return node.emitError()
               << "slicing dynamic dimension " << axis << " of " << type
               << " needs non-negative starts and ends and a positive step";
      // The axis must reach the end, which makes the slice static: the
      // runtime checks the size.
      node.graph.require(node.graph.getShape(*input)[axis], end,
                         std::numeric_limits<int64_t>::max(), node.describe());
      start = std::min(start, end);
      int64_t size = (end - start + step - 1) / step;
      offsets[axis] = size > 0 ? start : 0;
      sizes[axis] = size;
      strides[axis] = step;
      continue;
    }
    int64_t step = *steps ? (**steps)[i] : 1;
    if (step == 0)
      return node.emitError() << "steps must not be 0";
    if (step < 0) {
      // Going down, start clamps to [0, dim - 1] and end to [-1, dim - 1].
      int64_t start = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
      int64_t end = (*ends)[i] < 0 ? (*ends)[i] + dim : (*ends)[i];
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      SmallVector<int64_t> indices;
      for (int64_t index = start; index > end; index += step)
        indices.push_back(index);
      if (indices.empty())
        sizes[axis] = 0;
      else
        gathers.push_back({axis, std::move(indices)});
      continue;
    }
    int64_t start = clampSliceIndex((*starts)[i], dim),
            end = clampSliceIndex((*ends)[i], dim);
    int64_t size = end > start ? (end - start + step - 1) / step : 0;
    offsets[axis] = size > 0 ? start : 0;
    sizes[axis] = size;
    strides[axis] = step;
  }
  Value result = *input;
  if (sizes != type.getShape() ||
      llvm::any_of(strides, [](int64_t stride) { return stride != 1; })) {
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr(offsets);
    props.sizes = node.b.getDenseI64ArrayAttr(sizes);
    props.strides = node.b.getDenseI64ArrayAttr(strides);
    FailureOr<Value> sliced = createInferred<SliceOp>(node, result, props);
    if (failed(sliced))
      return failure();
    result = *sliced;
  }
  for (auto &[axis, indices] : gathers)
    result = createAxisGather(node, result, axis, indices);
  node.results.push_back(result);
  return success();
}

/// `input` split into `parts` equal slices along its dynamic `axis`, as
/// slices of the input reshaped to [..., parts, size / parts, ...]; the
/// runtime checks that `parts` divides the size.
static LogicalResult splitEqually(NodeImporter &node, Value input, int64_t axis,
                                  int64_t parts) {
  SymbolicInts shape = node.graph.getShape(input);
  MLIRContext *context = node.b.getContext();
  node.graph.require(simplify(shape[axis] % parts), 0, node.describe());
  AffineExpr part = simplify(shape[axis].floorDiv(parts));
  SymbolicInts grouped = shape;
  grouped[axis] = part;
  grouped.insert(grouped.begin() + axis, getAffineConstantExpr(parts, context));
  FailureOr<Value> groups = createReshape(node, input, grouped);
  if (failed(groups))
    return failure();
  auto groupsType = cast<RankedTensorType>(groups->getType());
  SymbolicInts partShape = shape;
  partShape[axis] = part;
  for (int64_t i = 0; i < parts; ++i) {
    SmallVector<int64_t> offsets(groupsType.getRank(), 0),
        sizes(groupsType.getShape()), strides(groupsType.getRank(), 1);
    offsets[axis] = i;
    sizes[axis] = 1;
    SliceOp::Properties props;
    props.offsets = node.b.getDenseI64ArrayAttr(offsets);
    props.sizes = node.b.getDenseI64ArrayAttr(sizes);
    props.strides = node.b.getDenseI64ArrayAttr(strides);
    FailureOr<Value> slice = createInferred<SliceOp>(node, *groups, props);
    if (failed(slice))
      return failure();
    SymbolicInts sliceShape = grouped;
    sliceShape[axis] = getAffineConstantExpr(1, context);
    node.graph.setShape(*slice, sliceShape);
    if (failed(addResult(node, createReshape(node, *slice, partShape))))
      return failure();
  }
  return success();
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
  if (ShapedType::isDynamic(dim)) {
    if (parts < 1)
      return node.emitError() << "has no outputs";
    if (!*splitOrNone)
      return splitEqually(node, *input, *axis, parts);
    // Given sizes fix the axis: the runtime checks it has their sum (a
    // requirement), and the split is static.
    int64_t total = std::accumulate((*splitOrNone)->begin(),
                                    (*splitOrNone)->end(), int64_t(0));
    SymbolicInts shape = node.graph.getShape(*input);
    node.graph.require(shape[*axis], total, node.describe());
    shape[*axis] = getAffineConstantExpr(total, node.b.getContext());
    input = createReshape(node, *input, shape);
    if (failed(input))
      return failure();
    type = cast<RankedTensorType>(input->getType());
    dim = total;
  }
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

/// The input's shape: a constant, or, where it depends on named
/// dimensions, a tensor computed from them whose elements the importer
/// also keeps as expressions (what Reshape and Expand read).
LogicalResult kiln::importShape(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  SymbolicInts shape = node.graph.getShape(*input);
  int64_t rank = shape.size();
  auto clamp = [&](int64_t index) {
    if (index < 0)
      index += rank;
    return std::clamp<int64_t>(index, 0, rank);
  };
  int64_t start = clamp(node.getIntAttr("start", 0));
  int64_t end = clamp(node.getIntAttr("end", rank));
  SymbolicInts elements(shape.begin() + start,
                        shape.begin() + std::max(start, end));
  SmallVector<int64_t> sizes = getStaticSizes(elements);
  if (!llvm::is_contained(sizes, ShapedType::kDynamic)) {
    onnx::TensorProto tensor;
    tensor.set_name(node.node.output(0));
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(sizes.size());
    for (int64_t size : sizes)
      tensor.add_int64_data(size);
    node.graph.bindOwnedConstant(node.node.output(0), std::move(tensor));
    return success();
  }
  SmallVector<Value> values;
  for (AffineExpr element : elements) {
    FailureOr<Value> size = node.graph.materialize(element, node.loc);
    if (failed(size))
      return failure();
    values.push_back(arith::IndexCastOp::create(node.b, node.loc,
                                                node.b.getI64Type(), *size));
  }
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    node.b.getI64Type());
  Value result = tensor::FromElementsOp::create(node.b, node.loc, type, values);
  node.graph.setContents(result, std::move(elements));
  node.results.push_back(result);
  return success();
}

/// A tensor of the given shape filled with one value.
/// The element count of the input as an int64 scalar: a constant for a
/// static shape, else the product of the sizes at run time.
LogicalResult kiln::importSize(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  SymbolicInts shape = node.graph.getShape(*input);
  RankedTensorType type = node.getOperandType(0);
  if (type.hasStaticShape()) {
    onnx::TensorProto tensor;
    tensor.set_name(node.node.output(0));
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_int64_data(type.getNumElements());
    node.graph.bindOwnedConstant(node.node.output(0), std::move(tensor));
    return success();
  }
  AffineExpr count = getProduct(node.b.getContext(), shape);
  FailureOr<Value> size = node.graph.materialize(count, node.loc);
  if (failed(size))
    return failure();
  Value element =
      arith::IndexCastOp::create(node.b, node.loc, node.b.getI64Type(), *size);
  Value result = tensor::FromElementsOp::create(
      node.b, node.loc, RankedTensorType::get({}, node.b.getI64Type()),
      element);
  node.graph.setContents(result, {count});
  node.results.push_back(result);
  return success();
}

LogicalResult kiln::importConstantOfShape(NodeImporter &node) {
  FailureOr<std::optional<SymbolicInts>> shapeOrNone =
      node.getSymbolicIntsFromAttrOrInput("shape", 0);
  if (failed(shapeOrNone))
    return failure();
  if (!*shapeOrNone)
    return node.emitError() << "missing the shape";
  SymbolicInts shape = **shapeOrNone;
  SmallVector<int64_t> sizes = getStaticSizes(shape);
  if (llvm::any_of(sizes, [](int64_t d) {
        return d < 0 && !ShapedType::isDynamic(d);
      }))
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
  Attribute scalar = element.getValues<Attribute>()[0];
  auto type = RankedTensorType::get(sizes, element.getElementType());
  if (type.hasStaticShape()) {
    node.results.push_back(ConstantOp::create(
        node.b, node.loc, DenseElementsAttr::get(type, scalar)));
    return success();
  }
  Value fill = ConstantOp::create(
      node.b, node.loc,
      DenseElementsAttr::get(
          RankedTensorType::get({}, element.getElementType()), scalar));
  FailureOr<Value> result = createBroadcast(node, fill, shape);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}
