//===- OnnxSplatOps.cpp - Kiln's ONNX operators (domain ai.kiln) ----------===//
//
// A network that predicts Gaussians compiles as one graph with the renderer
// that draws them when the renderer is a node of the graph: `SplatRender`
// of domain ai.kiln, opset 1 (docs/splatting.md gives its schema). It
// imports as kiln.splat_project and kiln.splat_rasterize, so exact culling
// and the rest of the splatting lowering apply to it.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/GraphImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The inputs of SplatRender in order, with their shapes: -1 for the
/// Gaussian count N, -2 for the SH coefficients K.
struct SplatInput {
  const char *name;
  SmallVector<int64_t, 3> shape;
};

const SplatInput kSplatInputs[] = {
    {"positions", {-1, 3}},   {"log_scales", {-1, 3}}, {"rotations", {-1, 4}},
    {"opacity_logits", {-1}}, {"sh", {-1, -2, 3}},     {"view", {4, 4}},
    {"intrinsics", {4}},      {"background", {3}}};

std::string formatShape(ArrayRef<int64_t> shape) {
  return "[" +
         llvm::join(llvm::map_range(shape,
                                    [](int64_t size) {
                                      return size == ShapedType::kDynamic
                                                 ? std::string("?")
                                                 : std::to_string(size);
                                    }),
                    ", ") +
         "]";
}

LogicalResult importSplatRender(NodeImporter &node) {
  if (int64_t opset = node.graph.getOpset(kKilnOnnxDomain); opset != 1)
    return node.emitError() << "is defined in opset 1 of domain "
                            << kKilnOnnxDomain << ", and the model imports "
                            << "opset " << opset;
  constexpr size_t kInputs = std::size(kSplatInputs);
  if (node.operands.size() != kInputs ||
      llvm::is_contained(node.operands, Value()))
    return node.emitError()
           << "takes 8 inputs (positions, log_scales, rotations, "
              "opacity_logits, sh, view, intrinsics, background), all given";
  int64_t width = node.getIntAttr("width", 0);
  int64_t height = node.getIntAttr("height", 0);
  if (width < 1 || width > kMaxSplatImageSide || height < 1 ||
      height > kMaxSplatImageSide)
    return node.emitError()
           << "attributes width and height must be 1 to " << kMaxSplatImageSide
           << ", not " << width << " and " << height;
  int64_t count = node.getOperandType(0).getRank() == 2
                      ? node.getOperandType(0).getDimSize(0)
                      : ShapedType::kDynamic;
  if (ShapedType::isDynamic(count))
    return node.emitError()
           << "input 'positions' must be [N, 3] with a fixed N, not "
           << formatShape(node.getOperandType(0).getShape());
  int64_t coefficients = node.getOperandType(4).getRank() == 3
                             ? node.getOperandType(4).getDimSize(1)
                             : 0;
  for (auto [i, input] : llvm::enumerate(kSplatInputs)) {
    RankedTensorType type = node.getOperandType(i);
    if (!type.getElementType().isF32())
      return node.emitError()
             << "input '" << input.name << "' must be float32, not "
             << type.getElementType();
    SmallVector<int64_t> expected;
    for (int64_t size : input.shape)
      expected.push_back(size == -1 ? count : size == -2 ? coefficients : size);
    bool validSh = i != 4 || llvm::is_contained({1, 4, 9, 16}, coefficients);
    if (type.getShape() != ArrayRef<int64_t>(expected) || !validSh) {
      InFlightDiagnostic diag = node.emitError()
                                << "input '" << input.name << "' must be ";
      if (i == 4)
        diag << "[" << count << ", K, 3] with K = 1, 4, 9 or 16 (SH degree "
             << "0-3)";
      else
        diag << formatShape(expected);
      return diag << ", not " << formatShape(type.getShape());
    }
  }
  ArrayRef<Value> in = node.operands;
  auto f32 = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, node.b.getF32Type());
  };
  Value splats = SplatProjectOp::create(
      node.b, node.loc, f32({11, count}), in[0], in[1], in[2], in[3], in[4],
      in[5], in[6], width, height, ValueRange{}, DenseF32ArrayAttr(),
      DenseF32ArrayAttr());
  node.results.push_back(SplatRasterizeOp::create(
      node.b, node.loc, f32({height, width, 3}), splats, in[7], ValueRange{},
      DenseI64ArrayAttr(), SplatCulling::Square));
  return success();
}

} // namespace

OpImportFn kiln::lookupKilnOpImporter(StringRef opType) {
  return opType == "SplatRender" ? importSplatRender : nullptr;
}
