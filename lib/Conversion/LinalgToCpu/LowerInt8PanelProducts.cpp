//===- LowerInt8PanelProducts.cpp - AVX2 kernel for uint8 x int8 products -===//
//
// MLIR's vectorizer turns an integer contraction into widening multiplies
// and adds of 32-bit lanes, 8 products per instruction at best. x86's
// byte multiply-add (vpmaddubsw) takes 32 at once, so this kernel is
// written with it directly, after bufferization, where the product's
// buffers and their layouts are final.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/LinalgToCpu/PanelKernels.h"
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
using kiln::kPanelLanes;

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
  int64_t vectors = width / kPanelLanes;
  assert(width % kPanelLanes == 0 && "panels are whole registers wide");

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  auto bytes = VectorType::get({4 * kPanelLanes}, b.getI8Type());
  auto halves = VectorType::get({2 * kPanelLanes}, b.getI16Type());
  auto words = VectorType::get({kPanelLanes}, b.getI32Type());
  // Each group of 4 rows of a panel as one run of 4 * width bytes.
  Value flatWeights = memref::CollapseShapeOp::create(
      b, loc, weights, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});

  Value rowCount = memref::DimOp::create(b, loc, rows, 0);
  kiln::RowBlockLoop block =
      kiln::createRowBlockLoop(b, loc, rowCount, panels, kBlockRows);
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
              ValueRange{block.panel, group,
                         arith::ConstantIndexOp::create(nb, l,
                                                        c * 4 * kPanelLanes)}));
        SmallVector<Value> next;
        for (int64_t i = 0; i < kBlockRows; ++i) {
          Value broadcast =
              kiln::broadcastRowGroup(nb, l, rows, block.rows[i], group);
          for (int64_t c = 0; c < vectors; ++c) {
            next.push_back(
                kiln::createByteDotProduct(nb, l, acc[i * vectors + c],
                                           broadcast, weightVectors[c], ones));
          }
        }
        scf::YieldOp::create(nb, l, next);
      });
  kiln::storeRowBlock(b, loc, block, groupLoop.getResults(), sums, rowCount);
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
