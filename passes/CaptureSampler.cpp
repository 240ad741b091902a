//===- CaptureSampler.cpp - a diffusion sampler's loop around its denoiser ===//
#include "passes/Passes.h"
#include "passes/SamplerSchedule.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_CAPTURESAMPLERPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The denoiser's inputs and output, checked.
struct Denoiser {
  func::FuncOp func;
  RankedTensorType latent;
  RankedTensorType timestep;
  RankedTensorType labels; // null without class labels
  RankedTensorType noise;  // the prediction, maybe with variance channels
};

FailureOr<Denoiser> checkDenoiser(ModuleOp module) {
  SmallVector<func::FuncOp> entries;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func))
      entries.push_back(func);
  if (entries.size() != 1)
    return emitError(module.getLoc())
           << "a sampler runs one denoiser; the module has " << entries.size()
           << " entry points";
  Denoiser d;
  d.func = entries.front();
  FunctionType type = d.func.getFunctionType();
  auto fail = [&](const Twine &why) {
    return emitError(d.func.getLoc())
           << "cannot sample with this denoiser: " << why;
  };
  auto tensorAt = [](TypeRange types, unsigned i) {
    return i < types.size() ? dyn_cast<RankedTensorType>(types[i])
                            : RankedTensorType();
  };
  d.latent = tensorAt(type.getInputs(), 0);
  d.timestep = tensorAt(type.getInputs(), 1);
  d.labels = tensorAt(type.getInputs(), 2);
  d.noise = tensorAt(type.getResults(), 0);
  if (type.getNumInputs() < 2 || type.getNumInputs() > 3 ||
      type.getNumResults() != 1 || !d.latent || !d.timestep || !d.noise ||
      (type.getNumInputs() == 3 && !d.labels))
    return fail("it must take (latent, timestep[, labels]) and return the "
                "predicted noise");
  if (!d.latent.hasStaticShape() || !d.noise.hasStaticShape() ||
      !d.timestep.hasStaticShape() || (d.labels && !d.labels.hasStaticShape()))
    return fail("its shapes must be fixed (name the sizes with --dim)");
  if (d.latent.getRank() < 2 || !d.latent.getElementType().isF32())
    return fail("the latent must be f32 [batch, channels, ...]");
  int64_t batch = d.latent.getDimSize(0);
  int64_t channels = d.latent.getDimSize(1);
  auto isBatchVector = [&](RankedTensorType t) {
    return t.getRank() == 0 || (t.getRank() == 1 && t.getDimSize(0) == batch);
  };
  if (!isBatchVector(d.timestep) ||
      !isa<FloatType, IntegerType>(d.timestep.getElementType()))
    return fail("the timestep must be a number or one per latent");
  if (d.labels && (d.labels.getRank() != 1 || d.labels.getDimSize(0) != batch ||
                   !isa<IntegerType>(d.labels.getElementType())))
    return fail("the labels must be integers, one per latent");
  SmallVector<int64_t> noiseShape(d.latent.getShape());
  SmallVector<int64_t> withVariance(noiseShape);
  withVariance[1] = 2 * channels;
  if (d.noise.getElementType() != d.latent.getElementType() ||
      (d.noise.getShape() != ArrayRef(noiseShape) &&
       d.noise.getShape() != ArrayRef(withVariance)))
    return fail("its output must have the latent's shape (or twice its "
                "channels, with a learned variance)");
  return d;
}

/// The rows of the table the labels index: the null label is its last.
std::optional<int64_t> findLabelTableRows(Value labels) {
  SmallVector<Value> worklist{labels};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto cast = dyn_cast<CastOp>(user))
        worklist.push_back(cast.getResult());
      if (auto gather = dyn_cast<GatherOp>(user))
        if (gather.getIndices() == value &&
            gather.getData().getDefiningOp<ConstantOp>())
          return gather.getData().getType().getDimSize(
              static_cast<int64_t>(gather.getAxis()));
    }
  }
  return std::nullopt;
}

/// Moves the ops of `sample`'s region that don't depend on the step before
/// it, in order, so chains of them move together.
void hoistStepInvariantOps(SampleOp sample) {
  Region &body = sample.getBody();
  for (Operation &op : llvm::make_early_inc_range(body.front())) {
    if (op.hasTrait<OpTrait::IsTerminator>() || op.getNumRegions() != 0 ||
        !isMemoryEffectFree(&op))
      continue;
    if (llvm::any_of(op.getOperands(), [&](Value v) {
          return body.isAncestor(v.getParentRegion());
        }))
      continue;
    op.moveBefore(sample);
  }
}

