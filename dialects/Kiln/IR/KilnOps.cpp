//===- KilnOps.cpp - kiln op verifiers, type inference, folders -----------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "dialects/Kiln/IR/ConstantEvaluation.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Shared type inference
//===----------------------------------------------------------------------===//

LogicalResult kiln::inferBroadcastResultType(std::optional<Location> loc,
                                             Type lhs, Type rhs,
                                             SmallVectorImpl<Type> &types) {
  auto lhsType = cast<RankedTensorType>(lhs);
  auto rhsType = cast<RankedTensorType>(rhs);
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(lhsType.getShape(),
                                          rhsType.getShape(), shape))
    return emitOptionalError(loc, "operand shapes ", lhsType, " and ", rhsType,
                             " are not broadcast-compatible");
  types.push_back(RankedTensorType::get(shape, lhsType.getElementType()));
  return success();
}

LogicalResult kiln::inferReduceResultType(std::optional<Location> loc,
                                          Type input, ArrayRef<int64_t> axes,
                                          bool keepDims,
                                          SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(input);
  int64_t rank = inputType.getRank();
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "reduction axis ", axis,
                               " is out of range for rank ", rank);
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, "reduction axes must be sorted and unique");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(inputType.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Folders of the ops that compute on small constants (shape arithmetic)
//===----------------------------------------------------------------------===//

#define KILN_FOLD_CONSTANT_OPERANDS(Op)                                        \
  OpFoldResult Op::fold(FoldAdaptor adaptor) {                                 \
    return foldConstantOperands(*this, adaptor.getOperands());                 \
  }
KILN_FOLD_CONSTANT_OPERANDS(NegOp)
KILN_FOLD_CONSTANT_OPERANDS(MinOp)
KILN_FOLD_CONSTANT_OPERANDS(MaxOp)
KILN_FOLD_CONSTANT_OPERANDS(LessOp)
KILN_FOLD_CONSTANT_OPERANDS(LessEqualOp)
KILN_FOLD_CONSTANT_OPERANDS(AndOp)
KILN_FOLD_CONSTANT_OPERANDS(OrOp)
KILN_FOLD_CONSTANT_OPERANDS(XorOp)
KILN_FOLD_CONSTANT_OPERANDS(NotOp)
KILN_FOLD_CONSTANT_OPERANDS(ConcatOp)
KILN_FOLD_CONSTANT_OPERANDS(EqualOp)
KILN_FOLD_CONSTANT_OPERANDS(SelectOp)
KILN_FOLD_CONSTANT_OPERANDS(SliceOp)
KILN_FOLD_CONSTANT_OPERANDS(BroadcastOp)
#undef KILN_FOLD_CONSTANT_OPERANDS

/// Whether `attr` is a constant whose every element is `identity`.
static bool isSplatOf(Attribute attr, int64_t identity) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  if (isa<FloatType>(splat.getElementType()))
    return splat.getSplatValue<APFloat>().isExactlyValue(identity);
  if (isa<IntegerType>(splat.getElementType()))
    return splat.getSplatValue<APInt>().getSExtValue() == identity;
  return false;
}

/// `kept`, where the other operand of a binary elementwise op is a constant
/// splat of the op's identity (exported graphs are full of them: a
/// GroupNorm's decomposition multiplies by ones and adds zeros after its
/// InstanceNormalization) and broadcasting does not widen `kept`. x + 0
/// returns x for x = -0, as ONNX Runtime's no-op elimination does.
static Value foldIdentity(Operation *op, Value kept, Attribute other,
                          int64_t identity) {
  if (kept.getType() != op->getResult(0).getType() ||
      !isSplatOf(other, identity))
    return {};
  return kept;
}

/// A binary op's constant result, or the operand that the other, a splat
/// of `identity`, passes through (either one where `commutative`).
static OpFoldResult foldBinary(Operation *op, ArrayRef<Attribute> constants,
                               int64_t identity, bool commutative) {
  if (OpFoldResult folded = foldConstantOperands(op, constants))
    return folded;
  if (Value kept = foldIdentity(op, op->getOperand(0), constants[1], identity))
    return kept;
  if (!commutative)
    return {};
  return foldIdentity(op, op->getOperand(1), constants[0], identity);
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(*this, adaptor.getOperands(), 0, /*commutative=*/true);
}
OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(*this, adaptor.getOperands(), 0, /*commutative=*/false);
}
OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(*this, adaptor.getOperands(), 1, /*commutative=*/true);
}

