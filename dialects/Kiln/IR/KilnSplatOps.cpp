//===- KilnSplatOps.cpp - Gaussian splatting op verifiers -----------------===//
#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

/// Checks that `value` is a static tensor of `shape`, `op`'s `name`.
static LogicalResult verifyShape(Operation *op, Value value,
                                 ArrayRef<int64_t> shape, StringRef name) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.hasStaticShape() && type.getShape() == shape)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << name << " must be tensor<";
  for (int64_t size : shape)
    diag << size << "x";
  return diag << "f32>, not " << type;
}

LogicalResult SplatProjectOp::verify() {
  auto positions = cast<RankedTensorType>(getPositions().getType());
  if (positions.getRank() != 2 || !positions.hasStaticShape() ||
      positions.getDimSize(1) != 3)
    return emitOpError("positions must be a static [N, 3] tensor, not ")
           << positions;
  int64_t count = positions.getDimSize(0);
  auto sh = cast<RankedTensorType>(getSh().getType());
  int64_t coefficients = sh.getRank() == 3 ? sh.getDimSize(1) : 0;
  if (coefficients != 1 && coefficients != 4 && coefficients != 9 &&
      coefficients != 16)
    return emitOpError("sh must be [N, K, 3] with K = 1, 4, 9 or 16 (SH "
                       "degree 0-3), not ")
           << sh;
  if (failed(verifyShape(*this, getLogScales(), {count, 3}, "log_scales")) ||
      failed(verifyShape(*this, getRotations(), {count, 4}, "rotations")) ||
      failed(
          verifyShape(*this, getOpacityLogits(), {count}, "opacity_logits")) ||
      failed(verifyShape(*this, getSh(), {count, coefficients, 3}, "sh")) ||
      failed(verifyShape(*this, getView(), {4, 4}, "view")) ||
      failed(verifyShape(*this, getIntrinsics(), {4}, "intrinsics")) ||
      failed(verifyShape(*this, getSplats(), {11, count}, "splats")))
    return failure();
  if (!getImageSize().empty() && getImageSize().size() != 2)
    return emitOpError("size takes a height and a width");
  // One scale and one offset per column of the int8 attributes.
  int64_t int8Columns = 0;
  for (Value attribute :
       {getLogScales(), getRotations(), getOpacityLogits(), getSh()}) {
    auto type = cast<RankedTensorType>(attribute.getType());
    if (type.getElementType().isInteger(8))
      int8Columns += type.getNumElements() / count;
  }
  for (std::optional<ArrayRef<float>> map : {getInt8Scales(), getInt8Offsets()})
    if (static_cast<int64_t>(map ? map->size() : 0) != int8Columns)
      return emitOpError("int8_scales and int8_offsets need one value per "
                         "column of the int8 attributes, ")
             << int8Columns;
  for (int64_t side : {getWidth(), getHeight()})
    if (side < 1 || side > kMaxSplatImageSide)
      return emitOpError("image sides must be 1 to ")
             << kMaxSplatImageSide << " pixels, not " << side;
  return success();
}

LogicalResult SplatRasterizeOp::verify() {
  auto splats = cast<RankedTensorType>(getSplats().getType());
  if (splats.getRank() != 2 || !splats.hasStaticShape() ||
      splats.getDimSize(0) != 11)
    return emitOpError("splats must be a static [11, N] tensor, not ")
           << splats;
  if (failed(verifyShape(*this, getBackground(), {3}, "background")))
    return failure();
  auto image = cast<RankedTensorType>(getImage().getType());
  bool sized = !getImageSize().empty();
  if (sized != static_cast<bool>(getMaxSize()))
    return emitOpError("size and max_size go together");
  if (sized && (getImageSize().size() != 2 || getMaxSize()->size() != 2))
    return emitOpError("size and max_size take a height and a width");
  bool shapeOk = image.getRank() == 3 && image.getDimSize(2) == 3 &&
                 (sized ? image.isDynamicDim(0) && image.isDynamicDim(1)
                        : image.hasStaticShape());
  if (!shapeOk)
    return emitOpError(sized ? "image must be a [?, ?, 3] tensor, not "
                             : "image must be a static [H, W, 3] tensor, not ")
           << image;
  for (int64_t side : sized ? *getMaxSize() : image.getShape().drop_back())
    if (side < 1 || side > kMaxSplatImageSide)
      return emitOpError("image sides must be 1 to ")
             << kMaxSplatImageSide << " pixels, not " << side;
  return success();
}

LogicalResult SplatContributionsOp::verify() {
  auto splats = cast<RankedTensorType>(getSplats().getType());
  if (splats.getRank() != 2 || !splats.hasStaticShape() ||
      splats.getDimSize(0) != 11)
    return emitOpError("splats must be a static [11, N] tensor, not ")
           << splats;
  if (failed(verifyShape(*this, getContributions(), {splats.getDimSize(1)},
                         "contributions")))
    return failure();
  if (!getImageSize().empty() && getImageSize().size() != 2)
    return emitOpError("size takes a height and a width");
  for (int64_t side : {getWidth(), getHeight()})
    if (side < 1 || side > kMaxSplatImageSide)
      return emitOpError("image sides must be 1 to ")
             << kMaxSplatImageSide << " pixels, not " << side;
  return success();
}
