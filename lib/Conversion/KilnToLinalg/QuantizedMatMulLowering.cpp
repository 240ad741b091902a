//===- QuantizedMatMulLowering.cpp - integer-weight products to linalg ----===//
//
// kiln.quantized_matmul and kiln.int4_matmul as five generics each: each
// row's range, its scale and zero point, the rows quantized to uint8, the
// product with the weight panels, and the epilogue scaling back to floats.
// The product is a plain contraction (the reference every build can run);
// on CPUs with AVX2, kiln-lower-int8-panel-products and
// kiln-lower-int4-panel-products replace it after bufferization with
// register-blocked kernels.
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

/// What both products share: the input as `[rows, K]` rows (a row count
/// known at run time if a leading dimension is dynamic), quantized to uint8
/// row by row, and the helpers to build generics over them.
class RowQuantizer {
public:
  RowQuantizer(OpBuilder &b, Location loc, Value input)
      : b(b), loc(loc), ctx(b.getContext()) {
    auto inputType = cast<RankedTensorType>(input.getType());
    k = inputType.getShape().back();
    rows = 1;
    for (int64_t dim : inputType.getShape().drop_back())
      rows = ShapedType::isDynamic(dim) || rows == ShapedType::kDynamic
                 ? ShapedType::kDynamic
                 : rows * dim;
    if (ShapedType::isDynamic(rows)) {
      Value count = arith::ConstantIndexOp::create(b, loc, 1);
      for (int64_t d = 0; d + 1 < inputType.getRank(); ++d)
        count = arith::MulIOp::create(b, loc, count,
                                      tensor::DimOp::create(b, loc, input, d));
      dynamicRows.push_back(count);
    }
    x = reshapeTensor(b, loc, input, type({rows, k}, b.getF32Type()),
                      dynamicRows);
  }

  RankedTensorType type(ArrayRef<int64_t> shape, Type element) const {
    return RankedTensorType::get(shape, element);
  }
  AffineMap map(unsigned loops, ArrayRef<unsigned> dims) const {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : dims)
      exprs.push_back(getAffineDimExpr(d, ctx));
    return AffineMap::get(loops, 0, exprs, ctx);
  }
  Value constant(Type t, double v) const {
    return createScalarConstant(b, loc, t, v);
  }
  /// A tensor of `shape` (its first dimension the rows), empty or filled.
  Value empty(ArrayRef<int64_t> shape, Type element) const {
    return createEmptyTensor(b, loc, type(shape, element), dynamicRows);
  }
  Value filled(ArrayRef<int64_t> shape, Type element, double v) const {
    return createFilledTensor(b, loc, type(shape, element),
                              constant(element, v), dynamicRows);
  }
  Value reshape(Value value, ArrayRef<int64_t> shape) const {
    return reshapeTensor(
        b, loc, value,
        type(shape, cast<RankedTensorType>(value.getType()).getElementType()),
        dynamicRows);
  }

  /// Sets `rowScale`, `rowZero` and `quantized`: the rows as uint8 in groups
  /// of 4, `[rows, paddedK / 4, 4]`, zeros past K. Each row over its own
  /// range, or with the 0-D `staticScale` and uint8 `staticZero` if given,
  /// each column's scale times its `smoothing` factor if that is given too.
  void quantize(int64_t paddedK, Value staticScale = {}, Value staticZero = {},
                Value smoothing = {}) {
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    if (staticScale) {
      // One scale and zero point for every row: 0-D operands read by each
      // generic (no fills, which would be loops of their own).
      isStatic = true;
      rowScale = staticScale;
      Value zero = arith::ExtUIOp::create(
          b, loc, i32, tensor::ExtractOp::create(b, loc, staticZero, ValueRange{}));
      rowZero = tensor::FromElementsOp::create(b, loc, type({}, i32), zero);
      // x / s, as QuantizeLinear divides (a multiplication by 1 / s could
      // round differently).
      quantizeRows(paddedK, staticScale, /*divide=*/true, smoothing);
      return;
    }
    // Each row's minimum and maximum, starting from 0.
    Value lowInit = filled({rows}, f32, 0);
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
    Value rowEmpty = empty({rows}, f32);
    auto params = createGeneric(
        b, loc, range.getResults(), {rowEmpty, rowEmpty, empty({rows}, i32)},
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
    rowScale = params.getResult(1);
    rowZero = params.getResult(2);
    quantizeRows(paddedK, params.getResult(0), /*divide=*/false);
  }

  /// How a generic over `loops` loops, the first the rows, reads `rowScale`
  /// and `rowZero`: one per row, or the static quantization's one.
  AffineMap rowMap(unsigned loops) const {
    return isStatic ? AffineMap::get(loops, 0, {}, ctx) : map(loops, {0});
  }

  /// Sets `quantized` from `x`, `rowZero` and `factor` (read like them):
  /// the scale to divide by, or its inverse to multiply by; times each
  /// column's `smoothing` factor if given.
  void quantizeRows(int64_t paddedK, Value factor, bool divide,
                    Value smoothing = {}) {
    Type f32 = b.getF32Type(), i8 = b.getI8Type();
    SmallVector<Value> inputs = {x, factor, rowZero};
    SmallVector<AffineMap> maps = {map(2, {0, 1}), rowMap(2), rowMap(2)};
    if (smoothing) {
      inputs.push_back(smoothing);
      maps.push_back(map(2, {1}));
    }
    maps.push_back(map(2, {0, 1}));
    auto quantizeRows = createGeneric(
        b, loc, inputs, empty({rows, k}, i8), maps,
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          auto c = [&](double v) { return createScalarConstant(nb, l, f32, v); };
          Value divisor =
              smoothing ? arith::MulFOp::create(nb, l, args[1], args[3]).getResult()
                        : args[1];
          Value scaled =
              divide ? arith::DivFOp::create(nb, l, args[0], divisor).getResult()
                     : arith::MulFOp::create(nb, l, args[0], divisor).getResult();
          Value q = math::RoundEvenOp::create(nb, l, scaled);
          q = arith::AddFOp::create(nb, l, q,
                                    arith::SIToFPOp::create(nb, l, f32, args[2]));
          q = arith::MinNumFOp::create(
              nb, l, arith::MaxNumFOp::create(nb, l, q, c(0)), c(255));
          linalg::YieldOp::create(nb, l,
                                  ValueRange{arith::FPToUIOp::create(nb, l, i8, q)});
        });
    quantized = reshape(padColumns(quantizeRows.getResult(0), paddedK),
                        {rows, paddedK / 4, 4});
  }

  /// `[rows, k]` `value` widened to `paddedK` columns with zeros.
  Value padColumns(Value value, int64_t paddedK) const {
    if (k == paddedK)
      return value;
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    Value padded = filled({rows, paddedK}, element, 0);
    OpFoldResult rowSize = dynamicRows.empty()
                               ? OpFoldResult(b.getIndexAttr(rows))
                               : OpFoldResult(dynamicRows[0]);
    return tensor::InsertSliceOp::create(
        b, loc, value, padded,
        getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{0, 0}),
        SmallVector<OpFoldResult>{rowSize, b.getIndexAttr(k)},
        getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{1, 1}));
  }

  /// The first `n` columns of `value` (a view, no copy).
  Value firstColumns(Value value, int64_t n) const {
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
  }

  OpBuilder &b;
  Location loc;
  MLIRContext *ctx;
  int64_t rows, k;
  SmallVector<Value> dynamicRows;
  Value x, quantized, rowScale, rowZero;
  bool isStatic = false;
};

