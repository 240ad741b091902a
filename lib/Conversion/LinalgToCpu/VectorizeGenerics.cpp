//===- VectorizeGenerics.cpp - SIMD blocks of elementwise ops and reductions
//===//
//
// LLVM's loop vectorizer gives up on most of the scalar loops linalg lowers
// to (their buffers all live in one arena, so it can't rule out aliasing).
// Vectorizing in MLIR doesn't depend on that analysis.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_VECTORIZEGENERICSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The loop dimension that operands which read or write the innermost loop
/// dimension with a stride (transposes) have as their own innermost one:
/// std::nullopt if there are none, failure if they disagree or an operand
/// isn't a projected permutation.
FailureOr<std::optional<unsigned>> getTransposedDim(linalg::GenericOp op) {
  unsigned innermost = op.getNumLoops() - 1;
  std::optional<unsigned> transposed;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    // Zeros are allowed for broadcast size-1 dimensions (an attention
    // mask's); reading element 0 of a longer one is a slice, not a block.
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
      return failure();
    auto type = cast<RankedTensorType>(operand.get().getType());
    for (auto [index, expr] : llvm::enumerate(map.getResults()))
      if (isa<AffineConstantExpr>(expr) && type.getDimSize(index) != 1)
        return failure();
    for (auto [index, expr] : llvm::enumerate(map.getResults())) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      if (!dim || dim.getPosition() != innermost ||
          index + 1 == map.getNumResults())
        continue;
      auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (!last || (transposed && *transposed != last.getPosition()))
        return failure();
      transposed = last.getPosition();
    }
  }
  return transposed;
}

/// The most lanes times body operations a ragged row vectorizes as one
/// vector (an elementwise op of a few operations over 4096 columns).
constexpr int64_t kMaxRaggedRowWork = 16384;

/// Tile sizes for one SIMD block per tile: `width` (or the whole row, if
/// `width` doesn't divide it) along a parallel innermost dimension, whole
/// reduction dimensions, 1 elsewhere. A transpose gets `width` x `width`
/// blocks, which vectorize to register transposes. Empty if `op` is not
/// worth or not safe to vectorize this way.
SmallVector<int64_t> getBlockSizes(linalg::GenericOp op, int64_t width,
                                   int64_t maxElements) {
  if (op.getNumLoops() == 0 || !op.hasPureTensorSemantics())
    return {};
  FailureOr<std::optional<unsigned>> transposed = getTransposedDim(op);
  if (failed(transposed))
    return {};
  // Gathers read at computed indices; the vectorizer's general gather path
  // is slower than the scalar loop.
  if (!op.getBody()->getOps<tensor::ExtractOp>().empty())
    return {};
  // Buffers of i1 hold a byte per element, but LLVM loads and stores
  // vectors of i1 as packed bits.
  for (Value operand : op->getOperands())
    if (getElementTypeOrSelf(operand.getType()).isInteger(1))
      return {};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return {};
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> sizes(ranges.size(), 1);
  int64_t elements = 1;
  for (unsigned dim = 0; dim < ranges.size(); ++dim) {
    if (iterators[dim] == utils::IteratorType::reduction) {
      sizes[dim] = 0;
      elements *= ranges[dim];
    }
  }
  unsigned innermost = ranges.size() - 1;
  if (*transposed) {
    unsigned other = **transposed;
    if (op.getNumReductionLoops() != 0 || ranges[innermost] % width != 0 ||
        ranges[other] % width != 0)
      return {};
    sizes[innermost] = sizes[other] = width;
    return sizes;
  }
  if (iterators[innermost] == utils::IteratorType::parallel) {
    // A ragged row is one vector of its length: LLVM splits it into full
    // registers and a short tail, which beats masking every block. Rows
    // shorter than half a block (7 columns of a feature map) stay scalar.
    int64_t size = ranges[innermost] % width == 0 ? width : ranges[innermost];
    if (2 * size < width)
      return {};
    // Each value of the body becomes a vector of the row's length: with a
    // long body those swamp LLVM's register allocator (a 300-op body over
    // 500 lanes took 36 s to generate). Such a row stays scalar.
    int64_t bodyOps =
        static_cast<int64_t>(op.getBody()->getOperations().size());
    if (size != width && size * bodyOps > kMaxRaggedRowWork)
      return {};
    sizes[innermost] = size;
    elements *= size;
  } else if (ranges[innermost] < width) {
    return {};
  }
  if (elements > maxElements)
    return {};
  return sizes;
}

