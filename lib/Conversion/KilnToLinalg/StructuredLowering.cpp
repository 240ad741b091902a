//===- StructuredLowering.cpp - contractions and reductions to linalg -----===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

/// The matrix products codegen tiles and vectorizes are linalg.matmul: a
/// weight-like 2-D right operand makes one over all rows of the left one,
/// equal batch dimensions a loop of them. Returns null for the other
/// spellings.
Value createNamedMatMul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        RankedTensorType resultType) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  ArrayRef<int64_t> lhsShape = lhsType.getShape(),
                    rhsShape = rhsType.getShape();
  Type elementType = resultType.getElementType();
  Value zero = createScalarConstant(b, loc, elementType, 0);
  int64_t k = lhsShape.back();
  if (lhsShape.size() >= 2 && rhsShape.size() == 2) {
    int64_t rows = lhsType.getNumElements() / std::max<int64_t>(k, 1);
    if (k == 0)
      rows = resultType.getNumElements() / std::max<int64_t>(rhsShape[1], 1);
    auto flatLhs = RankedTensorType::get({rows, k}, elementType);
    auto flatResult = RankedTensorType::get({rows, rhsShape[1]}, elementType);
    Value product = linalg::MatmulOp::create(
                        b, loc, flatResult,
                        ValueRange{reshapeTensor(b, loc, lhs, flatLhs), rhs},
                        createFilledTensor(b, loc, flatResult, zero))
                        .getResult(0);
    return reshapeTensor(b, loc, product, resultType);
  }
  if (lhsShape.size() >= 3 && lhsShape.size() == rhsShape.size() &&
      lhsShape.drop_back(2) == rhsShape.drop_back(2)) {
    // A parallel loop over the flattened batch of 2-D linalg.matmul, so batched
    // products take the same tiled and vectorized path as the others.
    int64_t batch = 1;
    for (int64_t dim : lhsShape.drop_back(2))
      batch *= dim;
    auto flat = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(
          {batch, shape[shape.size() - 2], shape.back()}, elementType);
    };
    auto matrix = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get({shape[shape.size() - 2], shape.back()},
                                   elementType);
    };
    RankedTensorType flatResult = flat(resultType.getShape());
    Value flatLhs = reshapeTensor(b, loc, lhs, flat(lhsShape));
    Value flatRhs = reshapeTensor(b, loc, rhs, flat(rhsShape));
    auto slice = [&](OpBuilder &nb, Value source, Value index,
                     RankedTensorType type) -> Value {
      SmallVector<OpFoldResult> offsets = {index, nb.getIndexAttr(0),
                                           nb.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1),
                                         nb.getIndexAttr(type.getDimSize(0)),
                                         nb.getIndexAttr(type.getDimSize(1))};
      SmallVector<OpFoldResult> strides(3, nb.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(nb, loc, type, source, offsets,
                                            sizes, strides);
    };
    // Each product of the batch is independent: threads share them.
    auto loop = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(batch)},
        ValueRange{createEmptyTensor(b, loc, flatResult)}, std::nullopt);
    OpBuilder nb = OpBuilder::atBlockBegin(loop.getBody());
    Value index = loop.getInductionVar(0);
    RankedTensorType outType = matrix(resultType.getShape());
    Value product = linalg::MatmulOp::create(
                        nb, loc, outType,
                        ValueRange{slice(nb, flatLhs, index, matrix(lhsShape)),
                                   slice(nb, flatRhs, index, matrix(rhsShape))},
                        createFilledTensor(nb, loc, outType, zero))
                        .getResult(0);
    SmallVector<OpFoldResult> offsets = {index, nb.getIndexAttr(0),
                                         nb.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1),
                                       nb.getIndexAttr(outType.getDimSize(0)),
                                       nb.getIndexAttr(outType.getDimSize(1))};
    SmallVector<OpFoldResult> strides(3, nb.getIndexAttr(1));
    nb.setInsertionPointToStart(loop.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(
        nb, loc, product, loop.getRegionIterArgs()[0], offsets, sizes, strides);
    return reshapeTensor(b, loc, loop.getResult(0), resultType);
  }
  return {};
}

