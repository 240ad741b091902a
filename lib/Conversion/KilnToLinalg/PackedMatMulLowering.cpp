//===- PackedMatMulLowering.cpp - packed products and their epilogues -----===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

namespace {

/// Rows of a product's row block, where it has at least two: a DiT step's
/// batch of 2 x 256 tokens splits into its two images.
constexpr int64_t kRowBlock = 256;

/// `activation` (gelu_erf or gelu_tanh) of each element of `block`, as
/// `h + h * inner` with `h = x / 2`: the epilogue runs once per output of
/// the product's widest layer, so it is written in the fewest multiplies
/// (x / sqrt(2) as a product, the tanh argument as
/// `x * (sqrt(2 / pi) + sqrt(2 / pi) * 0.044715 * x^2)`). It rounds within
/// a few ulp of the unfused graph.
Value applyActivation(OpBuilder &b, Location loc, Value block,
                      Activation activation) {
  auto type = cast<RankedTensorType>(block.getType());
  MLIRContext *ctx = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(type.getRank(), ctx);
  // In place (the block is the generic's init), so the block stays in the
  // result's buffer instead of a temporary per panel.
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{}, ValueRange{block},
             ArrayRef<AffineMap>{identity},
             SmallVector<utils::IteratorType>(type.getRank(),
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value x = args[0];
               auto constant = [&](double value) -> Value {
                 return arith::ConstantOp::create(
                     nb, l, nb.getF32FloatAttr(float(value)));
               };
               Value inner;
               if (activation == Activation::GeluErf) {
                 inner = math::ErfOp::create(
                     nb, l,
                     arith::MulFOp::create(nb, l, x, constant(M_SQRT1_2)));
               } else {
                 double c = std::sqrt(2 / M_PI);
                 Value square = arith::MulFOp::create(nb, l, x, x);
                 Value factor = math::FmaOp::create(
                     nb, l, square, constant(c * 0.044715), constant(c));
                 inner = math::TanhOp::create(
                     nb, l, arith::MulFOp::create(nb, l, x, factor));
               }
               Value half = arith::MulFOp::create(nb, l, x, constant(0.5));
               linalg::YieldOp::create(
                   nb, l,
                   math::FmaOp::create(nb, l, half, inner, half).getResult());
             })
      .getResult(0);
}

