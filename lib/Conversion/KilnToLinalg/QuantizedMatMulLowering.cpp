//===- QuantizedMatMulLowering.cpp - kiln.quantized_matmul to linalg ------===//
//
// Five generics: each row's range, its scale and zero point, the rows
// quantized to uint8, the integer product with the weight panels, and the
// epilogue scaling the integers back to floats. The product is a plain
// contraction (the reference every build can run); on CPUs with AVX2,
// kiln-lower-int8-panel-products replaces it after bufferization with a
// register-blocked kernel.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace kiln;

namespace {

using utils::IteratorType;

/// Generic over `loops` with `maps` (inputs' then outputs'), the body built
/// by `body`.
linalg::GenericOp
createGeneric(OpBuilder &b, Location loc, ValueRange inputs, ValueRange outputs,
              ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
              function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  return linalg::GenericOp::create(b, loc, ValueRange(outputs).getTypes(),
                                   inputs, outputs, maps, iterators, body);
}

struct QuantizedMatMulLowering : OpConversionPattern<QuantizedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    RankedTensorType resultType = op.getType();
    ArrayRef<int64_t> panels = op.getWeights().getType().getShape();
    int64_t k = inputType.getShape().back();
    // The rows of all leading dimensions, a count known at run time if any
    // of them is dynamic (a sequence length).
    int64_t rows = 1;
    for (int64_t dim : inputType.getShape().drop_back())
      rows = ShapedType::isDynamic(dim) || rows == ShapedType::kDynamic
                 ? ShapedType::kDynamic
                 : rows * dim;
    SmallVector<Value> dynamicRows;
    if (ShapedType::isDynamic(rows)) {
      Value count = arith::ConstantIndexOp::create(rewriter, loc, 1);
      for (int64_t d = 0; d + 1 < inputType.getRank(); ++d)
        count = arith::MulIOp::create(
            rewriter, loc, count,
            tensor::DimOp::create(rewriter, loc, adaptor.getInput(), d));
      dynamicRows.push_back(count);
    }
    int64_t groups = panels[1], width = panels[2];
    int64_t n = resultType.getShape().back();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type(), i32 = b.getI32Type(), i8 = b.getI8Type();
    auto type = [](ArrayRef<int64_t> shape, Type element) {
      return RankedTensorType::get(shape, element);
    };
    auto map = [&](unsigned loops, ArrayRef<unsigned> dims) {
      SmallVector<AffineExpr> exprs;
      for (unsigned d : dims)
        exprs.push_back(getAffineDimExpr(d, ctx));
      return AffineMap::get(loops, 0, exprs, ctx);
    };
    auto constant = [&](Type t, double v) {
      return createScalarConstant(b, loc, t, v);
    };
    Value x = reshapeTensor(b, loc, adaptor.getInput(), type({rows, k}, f32),
                            dynamicRows);

    // Each row's minimum and maximum, starting from 0.
    Value zero = constant(f32, 0);
    Value lowInit =
        createFilledTensor(b, loc, type({rows}, f32), zero, dynamicRows);
    auto range = createGeneric(
        b, loc, x, {lowInit, lowInit}, {map(2, {0, 1}), map(2, {0}), map(2, {0})},
        {IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value low = arith::MinNumFOp::create(nb, l, args[0], args[1]);
          Value high = arith::MaxNumFOp::create(nb, l, args[0], args[2]);
          linalg::YieldOp::create(nb, l, ValueRange{low, high});
        });

