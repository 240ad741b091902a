//===- KilnPipelineOps.cpp - pipeline op verifiers ------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

LogicalResult SampleOp::verifyRegions() {
  auto timesteps = cast<ShapedType>(getTimesteps().getType());
  if (timesteps.getRank() != 1 || timesteps.getNumElements() < 1)
    return emitOpError("needs at least one step's timestep in a 1-D list");
  int64_t steps = timesteps.getNumElements();
  auto coefficients = cast<ShapedType>(getCoefficients().getType());
  if (coefficients.getShape() != ArrayRef<int64_t>{steps, kNumCoefficients})
    return emitOpError("needs [")
           << steps << ", " << kNumCoefficients
           << "] update coefficients, one row per step; has " << coefficients;
  Block &body = getBody().front();
  Type scalar = RankedTensorType::get({}, Float32Type::get(getContext()));
  TypeRange carried = getCarried().getTypes();
  if (body.getNumArguments() != 3 + carried.size() ||
      body.getArgument(0).getType() != getNoise().getType() ||
      body.getArgument(1).getType() != scalar ||
      !body.getArgument(2).getType().isIndex() ||
      TypeRange(body.getArguments().drop_front(3)) != carried)
    return emitOpError("region takes the latent (")
           << getNoise().getType()
           << "), the step's timestep (tensor<f32>), its index and the "
              "carried values";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValue().getType() != getNoise().getType())
    return emitOpError("region yields ")
           << yield.getValue().getType() << ", not the latent's "
           << getNoise().getType();
  if (yield.getCarried().getTypes() != carried)
    return emitOpError("region yields carried values of other types than "
                       "the op carries");
  return success();
}