/// kiln.packed_matmul: a parallel loop over the full panels (and over
/// 256-row blocks of a long, static lhs), each a named linalg.matmul of the
/// lhs's rows with one contiguous [K, W] panel writing its W columns of the
/// result, then the padded last panel, if any,
/// into a block of its own whose valid columns are copied. A bias is where
/// each block's accumulation starts; the activation, then the residual,
/// update the block in place.
struct PackedMatMulLowering : OpConversionPattern<PackedMatMulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PackedMatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto lhsType = cast<RankedTensorType>(adaptor.getLhs().getType());
    auto panelsType = cast<RankedTensorType>(adaptor.getRhs().getType());
    auto resultType = cast<RankedTensorType>(op.getType());
    Type elementType = resultType.getElementType();
    int64_t k = lhsType.getShape().back();
    if (k == 0)
      return rewriter.notifyMatchFailure(op, "empty reduction");
    // The lhs's rows: all its leading dimensions, a run-time count when
    // one of them is dynamic.
    int64_t rows = 1;
    Value rowCount;
    for (int64_t d = 0; d + 1 < lhsType.getRank(); ++d) {
      if (!lhsType.isDynamicDim(d)) {
        rows *= lhsType.getDimSize(d);
        continue;
      }
      Value size = tensor::DimOp::create(rewriter, loc, adaptor.getLhs(), d);
      rowCount = rowCount ? arith::MulIOp::create(rewriter, loc, rowCount, size)
                                .getResult()
                          : size;
    }
    SmallVector<Value> dynamicRows;
    if (rowCount) {
      if (rows != 1)
        rowCount = arith::MulIOp::create(
            rewriter, loc, rowCount,
            arith::ConstantIndexOp::create(rewriter, loc, rows));
      rows = ShapedType::kDynamic;
      dynamicRows.push_back(rowCount);
    }
    OpFoldResult rowSize = rowCount ? OpFoldResult(rowCount)
                                    : OpFoldResult(rewriter.getIndexAttr(rows));
    int64_t width = panelsType.getDimSize(2);
    int64_t columns = resultType.getShape().back();
    int64_t fullPanels = columns / width, tail = columns % width;
    auto flatResultType = RankedTensorType::get({rows, columns}, elementType);
    auto panelType = RankedTensorType::get({k, width}, elementType);
    Value lhs = reshapeTensor(rewriter, loc, adaptor.getLhs(),
                              RankedTensorType::get({rows, k}, elementType),
                              dynamicRows);
    Value zero = createScalarConstant(rewriter, loc, elementType, 0);

    // `rowsLhs` (rows of the lhs) times panel `p`, with the bias and the
    // activation.
    auto multiply = [&](OpBuilder &b, OpFoldResult p, Value rowsLhs) {
      auto index = [&](int64_t value) -> OpFoldResult {
        return b.getIndexAttr(value);
      };
      auto blockType = RankedTensorType::get(
          {cast<RankedTensorType>(rowsLhs.getType()).getDimSize(0), width},
          elementType);
      Value panel = tensor::ExtractSliceOp::create(
          b, loc, panelType, adaptor.getRhs(),
          ArrayRef<OpFoldResult>{p, index(0), index(0)},
          ArrayRef<OpFoldResult>{index(1), index(k), index(width)},
          ArrayRef<OpFoldResult>{index(1), index(1), index(1)});
      Value init;
      if (Value bias = adaptor.getBias()) {
        // Accumulators start from the panel's bias, broadcast over rows.
        Value panelBias = tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get({width}, elementType), bias,
            ArrayRef<OpFoldResult>{p, index(0)},
            ArrayRef<OpFoldResult>{index(1), index(width)},
            ArrayRef<OpFoldResult>{index(1), index(1)});
        MLIRContext *ctx = b.getContext();
        AffineMap rowMap = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
        init = linalg::GenericOp::create(
                   b, loc, blockType, ValueRange{panelBias},
                   ValueRange{createEmptyTensor(b, loc, blockType, dynamicRows)},
                   ArrayRef<AffineMap>{
                       rowMap, AffineMap::getMultiDimIdentityMap(2, ctx)},
                   SmallVector<utils::IteratorType>(
                       2, utils::IteratorType::parallel),
                   [](OpBuilder &nb, Location l, ValueRange args) {
                     linalg::YieldOp::create(nb, l, args[0]);
                   })
                   .getResult(0);
      } else {
        init = createFilledTensor(b, loc, blockType, zero, dynamicRows);
      }
      Value block = linalg::MatmulOp::create(b, loc, blockType,
                                             ValueRange{rowsLhs, panel}, init)
                        .getResult(0);
      if (std::optional<Activation> activation = op.getActivation())
        block = applyActivation(b, loc, block, *activation);
      return block;
    };
    SmallVector<OpFoldResult> unitStrides(2, rewriter.getIndexAttr(1));
    Value residual;
    if (adaptor.getResidual())
      residual = reshapeTensor(rewriter, loc, adaptor.getResidual(),
                               flatResultType, dynamicRows);
    // The residual's block at (firstRow, column) added to `block` in place,
    // last in the epilogue.
    auto addResidual = [&](OpBuilder &b, Value block, OpFoldResult firstRow,
                           OpFoldResult column) -> Value {
      if (!residual)
        return block;
      auto type = cast<RankedTensorType>(block.getType());
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, block);
      Value part = tensor::ExtractSliceOp::create(
          b, loc, type, residual, ArrayRef<OpFoldResult>{firstRow, column},
          sizes, unitStrides);
      AffineMap identity = AffineMap::getMultiDimIdentityMap(2, getContext());
      return linalg::GenericOp::create(
                 b, loc, type, ValueRange{part}, ValueRange{block},
                 ArrayRef<AffineMap>{identity, identity},
                 SmallVector<utils::IteratorType>(
                     2, utils::IteratorType::parallel),
                 [](OpBuilder &nb, Location l, ValueRange args) {
                   Value sum = arith::AddFOp::create(nb, l, args[1], args[0]);
                   linalg::YieldOp::create(nb, l, sum);
                 })
          .getResult(0);
    };
    Value result =
        createEmptyTensor(rewriter, loc, flatResultType, dynamicRows);
    if (fullPanels > 0) {
      // Long products split their rows too, row block outer: threads given
      // consecutive iterations then own whole row blocks, which is how the
      // elementwise loops around them share rows, so what one thread
      // writes the next loop reads in the same core's cache.
      int64_t rowBlocks = 1;
      if (!rowCount && rows >= 2 * kRowBlock && rows % kRowBlock == 0)
        rowBlocks = rows / kRowBlock;
      SmallVector<OpFoldResult> counts;
      if (rowBlocks > 1)
        counts.push_back(rewriter.getIndexAttr(rowBlocks));
      counts.push_back(rewriter.getIndexAttr(fullPanels));
      auto loop = scf::ForallOp::create(rewriter, loc, counts,
                                        ValueRange{result}, std::nullopt);
      OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
      Value p = loop.getInductionVars().back();
      Value column = arith::MulIOp::create(
          b, loc, p, arith::ConstantIndexOp::create(b, loc, width));
      OpFoldResult firstRow = b.getIndexAttr(0);
      OpFoldResult blockSize = rowSize;
      Value rowsLhs = lhs;
      if (rowBlocks > 1) {
        firstRow = arith::MulIOp::create(
                       b, loc, loop.getInductionVar(0),
                       arith::ConstantIndexOp::create(b, loc, kRowBlock))
                       .getResult();
        blockSize = b.getIndexAttr(kRowBlock);
        rowsLhs = tensor::ExtractSliceOp::create(
            b, loc, RankedTensorType::get({kRowBlock, k}, elementType), lhs,
            ArrayRef<OpFoldResult>{firstRow, b.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{blockSize, b.getIndexAttr(k)}, unitStrides);
      }
      Value block = addResidual(b, multiply(b, p, rowsLhs), firstRow, column);
      b.setInsertionPointToStart(loop.getTerminator().getBody());
      tensor::ParallelInsertSliceOp::create(
          b, loc, block, loop.getRegionIterArgs()[0],
          ArrayRef<OpFoldResult>{firstRow, column},
          ArrayRef<OpFoldResult>{blockSize, b.getIndexAttr(width)},
          unitStrides);
      result = loop.getResult(0);
    }
    if (tail > 0) {
      Value block = multiply(rewriter, rewriter.getIndexAttr(fullPanels), lhs);
      Value valid = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get({rows, tail}, elementType),
          block,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                 rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rowSize, rewriter.getIndexAttr(tail)},
          unitStrides);
      valid = addResidual(rewriter, valid, rewriter.getIndexAttr(0),
                          rewriter.getIndexAttr(fullPanels * width));
      result = tensor::InsertSliceOp::create(
          rewriter, loc, valid, result,
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                                 rewriter.getIndexAttr(fullPanels * width)},
          ArrayRef<OpFoldResult>{rowSize, rewriter.getIndexAttr(tail)},
          unitStrides);
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, resultType,
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }
};

} // namespace

void kiln::populatePackedMatMulLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<PackedMatMulLowering>(patterns.getContext());
}