    // Scale (its reciprocal for quantizing) and zero point of each row; an
    // all-zero row gets reciprocal 0, so it quantizes to its zero point, 0.
    Value rowEmpty = createEmptyTensor(b, loc, type({rows}, f32), dynamicRows);
    Value rowZeroEmpty =
        createEmptyTensor(b, loc, type({rows}, i32), dynamicRows);
    auto params = createGeneric(
        b, loc, range.getResults(), {rowEmpty, rowEmpty, rowZeroEmpty},
        SmallVector<AffineMap>(5, map(1, {0})), {IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          auto c = [&](double v) { return createScalarConstant(nb, l, f32, v); };
          Value scale = arith::DivFOp::create(
              nb, l, arith::SubFOp::create(nb, l, args[1], args[0]), c(255));
          Value positive = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OGT, scale, c(0));
          Value inverse = arith::SelectOp::create(
              nb, l, positive, arith::DivFOp::create(nb, l, c(1), scale), c(0));
          Value zeroPoint = math::RoundEvenOp::create(
              nb, l,
              arith::MulFOp::create(nb, l, arith::NegFOp::create(nb, l, args[0]),
                                    inverse));
          zeroPoint = arith::MinNumFOp::create(
              nb, l, arith::MaxNumFOp::create(nb, l, zeroPoint, c(0)), c(255));
          linalg::YieldOp::create(
              nb, l,
              ValueRange{inverse, scale,
                         arith::FPToSIOp::create(nb, l, i32, zeroPoint)});
        });
    Value inverse = params.getResult(0), rowScale = params.getResult(1),
          rowZero = params.getResult(2);

    // The rows as uint8, in groups of 4 (zeros past K).
    auto quantize = createGeneric(
        b, loc, {x, inverse, rowZero},
        createEmptyTensor(b, loc, type({rows, k}, i8), dynamicRows),
        {map(2, {0, 1}), map(2, {0}), map(2, {0}), map(2, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          auto c = [&](double v) { return createScalarConstant(nb, l, f32, v); };
          Value q = math::RoundEvenOp::create(
              nb, l, arith::MulFOp::create(nb, l, args[0], args[1]));
          q = arith::AddFOp::create(nb, l, q,
                                    arith::SIToFPOp::create(nb, l, f32, args[2]));
          q = arith::MinNumFOp::create(
              nb, l, arith::MaxNumFOp::create(nb, l, q, c(0)), c(255));
          linalg::YieldOp::create(nb, l,
                                  ValueRange{arith::FPToUIOp::create(nb, l, i8, q)});
        });
    Value quantized = quantize.getResult(0);
    if (k != groups * 4) {
      Value padded = createFilledTensor(b, loc, type({rows, groups * 4}, i8),
                                        constant(i8, 0), dynamicRows);
      OpFoldResult rowSize = dynamicRows.empty()
                                 ? OpFoldResult(b.getIndexAttr(rows))
                                 : OpFoldResult(dynamicRows[0]);
      quantized = tensor::InsertSliceOp::create(
          b, loc, quantized, padded,
          getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{0, 0}),
          SmallVector<OpFoldResult>{rowSize, b.getIndexAttr(k)},
          getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{1, 1}));
    }
    quantized = reshapeTensor(b, loc, quantized, type({rows, groups, 4}, i8),
                              dynamicRows);

    // The integer product: loops (row, panel, column, group, lane).
    Value accInit = createFilledTensor(
        b, loc, type({rows, panels[0], width}, i32), constant(i32, 0),
        dynamicRows);
    auto product = createGeneric(
        b, loc, {quantized, adaptor.getWeights()}, accInit,
        {map(5, {0, 3, 4}), map(5, {1, 3, 2, 4}), map(5, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value q = arith::ExtUIOp::create(nb, l, i32, args[0]);
          Value w = arith::ExtSIOp::create(nb, l, i32, args[1]);
          Value sum = arith::AddIOp::create(
              nb, l, args[2], arith::MulIOp::create(nb, l, q, w));
          linalg::YieldOp::create(nb, l, sum);
        });
    product->setAttr(kInt8PanelProductAttr, b.getUnitAttr());
    Value acc = reshapeTensor(b, loc, product.getResult(0),
                              type({rows, panels[0] * width}, i32),
                              dynamicRows);
    // The real columns of the padded panels (views, no copies).
    auto firstColumns = [&](Value value) -> Value {
      auto valueType = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> sizes(valueType.getShape());
      if (sizes.back() == n)
        return value;
      sizes.back() = n;
      SmallVector<OpFoldResult> offsets(sizes.size(), b.getIndexAttr(0)),
          strides(sizes.size(), b.getIndexAttr(1)), extents;
      for (int64_t size : sizes)
        extents.push_back(ShapedType::isDynamic(size)
                              ? OpFoldResult(dynamicRows[0])
                              : OpFoldResult(b.getIndexAttr(size)));
      return tensor::ExtractSliceOp::create(
          b, loc, type(sizes, valueType.getElementType()), value, offsets,
          extents, strides);
    };

    // (acc - zero_point * column_sum) * row_scale * scale, the first n
    // columns.
    auto epilogue = createGeneric(
        b, loc,
        {firstColumns(acc), rowZero, rowScale, firstColumns(adaptor.getScales()),
         firstColumns(adaptor.getColumnSums())},
        createEmptyTensor(b, loc, type({rows, n}, f32), dynamicRows),
        {map(2, {0, 1}), map(2, {0}), map(2, {0}), map(2, {1}), map(2, {1}),
         map(2, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value exact = arith::SubIOp::create(
              nb, l, args[0], arith::MulIOp::create(nb, l, args[1], args[4]));
          Value real = arith::SIToFPOp::create(nb, l, f32, exact);
          Value scale = arith::MulFOp::create(nb, l, args[2], args[3]);
          linalg::YieldOp::create(nb, l,
                                  ValueRange{arith::MulFOp::create(nb, l, real, scale)});
        });
    rewriter.replaceOp(op, reshapeTensor(b, loc, epilogue.getResult(0),
                                         resultType,
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

} // namespace

void kiln::populateQuantizedMatMulLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<QuantizedMatMulLowering>(patterns.getContext());
}
