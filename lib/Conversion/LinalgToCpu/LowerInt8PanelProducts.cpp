//===- LowerInt8PanelProducts.cpp - AVX2 kernel for uint8 x int8 products -===//
//
// MLIR's vectorizer turns an integer contraction into widening multiplies
// and adds of 32-bit lanes, 8 products per instruction at best. x86's
// byte multiply-add (vpmaddubsw) takes 32 at once, so this kernel is
// written with it directly, after bufferization, where the product's
// buffers and their layouts are final.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERINT8PANELPRODUCTSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Rows of a register block; with 16-column panels, 4 x 2 accumulators,
/// 2 weight vectors, a row broadcast and the ones fill 13 of AVX2's 16
/// registers.
constexpr int64_t kBlockRows = 4;
/// int32 lanes (columns) per AVX2 register.
constexpr int64_t kLanes = 8;

Value callIntrinsic(OpBuilder &b, Location loc, Type type, StringRef name,
                    ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name),
                                       args)
      .getResult(0);
}

LogicalResult lowerProduct(linalg::GenericOp op) {
  Value rows = op.getDpsInputs()[0], weights = op.getDpsInputs()[1],
        sums = op.getDpsInits()[0];
  auto rowType = dyn_cast<MemRefType>(rows.getType());
  auto weightType = dyn_cast<MemRefType>(weights.getType());
  auto sumType = dyn_cast<MemRefType>(sums.getType());
  // Only the row count may be dynamic (a sequence length).
  if (!rowType || !weightType || !sumType ||
      ShapedType::isDynamicShape(rowType.getShape().drop_front()) ||
      !weightType.hasStaticShape() ||
      ShapedType::isDynamicShape(sumType.getShape().drop_front()) ||
      !weightType.getLayout().isIdentity())
    return op.emitError("internal error: kiln.int8_panel_product on ")
           << rows.getType() << ", " << weights.getType() << ", "
           << sums.getType();
  int64_t groups = rowType.getDimSize(1);
  int64_t panels = weightType.getDimSize(0), width = weightType.getDimSize(2);
  int64_t vectors = width / kLanes;
  assert(width % kLanes == 0 && "panels are whole registers wide");

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Type i32 = b.getI32Type();
  auto bytes = VectorType::get({4 * kLanes}, b.getI8Type());
  auto halves = VectorType::get({2 * kLanes}, b.getI16Type());
  auto words = VectorType::get({kLanes}, i32);
  // Each group of 4 rows of a panel as one run of 4 * width bytes.
  Value flatWeights = memref::CollapseShapeOp::create(
      b, loc, weights, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});

  Value rowCount = memref::DimOp::create(b, loc, rows, 0);
  Value lastRow = arith::SubIOp::create(b, loc, rowCount, index(1));
  Value rowBlocks = arith::CeilDivUIOp::create(b, loc, rowCount,
                                               index(kBlockRows));
  // Panels outermost: consecutive iterations share a panel (a few KB, in
  // L1) and sweep the rows (in L2), where rows outermost would stream every
  // panel again for each block of rows.
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{index(0), index(0)},
                                      ValueRange{index(panels), rowBlocks},
                                      ValueRange{index(1), index(1)});
  b.setInsertionPointToStart(loop.getBody());
  Value panel = loop.getInductionVars()[0];
  Value firstRow = arith::MulIOp::create(b, loc, loop.getInductionVars()[1],
                                         index(kBlockRows));
  // Rows past the end read the last row (the loads stay in bounds) and
  // are not stored.
  SmallVector<Value> rowIndices;
  for (int64_t i = 0; i < kBlockRows; ++i)
    rowIndices.push_back(arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, firstRow, index(i)), lastRow));
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(words, b.getI32IntegerAttr(0)));
  Value ones = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(halves, b.getI16IntegerAttr(1)));
  SmallVector<Value> init(kBlockRows * vectors, zero);

  auto groupLoop = scf::ForOp::create(
      b, loc, index(0), index(groups), index(1), init,
      [&](OpBuilder &nb, Location l, Value group, ValueRange acc) {
        SmallVector<Value> weightVectors;
        for (int64_t c = 0; c < vectors; ++c)
          weightVectors.push_back(vector::LoadOp::create(
              nb, l, bytes, flatWeights,
              ValueRange{panel, group,
                         arith::ConstantIndexOp::create(nb, l, c * 4 * kLanes)}));
        SmallVector<Value> next;
        Value c0 = arith::ConstantIndexOp::create(nb, l, 0);
        for (int64_t i = 0; i < kBlockRows; ++i) {
          Value four = vector::LoadOp::create(
              nb, l, VectorType::get({4}, nb.getI8Type()), rows,
              ValueRange{rowIndices[i], group, c0});
          Value word = vector::ExtractOp::create(
              nb, l,
              vector::BitCastOp::create(nb, l, VectorType::get({1}, i32), four),
              ArrayRef<int64_t>{0});
          Value broadcast = vector::BitCastOp::create(
              nb, l, bytes, vector::BroadcastOp::create(nb, l, words, word));
          for (int64_t c = 0; c < vectors; ++c) {
            Value pairs = callIntrinsic(nb, l, halves,
                                        "llvm.x86.avx2.pmadd.ub.sw",
                                        {broadcast, weightVectors[c]});
            Value quads = callIntrinsic(nb, l, words, "llvm.x86.avx2.pmadd.wd",
                                        {pairs, ones});
            next.push_back(
                arith::AddIOp::create(nb, l, acc[i * vectors + c], quads));
          }
        }
        scf::YieldOp::create(nb, l, next);
      });

  for (int64_t i = 0; i < kBlockRows; ++i) {
    Value row = arith::AddIOp::create(b, loc, firstRow, index(i));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         row, rowCount);
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder tb = guard.getThenBodyBuilder();
    for (int64_t c = 0; c < vectors; ++c)
      vector::StoreOp::create(
          tb, loc, groupLoop.getResult(i * vectors + c), sums,
          ValueRange{row, panel,
                     arith::ConstantIndexOp::create(tb, loc, c * kLanes)});
  }
  op.erase();
  return success();
}

struct LowerInt8PanelProductsPass
    : kiln::impl::LowerInt8PanelProductsPassBase<LowerInt8PanelProductsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> products;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kiln::kInt8PanelProductAttr) && op.hasPureBufferSemantics())
        products.push_back(op);
    });
    for (linalg::GenericOp op : products)
      if (failed(lowerProduct(op)))
        return signalPassFailure();
  }
};

} // namespace