/// For a sum whose one (innermost) reduction is too long for a block: the
/// least number of equal, `width`-aligned parts that each fit in
/// `maxElements`. 1: leave it.
int64_t getSplitRatio(linalg::GenericOp op, int64_t width,
                      int64_t maxElements) {
  if (op.getNumReductionLoops() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics() ||
      !op.getBody()->getOps<tensor::ExtractOp>().empty())
    return 1;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned innermost = ranges.size() - 1;
  int64_t length = ranges[innermost];
  if (op.getIteratorTypesArray()[innermost] !=
          utils::IteratorType::reduction ||
      ShapedType::isDynamic(length) || length <= maxElements)
    return 1;
  for (int64_t ratio = 2; ratio <= length / width; ++ratio)
    if (length % ratio == 0 && length / ratio <= maxElements &&
        (length / ratio) % width == 0)
      return ratio;
  return 1;
}

struct VectorizeGenericsPass
    : kiln::impl::VectorizeGenericsPassBase<VectorizeGenericsPass> {
  using VectorizeGenericsPassBase::VectorizeGenericsPassBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Transposes and broadcasts are generics with particular maps.
    SmallVector<linalg::LinalgOp> named;
    getOperation()->walk([&](Operation *op) {
      if (isa<linalg::TransposeOp, linalg::BroadcastOp>(op))
        named.push_back(cast<linalg::LinalgOp>(op));
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }

    // A reduction too long for one block (a group norm's statistics over
    // a group of large feature maps) becomes blocks that fit, each a
    // partial sum, and a short reduction of those.
    SmallVector<std::pair<linalg::GenericOp, int64_t>> longSums;
    getOperation()->walk([&](linalg::GenericOp op) {
      int64_t ratio = getSplitRatio(op, vectorWidth, maxElements);
      if (ratio > 1)
        longSums.push_back({op, ratio});
    });
    for (auto [op, ratio] : longSums) {
      rewriter.setInsertionPoint(op);
      unsigned index = static_cast<unsigned>(
          cast<RankedTensorType>(op.getDpsInits()[0].getType()).getRank());
      (void)linalg::splitReduction(
          rewriter, cast<linalg::LinalgOp>(op.getOperation()),
          [&](linalg::LinalgOp) {
            return linalg::SplitReductionOptions{ratio, index,
                                                 /*innerParallel=*/false};
          });
    }

    SmallVector<std::pair<linalg::GenericOp, SmallVector<int64_t>>> work;
    getOperation()->walk([&](linalg::GenericOp op) {
      SmallVector<int64_t> sizes = getBlockSizes(op, vectorWidth, maxElements);
      if (!sizes.empty())
        work.push_back({op, sizes});
    });
    for (auto &[op, sizes] : work) {
      rewriter.setInsertionPoint(op);
      Operation *block = op;
      if (llvm::any_of(sizes, [](int64_t size) { return size != 0; })) {
        scf::SCFTilingOptions options;
        options.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
        // A forall, so threads share the blocks.
        options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
        FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
            rewriter, cast<TilingInterface>(op.getOperation()), options);
        if (failed(tiled))
          continue;
        rewriter.replaceOp(op, tiled->replacements);
        block = tiled->tiledOps.back();
      }
      rewriter.setInsertionPoint(block);
      FailureOr<linalg::VectorizationResult> vectorized =
          linalg::vectorize(rewriter, block);
      if (succeeded(vectorized))
        rewriter.replaceOp(block, vectorized->replacements);
    }

    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
