//===- CacheDeepFeatures.cpp - reuse a UNet's deeper levels across steps --===//
#include "passes/Passes.h"
#include "passes/SampleCache.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {
#define GEN_PASS_DEF_CACHEDEEPFEATURESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The ops of `body` that only `deep` needs: its defining op and, walking
/// back, every op whose results are used by those alone. Constants stay
/// where they are. In block order.
SmallVector<Operation *> exclusiveSlice(Block &body, Value deep) {
  llvm::DenseSet<Operation *> slice{deep.getDefiningOp()};
  auto inSlice = [&](Operation *user) {
    Operation *owner = body.findAncestorOpInBlock(*user);
    return owner && slice.contains(owner);
  };
  for (Operation &op : llvm::reverse(body)) {
    if (slice.contains(&op) || op.use_empty() ||
        op.hasTrait<OpTrait::ConstantLike>() || op.getNumRegions() != 0 ||
        !isMemoryEffectFree(&op))
      continue;
    if (llvm::all_of(op.getUsers(), inSlice))
      slice.insert(&op);
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : body)
    if (slice.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

struct CacheDeepFeaturesPass
    : kiln::impl::CacheDeepFeaturesPassBase<CacheDeepFeaturesPass> {
  using CacheDeepFeaturesPassBase::CacheDeepFeaturesPassBase;

  void runOnOperation() override {
    if (failed(forEachSample(getOperation(),
                             [&](SampleOp sample) { return cache(sample); })))
      signalPassFailure();
  }

  LogicalResult cache(SampleOp sample) {
    Location loc = sample.getLoc();
    if (interval < 1 || branch < 0 || forecast < 0 || forecast > 2)
      return emitError(loc) << "the caching interval must be at least 1, "
                               "the branch not negative and the forecast "
                               "order 0, 1 or 2";
    Block &body = sample.getBody().front();
    SmallVector<ConcatOp> concats;
    for (auto concat : body.getOps<ConcatOp>())
      if (isSkipConcat(concat))
        concats.push_back(concat);
    if (static_cast<int64_t>(concats.size()) <= branch)
      return emitError(loc)
             << "cannot cache the deep features of skip concatenation "
             << branch.getValue() << " (numbered from the outermost): the "
             << "denoiser has " << concats.size()
             << " (channel concatenations of two feature maps)";
    ConcatOp concat = concats[concats.size() - 1 - branch];
    // The deep input is the one computed later: the skip leaves the
    // encoder before the deeper levels run.
    Value deep = concat.getInputs()[0], skip = concat.getInputs()[1];
    Operation *deepOp = deep.getDefiningOp(), *skipOp = skip.getDefiningOp();
    if (!deepOp || deepOp->getBlock() != &body ||
        (skipOp && skipOp->getBlock() == &body &&
         deepOp->isBeforeInBlock(skipOp)))
      std::swap(deep, skip);
    deepOp = deep.getDefiningOp();
    if (!deepOp || deepOp->getBlock() != &body)
      return emitError(concat.getLoc())
             << "cannot cache the deep features: neither input of the skip "
                "concatenation is computed in the step";
    SmallVector<Operation *> span = exclusiveSlice(body, deep);

    auto featureType = cast<RankedTensorType>(deep.getType());
    OpBuilder b(sample);
    unsigned firstCarried = body.getNumArguments();
    carryMore(sample, forecastCarry(b, loc, featureType, forecast));
    ValueRange history =
        body.getArguments().slice(firstCarried, 2 * forecast + 1);
    ValueRange differences = history.take_front(forecast + 1);
    ValueRange computedAt = history.drop_front(forecast + 1);
    Value step = body.getArgument(2);

    // Right after the features: every user of them comes later, and every
    // value the moved ops use comes earlier.
    b.setInsertionPointAfter(deepOp);
    Value compute = everyIntervalStep(b, loc, step, interval);
    buildCacheChoice(
        b, loc, compute,
        {span, deep, [&](OpBuilder &) { return deep; },
         [](OpBuilder &, Value predicted) { return predicted; }},
        differences, computedAt, step);
    return success();
  }
};

} // namespace