struct QuantizedMatMulLowering : OpConversionPattern<QuantizedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(QuantizedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> panels = op.getWeights().getType().getShape();
    int64_t groups = panels[1], width = panels[2];
    int64_t n = op.getType().getShape().back();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type(), i32 = b.getI32Type();
    RowQuantizer q(b, loc, adaptor.getInput());
    q.quantize(groups * 4, adaptor.getInputScale(), adaptor.getInputZeroPoint(),
               adaptor.getSmoothing());
    int64_t rows = q.rows;

    // The integer product: loops (row, panel, column, group, lane).
    auto product = createGeneric(
        b, loc, {q.quantized, adaptor.getWeights()},
        q.filled({rows, panels[0], width}, i32, 0),
        {q.map(5, {0, 3, 4}), q.map(5, {1, 3, 2, 4}), q.map(5, {0, 1, 2})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value row = arith::ExtUIOp::create(nb, l, i32, args[0]);
          Value w = arith::ExtSIOp::create(nb, l, i32, args[1]);
          Value sum = arith::AddIOp::create(
              nb, l, args[2], arith::MulIOp::create(nb, l, row, w));
          linalg::YieldOp::create(nb, l, sum);
        });
    product->setAttr(kInt8PanelProductAttr, b.getUnitAttr());
    Value acc = q.reshape(product.getResult(0), {rows, panels[0] * width});

    // (acc - zero_point * column_sum) * row_scale * scale, the first n
    // columns.
    auto epilogue = createGeneric(
        b, loc,
        {q.firstColumns(acc, n), q.rowZero, q.rowScale,
         q.firstColumns(adaptor.getScales(), n),
         q.firstColumns(adaptor.getColumnSums(), n)},
        q.empty({rows, n}, f32),
        {q.map(2, {0, 1}), q.rowMap(2), q.rowMap(2), q.map(2, {1}),
         q.map(2, {1}), q.map(2, {0, 1})},
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
                                         op.getType(),
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

struct Int4MatMulLowering : OpConversionPattern<Int4MatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(Int4MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> panels = op.getWeights().getType().getShape();
    int64_t width = panels[2], depth = panels[1] * 8;
    int64_t block = op.getBlockSize(), blocks = depth / block;
    int64_t n = op.getType().getShape().back();
    OpBuilder &b = rewriter;
    Type f32 = b.getF32Type(), i32 = b.getI32Type(), i8 = b.getI8Type();
    bool floatInput = op.getFloatInput();
    RowQuantizer q(b, loc, adaptor.getInput());
    if (!floatInput)
      q.quantize(depth);
    int64_t rows = q.rows;

    // The product, block by block: loops (row, panel, column, block, pair
    // of groups in the block, half of the byte, lane), over views with one
    // dimension per loop. The integers of a block are scaled by its scale
    // and summed in float (with float rows, each product is). Its zero
    // points, if given, are read like the scales.
    int64_t pairs = block / 8;
    Value rowGroups =
        q.reshape(floatInput ? q.padColumns(q.x, depth) : q.quantized,
                  {rows, blocks, pairs, 2, 4});
    Value weights = reshapeTensor(
        b, loc, adaptor.getWeights(),
        q.type({panels[0], blocks, pairs, width, 4}, i8), {});
    SmallVector<Value> inputs = {rowGroups, weights, adaptor.getScales()};
    SmallVector<AffineMap> maps = {q.map(7, {0, 3, 4, 5, 6}),
                                   q.map(7, {1, 3, 4, 2, 6}),
                                   q.map(7, {1, 3, 2})};
    Value zeroPoints = adaptor.getZeroPoints();
    if (zeroPoints) {
      inputs.push_back(zeroPoints);
      maps.push_back(q.map(7, {1, 3, 2}));
    }
    maps.push_back(q.map(7, {0, 1, 2}));
    auto product = createGeneric(
        b, loc, inputs, q.filled({rows, panels[0], width}, f32, 0), maps,
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction, IteratorType::reduction,
         IteratorType::reduction, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          auto c = [&](Type t, int64_t v) {
            return arith::ConstantOp::create(nb, l, t, nb.getIntegerAttr(t, v))
                .getResult();
          };
          Value high = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne,
              linalg::IndexOp::create(nb, l, 5),
              arith::ConstantIndexOp::create(nb, l, 0));
          Value byte = arith::SelectOp::create(
              nb, l, high, arith::ShRUIOp::create(nb, l, args[1], c(i8, 4)),
              args[1]);
          Value nibble = arith::AndIOp::create(nb, l, byte, c(i8, 15));
          Value zero = zeroPoints
                           ? arith::ExtSIOp::create(nb, l, i32, args[3]).getResult()
                           : c(i32, 8);
          Value w = arith::SubIOp::create(
              nb, l, arith::ExtUIOp::create(nb, l, i32, nibble), zero);
          Value real;
          if (floatInput) {
            Value weight = arith::MulFOp::create(
                nb, l, arith::SIToFPOp::create(nb, l, f32, w), args[2]);
            real = arith::MulFOp::create(nb, l, args[0], weight);
          } else {
            Value integer = arith::MulIOp::create(
                nb, l, arith::ExtUIOp::create(nb, l, i32, args[0]), w);
            real = arith::MulFOp::create(
                nb, l, arith::SIToFPOp::create(nb, l, f32, integer), args[2]);
          }
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::AddFOp::create(nb, l, args.back(), real)});
        });
    product->setAttr(kInt4PanelProductAttr, b.getUnitAttr());
    Value acc = q.reshape(product.getResult(0), {rows, panels[0] * width});
    if (floatInput) {
      rewriter.replaceOp(op, reshapeTensor(b, loc, q.firstColumns(acc, n),
                                           op.getType(),
                                           getDynamicResultSizes(rewriter, op)));
      return success();
    }

    // (acc - zero_point * column_sum) * row_scale, the first n columns.
    auto epilogue = createGeneric(
        b, loc,
        {q.firstColumns(acc, n), q.rowZero, q.rowScale,
         q.firstColumns(adaptor.getColumnSums(), n)},
        q.empty({rows, n}, f32),
        {q.map(2, {0, 1}), q.rowMap(2), q.rowMap(2), q.map(2, {1}),
         q.map(2, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value zeroPoint = arith::SIToFPOp::create(nb, l, f32, args[1]);
          Value exact = arith::SubFOp::create(
              nb, l, args[0], arith::MulFOp::create(nb, l, zeroPoint, args[3]));
          linalg::YieldOp::create(
              nb, l, ValueRange{arith::MulFOp::create(nb, l, exact, args[2])});
        });
    rewriter.replaceOp(op, reshapeTensor(b, loc, epilogue.getResult(0),
                                         op.getType(),
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

} // namespace

void kiln::populateQuantizedMatMulLoweringPatterns(
    RewritePatternSet &patterns) {
  patterns.add<QuantizedMatMulLowering, Int4MatMulLowering>(patterns.getContext());
}
