//===- CacheBlockResiduals.cpp - reuse blocks' output across steps --------===//
#include "passes/Passes.h"
#include "passes/ResidualStream.h"
#include "passes/SampleCache.h"

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

/// The probe the adaptive decision watches: the first cached block's
/// normalized (and, in a DiT, modulated) input, found by following the
/// layer norm of `in` through the elementwise ops that alone use it. Its
/// ops leave `span`: they run every step, before the decision.
FailureOr<Value> splitProbe(Value in, SmallVector<Operation *> &span) {
  LayerNormOp norm;
  for (Operation *user : in.getUsers())
    if (auto candidate = dyn_cast<LayerNormOp>(user))
      if (!norm || candidate->isBeforeInBlock(norm))
        norm = candidate;
  if (!norm)
    return failure();
  SmallVector<Operation *> chain{norm};
  Value probe = norm.getResult();
  while (probe.hasOneUse() &&
         isa<MulOp, AddOp, SubOp>(*probe.getUsers().begin())) {
    Operation *next = *probe.getUsers().begin();
    chain.push_back(next);
    probe = next->getResult(0);
  }
  // The chain runs before the blocks, so it may use nothing they compute.
  llvm::DenseSet<Operation *> inSpan(span.begin(), span.end());
  for (Operation *op : chain)
    for (Value operand : op->getOperands())
      if (operand != in &&
          !llvm::is_contained(chain, operand.getDefiningOp()) &&
          inSpan.contains(operand.getDefiningOp()))
        return failure();
  llvm::erase_if(span,
                 [&](Operation *op) { return llvm::is_contained(chain, op); });
  return probe;
}

struct CacheBlockResidualsPass
    : kiln::impl::CacheBlockResidualsPassBase<CacheBlockResidualsPass> {
  using CacheBlockResidualsPassBase::CacheBlockResidualsPassBase;

  void runOnOperation() override {
    if (failed(forEachSample(getOperation(),
                             [&](SampleOp sample) { return cache(sample); })))
      signalPassFailure();
  }

  /// Whether the blocks run at `step` of `steps`: once the relative L1
  /// change of the probe since the last step, summed since they last ran
  /// (`distance`, set here), reaches the threshold, and on the first and
  /// last steps.
  Value adaptiveDecision(OpBuilder &b, Location loc, Value probe,
                         Value previousProbe, Value accumulated, Value step,
                         int64_t steps, Value &distance) {
    SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(
        0, cast<RankedTensorType>(probe.getType()).getRank()));
    auto meanAbs = [&](Value v) -> Value {
      return ReduceMeanOp::create(b, loc, AbsOp::create(b, loc, v),
                                  b.getDenseI64ArrayAttr(axes), UnitAttr());
    };
    Value change = DivOp::create(
        b, loc, meanAbs(SubOp::create(b, loc, probe, previousProbe)),
        meanAbs(previousProbe));
    distance = AddOp::create(b, loc, accumulated, change);
    Value total = tensor::ExtractOp::create(b, loc, distance, ValueRange{});
    Value limit = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(threshold)));
    Value over = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE,
                                       total, limit);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value lastStep = arith::ConstantIndexOp::create(b, loc, steps - 1);
    Value firstOrLast = arith::OrIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, step, zero),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, step,
                              lastStep));
    return arith::OrIOp::create(b, loc, over, firstOrLast);
  }

  LogicalResult cache(SampleOp sample) {
    Location loc = sample.getLoc();
    if (interval < 1 || threshold < 0 || forecast < 0 || forecast > 2)
      return emitError(loc) << "the caching interval must be at least 1, "
                               "the threshold not negative and the forecast "
                               "order 0, 1 or 2";
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
    bool adaptive = threshold > 0;
    Value probe;
    if (adaptive) {
      FailureOr<Value> found = splitProbe(in, *span);
      if (failed(found))
        return emitError(loc) << "cannot cache adaptively: the first cached "
                                 "block's normalized input is not found";
      probe = *found;
    }

    // The sample op carries the stored residual, with forecasting its
    // divided differences and the steps they were computed at, and for the
    // adaptive decision the previous step's probe and the distance
    // accumulated since the blocks last ran.
    auto streamType = cast<RankedTensorType>(out.getType());
    auto scalarType = RankedTensorType::get({}, streamType.getElementType());
    OpBuilder b(sample);
    SmallVector<Value> initial = forecastCarry(b, loc, streamType, forecast);
    if (adaptive) {
      auto probeType = cast<RankedTensorType>(probe.getType());
      initial.push_back(ConstantOp::create(
          b, loc, probeType, DenseElementsAttr::get(probeType, 0.0f)));
      initial.push_back(ConstantOp::create(
          b, loc, scalarType, DenseElementsAttr::get(scalarType, 0.0f)));
    }
    unsigned firstCarried = body.getNumArguments();
    SampleOp cached = carryMore(sample, initial);
    int64_t steps = cached.getNumSteps();
    ValueRange history =
        body.getArguments().slice(firstCarried, 2 * forecast + 1);
    ValueRange differences = history.take_front(forecast + 1);
    ValueRange computedAt = history.drop_front(forecast + 1);
    Value previousProbe, accumulated;
    if (adaptive) {
      previousProbe = body.getArgument(firstCarried + 2 * forecast + 1);
      accumulated = body.getArgument(firstCarried + 2 * forecast + 2);
    }
    Value step = body.getArgument(2);

    b.setInsertionPointAfterValue(out);
    Value distance;
    Value compute = adaptive ? adaptiveDecision(b, loc, probe, previousProbe,
                                                accumulated, step, steps,
                                                distance)
                             : everyIntervalStep(b, loc, step, interval);
    auto zeroDistance = [&](OpBuilder &then) -> SmallVector<Value> {
      return {ConstantOp::create(then, loc, scalarType,
                                 DenseElementsAttr::get(scalarType, 0.0f))};
    };
    scf::IfOp choice = buildCacheChoice(
        b, loc, compute,
        {*span, out,
         [&](OpBuilder &then) -> Value {
           return SubOp::create(then, loc, out, in);
         },
         [&](OpBuilder &otherwise, Value predicted) -> Value {
           return AddOp::create(otherwise, loc, in, predicted);
         }},
        differences, computedAt, step,
        adaptive ? function_ref<SmallVector<Value>(OpBuilder &)>(zeroDistance)
                 : nullptr,
        adaptive ? ValueRange{distance} : ValueRange{});
    if (adaptive) {
      auto yield = cast<YieldOp>(body.getTerminator());
      yield.getCarriedMutable().append(probe);
      yield.getCarriedMutable().append(choice.getResults().back());
    }
    return success();
  }
};

} // namespace
