//===- PrefetchNextPanel.cpp - the next weight panel, fetched early -------===//
//
// The hardware prefetchers follow the stream a panel is read in, a few
// lines ahead, but a panel is read 20 times over (once per row tile) and
// the next one only after: nothing fetches it while the current one is
// multiplied. A 6 x 64 kernel over GPT-2's vocabulary projection (128 rows
// by 50257 columns, 154 MB of weights) ran at 129 GFLOP/s alone and at 143
// with the first 4 row tiles fetching the next panel; fetching it from every
// row tile ran at 89-104, each prefetch of a line already in L2 taking a
// load slot from the kernel.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace kiln {
#define GEN_PASS_DEF_PREFETCHNEXTPANELPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// A reduction loop over the rows of a weight panel, and where they are.
struct PanelRead {
  scf::ForOp reduction;
  /// The row tile loop around it, whose first iterations fetch.
  scf::ForOp rowTiles;
  int64_t rowTileStart, rowTileStep;
  /// The `[P, K, W]` weights and the panel read.
  Value panels;
  OpFoldResult panel;
  /// Offsets along K of the views between the panel and the row read, to
  /// add to the reduction's induction variable.
  SmallVector<OpFoldResult> depthOffsets;
};

bool isZero(OpFoldResult value) { return isConstantIntValue(value, 0); }

bool hasUnitStrides(memref::SubViewOp view) {
  return llvm::all_of(view.getMixedStrides(),
                      [](OpFoldResult s) { return isConstantIntValue(s, 1); });
}

/// `row`, a `[1, W]` view at the reduction's induction variable, as a read
/// of a constant weight panel inside a loop of row tiles; nothing where it
/// is not one.
std::optional<PanelRead> matchPanelRead(scf::ForOp reduction,
                                        memref::SubViewOp row) {
  SmallVector<OpFoldResult> offsets = row.getMixedOffsets();
  if (offsets.size() != 2 || !hasUnitStrides(row) || !isZero(offsets[1]) ||
      offsets[0] != OpFoldResult(reduction.getInductionVar()))
    return std::nullopt;
  PanelRead read;
  read.reduction = reduction;
  // Views of a block of the panel's rows (a reduction in cache blocks)
  // lead back to the view of the panel.
  Value source = row.getSource();
  memref::SubViewOp panelView;
  while (auto view = source.getDefiningOp<memref::SubViewOp>()) {
    if (!hasUnitStrides(view))
      return std::nullopt;
    SmallVector<OpFoldResult> viewOffsets = view.getMixedOffsets();
    if (view.getSourceType().getRank() == 3) {
      panelView = view;
      break;
    }
    if (viewOffsets.size() != 2 || !isZero(viewOffsets[1]))
      return std::nullopt;
    read.depthOffsets.push_back(viewOffsets[0]);
    source = view.getSource();
  }
  if (!panelView)
    return std::nullopt;
  SmallVector<OpFoldResult> panelOffsets = panelView.getMixedOffsets();
  if (!isZero(panelOffsets[1]) || !isZero(panelOffsets[2]) ||
      !isConstantIntValue(panelView.getMixedSizes()[0], 1))
    return std::nullopt;
  read.panel = panelOffsets[0];
  read.panels = panelView.getSource();
  auto type = cast<MemRefType>(read.panels.getType());
  if (!read.panels.getDefiningOp<memref::GetGlobalOp>() ||
      !type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat() || type.getDimSize(0) < 2)
    return std::nullopt;

  // The loop of row tiles: the reduction's parent, inside the panel's view
  // (so that it passes over the same panel), and not a loop over the
  // reduction's cache blocks.
  read.rowTiles = dyn_cast<scf::ForOp>(reduction->getParentOp());
  if (!read.rowTiles || read.rowTiles->isAncestor(panelView) ||
      !panelView->getBlock()->findAncestorOpInBlock(*read.rowTiles))
    return std::nullopt;
  Value tileVar = read.rowTiles.getInductionVar();
  if (llvm::is_contained(read.depthOffsets, OpFoldResult(tileVar)))
    return std::nullopt;
  std::optional<int64_t> start =
      getConstantIntValue(read.rowTiles.getLowerBound());
  std::optional<int64_t> step = getConstantIntValue(read.rowTiles.getStep());
  if (!start || !step || *step <= 0)
    return std::nullopt;
  read.rowTileStart = *start;
  read.rowTileStep = *step;
  return read;
}

/// Makes the first row tiles of `read` fetch the next panel's rows, one
/// line of each per tile, `lineBytes` apart.
void prefetchNextPanel(PanelRead read, int64_t lineBytes) {
  auto type = cast<MemRefType>(read.panels.getType());
  int64_t width = type.getDimSize(2);
  int64_t elementBytes =
      llvm::divideCeil(type.getElementType().getIntOrFloatBitWidth(), 8);
  int64_t lineElements = std::max<int64_t>(1, lineBytes / elementBytes);
  int64_t lines = llvm::divideCeil(width, lineElements);
  Location loc = read.reduction.getLoc();

  // Loop-invariant parts, before the reduction: which tile this is, whether
  // it fetches, its line, and the next panel (the last one's is itself).
  OpBuilder b(read.reduction);
  auto index = [&](int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value tile = arith::DivUIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, read.rowTiles.getInductionVar(),
                            index(read.rowTileStart)),
      index(read.rowTileStep));
  Value fetches = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tile,
                                        index(lines));
  Value line = arith::MulIOp::create(b, loc, tile, index(lineElements));
  Value panel = getValueOrCreateConstantIndexOp(b, loc, read.panel);
  Value next = arith::MinUIOp::create(
      b, loc, arith::AddIOp::create(b, loc, panel, index(1)),
      index(type.getDimSize(0) - 1));

  b.setInsertionPointToStart(read.reduction.getBody());
  Value depth = read.reduction.getInductionVar();
  for (OpFoldResult offset : read.depthOffsets)
    depth = arith::AddIOp::create(
        b, loc, depth, getValueOrCreateConstantIndexOp(b, loc, offset));
  auto ifFetches = scf::IfOp::create(b, loc, fetches);
  b.setInsertionPointToStart(ifFetches.thenBlock());
  memref::PrefetchOp::create(b, loc, read.panels, ValueRange{next, depth, line},
                             /*isWrite=*/false, /*localityHint=*/2,
                             /*isDataCache=*/true);
}

struct PrefetchNextPanelPass
    : kiln::impl::PrefetchNextPanelPassBase<PrefetchNextPanelPass> {
  using PrefetchNextPanelPassBase::PrefetchNextPanelPassBase;

  void runOnOperation() override {
    if (lineBytes <= 0) {
      getOperation()->emitError()
          << getArgument() << ": line-bytes must be positive";
      return signalPassFailure();
    }
    SmallVector<PanelRead> reads;
    getOperation()->walk([&](scf::ForOp reduction) {
      for (auto row : reduction.getBody()->getOps<memref::SubViewOp>())
        if (std::optional<PanelRead> read = matchPanelRead(reduction, row)) {
          reads.push_back(*read);
          return;
        }
    });
    for (PanelRead &read : reads)
      prefetchNextPanel(read, lineBytes);
  }
};

} // namespace
