//===- KilnIndexedOps.cpp - scatter_elements, scatter_nd, gather_nd -------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;

/// An error unless `reduction` can combine elements of `elementType`.
static LogicalResult verifyReduction(Operation *op, ScatterReduction reduction,
                                     Type elementType) {
  if (reduction == ScatterReduction::None)
    return success();
  if (elementType.isF32() || elementType.isF64() || elementType.isInteger(32) ||
      elementType.isInteger(64))
    return success();
  return op->emitOpError("reduction ")
         << stringifyScatterReduction(reduction) << " needs f32, f64, i32 or "
         << "i64 elements, not " << elementType;
}

LogicalResult ScatterElementsOp::verify() {
  auto dataType = cast<RankedTensorType>(getData().getType());
  auto indicesType = cast<RankedTensorType>(getIndices().getType());
  int64_t rank = dataType.getRank();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (indicesType.getRank() != rank)
    return emitOpError("indices have rank ")
           << indicesType.getRank() << " but data has rank " << rank;
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  if (getUpdates().getType().getElementType() != dataType.getElementType())
    return emitOpError("updates and data have different element types");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && !indicesType.isDynamicDim(d) &&
        !dataType.isDynamicDim(d) &&
        indicesType.getDimSize(d) > dataType.getDimSize(d))
      return emitOpError("indices are larger than data in dimension ") << d;
  return verifyReduction(*this, getReduction(), dataType.getElementType());
}

LogicalResult ScatterNDOp::verify() {
  auto dataType = cast<RankedTensorType>(getData().getType());
  auto indicesType = cast<RankedTensorType>(getIndices().getType());
  auto updatesType = cast<RankedTensorType>(getUpdates().getType());
  if (indicesType.getRank() < 1)
    return emitOpError("indices must have rank 1 or more");
  int64_t depth = indicesType.getShape().back();
  if (ShapedType::isDynamic(depth) || depth > dataType.getRank())
    return emitOpError("the index tuples must have a static length of at "
                       "most the data's rank");
  SmallVector<int64_t> expected(indicesType.getShape().drop_back());
  llvm::append_range(expected, dataType.getShape().drop_front(depth));
  if (failed(verifyCompatibleShape(updatesType.getShape(), expected)) ||
      updatesType.getRank() != static_cast<int64_t>(expected.size()))
    return emitOpError("updates must have shape indices.shape[:-1] + "
                       "data.shape[k:]");
  if (updatesType.getElementType() != dataType.getElementType())
    return emitOpError("updates and data have different element types");
  return verifyReduction(*this, getReduction(), dataType.getElementType());
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto dataType = cast<RankedTensorType>(adaptor.getData().getType());
  auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t batchDims = static_cast<int64_t>(adaptor.getBatchDims());
  if (indicesType.getRank() < 1 || batchDims < 0 ||
      batchDims >= indicesType.getRank() || batchDims >= dataType.getRank())
    return emitOptionalError(loc, "gather_nd batch_dims ", batchDims,
                             " does not fit indices of rank ",
                             indicesType.getRank(), " and data of rank ",
                             dataType.getRank());
  int64_t depth = indicesType.getShape().back();
  if (ShapedType::isDynamic(depth) || batchDims + depth > dataType.getRank())
    return emitOptionalError(loc, "gather_nd index tuples must have a static "
                                  "length of at most the data's rank less "
                                  "batch_dims");
  SmallVector<int64_t> shape(indicesType.getShape().drop_back());
  llvm::append_range(shape, dataType.getShape().drop_front(batchDims + depth));
  types.push_back(RankedTensorType::get(shape, dataType.getElementType()));
  return success();
}