struct CaptureSamplerPass
    : kiln::impl::CaptureSamplerPassBase<CaptureSamplerPass> {
  using CaptureSamplerPassBase::CaptureSamplerPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(capture(module)))
      signalPassFailure();
  }

  LogicalResult capture(ModuleOp module) {
    Location loc = module.getLoc();
    if (steps < 1 || trainSteps < 2 || !(betaStart > 0) ||
        !(betaStart <= betaEnd) || !(betaEnd < 1))
      return emitError(loc) << "a sampler needs at least one step and a noise "
                               "schedule with 0 < beta-start <= beta-end < 1 "
                               "over at least 2 training steps";
    if (SymbolTable::lookupSymbolIn(module, entry))
      return emitError(loc) << "cannot add the sampler entry '" << entry
                            << "': the module already has a symbol of that "
                               "name";
    FailureOr<Denoiser> denoiser = checkDenoiser(module);
    if (failed(denoiser))
      return failure();
    Denoiser &d = *denoiser;
    // What the sampler adds is the denoiser's: its errors point at the model.
    loc = d.func.getLoc();
    bool guided = cfgScale != 1.0;
    int64_t batch = d.latent.getDimSize(0);
    if (guided && (!d.labels || batch % 2 != 0))
      return emitError(d.func.getLoc())
             << "classifier-free guidance needs a denoiser with class labels "
                "and an even batch (conditional and unconditional halves); "
                "this one takes "
             << (d.labels ? "a batch of " + std::to_string(batch)
                          : std::string("no labels"));
    int64_t sampleBatch = guided ? batch / 2 : batch;
    int64_t null = nullLabel;
    if (guided && null < 0) {
      std::optional<int64_t> rows = findLabelTableRows(d.func.getArgument(2));
      if (!rows)
        return emitError(d.func.getLoc())
               << "cannot find the table the class labels index; name the "
                  "unconditional label with --null-label";
      null = *rows - 1;
    }

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(d.func);
    auto sampleLatent = d.latent.clone([&] {
      SmallVector<int64_t> shape(d.latent.getShape());
      shape[0] = sampleBatch;
      return shape;
    }());
    SmallVector<Type> inputs{sampleLatent};
    RankedTensorType sampleLabels;
    if (d.labels) {
      sampleLabels = d.labels.clone({sampleBatch});
      inputs.push_back(sampleLabels);
    }
    auto func = func::FuncOp::create(b, d.func.getLoc(), entry,
                                     b.getFunctionType(inputs, {sampleLatent}));
    func.setArgAttr(0, kNameAttr, b.getStringAttr("noise"));
    if (d.labels)
      func.setArgAttr(1, kNameAttr, b.getStringAttr("labels"));
    func.setResultAttr(0, kNameAttr, b.getStringAttr("sample"));
    b.setInsertionPointToStart(func.addEntryBlock());

    Value labels;
    if (d.labels) {
      labels = func.getArgument(1);
      if (guided) {
        Value nulls = ConstantOp::create(
            b, loc, sampleLabels,
            DenseElementsAttr::get(
                sampleLabels,
                b.getIntegerAttr(sampleLabels.getElementType(), null)));
        labels =
            ConcatOp::create(b, loc, d.labels, ValueRange{labels, nulls}, 0);
      }
    }

    SamplerSchedule schedule = computeSamplerSchedule(
        sampler, steps, {trainSteps, betaStart, betaEnd});
    SmallVector<float> timesteps(schedule.timesteps.begin(),
                                 schedule.timesteps.end());
    SmallVector<float> coefficients;
    for (const auto &row : schedule.coefficients)
      coefficients.append(row.begin(), row.end());
    auto f32 = b.getF32Type();
    auto sample = SampleOp::create(
        b, loc, sampleLatent, func.getArgument(0), ValueRange{},
        SamplerAttr::get(b.getContext(), sampler),
        b.getF32FloatAttr(static_cast<float>(schedule.noiseScale)),
        DenseFPElementsAttr::get(RankedTensorType::get({steps}, f32),
                                 ArrayRef<float>(timesteps)),
        DenseFPElementsAttr::get(
            RankedTensorType::get({steps, SampleOp::kNumCoefficients}, f32),
            ArrayRef<float>(coefficients)));
    func::ReturnOp::create(b, loc, sample.getResult());

    Block *step = b.createBlock(&sample.getBody());
    Value x = step->addArgument(sampleLatent, loc);
    Value t = step->addArgument(RankedTensorType::get({}, f32), loc);
    step->addArgument(b.getIndexType(), loc);
    b.setInsertionPointToStart(step);
    IRMapping map;
    map.map(d.func.getArgument(0),
            guided ? ConcatOp::create(b, loc, d.latent, ValueRange{x, x}, 0)
                         .getResult()
                   : x);
    Value timestep = t;
    if (!d.timestep.getElementType().isF32())
      timestep = CastOp::create(
          b, loc, RankedTensorType::get({}, d.timestep.getElementType()),
          timestep);
    if (d.timestep.getRank() == 1)
      timestep =
          BroadcastOp::create(b, loc, d.timestep, timestep, ValueRange{});
    map.map(d.func.getArgument(1), timestep);
    if (d.labels)
      map.map(d.func.getArgument(2), labels);
    Block &body = d.func.getBody().front();
    for (Operation &op : body.without_terminator())
      b.clone(op, map);
    Value noise = map.lookup(body.getTerminator()->getOperand(0));
    SmallVector<int64_t> strides(d.latent.getRank(), 1);
    auto slice = [&](Value input, RankedTensorType type,
                     ArrayRef<int64_t> offsets) {
      return SliceOp::create(b, loc, type, input, offsets, type.getShape(),
                             strides)
          .getResult();
    };
    SmallVector<int64_t> origin(d.latent.getRank(), 0);
    if (d.noise != d.latent)
      noise = slice(noise, d.latent, origin);
    if (guided) {
      Value conditional = slice(noise, sampleLatent, origin);
      SmallVector<int64_t> second(origin);
      second[0] = sampleBatch;
      Value unconditional = slice(noise, sampleLatent, second);
      auto scalar = RankedTensorType::get({}, f32);
      Value scale = ConstantOp::create(
          b, loc, scalar,
          DenseElementsAttr::get(
              scalar, b.getF32FloatAttr(static_cast<float>(cfgScale))));
      Value difference = SubOp::create(b, loc, conditional, unconditional);
      noise = AddOp::create(b, loc, unconditional,
                            MulOp::create(b, loc, difference, scale));
    }
    YieldOp::create(b, loc, noise, ValueRange{});
    hoistStepInvariantOps(sample);
    return success();
  }
};

} // namespace
