//===- OnnxRearrangeOps.cpp - ONNX Tile, DepthToSpace, ReverseSequence, ...===//
//
// Ops that rearrange elements without computing, as reshapes, transposes
// and broadcasts: Tile repeats x [d0, d1] r0 x r1 times by broadcasting
// x as [1, d0, 1, d1] to [r0, d0, r1, d1]; DepthToSpace and SpaceToDepth
// split a dimension into blocks, transpose them and merge; ReverseSequence
// gathers at reversed positions; CenterCropPad slices and pads with zeros.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

LogicalResult kiln::importTile(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  FailureOr<std::optional<SmallVector<int64_t>>> repeats =
      node.getIntsFromAttrOrInput("repeats", 1);
  if (failed(input) || failed(repeats))
    return failure();
  SymbolicInts shape = node.graph.getShape(*input);
  if (!*repeats || (*repeats)->size() != shape.size())
    return node.emitError() << "needs one repeat count per dimension";
  MLIRContext *context = node.b.getContext();
  SymbolicInts spread, repeated, result;
  for (auto [size, count] : llvm::zip(shape, **repeats)) {
    if (count < 0)
      return node.emitError() << "repeat counts must not be negative";
    AffineExpr times = getAffineConstantExpr(count, context);
    spread.append({getAffineConstantExpr(1, context), size});
    repeated.append({times, size});
    result.push_back(times * size);
  }
  FailureOr<Value> value = createReshape(node, *input, spread);
  if (succeeded(value))
    value = createBroadcast(node, *value, repeated);
  if (succeeded(value))
    value = createReshape(node, *value, result);
  if (failed(value))
    return failure();
  node.results.push_back(*value);
  return success();
}

