//===- LowerSampleLoops.cpp - kiln.sample to a loop over its steps --------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERSAMPLELOOPSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Reads element [index] (or [index, column]) of a constant f32 table as a
/// tensor<f32>: views of the table, no copy.
Value readTableEntry(OpBuilder &b, Location loc, Value table, Value index,
                     std::optional<int64_t> column) {
  auto type = cast<RankedTensorType>(table.getType());
  SmallVector<OpFoldResult> offsets{index};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
  SmallVector<OpFoldResult> strides{b.getIndexAttr(1)};
  SmallVector<int64_t> shape{1};
  if (column) {
    offsets.push_back(b.getIndexAttr(*column));
    sizes.push_back(b.getIndexAttr(1));
    strides.push_back(b.getIndexAttr(1));
    shape.push_back(1);
  }
  Value entry = tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), table,
      offsets, sizes, strides);
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({}, type.getElementType()), entry,
      ArrayRef<ReassociationIndices>{});
}

void lowerSample(SampleOp sample) {
  OpBuilder b(sample);
  Location loc = sample.getLoc();
  auto latentType = cast<RankedTensorType>(sample.getNoise().getType());
  int64_t steps = sample.getNumSteps();
  auto coefficients = cast<DenseElementsAttr>(sample.getCoefficients());
  SmallVector<float> values(coefficients.getValues<float>());
  auto column = [&](int64_t c) {
    SmallVector<float> entries;
    for (int64_t i = 0; i < steps; ++i)
      entries.push_back(values[i * SampleOp::kNumCoefficients + c]);
    return entries;
  };
  // Single-step samplers never read the previous estimate.
  bool multistep = llvm::any_of(column(2), [](float c) { return c != 0; });

  Value timesteps = arith::ConstantOp::create(b, loc, sample.getTimesteps());
  Value table = arith::ConstantOp::create(b, loc, sample.getCoefficients());
  Value noise = bufferization::AllocTensorOp::create(
      b, loc, latentType, ValueRange{}, sample.getNoise());
  float noiseScale = sample.getNoiseScale().convertToFloat();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  if (noiseScale != 1.0f)
    noise = MulOp::create(
        b, loc, noise,
        ConstantOp::create(b, loc, scalar,
                           DenseElementsAttr::get(scalar, noiseScale)));
  SmallVector<Value> initial{noise};
  if (multistep)
    initial.push_back(ConstantOp::create(
        b, loc, latentType, DenseElementsAttr::get(latentType, 0.0f)));
  size_t firstCarried = initial.size();
  llvm::append_range(initial, sample.getCarried());

  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, steps);
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, initial,
      [&](OpBuilder &b, Location loc, Value i, ValueRange carried) {
        Value x = carried[0];
        Block &body = sample.getBody().front();
        IRMapping map;
        map.map(body.getArgument(0), x);
        map.map(body.getArgument(1),
                readTableEntry(b, loc, timesteps, i, std::nullopt));
        map.map(body.getArgument(2), i);
        for (auto [arg, value] : llvm::zip(body.getArguments().drop_front(3),
                                           carried.drop_front(firstCarried)))
          map.map(arg, value);
        for (Operation &op : body.without_terminator())
          b.clone(op, map);
        auto yield = cast<YieldOp>(body.getTerminator());
        Value e = map.lookup(yield.getValue());
        auto term = [&](Value v, int64_t c) -> Value {
          return MulOp::create(b, loc, v, readTableEntry(b, loc, table, i, c));
        };
        Value next = AddOp::create(b, loc, term(x, 0), term(e, 1));
        SmallVector<Value> results;
        if (multistep) {
          next = AddOp::create(b, loc, next, term(carried[1], 2));
          Value estimate = AddOp::create(b, loc, term(x, 3), term(e, 4));
          results.push_back(next);
          results.push_back(estimate);
        } else {
          results.push_back(next);
        }
        for (Value value : yield.getCarried())
          results.push_back(map.lookup(value));
        // In place: the next step's state takes this step's buffers.
        SmallVector<Value> yielded;
        for (auto [value, buffer] : llvm::zip(results, carried))
          yielded.push_back(
              value == buffer
                  ? value
                  : bufferization::MaterializeInDestinationOp::create(
                        b, loc, value, buffer)
                        .getResult());
        scf::YieldOp::create(b, loc, yielded);
      });
  sample.getResult().replaceAllUsesWith(loop.getResult(0));
  sample.erase();
}

struct LowerSampleLoopsPass
    : kiln::impl::LowerSampleLoopsPassBase<LowerSampleLoopsPass> {
  void runOnOperation() override {
    SmallVector<SampleOp> samples;
    getOperation().walk([&](SampleOp op) { samples.push_back(op); });
    for (SampleOp sample : samples)
      lowerSample(sample);
  }
};

} // namespace
