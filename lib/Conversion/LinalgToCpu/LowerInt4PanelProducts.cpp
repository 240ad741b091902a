//===- LowerInt4PanelProducts.cpp - AVX2 kernel for block-scaled int4 -----===//
//
// The int8 kernel's byte multiply-add (vpmaddubsw) on weights stored two to
// a byte: each load of packed weights is split into its low and high 4 bits
// in registers, so memory-bound products (a decoder's one-row steps) read
// half the bytes of int8. Integer sums are exact only within a block of
// rows that shares a scale, so each block's sums are scaled into float
// accumulators before the next block starts.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/LinalgToCpu/PanelKernels.h"
#include "lib/Conversion/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERINT4PANELPRODUCTSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Rows of a register block: per row, 2 int32 and 2 float accumulators for
/// a 16-column panel; with the unpacked weights, a row broadcast and three
/// constants, 2 rows fill AVX2's 16 registers. A single row (a decoder's
/// step) gets a kernel of its own rather than computing its row twice.
constexpr int64_t kBlockRows = 2;
using kiln::kPanelLanes;

Value splat(OpBuilder &b, Location loc, VectorType type, Attribute value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<Attribute>{value}));
}

LogicalResult lowerProduct(linalg::GenericOp op) {
  SmallVector<Value> inputs = op.getDpsInputs();
  Value rows = inputs[0], weights = inputs[1], scales = inputs[2],
        sums = op.getDpsInits()[0];
  Value zeroPoints = inputs.size() > 3 ? inputs[3] : Value();
  auto rowType = dyn_cast<MemRefType>(rows.getType());
  auto weightType = dyn_cast<MemRefType>(weights.getType());
  auto scaleType = dyn_cast<MemRefType>(scales.getType());
  auto sumType = dyn_cast<MemRefType>(sums.getType());
  // Only the row count may be dynamic (a sequence length). Rows are
  // [R, blocks, pairs, 2, 4], weights [P, blocks, pairs, W, 4], zero
  // points (if any) like the scales, [P, blocks, W].
  if (!rowType || !weightType || !scaleType || !sumType ||
      rowType.getRank() != 5 || weightType.getRank() != 5 ||
      ShapedType::isDynamicShape(rowType.getShape().drop_front()) ||
      !weightType.hasStaticShape() || !scaleType.hasStaticShape() ||
      ShapedType::isDynamicShape(sumType.getShape().drop_front()) ||
      !weightType.getLayout().isIdentity() ||
      (zeroPoints && cast<MemRefType>(zeroPoints.getType()).getShape() !=
                         scaleType.getShape()))
    return op.emitError("internal error: kiln.int4_panel_product on ")
           << rows.getType() << ", " << weights.getType() << ", "
           << scales.getType() << ", " << sums.getType();
  int64_t panels = weightType.getDimSize(0), width = weightType.getDimSize(3);
  int64_t blocks = weightType.getDimSize(1);
  int64_t pairsPerBlock = weightType.getDimSize(2);
  int64_t vectors = width / kPanelLanes;
  assert(width % kPanelLanes == 0 && "panels are whole registers wide");

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type i8 = b.getI8Type(), i16 = b.getI16Type(), i32 = b.getI32Type(),
       f32 = b.getF32Type();
  auto bytes = VectorType::get({4 * kPanelLanes}, i8);
  auto halves = VectorType::get({2 * kPanelLanes}, i16);
  auto words = VectorType::get({kPanelLanes}, i32);
  auto floats = VectorType::get({kPanelLanes}, f32);
  // Each pair of groups of 4 rows of a panel as one run of 4 * width bytes,
  // and each row's groups of 4 in one dimension.
  Value flatWeights = memref::CollapseShapeOp::create(
      b, loc, weights, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3, 4}});
  rows = memref::CollapseShapeOp::create(
      b, loc, rows, ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4}});
  Value rowCount = memref::DimOp::create(b, loc, rows, 0);

  auto emitKernel = [&](OpBuilder &b, int64_t blockRows) {
    auto index = [&](OpBuilder &ib, int64_t v) {
      return arith::ConstantIndexOp::create(ib, loc, v).getResult();
    };
    kiln::RowBlockLoop block =
        kiln::createRowBlockLoop(b, loc, rowCount, panels, blockRows);
    Value intZero = splat(b, loc, words, b.getI32IntegerAttr(0));
    Value floatZero = splat(b, loc, floats, b.getF32FloatAttr(0));
    Value ones = splat(b, loc, halves, b.getI16IntegerAttr(1));
    Value lowBits = splat(b, loc, bytes, b.getI8IntegerAttr(15));
    Value eights = splat(b, loc, bytes, b.getI8IntegerAttr(8));
    Value four = splat(b, loc, halves, b.getI16IntegerAttr(4));

    // The 4 * width bytes of `pair`, unpacked: the low 4 bits (group
    // 2 * pair) or the high 4 bits (the next group), less the zero points.
    auto unpack = [&](OpBuilder &nb, ArrayRef<Value> packed, int64_t half,
                      ArrayRef<Value> zeros) {
      SmallVector<Value> weightVectors;
      for (auto [bytePairs, zero] : llvm::zip(packed, zeros)) {
        Value v = bytePairs;
        if (half == 1)
          v = vector::BitCastOp::create(
              nb, loc, bytes,
              arith::ShRUIOp::create(
                  nb, loc, vector::BitCastOp::create(nb, loc, halves, v), four));
        v = arith::AndIOp::create(nb, loc, v, lowBits);
        weightVectors.push_back(arith::SubIOp::create(nb, loc, v, zero));
      }
      return weightVectors;
    };
    // A block's zero points for each register of a panel: 8 (symmetric
    // weights), or the block's 8 bytes of zero points, each repeated for
    // its column's 4 lanes.
    SmallVector<int64_t> repeatEach4;
    for (int64_t i = 0; i < 4 * kPanelLanes; ++i)
      repeatEach4.push_back(i / 4);
    auto loadZeros = [&](OpBuilder &ob, Value scaleBlock) {
      SmallVector<Value> zeros(vectors, eights);
      if (!zeroPoints)
        return zeros;
      auto columnBytes = VectorType::get({kPanelLanes}, i8);
      for (int64_t c = 0; c < vectors; ++c) {
        Value perColumn = vector::LoadOp::create(
            ob, loc, columnBytes, zeroPoints,
            ValueRange{block.panel, scaleBlock, index(ob, c * kPanelLanes)});
        zeros[c] = vector::ShuffleOp::create(ob, loc, perColumn, perColumn,
                                             repeatEach4);
      }
      return zeros;
    };

    auto blockLoop = scf::ForOp::create(
        b, loc, index(b, 0), index(b, blocks), index(b, 1),
        SmallVector<Value>(blockRows * vectors, floatZero),
        [&](OpBuilder &ob, Location l, Value scaleBlock, ValueRange totals) {
          Value firstPair =
              arith::MulIOp::create(ob, l, scaleBlock, index(ob, pairsPerBlock));
          SmallVector<Value> zeros = loadZeros(ob, scaleBlock);
          auto pairLoop = scf::ForOp::create(
              ob, l, index(ob, 0), index(ob, pairsPerBlock), index(ob, 1),
              SmallVector<Value>(blockRows * vectors, intZero),
              [&](OpBuilder &nb, Location l, Value pairInBlock, ValueRange acc) {
                Value pair = arith::AddIOp::create(nb, l, firstPair, pairInBlock);
                SmallVector<Value> packed;
                for (int64_t c = 0; c < vectors; ++c)
                  packed.push_back(vector::LoadOp::create(
                      nb, l, bytes, flatWeights,
                      ValueRange{block.panel, pair,
                                 index(nb, c * 4 * kPanelLanes)}));
                SmallVector<Value> next(acc);
                for (int64_t half = 0; half < 2; ++half) {
                  SmallVector<Value> weightVectors =
                      unpack(nb, packed, half, zeros);
                  Value group = arith::AddIOp::create(
                      nb, l, arith::MulIOp::create(nb, l, pair, index(nb, 2)),
                      index(nb, half));
                  for (int64_t i = 0; i < blockRows; ++i) {
                    Value broadcast = kiln::broadcastRowGroup(
                        nb, l, rows, block.rows[i], group);
                    for (int64_t c = 0; c < vectors; ++c)
                      next[i * vectors + c] = arith::AddIOp::create(
                          nb, l, next[i * vectors + c],
                          kiln::createByteDotProduct(nb, l, broadcast,
                                                     weightVectors[c], ones));
                  }
                }
                scf::YieldOp::create(nb, l, next);
              });
          // The block's integer sums, scaled by its scales, into the totals.
          SmallVector<Value> scaled;
          for (int64_t i = 0; i < blockRows; ++i)
            for (int64_t c = 0; c < vectors; ++c) {
              Value scale = vector::LoadOp::create(
                  ob, l, floats, scales,
                  ValueRange{block.panel, scaleBlock,
                             index(ob, c * kPanelLanes)});
              Value real = arith::SIToFPOp::create(
                  ob, l, floats, pairLoop.getResult(i * vectors + c));
              scaled.push_back(vector::FMAOp::create(ob, l, real, scale,
                                                     totals[i * vectors + c]));
            }
          scf::YieldOp::create(ob, l, scaled);
        });
    kiln::storeRowBlock(b, loc, block, blockLoop.getResults(), sums, rowCount);
  };
  Value single = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq, rowCount,
      arith::ConstantIndexOp::create(b, loc, 1));
  auto choice = scf::IfOp::create(b, loc, single, /*withElseRegion=*/true);
  OpBuilder thenBuilder = choice.getThenBodyBuilder();
  emitKernel(thenBuilder, 1);
  OpBuilder elseBuilder = choice.getElseBodyBuilder();
  emitKernel(elseBuilder, kBlockRows);
  op.erase();
  return success();
}

struct LowerInt4PanelProductsPass
    : kiln::impl::LowerInt4PanelProductsPassBase<LowerInt4PanelProductsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> products;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kiln::kInt4PanelProductAttr) &&
          op.hasPureBufferSemantics())
        products.push_back(op);
    });
    for (linalg::GenericOp op : products)
      if (failed(lowerProduct(op)))
        return signalPassFailure();
  }
};

} // namespace