namespace {

/// `input` reshaped to `split`, transposed by `perm` and reshaped to
/// `merged`.
FailureOr<Value> createBlockShuffle(NodeImporter &node, Value input,
                                    ArrayRef<AffineExpr> split,
                                    ArrayRef<int64_t> perm,
                                    ArrayRef<AffineExpr> merged) {
  FailureOr<Value> blocks = createReshape(node, input, split);
  if (failed(blocks))
    return failure();
  return createReshape(node, createTranspose(node, *blocks, perm), merged);
}

/// What DepthToSpace and SpaceToDepth read: the [N, C, H, W] input, its
/// sizes, the positive blocksize and the mode (DCR or CRD).
struct BlockOperands {
  Value input;
  AffineExpr n, c, h, w;
  int64_t b;
  bool dcr;
};

FailureOr<BlockOperands> getBlockOperands(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  if (node.getOperandType(0).getRank() != 4)
    return node.emitError() << "expects an [N, C, H, W] input";
  int64_t blocksize = node.getIntAttr("blocksize", 0);
  if (blocksize < 1)
    return node.emitError() << "blocksize must be positive";
  std::string mode = node.getStringAttr("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return node.emitError() << "unknown mode '" << mode << "'";
  SymbolicInts s = node.graph.getShape(*input);
  return BlockOperands{*input, s[0],      s[1],         s[2],
                       s[3],   blocksize, mode == "DCR"};
}

/// `size / divisor`: checked here for a fixed size, by the runtime (a
/// requirement) for a dynamic one.
FailureOr<AffineExpr> divideSize(NodeImporter &node, AffineExpr size,
                                 int64_t divisor, StringRef what) {
  if (auto fixed = dyn_cast<AffineConstantExpr>(size)) {
    if (fixed.getValue() % divisor != 0)
      return node.emitError() << divisor << " does not divide the "
                              << fixed.getValue() << " " << what;
  } else {
    node.graph.require(simplify(size % divisor), 0, node.describe());
  }
  return simplify(size.floorDiv(divisor));
}

} // namespace

/// Moves blocks of channels into b x b spatial blocks: DCR reads the
/// channels as [b, b, C / b^2], CRD as [C / b^2, b, b].
LogicalResult kiln::importDepthToSpace(NodeImporter &node) {
  FailureOr<BlockOperands> block = getBlockOperands(node);
  if (failed(block))
    return failure();
  auto [input, n, c, h, w, b, dcr] = *block;
  FailureOr<AffineExpr> depth = divideSize(node, c, b * b, "channels");
  if (failed(depth))
    return failure();
  AffineExpr bb = getAffineConstantExpr(b, node.b.getContext());
  SmallVector<AffineExpr> merged = {n, *depth, h * b, w * b};
  if (dcr)
    return addResult(node,
                     createBlockShuffle(node, input, {n, bb, bb, *depth, h, w},
                                        {0, 3, 4, 1, 5, 2}, merged));
  return addResult(node,
                   createBlockShuffle(node, input, {n, *depth, bb, bb, h, w},
                                      {0, 1, 4, 2, 5, 3}, merged));
}

/// Moves b x b spatial blocks into channels: DCR puts the block offsets
/// outermost ([b, b, C]), CRD innermost ([C, b, b]).
LogicalResult kiln::importSpaceToDepth(NodeImporter &node) {
  FailureOr<BlockOperands> block = getBlockOperands(node);
  if (failed(block))
    return failure();
  auto [input, n, c, h, w, b, dcr] = *block;
  FailureOr<AffineExpr> rows = divideSize(node, h, b, "rows");
  FailureOr<AffineExpr> columns = divideSize(node, w, b, "columns");
  if (failed(rows) || failed(columns))
    return failure();
  AffineExpr bb = getAffineConstantExpr(b, node.b.getContext());
  SmallVector<int64_t> perm = dcr ? SmallVector<int64_t>{0, 3, 5, 1, 2, 4}
                                  : SmallVector<int64_t>{0, 1, 3, 5, 2, 4};
  return addResult(
      node, createBlockShuffle(node, input, {n, c, *rows, bb, *columns, bb},
                               perm, {n, c * (b * b), *rows, *columns}));
}

/// ReverseSequence: along the time axis, each batch item's first
/// sequence_lens[b] elements reversed, as a GatherElements at
/// t < len ? len - 1 - t : t.
LogicalResult kiln::importReverseSequence(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  FailureOr<Value> lengths = getIndicesOperand(node, 1);
  if (failed(input) || failed(lengths))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  int64_t rank = type.getRank();
  FailureOr<int64_t> batchAxis =
      node.normalizeAxis(node.getIntAttr("batch_axis", 1), rank);
  FailureOr<int64_t> timeAxis =
      node.normalizeAxis(node.getIntAttr("time_axis", 0), rank);
  if (failed(batchAxis) || failed(timeAxis))
    return failure();
  if (rank < 2 || *batchAxis == *timeAxis || *batchAxis > 1 || *timeAxis > 1)
    return node.emitError() << "batch_axis and time_axis must be 0 and 1";
  SymbolicInts shape = node.graph.getShape(*input);
  SymbolicInts lengthsShape(rank,
                            getAffineConstantExpr(1, node.b.getContext()));
  lengthsShape[*batchAxis] = shape[*batchAxis];
  FailureOr<Value> lens = createReshape(node, *lengths, lengthsShape);
  FailureOr<Value> steps =
      createIndexSequence(node, shape[*timeAxis], *timeAxis, rank);
  if (failed(lens) || failed(steps))
    return failure();
  Formula f(node, *steps);
  FailureOr<Value> reversed =
      f.apply<SubOp>(f.apply<SubOp>(*lens, f.constant(1)), *steps);
  FailureOr<Value> inside = f.apply<LessOp>(*steps, *lens);
  FailureOr<Value> indices = f.select(inside, reversed, *steps);
  if (failed(indices))
    return failure();
  FailureOr<Value> spread = createBroadcast(node, *indices, shape);
  if (failed(spread))
    return failure();
  GatherElementsOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(*timeAxis);
  return addInferredResult<GatherElementsOp>(node, {*input, *spread}, props);
}

/// CenterCropPad: each listed axis cropped or zero-padded to its target
/// size around its center (an odd difference leaves the extra element at
/// the end), as a slice and a concat with zeros.
LogicalResult kiln::importCenterCropPad(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  std::optional<SmallVector<int64_t>> targets =
      node.node.input_size() > 1
          ? node.graph.getConstantInts(node.node.input(1))
          : std::nullopt;
  if (!targets)
    return node.emitError() << "shape must be a compile-time constant";
  int64_t rank = type.getRank();
  FailureOr<SmallVector<int64_t>> axes =
      normalizeAxes(node,
                    node.getIntsAttr("axes").value_or(
                        llvm::to_vector(llvm::seq<int64_t>(0, rank))),
                    rank);
  if (failed(axes))
    return failure();
  if (axes->size() != targets->size())
    return node.emitError() << "shape gives " << targets->size()
                            << " sizes for " << axes->size() << " axes";
  Value result = *input;
  for (auto [axis, target] : llvm::zip(*axes, *targets)) {
    auto current = cast<RankedTensorType>(result.getType());
    int64_t size = current.getDimSize(axis);
    if (ShapedType::isDynamic(size) || target < 0)
      return node.emitError() << "axis " << axis
                              << " must be static and its target size "
                                 "non-negative";
    if (target < size) {
      int64_t start = (size - target) / 2;
      result = createAxisSlice(node, result, axis, start, start + target);
      continue;
    }
    int64_t before = (target - size) / 2;
    result =
        createAxisPad(node, result, axis, before, target - size - before, 0);
  }
  node.results.push_back(result);
  return success();
}