/// ONNX MatMul as one linalg.generic over (result dims..., k) with batch
/// broadcasting and 1-D operands in the indexing maps.
Value createGenericMatMul(OpBuilder &b, Location loc, Value lhsValue,
                          Value rhsValue, RankedTensorType resultType,
                          ValueRange dynamicSizes) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> lhs = cast<RankedTensorType>(lhsValue.getType()).getShape();
  ArrayRef<int64_t> rhs = cast<RankedTensorType>(rhsValue.getType()).getShape();
  ArrayRef<int64_t> result = resultType.getShape();
  bool lhsIsVector = lhs.size() == 1, rhsIsVector = rhs.size() == 1;
  unsigned resultRank = result.size();
  unsigned numLoops = resultRank + 1;
  unsigned numBatch =
      resultRank - (lhsIsVector ? 0 : 1) - (rhsIsVector ? 0 : 1);
  AffineExpr k = getAffineDimExpr(resultRank, ctx);
  ArrayRef<int64_t> batchShape = result.take_front(numBatch);

  auto batchExprs = [&](ArrayRef<int64_t> operand) {
    ArrayRef<int64_t> operandBatch =
        operand.size() > 2 ? operand.drop_back(2) : ArrayRef<int64_t>();
    AffineMap map = getBroadcastMap(ctx, operandBatch, batchShape, numLoops);
    return SmallVector<AffineExpr>(map.getResults());
  };
  SmallVector<AffineExpr> lhsExprs = batchExprs(lhs);
  if (!lhsIsVector)
    lhsExprs.push_back(getAffineDimExpr(numBatch, ctx));
  lhsExprs.push_back(k);
  SmallVector<AffineExpr> rhsExprs = batchExprs(rhs);
  rhsExprs.push_back(k);
  if (!rhsIsVector)
    rhsExprs.push_back(getAffineDimExpr(resultRank - 1, ctx));

  SmallVector<AffineMap> maps = {
      AffineMap::get(numLoops, 0, lhsExprs, ctx),
      AffineMap::get(numLoops, 0, rhsExprs, ctx),
      // Not getMajorSubMap: it returns a null map for a vector . vector
      // product's scalar result.
      AffineMap::get(numLoops, 0,
                     AffineMap::getMultiDimIdentityMap(numLoops, ctx)
                         .getResults()
                         .take_front(resultRank),
                     ctx)};
  SmallVector<utils::IteratorType> iterators(resultRank,
                                             utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);

  Type elementType = resultType.getElementType();
  bool isFloat = isa<FloatType>(elementType);
  Value init = createFilledTensor(
      b, loc, resultType, createScalarConstant(b, loc, elementType, 0),
      dynamicSizes);
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{lhsValue, rhsValue}, init, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value sum;
               if (isFloat)
                 sum = arith::AddFOp::create(
                     nb, l, args[2],
                     arith::MulFOp::create(nb, l, args[0], args[1]));
               else
                 sum = arith::AddIOp::create(
                     nb, l, args[2],
                     arith::MulIOp::create(nb, l, args[0], args[1]));
               linalg::YieldOp::create(nb, l, sum);
             })
      .getResult(0);
}

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, createMatMul(rewriter, op.getLoc(), adaptor.getLhs(),
                         adaptor.getRhs(), op.getType(),
                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

/// softmax(x) = exp(x - max(x)) / sum(exp(x - max(x))) along the axis.
/// Softmax over the last axis, one row at a time: the row's four passes
/// (max, exp, sum, divide) run while it is in L1 instead of sweeping the
/// whole tensor four times. The max and sum start from constants: once
/// vectorized they are registers, and nothing is allocated per row.
Value createRowSoftmax(OpBuilder &b, Location loc, Value input,
                       RankedTensorType type) {
  Type elementType = type.getElementType();
  int64_t columns = type.getShape().back();
  int64_t rows = type.getNumElements() / columns;
  MLIRContext *ctx = b.getContext();
  auto flatType = RankedTensorType::get({rows, columns}, elementType);
  auto rowType = RankedTensorType::get({1, columns}, elementType);
  auto entryType = RankedTensorType::get({1}, elementType);
  Value flat = reshapeTensor(b, loc, input, flatType);
  auto splat = [&](double value) -> Value {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(entryType, b.getFloatAttr(elementType, value)));
  };
  Value lowest = splat(-std::numeric_limits<double>::infinity());
  Value zero = splat(0);
  auto loop = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(rows)},
      ValueRange{createEmptyTensor(b, loc, flatType)}, std::nullopt);
  OpBuilder nb = OpBuilder::atBlockBegin(loop.getBody());
  Value r = loop.getInductionVar(0);
  ValueRange shared = loop.getRegionIterArgs();
  OpFoldResult first = nb.getIndexAttr(0), one = nb.getIndexAttr(1);
  SmallVector<OpFoldResult> rowOffsets = {r, first};
  SmallVector<OpFoldResult> rowSizes = {one, nb.getIndexAttr(columns)};
  SmallVector<OpFoldResult> unit2(2, one);
  Value row = tensor::ExtractSliceOp::create(nb, loc, rowType, flat, rowOffsets,
                                             rowSizes, unit2);
  Value destination = tensor::ExtractSliceOp::create(
      nb, loc, rowType, shared[0], rowOffsets, rowSizes, unit2);

  AffineMap all = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap perRow = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
  using Combine = function_ref<Value(OpBuilder &, Location, Value, Value)>;
  // outs[0] = combine(ins...) over the row, with the maps given.
  auto generic = [&](Type resultType, ValueRange ins, Value out,
                     ArrayRef<AffineMap> maps, bool reduces,
                     Combine combine) -> Value {
    SmallVector<utils::IteratorType> iterators = {
        utils::IteratorType::parallel, reduces ? utils::IteratorType::reduction
                                               : utils::IteratorType::parallel};
    return linalg::GenericOp::create(
               nb, loc, resultType, ins, ValueRange{out}, maps, iterators,
               [&](OpBuilder &gb, Location l, ValueRange args) {
                 Value result = combine(gb, l, args[0], args[1]);
                 linalg::YieldOp::create(gb, l, result);
               })
        .getResult(0);
  };
  Value max =
      generic(entryType, row, lowest, {all, perRow}, true,
              [](OpBuilder &gb, Location l, Value x, Value acc) -> Value {
                return arith::MaximumFOp::create(gb, l, x, acc);
              });
  Value exps = generic(
      rowType, ValueRange{row, max}, destination, {all, perRow, all}, false,
      [](OpBuilder &gb, Location l, Value x, Value m) -> Value {
        return math::ExpOp::create(gb, l, arith::SubFOp::create(gb, l, x, m));
      });
  Value sum = generic(entryType, exps, zero, {all, perRow}, true,
                      [](OpBuilder &gb, Location l, Value e, Value acc) {
                        return createSumStep(gb, l, e, acc);
                      });
  // In place on the exponentials, which are already the row's destination.
  Value normalized =
      generic(rowType, sum, exps, {perRow, all}, false,
              [](OpBuilder &gb, Location l, Value s, Value e) -> Value {
                return arith::DivFOp::create(gb, l, e, s);
              });

  nb.setInsertionPointToStart(loop.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(nb, loc, normalized, shared[0],
                                        rowOffsets, rowSizes, unit2);
  return reshapeTensor(b, loc, loop.getResult(0), type);
}

struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    Type elementType = op.getType().getElementType();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    auto type = cast<RankedTensorType>(op.getType());
    if (axis == type.getRank() - 1 && type.hasStaticShape() &&
        type.getShape().back() > 0) {
      rewriter.replaceOp(op, createRowSoftmax(rewriter, loc, input, type));
      return success();
    }
    Value lowest = createScalarConstant(
        rewriter, loc, elementType, -std::numeric_limits<double>::infinity());
    Value max = createReduction(
        rewriter, loc, input, {axis}, lowest,
        [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
          return arith::MaximumFOp::create(b, l, x, acc);
        });
    Value exps = createBroadcastCombine(
        rewriter, loc, input, max, {axis},
        [](OpBuilder &b, Location l, Value x, Value m) -> Value {
          return math::ExpOp::create(b, l, arith::SubFOp::create(b, l, x, m));
        });
    Value sum = createReduction(
        rewriter, loc, exps, {axis},
        createScalarConstant(rewriter, loc, elementType, 0),
        [](OpBuilder &b, Location l, Value x, Value acc) -> Value {
          return createSumStep(b, l, x, acc);
        });
    Value result = createBroadcastCombine(
        rewriter, loc, exps, sum, {axis},
        [](OpBuilder &b, Location l, Value e, Value s) -> Value {
          return arith::DivFOp::create(b, l, e, s);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

enum class Reduction { Sum, Mean, Max, Min, Prod };

/// What a reduction of `kind` starts from: the identity of its combiner.
Value createReductionIdentity(OpBuilder &b, Location loc, Type elementType,
                              Reduction kind) {
  bool lowest = kind == Reduction::Max;
  if (kind == Reduction::Prod)
    return createScalarConstant(b, loc, elementType, 1);
  if (kind != Reduction::Max && kind != Reduction::Min)
    return createScalarConstant(b, loc, elementType, 0);
  if (auto floatType = dyn_cast<FloatType>(elementType))
    return arith::ConstantOp::create(
        b, loc,
        b.getFloatAttr(floatType,
                       APFloat::getInf(floatType.getFloatSemantics(),
                                       /*Negative=*/lowest)));
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(elementType, lowest ? APInt::getSignedMinValue(bits)
                                           : APInt::getSignedMaxValue(bits)));
}

/// One step of a reduction of `kind`: `x` combined into `acc`.
Value createReductionStep(OpBuilder &b, Location l, Value x, Value acc,
                          Reduction kind) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case Reduction::Max:
    return isFloat ? arith::MaximumFOp::create(b, l, x, acc).getResult()
                   : arith::MaxSIOp::create(b, l, x, acc).getResult();
  case Reduction::Min:
    return isFloat ? arith::MinimumFOp::create(b, l, x, acc).getResult()
                   : arith::MinSIOp::create(b, l, x, acc).getResult();
  case Reduction::Prod:
    return isFloat ? arith::MulFOp::create(b, l, x, acc).getResult()
                   : arith::MulIOp::create(b, l, x, acc).getResult();
  case Reduction::Sum:
  case Reduction::Mean:
    break;
  }
  if (isFloat)
    return createSumStep(b, l, x, acc);
  return arith::AddIOp::create(b, l, x, acc);
}

