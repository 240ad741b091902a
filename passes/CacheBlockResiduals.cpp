//===- CacheBlockResiduals.cpp - reuse blocks' output across steps --------===//
#include "passes/Passes.h"
#include "passes/ResidualStream.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/DenseSet.h"

namespace kiln {
#define GEN_PASS_DEF_CACHEBLOCKRESIDUALSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The ops of `block` that compute `out` from `in`: those that depend on
/// `in` and that `out` depends on, in block order. Fails if another op
/// uses one of their results (other than `out`).
FailureOr<SmallVector<Operation *>> findSpan(Block &block, Value in,
                                             Value out) {
  llvm::DenseSet<Operation *> dependsOnIn;
  for (Operation &op : block) {
    bool uses = llvm::any_of(op.getOperands(), [&](Value v) {
      return v == in || dependsOnIn.contains(v.getDefiningOp());
    });
    if (uses)
      dependsOnIn.insert(&op);
  }
  llvm::DenseSet<Operation *> feedsOut;
  SmallVector<Operation *> worklist{out.getDefiningOp()};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!dependsOnIn.contains(op) || !feedsOut.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
  }
  SmallVector<Operation *> span;
  for (Operation &op : block) {
    if (!feedsOut.contains(&op))
      continue;
    for (Value result : op.getResults())
      if (result != out)
        for (Operation *user : result.getUsers())
          if (!feedsOut.contains(user))
            return emitError(user->getLoc())
                   << "cannot cache the blocks' output: this op uses a value "
                      "computed inside them";
    if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      return emitError(op.getLoc())
             << "cannot cache the blocks' output: they hold an op with "
                "regions or effects";
    span.push_back(&op);
  }
  return span;
}

struct CacheBlockResidualsPass
    : kiln::impl::CacheBlockResidualsPassBase<CacheBlockResidualsPass> {
  using CacheBlockResidualsPassBase::CacheBlockResidualsPassBase;

  void runOnOperation() override {
    SmallVector<SampleOp> samples;
    getOperation().walk([&](SampleOp op) { samples.push_back(op); });
    for (SampleOp sample : samples)
      if (failed(cache(sample)))
        return signalPassFailure();
  }

  LogicalResult cache(SampleOp sample) {
    Location loc = sample.getLoc();
    if (interval < 1)
      return emitError(loc) << "the caching interval must be at least 1";
    FailureOr<SmallVector<Value>> stream = findResidualStream(
        sample.getBody(), loc, "cannot cache block residuals");
    if (failed(stream))
      return failure();
    int64_t blocks = static_cast<int64_t>(stream->size()) - 1;
    int64_t end = last < 0 ? blocks : last;
    if (first < 0 || first >= end || end > blocks)
      return emitError(loc)
             << "cannot cache blocks [" << first.getValue() << ", " << end
             << "): the denoiser has " << blocks << " (numbered from 0)";
    Value in = (*stream)[first], out = (*stream)[end];
    Block &body = sample.getBody().front();
    if (out.getParentBlock() != &body)
      return emitError(loc) << "cannot cache block residuals: the blocks' "
                               "output is computed in a nested region";
    FailureOr<SmallVector<Operation *>> span = findSpan(body, in, out);
    if (failed(span))
      return failure();

    // The sample op carries one more value: the stored residual.
    auto streamType = cast<RankedTensorType>(out.getType());
    OpBuilder b(sample);
    Value zeros = ConstantOp::create(b, loc, streamType,
                                     DenseElementsAttr::get(streamType, 0.0f));
    SmallVector<Value> carried(sample.getCarried());
    carried.push_back(zeros);
    auto cached = SampleOp::create(
        b, loc, sample.getType(), sample.getNoise(), carried,
        sample.getSamplerAttr(), sample.getNoiseScaleAttr(),
        sample.getTimestepsAttr(), sample.getCoefficientsAttr());
    cached->setDiscardableAttrs(sample->getDiscardableAttrDictionary());
    cached.getBody().takeBody(sample.getBody());
    sample.replaceAllUsesWith(cached.getResult());
    sample.erase();
    Value stored = body.addArgument(streamType, loc);
    Value step = body.getArgument(2);

    b.setInsertionPointAfterValue(out);
    Value period = arith::ConstantIndexOp::create(b, loc, interval);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value compute = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, loc, step, period), zero);
    auto choice = scf::IfOp::create(b, loc, TypeRange{streamType, streamType},
                                    compute, /*withElseRegion=*/true);
    OpBuilder then = choice.getThenBodyBuilder();
    auto thenYield = scf::YieldOp::create(then, loc, ValueRange{});
    for (Operation *op : *span)
      op->moveBefore(thenYield);
    then.setInsertionPoint(thenYield);
    Value residual = SubOp::create(then, loc, out, in);
    thenYield->setOperands(ValueRange{out, residual});
    OpBuilder otherwise = choice.getElseBodyBuilder();
    Value reused = AddOp::create(otherwise, loc, in, stored);
    scf::YieldOp::create(otherwise, loc, ValueRange{reused, stored});

    out.replaceUsesWithIf(choice.getResult(0), [&](OpOperand &use) {
      return !choice->isAncestor(use.getOwner());
    });
    auto yield = cast<YieldOp>(body.getTerminator());
    yield.getCarriedMutable().append(choice.getResult(1));
    return success();
  }
};

} // namespace
