//===- LoweringUtils.cpp - helpers shared by kiln lowerings ---------------===//
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

Value kiln::createEmptyTensor(OpBuilder &b, Location loc,
                              RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(),
                                 type.getElementType());
}

Value kiln::createFilledTensor(OpBuilder &b, Location loc,
                               RankedTensorType type, Value value) {
  Value empty = createEmptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
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
                          RankedTensorType type) {
  auto sourceType = cast<RankedTensorType>(value.getType());
  if (sourceType == type)
    return value;
  auto flatType = RankedTensorType::get({sourceType.getNumElements()},
                                        sourceType.getElementType());
  auto allDims = [](int64_t rank) {
    ReassociationIndices group;
    for (int64_t i = 0; i < rank; ++i)
      group.push_back(i);
    return SmallVector<ReassociationIndices>{group};
  };
  // A rank-0 tensor has an empty reassociation with its 1-element 1-D form.
  Value flat = value;
  if (sourceType.getRank() == 0)
    flat = tensor::ExpandShapeOp::create(b, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  else if (sourceType.getRank() != 1)
    flat = tensor::CollapseShapeOp::create(b, loc, flatType, value,
                                           allDims(sourceType.getRank()));
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  if (type.getRank() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, type, flat,
                                       allDims(type.getRank()));
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
  Value init = createFilledTensor(b, loc, resultType, initValue);
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
      b, loc, type, ValueRange{full, reduced}, createEmptyTensor(b, loc, type),
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
