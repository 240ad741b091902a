//===- SampleCache.cpp - what the sampler's caching passes share ----------===//
#include "passes/SampleCache.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace kiln;

namespace {

/// `value` as a rank-0 tensor.
Value asTensor(OpBuilder &b, Location loc, Value value) {
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, value.getType()), value);
}

Value scalarOf(OpBuilder &b, Location loc, Value tensor) {
  return tensor::ExtractOp::create(b, loc, tensor, ValueRange{});
}

} // namespace

LogicalResult kiln::forEachSample(ModuleOp module,
                                  function_ref<LogicalResult(SampleOp)> cache) {
  SmallVector<SampleOp> samples;
  module.walk([&](SampleOp op) { samples.push_back(op); });
  for (SampleOp sample : samples)
    if (failed(cache(sample)))
      return failure();
  return success();
}

bool kiln::isSkipConcat(ConcatOp concat) {
  if (concat.getAxis() != 1 || concat.getInputs().size() != 2)
    return false;
  return llvm::all_of(concat.getInputs(), [](Value input) {
    return cast<RankedTensorType>(input.getType()).getRank() == 4;
  });
}

SampleOp kiln::carryMore(SampleOp sample, ValueRange initial) {
  OpBuilder b(sample);
  SmallVector<Value> carried(sample.getCarried());
  llvm::append_range(carried, initial);
  auto wider = SampleOp::create(
      b, sample.getLoc(), sample.getType(), sample.getNoise(), carried,
      sample.getSamplerAttr(), sample.getNoiseScaleAttr(),
      sample.getTimestepsAttr(), sample.getCoefficientsAttr());
  wider->setDiscardableAttrs(sample->getDiscardableAttrDictionary());
  wider.getBody().takeBody(sample.getBody());
  for (Value value : initial)
    wider.getBody().addArgument(value.getType(), sample.getLoc());
  sample.replaceAllUsesWith(wider.getResult());
  sample.erase();
  return wider;
}

Value kiln::everyIntervalStep(OpBuilder &b, Location loc, Value step,
                              int64_t interval) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value period = arith::ConstantIndexOp::create(b, loc, interval);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               arith::RemUIOp::create(b, loc, step, period),
                               zero);
}

Value kiln::stepAsFloat(OpBuilder &b, Location loc, Value step) {
  return arith::UIToFPOp::create(
      b, loc, b.getF32Type(),
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), step));
}

SmallVector<Value> kiln::forecastCarry(OpBuilder &b, Location loc,
                                       RankedTensorType type, int64_t order) {
  auto filled = [&](RankedTensorType filledType, float value) -> Value {
    return ConstantOp::create(b, loc, filledType,
                              DenseElementsAttr::get(filledType, value));
  };
  SmallVector<Value> initial;
  for (int64_t k = 0; k <= order; ++k)
    initial.push_back(filled(type, 0.0f));
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  for (int64_t k = 0; k < order; ++k)
    initial.push_back(filled(scalarType, -1.0f));
  return initial;
}

SmallVector<Value> kiln::updateDifferences(OpBuilder &b, Location loc,
                                           Value value, ValueRange differences,
                                           ValueRange computedAt, Value step) {
  SmallVector<Value> updated{value};
  if (computedAt.empty())
    return updated;
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1));
  for (auto [k, at] : llvm::enumerate(computedAt)) {
    Value earlier = scalarOf(b, loc, at);
    Value known = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE,
                                        earlier, zero);
    Value inverse = arith::DivFOp::create(
        b, loc, one, arith::SubFOp::create(b, loc, step, earlier));
    Value factor = arith::SelectOp::create(b, loc, known, inverse, zero);
    updated.push_back(MulOp::create(
        b, loc, SubOp::create(b, loc, updated.back(), differences[k]),
        asTensor(b, loc, factor)));
  }
  return updated;
}

SmallVector<Value> kiln::updateComputedAt(OpBuilder &b, Location loc,
                                          ValueRange computedAt,
                                          Value computed, Value step) {
  SmallVector<Value> updated;
  Value newer = step;
  for (Value at : computedAt) {
    Value old = scalarOf(b, loc, at);
    updated.push_back(asTensor(
        b, loc, arith::SelectOp::create(b, loc, computed, newer, old)));
    newer = old;
  }
  return updated;
}

Value kiln::extrapolate(OpBuilder &b, Location loc, ValueRange differences,
                        ValueRange computedAt, Value step) {
  Value predicted = differences.front(), product;
  for (auto [k, at] : llvm::enumerate(computedAt)) {
    Value distance = arith::SubFOp::create(b, loc, step, scalarOf(b, loc, at));
    product = product ? arith::MulFOp::create(b, loc, product, distance)
                      : distance;
    predicted = AddOp::create(
        b, loc, predicted,
        MulOp::create(b, loc, differences[k + 1], asTensor(b, loc, product)));
  }
  return predicted;
}

scf::IfOp kiln::buildCacheChoice(
    OpBuilder &b, Location loc, Value compute,
    const CachedComputation &computation, ValueRange differences,
    ValueRange computedAt, Value step,
    function_ref<SmallVector<Value>(OpBuilder &)> computingExtra,
    ValueRange otherExtra) {
  Value stepValue = stepAsFloat(b, loc, step);
  SmallVector<Type> types{computation.result.getType()};
  llvm::append_range(types, differences.getTypes());
  llvm::append_range(types, otherExtra.getTypes());
  auto choice =
      scf::IfOp::create(b, loc, types, compute, /*withElseRegion=*/true);

  OpBuilder then = choice.getThenBodyBuilder();
  auto thenYield = scf::YieldOp::create(then, loc, ValueRange{});
  for (Operation *op : computation.span)
    op->moveBefore(thenYield);
  then.setInsertionPoint(thenYield);
  SmallVector<Value> computed{computation.result};
  llvm::append_range(computed,
                     updateDifferences(then, loc, computation.store(then),
                                       differences, computedAt, stepValue));
  if (computingExtra)
    llvm::append_range(computed, computingExtra(then));
  thenYield->setOperands(computed);

  OpBuilder otherwise = choice.getElseBodyBuilder();
  SmallVector<Value> reused{computation.reuse(
      otherwise,
      extrapolate(otherwise, loc, differences, computedAt, stepValue))};
  llvm::append_range(reused, differences);
  llvm::append_range(reused, otherExtra);
  scf::YieldOp::create(otherwise, loc, reused);

  Value result = computation.result;
  result.replaceUsesWithIf(choice.getResult(0), [&](OpOperand &use) {
    return !choice->isAncestor(use.getOwner());
  });
  auto yield = cast<YieldOp>(choice->getBlock()->getTerminator());
  yield.getCarriedMutable().append(
      choice.getResults().slice(1, differences.size()));
  b.setInsertionPointAfter(choice);
  yield.getCarriedMutable().append(
      updateComputedAt(b, loc, computedAt, compute, stepValue));
  return choice;
}
