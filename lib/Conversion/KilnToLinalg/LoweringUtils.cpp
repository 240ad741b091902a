//===- LoweringUtils.cpp - helpers shared by kiln lowerings ---------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;

Value kiln::createEmptyTensor(OpBuilder &b, Location loc,
                              RankedTensorType type, ValueRange dynamicSizes) {
  return tensor::EmptyOp::create(b, loc, type, dynamicSizes);
}

Value kiln::createFilledTensor(OpBuilder &b, Location loc,
                               RankedTensorType type, Value value,
                               ValueRange dynamicSizes) {
  Value empty = createEmptyTensor(b, loc, type, dynamicSizes);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

SmallVector<Value> kiln::getDynamicSizes(OpBuilder &b, Location loc,
                                         Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, value, d));
  return sizes;
}

SmallVector<Value> kiln::getDynamicResultSizes(OpBuilder &b, Operation *op) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (type.hasStaticShape())
    return {};
  ReifiedRankedShapedTypeDims shapes;
  LogicalResult reified =
      cast<ReifyRankedShapedTypeOpInterface>(op).reifyResultShapes(b, shapes);
  assert(succeeded(reified) && "kiln ops with dynamic results reify them");
  (void)reified;
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(
          getValueOrCreateConstantIndexOp(b, op->getLoc(), shapes[0][d]));
  return sizes;
}

AffineMap kiln::getBroadcastMap(MLIRContext *ctx,
                                ArrayRef<int64_t> operandShape,
                                ArrayRef<int64_t> resultShape,
                                unsigned numLoops) {
  SmallVector<AffineExpr> exprs;
  size_t offset = resultShape.size() - operandShape.size();
  for (auto [i, size] : llvm::enumerate(operandShape)) {
    if (size == 1 && resultShape[offset + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(offset + i, ctx));
  }
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

Value kiln::reshapeTensor(OpBuilder &b, Location loc, Value value,
                          RankedTensorType type, ValueRange dynamicSizes) {
  auto sourceType = cast<RankedTensorType>(value.getType());
  if (sourceType == type && type.getNumDynamicDims() == 0)
    return value;
  auto allDims = [](int64_t rank) {
    ReassociationIndices group;
    for (int64_t i = 0; i < rank; ++i)
      group.push_back(i);
    return SmallVector<ReassociationIndices>{group};
  };
  // A rank-0 tensor has an empty reassociation with its 1-element 1-D form.
  Value flat = value;
  if (sourceType.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1}, sourceType.getElementType()), value,
        ArrayRef<ReassociationIndices>{});
  else if (sourceType.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, value,
                                           allDims(sourceType.getRank()));
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  if (type.getRank() == 1)
    return flat.getType() == type
               ? flat
               : tensor::CastOp::create(b, loc, type, flat).getResult();
  // A dynamic input reshaped to a fixed shape: the runtime has checked
  // its element count (a requirement of the artifact).
  if (type.hasStaticShape() &&
      cast<RankedTensorType>(flat.getType()).isDynamicDim(0))
    flat = tensor::CastOp::create(
        b, loc,
        RankedTensorType::get({type.getNumElements()}, type.getElementType()),
        flat);
  SmallVector<OpFoldResult> outputShape;
  size_t next = 0;
  for (int64_t size : type.getShape())
    outputShape.push_back(ShapedType::isDynamic(size)
                              ? OpFoldResult(dynamicSizes[next++])
                              : b.getIndexAttr(size));
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       allDims(type.getRank()), outputShape);
}

Value kiln::createScalarConstant(OpBuilder &b, Location loc, Type type,
                                 double value) {
  if (isa<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value kiln::createReduction(
    OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> axes,
    Value initValue,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto inputType = cast<RankedTensorType>(input.getType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = inputType.getRank();
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, d)) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    shape.push_back(inputType.getDimSize(d));
    outExprs.push_back(getAffineDimExpr(d, ctx));
  }
  auto resultType = RankedTensorType::get(shape, inputType.getElementType());
  SmallVector<Value> sizes;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d) && inputType.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, loc, input, d));
  Value init = createFilledTensor(b, loc, resultType, initValue, sizes);
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                 AffineMap::get(rank, 0, outExprs, ctx)};
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, input, init, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, combine(nb, l, args[0], args[1]));
      });
  return generic.getResult(0);
}

Value kiln::createBroadcastCombine(
    OpBuilder &b, Location loc, Value full, Value reduced,
    ArrayRef<int64_t> axes,
    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto type = cast<RankedTensorType>(full.getType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> reducedExprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      reducedExprs.push_back(getAffineDimExpr(d, ctx));
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
  SmallVector<AffineMap> maps = {
      identity, AffineMap::get(rank, 0, reducedExprs, ctx), identity};
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{full, reduced},
      createEmptyTensor(b, loc, type, getDynamicSizes(b, loc, full)),
      maps, iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, combine(nb, l, args[0], args[1]));
      });
  return generic.getResult(0);
}

Value kiln::createSumStep(OpBuilder &b, Location loc, Value value,
                          Value accumulator) {
  return arith::AddFOp::create(b, loc, value, accumulator,
                               arith::FastMathFlags::reassoc);
}

Value kiln::padImages(OpBuilder &b, Location loc, Value input,
                      ArrayRef<int64_t> pads) {
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return input;
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<OpFoldResult> low, high;
  for (int64_t p : {int64_t(0), int64_t(0), pads[0], pads[1]})
    low.push_back(b.getIndexAttr(p));
  for (int64_t p : {int64_t(0), int64_t(0), pads[2], pads[3]})
    high.push_back(b.getIndexAttr(p));
  SmallVector<int64_t> shape(inputType.getShape());
  for (int d = 0; d < 2; ++d)
    if (!inputType.isDynamicDim(2 + d))
      shape[2 + d] += pads[d] + pads[d + 2];
  Type elementType = inputType.getElementType();
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, elementType), input, low, high,
      createScalarConstant(b, loc, elementType, 0));
}

Value kiln::getAxisSize(OpBuilder &b, Location loc, Value data, int64_t axis) {
  auto type = cast<RankedTensorType>(data.getType());
  if (!type.isDynamicDim(axis))
    return createScalarConstant(b, loc, b.getI64Type(), type.getDimSize(axis));
  return arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                    tensor::DimOp::create(b, loc, data, axis));
}

Value kiln::getClampedIndex(OpBuilder &b, Location loc, Value index,
                            Value size) {
  Type i64 = b.getI64Type();
  Value zero = createScalarConstant(b, loc, i64, 0);
  Value last = b.createOrFold<arith::SubIOp>(
      loc, size, createScalarConstant(b, loc, i64, 1));
  Value isNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  index = arith::SelectOp::create(
      b, loc, isNegative, arith::AddIOp::create(b, loc, index, size), index);
  index = arith::MaxSIOp::create(b, loc, index, zero);
  index = arith::MinSIOp::create(b, loc, index, last);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
}