// The evaluator divides integers as signed numbers.
OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (Value kept = foldIdentity(*this, getLhs(), adaptor.getRhs(), 1))
    return kept;
  if (getIsUnsigned())
    return {};
  return foldConstantOperands(*this, adaptor.getOperands());
}
OpFoldResult RemOp::fold(FoldAdaptor adaptor) {
  if (getIsUnsigned())
    return {};
  return foldConstantOperands(*this, adaptor.getOperands());
}

/// is_unsigned of an integer division or remainder.
template <typename OpTy> static LogicalResult verifyUnsignedDivision(OpTy op) {
  if (op.getIsUnsigned() && !isa<IntegerType>(op.getType().getElementType()))
    return op.emitOpError("is_unsigned needs integer operands");
  return success();
}
LogicalResult DivOp::verify() { return verifyUnsignedDivision(*this); }
LogicalResult RemOp::verify() { return verifyUnsignedDivision(*this); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  Type inputElement = getInput().getType().getElementType();
  if (getInputUnsigned() &&
      (!isa<IntegerType>(inputElement) || inputElement.isInteger(1)))
    return emitOpError("input_unsigned needs an integer input");
  Type resultElement = getType().getElementType();
  if (getResultUnsigned() &&
      (!isa<IntegerType>(resultElement) || resultElement.isInteger(1)))
    return emitOpError("result_unsigned needs an integer result");
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  // Same type: the same bits, whatever the signedness flags say.
  if (getInput().getType() == getType())
    return getInput();
  return foldConstantOperands(*this, adaptor.getOperands());
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhsType = cast<RankedTensorType>(adaptor.getLhs().getType());
  return inferMatMulResultType(loc, lhsType, adaptor.getRhs().getType(),
                               lhsType.getElementType(), types);
}

