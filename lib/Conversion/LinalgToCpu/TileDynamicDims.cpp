//===- TileDynamicDims.cpp - dynamic dimensions as loops of static tiles --===//
//
// The vectorizing schedules (kiln-tile-and-vectorize-contractions,
// kiln-vectorize-generics) work on static shapes. A linalg op with one
// dynamic parallel dimension, a sequence of `n` tokens say, becomes
// parallel loops writing disjoint parts of its result: one over the
// `n / T` full tiles of T rows, each a static op, then the `n % T` rows
// left. Sizes that are multiples of T run full tiles only, as fast as if
// they were static.
//
// A product's rows left are one static tile of exactly their count: every
// tile reads the weights once, so a decoder verifying K draft tokens (K + 1
// rows) reads them once whatever K is. Other ops read nothing shared
// between rows; their rows left are tiles of the powers of two below T
// (those their count needs: 5 rows are a tile of 4 and one of 1), fewer
// copies of the op than one per count.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "llvm/Support/MathExtras.h"

namespace kiln {
#define GEN_PASS_DEF_TILEDYNAMICDIMSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The one dynamic loop of `op` if it has exactly one and it is parallel
/// (and no loop is empty: such an op computes nothing to tile).
std::optional<unsigned> getDynamicParallelLoop(linalg::LinalgOp op) {
  std::optional<unsigned> found;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::is_contained(ranges, 0))
    return std::nullopt;
  for (auto [i, range] : llvm::enumerate(ranges)) {
    if (!ShapedType::isDynamic(range))
      continue;
    if (found || op.getIteratorTypesArray()[i] != utils::IteratorType::parallel)
      return std::nullopt;
    found = i;
  }
  return found;
}

/// A parallel loop over [lower, upper) in steps of `tile` applying the tile
/// of `op` along `dim` at each step to `outputs`; returns its results.
SmallVector<Value> createTileLoop(RewriterBase &rewriter, Location loc,
                                  TilingInterface op, unsigned dim,
                                  OpFoldResult lower, OpFoldResult upper,
                                  int64_t tile, ValueRange outputs) {
  SmallVector<Range> domain = op.getIterationDomain(rewriter);
  auto loop = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{lower},
      ArrayRef<OpFoldResult>{upper},
      ArrayRef<OpFoldResult>{rewriter.getIndexAttr(tile)}, outputs,
      std::nullopt);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(loop.getBody());
  // The op on this loop's shared outputs, then its tile.
  auto clone = cast<TilingInterface>(rewriter.clone(*op));
  auto destination = cast<DestinationStyleOpInterface>(clone.getOperation());
  for (auto [init, shared] : llvm::zip(destination.getDpsInitsMutable(),
                                       loop.getRegionIterArgs()))
    init.set(shared);
  SmallVector<OpFoldResult> offsets, sizes;
  for (const Range &range : domain) {
    offsets.push_back(range.offset);
    sizes.push_back(range.size);
  }
  offsets[dim] = loop.getInductionVar(0);
  sizes[dim] = rewriter.getIndexAttr(tile);
  FailureOr<TilingResult> tiled =
      clone.getTiledImplementation(rewriter, offsets, sizes);
  assert(succeeded(tiled) && "linalg ops tile along a parallel dimension");
  rewriter.setInsertionPointToStart(loop.getTerminator().getBody());
  for (auto [i, value] : llvm::enumerate(tiled->tiledValues)) {
    SmallVector<OpFoldResult> resultOffsets, resultSizes;
    LogicalResult positioned = clone.getResultTilePosition(
        rewriter, i, offsets, sizes, resultOffsets, resultSizes);
    assert(succeeded(positioned) && "linalg ops place their result tiles");
    (void)positioned;
    SmallVector<OpFoldResult> strides(resultOffsets.size(),
                                      rewriter.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(rewriter, loc, value,
                                          loop.getRegionIterArgs()[i],
                                          resultOffsets, resultSizes, strides);
  }
  rewriter.eraseOp(clone);
  return loop.getResults();
}

struct TileDynamicDimsPass
    : kiln::impl::TileDynamicDimsPassBase<TileDynamicDimsPass> {
  using TileDynamicDimsPassBase::TileDynamicDimsPassBase;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, unsigned>> work;
    getOperation()->walk([&](linalg::LinalgOp op) {
      // The integer kernels take any number of rows themselves.
      if (!op.hasPureTensorSemantics() || op->getNumResults() == 0 ||
          op->hasAttr(kiln::kInt8PanelProductAttr) ||
          op->hasAttr(kiln::kInt4PanelProductAttr))
        return;
      if (std::optional<unsigned> dim = getDynamicParallelLoop(op))
        work.push_back({op, *dim});
    });
    IRRewriter rewriter(&getContext());
    for (auto [op, dim] : work) {
      // Products tile by their register rows, other ops by a wider tile
      // (a transpose's 16x16 register blocks).
      int64_t tile = isa<linalg::MatmulOp>(op) ? matmulRows : genericRows;
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      auto tiling = cast<TilingInterface>(op.getOperation());
      SmallVector<Range> domain = tiling.getIterationDomain(rewriter);
      Value size = getValueOrCreateConstantIndexOp(rewriter, loc,
                                                   domain[dim].size);
      Value tileSize = arith::ConstantIndexOp::create(rewriter, loc, tile);
      Value full = arith::MulIOp::create(
          rewriter, loc, arith::DivUIOp::create(rewriter, loc, size, tileSize),
          tileSize);
      SmallVector<Value> results =
          createTileLoop(rewriter, loc, tiling, dim, rewriter.getIndexAttr(0),
                         full, tile, op.getDpsInits());
      Value left = arith::SubIOp::create(rewriter, loc, size, full);
      if (isa<linalg::MatmulOp>(op)) {
        // One loop per count of rows left, over [full, full + count) when
        // that is the count and over nothing otherwise.
        Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
        for (int64_t rows = tile - 1; rows >= 1; --rows) {
          Value rowsValue = arith::ConstantIndexOp::create(rewriter, loc, rows);
          Value isCount = arith::CmpIOp::create(
              rewriter, loc, arith::CmpIPredicate::eq, left, rowsValue);
          Value taken =
              arith::SelectOp::create(rewriter, loc, isCount, rowsValue, zero);
          Value end = arith::AddIOp::create(rewriter, loc, full, taken);
          results = createTileLoop(rewriter, loc, tiling, dim, full, end, rows,
                                   results);
        }
        rewriter.replaceOp(op, results);
        continue;
      }
      // At most one tile of each power of two below `tile`, largest first;
      // a loop over [start, start + t) or over nothing runs that tile or not.
      Value start = full;
      for (int64_t rows = llvm::PowerOf2Ceil(tile) / 2; rows >= 1;
           rows /= 2) {
        Value rowsValue = arith::ConstantIndexOp::create(rewriter, loc, rows);
        Value taken = arith::MulIOp::create(
            rewriter, loc,
            arith::DivUIOp::create(rewriter, loc, left, rowsValue), rowsValue);
        Value end = arith::AddIOp::create(rewriter, loc, start, taken);
        results = createTileLoop(rewriter, loc, tiling, dim, start, end, rows,
                                 results);
        start = end;
        left = arith::SubIOp::create(rewriter, loc, left, taken);
      }
      rewriter.replaceOp(op, results);
    }
  }
};

} // namespace
