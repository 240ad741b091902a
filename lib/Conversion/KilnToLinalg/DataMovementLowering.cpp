//===- DataMovementLowering.cpp - reshape, transpose, concat, gather ------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kiln;

namespace {

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue());
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       reshapeTensor(rewriter, op.getLoc(), adaptor.getInput(),
                                     cast<RankedTensorType>(op.getType()),
                                     adaptor.getDims()));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    Value init = createEmptyTensor(rewriter, op.getLoc(), resultType,
                                   getDynamicResultSizes(rewriter, op));
    auto transpose = linalg::TransposeOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), init, op.getPerm());
    rewriter.replaceOp(op, transpose.getResult());
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    // An empty slice reads nothing; extract_slice rejects its offsets when
    // the input is empty too.
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOpWithNewOp<tensor::EmptyOp>(op, type.getShape(),
                                                   type.getElementType());
      return success();
    }
    // A dynamic size keeps its dimension whole.
    SmallVector<OpFoldResult> sizes;
    for (auto [d, size] : llvm::enumerate(op.getSizes()))
      sizes.push_back(ShapedType::isDynamic(size)
                          ? OpFoldResult(tensor::DimOp::create(
                                rewriter, op.getLoc(), adaptor.getInput(), d))
                          : rewriter.getIndexAttr(size));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(),
        getAsIndexOpFoldResult(op.getContext(), op.getOffsets()), sizes,
        getAsIndexOpFoldResult(op.getContext(), op.getStrides()));
    return success();
  }
};

/// An extract_slice at run-time offsets; sizes and offsets are clamped so
/// the box stays inside the input (the importer proved it does).
struct DynamicSliceLowering : OpConversionPattern<DynamicSliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DynamicSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(rewriter, loc, input);
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    for (auto [axis, offset, size] :
         llvm::zip(op.getAxes(), adaptor.getOffsets(), adaptor.getSizes())) {
      Value dim = getValueOrCreateConstantIndexOp(rewriter, loc, sizes[axis]);
      Value clampedSize = arith::MinSIOp::create(
          rewriter, loc, arith::MaxSIOp::create(rewriter, loc, size, zero), dim);
      Value last = arith::SubIOp::create(rewriter, loc, dim, clampedSize);
      Value clampedOffset = arith::MaxSIOp::create(
          rewriter, loc, arith::MinSIOp::create(rewriter, loc, offset, last),
          zero);
      offsets[axis] = clampedOffset;
      sizes[axis] = clampedSize;
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, cast<RankedTensorType>(op.getType()), input, offsets, sizes,
        strides);
    return success();
  }
};

/// Inputs past which a concatenation becomes one tensor.concat. Below it,
/// each input is inserted into its slice of one result tensor, so that
/// empty-tensor elimination can have its producer write there directly;
/// but those inserts form one chain of aliases, which one-shot
/// bufferization analyses in time quadratic in its length (100 inputs
/// 5.5 s, 200 over a minute), where tensor.concat is a single op that
/// copies each input once.
constexpr size_t kMaxInsertedConcatInputs = 32;

/// Concatenation writes each input into its slice of one result tensor.
struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    unsigned rank = resultType.getRank();
    // An empty input adds nothing, and a slice at the end of the axis would
    // not verify.
    SmallVector<Value> inputs;
    for (Value input : adaptor.getInputs())
      if (cast<RankedTensorType>(input.getType()).getDimSize(axis) != 0)
        inputs.push_back(input);
    if (inputs.size() > kMaxInsertedConcatInputs) {
      rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, resultType, axis,
                                                    inputs);
      return success();
    }
    Value result = createEmptyTensor(rewriter, loc, resultType,
                                     getDynamicResultSizes(rewriter, op));
    OpFoldResult offset = rewriter.getIndexAttr(0);
    for (Value input : inputs) {
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, input);
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
      std::optional<int64_t> before = getConstantIntValue(offset),
                             size = getConstantIntValue(sizes[axis]);
      offset = before && size
                   ? OpFoldResult(rewriter.getIndexAttr(*before + *size))
                   : OpFoldResult(arith::AddIOp::create(
                         rewriter, loc,
                         getValueOrCreateConstantIndexOp(rewriter, loc, offset),
                         getValueOrCreateConstantIndexOp(rewriter, loc,
                                                         sizes[axis])));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Gather as a linalg.generic over the result that reads its index from