template <typename OpTy, Reduction kind>
struct ReduceLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    Type elementType = inputType.getElementType();
    bool isFloat = isa<FloatType>(elementType);
    ArrayRef<int64_t> axes = op.getAxes();
    Value init = createReductionIdentity(rewriter, loc, elementType, kind);
    Value sum = createReduction(
        rewriter, loc, adaptor.getInput(), axes, init,
        [&](OpBuilder &b, Location l, Value x, Value acc) {
          return createReductionStep(b, l, x, acc, kind);
        });
    if (kind == Reduction::Mean) {
      // The element count, computed at run time where an axis is dynamic.
      int64_t count = 1;
      Value dynamicCount;
      for (int64_t axis : axes) {
        if (!inputType.isDynamicDim(axis)) {
          count *= inputType.getDimSize(axis);
          continue;
        }
        Value size =
            tensor::DimOp::create(rewriter, loc, adaptor.getInput(), axis);
        dynamicCount = dynamicCount ? arith::MulIOp::create(
                                          rewriter, loc, dynamicCount, size)
                                          .getResult()
                                    : size;
      }
      // The mean of no integers is left at 0 instead of dividing by zero.
      if (!isFloat && count == 0)
        count = 1;
      Value n = createScalarConstant(rewriter, loc, elementType,
                                     static_cast<double>(count));
      if (dynamicCount) {
        Value total = arith::MulIOp::create(
            rewriter, loc, dynamicCount,
            arith::ConstantIndexOp::create(rewriter, loc, count));
        if (!isFloat)
          total = arith::MaxUIOp::create(
              rewriter, loc, total,
              arith::ConstantIndexOp::create(rewriter, loc, 1));
        n = arith::IndexCastUIOp::create(rewriter, loc, rewriter.getI64Type(),
                                         total);
        if (isFloat)
          n = arith::UIToFPOp::create(rewriter, loc, elementType, n);
      }
      auto sumType = cast<RankedTensorType>(sum.getType());
      unsigned rank = sumType.getRank();
      AffineMap identity =
          AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext());
      SmallVector<utils::IteratorType> iterators(rank,
                                                 utils::IteratorType::parallel);
      sum =
          linalg::GenericOp::create(
              rewriter, loc, sumType, sum,
              createEmptyTensor(rewriter, loc, sumType,
                                getDynamicSizes(rewriter, loc, sum)),
              SmallVector<AffineMap>{identity, identity}, iterators,
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value mean =
                    isFloat
                        ? arith::DivFOp::create(b, l, args[0], n).getResult()
                        : arith::DivSIOp::create(b, l, args[0], n).getResult();
                linalg::YieldOp::create(b, l, mean);
              })
              .getResult(0);
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, sum,
                                         cast<RankedTensorType>(op.getType()),
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

} // namespace

Value kiln::createMatMul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                        RankedTensorType resultType, ValueRange dynamicSizes) {
  if (resultType.hasStaticShape() &&
      cast<RankedTensorType>(lhs.getType()).hasStaticShape() &&
      cast<RankedTensorType>(rhs.getType()).hasStaticShape())
    if (Value named = createNamedMatMul(b, loc, lhs, rhs, resultType))
      return named;
  return createGenericMatMul(b, loc, lhs, rhs, resultType, dynamicSizes);
}

void kiln::populateStructuredLoweringPatterns(RewritePatternSet &patterns) {
  patterns
      .add<MatMulLowering, SoftmaxLowering,
           ReduceLowering<ReduceSumOp, Reduction::Sum>,
           ReduceLowering<ReduceMeanOp, Reduction::Mean>,
           ReduceLowering<ReduceMaxOp, Reduction::Max>,
           ReduceLowering<ReduceMinOp, Reduction::Min>,
           ReduceLowering<ReduceProdOp, Reduction::Prod>>(patterns.getContext());
}