LogicalResult kiln::inferMatMulResultType(std::optional<Location> loc,
                                          Type lhsOperand, Type rhsOperand,
                                          Type elementType,
                                          SmallVectorImpl<Type> &types) {
  auto lhsType = cast<RankedTensorType>(lhsOperand);
  auto rhsType = cast<RankedTensorType>(rhsOperand);
  ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
  if (lhs.empty() || rhs.empty())
    return emitOptionalError(loc, "matmul operands must have rank >= 1");
  int64_t lhsK = lhs.back();
  int64_t rhsK = rhs.size() == 1 ? rhs[0] : rhs[rhs.size() - 2];
  if (failed(verifyCompatibleShape({lhsK}, {rhsK})))
    return emitOptionalError(loc, "matmul contraction sizes differ: ", lhsK,
                             " vs ", rhsK);
  SmallVector<int64_t> batch;
  ArrayRef<int64_t> lhsBatch =
      lhs.size() > 2 ? lhs.drop_back(2) : ArrayRef<int64_t>();
  ArrayRef<int64_t> rhsBatch =
      rhs.size() > 2 ? rhs.drop_back(2) : ArrayRef<int64_t>();
  if (!OpTrait::util::getBroadcastedShape(lhsBatch, rhsBatch, batch))
    return emitOptionalError(loc, "matmul batch dimensions do not broadcast");
  if (lhs.size() >= 2)
    batch.push_back(lhs[lhs.size() - 2]);
  if (rhs.size() >= 2)
    batch.push_back(rhs.back());
  types.push_back(RankedTensorType::get(batch, elementType));
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// Verifies that `dims` holds one size per dynamic dimension of `result`.
static LogicalResult verifyDynamicDims(Operation *op, ValueRange dims,
                                       RankedTensorType result) {
  if (dims.size() != result.getNumDynamicDims())
    return op->emitOpError("takes one size per dynamic result dimension: ")
           << result.getNumDynamicDims() << ", got " << dims.size();
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto inputType = cast<RankedTensorType>(getInput().getType());
  auto resultType = cast<RankedTensorType>(getType());
  if (failed(verifyDynamicDims(*this, getDims(), resultType)))
    return failure();
  if (inputType.hasStaticShape() && resultType.hasStaticShape() &&
      inputType.getNumElements() != resultType.getNumElements())
    return emitOpError("cannot reshape ")
           << inputType.getNumElements() << " elements into " << resultType;
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  // With one dynamic dimension at most, equal types mean equal shapes.
  auto type = cast<RankedTensorType>(getType());
  if (getInput().getType() == type && type.getNumDynamicDims() <= 1)
    return getInput();
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(cast<ShapedType>(getType()));
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = inputType.getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries for a rank-", rank, " input");
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, "perm is not a permutation of [0, ", rank,
                               ")");
    seen[p] = true;
    shape.push_back(inputType.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  return success();
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  return foldConstantOperands(*this, adaptor.getOperands());
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  if (llvm::equal(getPerm(), llvm::seq<int64_t>(getPerm().size())))
    return getInput();
  // A transpose of a transpose is one transpose of the first's input:
  // result dimension i is the inner input's dimension inner[outer[i]].
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t dim : getPerm())
      composed.push_back(inner.getPerm()[dim]);
    if (llvm::equal(composed, llvm::seq<int64_t>(composed.size())))
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  return foldConstantOperands(*this, adaptor.getOperands());
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = cast<RankedTensorType>(adaptor.getInputs().front().getType());
  int64_t rank = first.getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "concat axis ", axis,
                             " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value input : adaptor.getInputs()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() != rank)
      return emitOptionalError(loc, "concat inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      if (failed(verifyCompatibleShape({type.getDimSize(d)}, {shape[d]})))
        return emitOptionalError(loc, "concat inputs differ in dimension ", d);
      if (ShapedType::isDynamic(shape[d]))
        shape[d] = type.getDimSize(d);
    }
    shape[axis] = ShapedType::isDynamic(shape[axis]) || type.isDynamicDim(axis)
                      ? ShapedType::kDynamic
                      : shape[axis] + type.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

/// The checks Gather and GatherElements share: `axis` lies within `data`
/// and, if the axis is empty, there is nothing to gather.
static LogicalResult verifyGatherAxis(std::optional<Location> loc,
                                      StringRef opName,
                                      RankedTensorType dataType,
                                      RankedTensorType indicesType,
                                      int64_t axis) {
  int64_t rank = dataType.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, opName, " axis ", axis,
                             " is out of range for rank ", rank);
  if (dataType.getDimSize(axis) == 0 && indicesType.hasStaticShape() &&
      indicesType.getNumElements() != 0)
    return emitOptionalError(loc, opName, " from an empty axis");
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
  auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(verifyGatherAxis(loc, "gather", dataType, indicesType, axis)))
    return failure();
  SmallVector<int64_t> shape(dataType.getShape().take_front(axis));
  llvm::append_range(shape, indicesType.getShape());
  llvm::append_range(shape, dataType.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, dataType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// GatherElementsOp
//===----------------------------------------------------------------------===//

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
  auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t rank = dataType.getRank();
  int64_t axis = adaptor.getAxis();
  if (indicesType.getRank() != rank)
    return emitOptionalError(loc, "gather_elements indices have rank ",
                             indicesType.getRank(), " but data has rank ",
                             rank);
  if (failed(verifyGatherAxis(loc, "gather_elements", dataType, indicesType,
                              axis)))
    return failure();
  types.push_back(
      RankedTensorType::get(indicesType.getShape(), dataType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// EqualOp and SelectOp
//===----------------------------------------------------------------------===//

LogicalResult kiln::inferComparisonResultType(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Type lhs, Type rhs,
                                              SmallVectorImpl<Type> &types) {
  if (getElementTypeOrSelf(lhs) != getElementTypeOrSelf(rhs))
    return emitOptionalError(loc, "operands have different element types");
  if (failed(inferBroadcastResultType(loc, lhs, rhs, types)))
    return failure();
  types[0] = cast<RankedTensorType>(types[0]).clone(IntegerType::get(ctx, 1));
  return success();
}

LogicalResult EqualOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferComparisonResultType(ctx, loc, adaptor.getLhs().getType(),
                                   adaptor.getRhs().getType(), types);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto trueType = cast<RankedTensorType>(adaptor.getTrueValue().getType());
  auto falseType = cast<RankedTensorType>(adaptor.getFalseValue().getType());
  if (trueType.getElementType() != falseType.getElementType())
    return emitOptionalError(loc,
                             "the two values have different element types");
  SmallVector<int64_t> shape;
  if (!OpTrait::util::getBroadcastedShape(
          cast<RankedTensorType>(adaptor.getCondition().getType()).getShape(),
          trueType.getShape(), shape) ||
      !OpTrait::util::getBroadcastedShape(SmallVector<int64_t>(shape),
                                          falseType.getShape(), shape))
    return emitOptionalError(loc,
                             "operand shapes are not broadcast-compatible");
  types.push_back(RankedTensorType::get(shape, trueType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto inputType = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> offsets = adaptor.getOffsets(), sizes = adaptor.getSizes(),
                    strides = adaptor.getStrides();
  int64_t rank = inputType.getRank();
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "offsets, sizes and strides need ", rank,
                             " entries each");
  for (int64_t d = 0; d < rank; ++d) {
    // A dynamic size takes a dynamic dimension whole.
    if (ShapedType::isDynamic(sizes[d])) {
      if (!inputType.isDynamicDim(d) || offsets[d] != 0 || strides[d] != 1)
        return emitOptionalError(loc, "dimension ", d,
                                 " has a dynamic size but is not a whole "
                                 "dynamic dimension");
      continue;
    }
    if (offsets[d] < 0 || sizes[d] < 0 || strides[d] < 1)
      return emitOptionalError(loc, "dimension ", d,
                               " has a negative offset or size, or a stride "
                               "below 1");
    if (sizes[d] > 0 && !inputType.isDynamicDim(d) &&
        offsets[d] + (sizes[d] - 1) * strides[d] >= inputType.getDimSize(d))
      return emitOptionalError(loc, "dimension ", d,
                               " reads past the input's size ",
                               inputType.getDimSize(d));
  }
  types.push_back(RankedTensorType::get(sizes, inputType.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> input =
      cast<RankedTensorType>(getInput().getType()).getShape();
  auto resultType = cast<RankedTensorType>(getType());
  if (failed(verifyDynamicDims(*this, getDims(), resultType)))
    return failure();
  ArrayRef<int64_t> result = resultType.getShape();
  if (input.size() > result.size())
    return emitOpError("cannot broadcast to a lower rank");
  size_t offset = result.size() - input.size();
  for (auto [i, dim] : llvm::enumerate(input))
    if (dim != 1 && failed(verifyCompatibleShape({dim}, {result[offset + i]})))
      return emitOpError("input dimension ")
             << i << " of size " << dim << " does not broadcast to "
             << result[offset + i];
  return success();
}

//===----------------------------------------------------------------------===//
// RangeOp
//===----------------------------------------------------------------------===//

LogicalResult RangeOp::verify() {
  if (getStart().getType().getRank() != 0 || getDelta().getType().getRank() != 0)
    return emitOpError("start and delta must be scalars (0-d)");
  RankedTensorType type = getResult().getType();
  if (type.getRank() != 1)
    return emitOpError("result must be 1-D");
  if (type.isDynamicDim(0) != static_cast<bool>(getSize()))
    return emitOpError("takes a size exactly when the result's length is "
                       "dynamic");
  return success();
}

//===----------------------------------------------------------------------===//
// DynamicSliceOp
//===----------------------------------------------------------------------===//

LogicalResult DynamicSliceOp::verify() {
  RankedTensorType input = getInput().getType(), result = getResult().getType();
  ArrayRef<int64_t> axes = getAxes();
  if (axes.empty() || getOffsets().size() != axes.size() ||
      getSizes().size() != axes.size())
    return emitOpError("needs one offset and one size per axis, and at "
                       "least one axis");
  if (input.getRank() != result.getRank())
    return emitOpError("result rank ")
           << result.getRank() << " differs from the input's "
           << input.getRank();
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t axis : axes)
    if (axis < 0 || axis >= input.getRank() || !seen.insert(axis).second)
      return emitOpError("axis ") << axis << " is out of range or repeated";
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (seen.contains(d)) {
      if (!result.isDynamicDim(d))
        return emitOpError("sliced dimension ") << d << " must be dynamic";
      continue;
    }
    if (input.getDimSize(d) != result.getDimSize(d))
      return emitOpError("dimension ")
             << d << " is not sliced and must keep the input's size";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CheckIndexRangeOp
//===----------------------------------------------------------------------===//

LogicalResult CheckIndexRangeOp::verify() {
  if (static_cast<int64_t>(getSize()) < 0)
    return emitOpError("size must be non-negative");
  if (getCode() <= 0)
    return emitOpError("code must be positive; 0 means success");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.cpp.inc"