/// `indices` and extracts from `data`.
struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto resultType = cast<RankedTensorType>(op.getType());
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    unsigned rank = resultType.getRank();
    int64_t indicesRank = indicesType.getRank();
    Value data = adaptor.getData();
    Value axisSize = getAxisSize(rewriter, loc, data, axis);

    SmallVector<AffineExpr> indexExprs;
    for (int64_t i = 0; i < indicesRank; ++i)
      indexExprs.push_back(getAffineDimExpr(axis + i, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, indexExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, adaptor.getIndices(),
        createEmptyTensor(rewriter, loc, resultType,
                          getDynamicResultSizes(rewriter, op)),
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          coords.push_back(getClampedIndex(b, l, args[0], axisSize));
          for (int64_t d = axis + 1; d < dataType.getRank(); ++d)
            coords.push_back(
                linalg::IndexOp::create(b, l, d - 1 + indicesRank));
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// GatherElements as a linalg.generic over the result (the shape of
/// `indices`) that extracts from `data` at the result's coordinates with
/// the axis coordinate read from `indices`.
struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    unsigned rank = resultType.getRank();
    Value data = adaptor.getData();
    Value axisSize = getAxisSize(rewriter, loc, data, axis);
    // A dimension other than `axis` may be larger in `indices` than in
    // `data`; unless the static sizes show it is not, its coordinate is
    // clamped too rather than read outside `data`.
    auto dataType = cast<RankedTensorType>(data.getType());
    SmallVector<Value> clampSizes(rank);
    for (unsigned d = 0; d < rank; ++d) {
      if (d != axis &&
          (resultType.isDynamicDim(d) || dataType.isDynamicDim(d) ||
           resultType.getDimSize(d) > dataType.getDimSize(d)))
        clampSizes[d] = getAxisSize(rewriter, loc, data, d);
    }
    SmallVector<AffineMap> maps(
        2, AffineMap::getMultiDimIdentityMap(rank, op.getContext()));
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, adaptor.getIndices(),
        createEmptyTensor(rewriter, loc, resultType,
                          getDynamicResultSizes(rewriter, op)),
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> coords;
          for (unsigned d = 0; d < rank; ++d) {
            if (d == axis) {
              coords.push_back(getClampedIndex(b, l, args[0], axisSize));
              continue;
            }
            Value index = linalg::IndexOp::create(b, l, d);
            if (clampSizes[d])
              index = getClampedIndex(
                  b, l, arith::IndexCastOp::create(b, l, b.getI64Type(), index),
                  clampSizes[d]);
            coords.push_back(index);
          }
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// `start + i * delta` for every index i of the result.
struct RangeLowering : OpConversionPattern<RangeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getResult().getType();
    Type elementType = type.getElementType();
    MLIRContext *ctx = op.getContext();
    AffineMap scalar = AffineMap::get(1, 0, ctx);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{adaptor.getStart(), adaptor.getDelta()},
        createEmptyTensor(rewriter, loc, type,
                          adaptor.getSize() ? ValueRange(adaptor.getSize())
                                            : ValueRange()),
        ArrayRef<AffineMap>{scalar, scalar, identity},
        utils::IteratorType::parallel,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value step, value;
          if (isa<FloatType>(elementType)) {
            step = arith::UIToFPOp::create(
                b, l, elementType,
                arith::IndexCastUIOp::create(b, l, b.getI64Type(), i));
            value = arith::AddFOp::create(
                b, l, args[0], arith::MulFOp::create(b, l, step, args[1]));
          } else {
            step = arith::IndexCastOp::create(b, l, elementType, i);
            value = arith::AddIOp::create(
                b, l, args[0], arith::MulIOp::create(b, l, step, args[1]));
          }
          linalg::YieldOp::create(b, l, value);
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

/// One reduction over the indices, starting from the incoming status: a
/// non-zero status stays, otherwise the first out-of-range index sets `code`.
struct CheckIndexRangeLowering : OpConversionPattern<CheckIndexRangeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CheckIndexRangeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    unsigned rank = indicesType.getRank();
    int64_t size = static_cast<int64_t>(op.getSize());
    int32_t code = static_cast<int32_t>(op.getCode());
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   AffineMap::get(rank, 0, ctx)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, op.getType(), adaptor.getIndices(), adaptor.getStatus(),
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Type i64 = b.getI64Type(), i32 = b.getI32Type();
          Value index = args[0], status = args[1];
          Value tooLow = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, index,
              createScalarConstant(b, l, i64, static_cast<double>(-size)));
          Value tooHigh = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sge, index,
              createScalarConstant(b, l, i64, static_cast<double>(size)));
          Value outside = arith::OrIOp::create(b, l, tooLow, tooHigh);
          Value zero = createScalarConstant(b, l, i32, 0);
          Value failedBefore = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ne, status, zero);
          Value fresh = arith::SelectOp::create(
              b, l, outside, createScalarConstant(b, l, i32, code), zero);
          linalg::YieldOp::create(
              b, l,
              arith::SelectOp::create(b, l, failedBefore, status, fresh)
                  .getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void kiln::populateDataMovementLoweringPatterns(RewritePatternSet &patterns) {
  patterns
      .add<ConstantLowering, ReshapeLowering, TransposeLowering, SliceLowering,
           DynamicSliceLowering, ConcatLowering, GatherLowering,
           GatherElementsLowering, RangeLowering, CheckIndexRangeLowering>(
          patterns.getContext());
}
