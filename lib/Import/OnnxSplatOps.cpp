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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

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

/// The image's sides from SplatRender's optional input `image_size` (int64
/// [height, width]), within the attributes' bound `maxSize`: its elements
/// where they are constants or computed from the graph's named dimensions
/// (each then checked per call), else the named dimensions they set, which
/// needs the input to be a graph input (the runtime reads it before the
/// graph runs).
FailureOr<SmallVector<AffineExpr>> getImageSize(NodeImporter &node,
                                                ArrayRef<int64_t> maxSize) {
  Value size = node.operands[8];
  RankedTensorType type = node.getOperandType(8);
  if (!type.getElementType().isInteger(64) ||
      type.getShape() != ArrayRef<int64_t>{2})
    return node.emitError()
           << "input 'image_size' must be int64 [2] (height, width), not "
           << type.getElementType() << " " << formatShape(type.getShape());
  static const char *const kSides[] = {"height", "width"};
  SmallVector<AffineExpr> sides;
  if (std::optional<SymbolicInts> contents = node.graph.getContents(size)) {
    for (auto [side, expr] : llvm::enumerate(*contents)) {
      sides.push_back(expr);
      auto constant = dyn_cast<AffineConstantExpr>(expr);
      if (!constant) {
        node.graph.require(expr, 1, maxSize[side], node.describe());
        continue;
      }
      if (constant.getValue() < 1 || constant.getValue() > maxSize[side])
        return node.emitError()
               << "image_size's " << kSides[side] << " is "
               << constant.getValue() << ", outside 1.." << maxSize[side]
               << " (attribute " << kSides[side] << ")";
    }
    return sides;
  }
  auto argument = dyn_cast<BlockArgument>(size);
  if (!argument || !isa<func::FuncOp>(argument.getOwner()->getParentOp()))
    return node.emitError()
           << "input 'image_size' must be a graph input, a constant or "
              "computed from shapes: the image's size is set before the "
              "graph runs";
  // The sides are named after the input where another dimension of the
  // graph has taken the plain names.
  bool taken = llvm::any_of(node.graph.getSymbols(), [&](const DimSymbol &s) {
    return llvm::is_contained(kSides, s.name) &&
           !(s.fromElement && s.source == size);
  });
  for (auto [side, name] : llvm::enumerate(kSides)) {
    std::string symbolName =
        taken ? node.node.input(8) + "_" + name : std::string(name);
    FailureOr<AffineExpr> symbol = node.graph.getElementSymbol(
        size, side, symbolName, 1, maxSize[side], node.loc);
    if (failed(symbol))
      return failure();
    sides.push_back(*symbol);
  }
  return sides;
}

LogicalResult importSplatRender(NodeImporter &node) {
  if (int64_t opset = node.graph.getOpset(kKilnOnnxDomain); opset != 1)
    return node.emitError() << "is defined in opset 1 of domain "
                            << kKilnOnnxDomain << ", and the model imports "
                            << "opset " << opset;
  constexpr size_t kInputs = std::size(kSplatInputs);
  if (node.operands.size() < kInputs || node.operands.size() > kInputs + 1 ||
      llvm::is_contained(ArrayRef(node.operands).take_front(kInputs), Value()))
    return node.emitError()
           << "takes 8 inputs (positions, log_scales, rotations, "
              "opacity_logits, sh, view, intrinsics, background), all given, "
              "and optionally image_size";
  int64_t width = node.getIntAttr("width", 0);
  int64_t height = node.getIntAttr("height", 0);
  if (width < 1 || width > kMaxSplatImageSide || height < 1 ||
      height > kMaxSplatImageSide)
    return node.emitError()
           << "attributes width and height must be 1 to " << kMaxSplatImageSide
           << ", not " << width << " and " << height;
  SmallVector<AffineExpr> sides;
  if (node.operands.size() > kInputs && node.operands[kInputs]) {
    FailureOr<SmallVector<AffineExpr>> size =
        getImageSize(node, {height, width});
    if (failed(size))
      return failure();
    sides = std::move(*size);
    if (isa<AffineConstantExpr>(sides[0]) &&
        isa<AffineConstantExpr>(sides[1])) {
      height = cast<AffineConstantExpr>(sides[0]).getValue();
      width = cast<AffineConstantExpr>(sides[1]).getValue();
      sides.clear();
    }
  }
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
  // A size set at run time: the attributes are the bound the code is laid
  // out for, the sizes the tiles that get splats.
  SmallVector<Value> size;
  for (AffineExpr side : sides) {
    FailureOr<Value> value = node.graph.materialize(side, node.loc);
    if (failed(value))
      return failure();
    size.push_back(*value);
  }
  SmallVector<int64_t> imageShape = {height, width, 3};
  DenseI64ArrayAttr maxSize;
  if (!size.empty()) {
    imageShape = {ShapedType::kDynamic, ShapedType::kDynamic, 3};
    maxSize = node.b.getDenseI64ArrayAttr({height, width});
  }
  Value splats =
      SplatProjectOp::create(node.b, node.loc, f32({11, count}), in[0], in[1],
                             in[2], in[3], in[4], in[5], in[6], width, height,
                             size, DenseF32ArrayAttr(), DenseF32ArrayAttr());
  Value image =
      SplatRasterizeOp::create(node.b, node.loc, f32(imageShape), splats, in[7],
                               size, maxSize, SplatCulling::Square);
  if (!size.empty()) {
    // One side may be a constant the shapes computed: the type says so.
    SymbolicInts shape = {sides[0], sides[1],
                          getAffineConstantExpr(3, node.b.getContext())};
    auto typed = f32(getStaticSizes(shape));
    if (typed != image.getType())
      image = tensor::CastOp::create(node.b, node.loc, typed, image);
    node.graph.setShape(image, std::move(shape));
  }
  node.results.push_back(image);
  return success();
}

} // namespace

OpImportFn kiln::lookupKilnOpImporter(StringRef opType) {
  return opType == "SplatRender" ? importSplatRender : nullptr;
}
