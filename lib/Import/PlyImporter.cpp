//===- PlyImporter.cpp - 3D Gaussian splatting scenes from .ply -----------===//
//
// A trained 3DGS scene is a .ply point cloud whose vertices carry the
// Gaussians' attributes as named float properties: x y z, f_dc_0-2,
// f_rest_0..(3 (K - 1) - 1) channel-major, opacity (a logit), scale_0-2
// (logs) and rot_0-3 (a quaternion w x y z, as training leaves it: any
// length). The importer reads the header, checks the property list and the
// body's size before reading it, checks every value it uses, and builds
// `func.func @main(view, intrinsics, background) -> image` from
// kiln.splat_project and kiln.splat_rasterize, with the Gaussians as
// constants or, on request, as the entry's first inputs.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"
#include "kiln/compiler.hpp"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;

namespace {

/// One vertex property: its byte offset in a vertex and its width (4 for
/// float, 8 for double).
struct Property {
  int64_t offset;
  int64_t bytes;
};

/// The parsed header: the vertex element's properties by name, its vertex
/// count and size, where the body starts and its byte order.
struct PlyHeader {
  llvm::StringMap<Property> properties;
  int64_t vertices = 0;
  int64_t vertexBytes = 0;
  size_t bodyOffset = 0;
  bool bigEndian = false;
};

int64_t propertyBytes(StringRef type) {
  if (type == "float" || type == "float32")
    return 4;
  if (type == "double" || type == "float64")
    return 8;
  return 0;
}

FailureOr<PlyHeader> parseHeader(StringRef file, Location loc) {
  auto fail = [&](const Twine &message) -> FailureOr<PlyHeader> {
    return emitError(loc) << message;
  };
  if (!file.starts_with("ply\n") && !file.starts_with("ply\r\n"))
    return fail("not a .ply file: it does not start with 'ply'");
  size_t end = file.find("end_header\n");
  if (end == StringRef::npos)
    return fail("the .ply header has no 'end_header' line");
  PlyHeader header;
  header.bodyOffset = end + strlen("end_header\n");
  SmallVector<StringRef> lines;
  file.take_front(end).split(lines, '\n');
  bool inVertex = false, sawVertex = false, sawFormat = false;
  for (StringRef line : llvm::drop_begin(lines)) {
    line = line.trim();
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    if (words.empty() || words[0] == "comment" || words[0] == "obj_info")
      continue;
    if (words[0] == "format") {
      if (words.size() != 3 || words[2] != "1.0")
        return fail("unsupported .ply format line '" + line + "'");
      if (words[1] == "binary_big_endian")
        header.bigEndian = true;
      else if (words[1] != "binary_little_endian")
        return fail("the .ply is " + words[1] +
                    "; Gaussian scenes are read from binary .ply files");
      sawFormat = true;
      continue;
    }
    if (words[0] == "element") {
      if (words.size() != 3)
        return fail("malformed .ply element line '" + line + "'");
      if (sawVertex && inVertex) {
        // Elements after the vertices are not read (their data follows).
        inVertex = false;
        continue;
      }
      if (words[1] != "vertex")
        return fail("the .ply has element '" + words[1] +
                    "' before its vertices; a Gaussian scene has vertices "
                    "first");
      if (words[2].getAsInteger(10, header.vertices) || header.vertices < 1)
        return fail("the .ply vertex count '" + words[2] +
                    "' is not a positive number");
      inVertex = sawVertex = true;
      continue;
    }
    if (words[0] == "property") {
      if (!inVertex) {
        if (!sawVertex)
          return fail("a .ply property comes before any element");
        continue;
      }
      if (words.size() != 3)
        return fail("the vertex property line '" + line +
                    "' is not a scalar property (lists are not Gaussian "
                    "attributes)");
      int64_t bytes = propertyBytes(words[1]);
      if (!bytes)
        return fail("vertex property '" + words[2] + "' has type '" + words[1] +
                    "'; Gaussian attributes are float or double");
      if (!header.properties
               .try_emplace(words[2], Property{header.vertexBytes, bytes})
               .second)
        return fail("vertex property '" + words[2] + "' is listed twice");
      header.vertexBytes += bytes;
      continue;
    }
    return fail("unexpected .ply header line '" + line + "'");
  }
  if (!sawFormat)
    return fail("the .ply header has no format line");
  if (!sawVertex)
    return fail("the .ply has no vertex element");
  return header;
}

/// The Gaussians' attributes as the splat ops take them, in float.
struct Scene {
  int64_t count = 0;
  int64_t coefficients = 0;
  std::vector<float> positions, logScales, rotations, opacityLogits, sh;
};

FailureOr<Scene> readScene(StringRef file, const PlyHeader &header,
                           Location loc) {
  auto require = [&](StringRef name) -> FailureOr<Property> {
    auto it = header.properties.find(name);
    if (it == header.properties.end())
      return emitError(loc) << "the .ply has no vertex property '" << name
                            << "', which a Gaussian scene needs";
    return it->second;
  };
  int64_t rest = 0;
  while (header.properties.count(("f_rest_" + Twine(rest)).str()))
    ++rest;
  int64_t listedRest = llvm::count_if(header.properties, [](const auto &p) {
    return p.getKey().starts_with("f_rest_");
  });
  if (listedRest != rest)
    return emitError(loc) << "the .ply's f_rest_ properties are not numbered "
                             "0 to "
                          << listedRest - 1;
  if (rest != 0 && rest != 9 && rest != 24 && rest != 45)
    return emitError(loc) << "the .ply has " << rest
                          << " f_rest_ properties; spherical harmonics of "
                             "degree 1-3 have 9, 24 or 45";

  Scene scene;
  scene.count = header.vertices;
  scene.coefficients = 1 + rest / 3;
  // Checked before anything is allocated: the header's count must fit the
  // bytes the file has.
  uint64_t available = file.size() - header.bodyOffset;
  if (header.vertexBytes == 0 ||
      static_cast<uint64_t>(header.vertices) >
          available / static_cast<uint64_t>(header.vertexBytes))
    return emitError(loc) << "the .ply is truncated: its header lists "
                          << header.vertices << " vertices of "
                          << header.vertexBytes << " bytes, and the "
                          << available << " bytes after it hold "
                          << available /
                                 std::max<int64_t>(header.vertexBytes, 1);

  struct Column {
    StringRef name;
    Property property;
  };
  SmallVector<Column> columns;
  SmallVector<std::string> names = {
      "x",     "y",     "z",     "scale_0", "scale_1", "scale_2", "rot_0",
      "rot_1", "rot_2", "rot_3", "opacity", "f_dc_0",  "f_dc_1",  "f_dc_2"};
  for (int64_t i = 0; i < rest; ++i)
    names.push_back(("f_rest_" + Twine(i)).str());
  for (const std::string &name : names) {
    FailureOr<Property> property = require(name);
    if (failed(property))
      return failure();
    columns.push_back({name, *property});
  }

  int64_t n = scene.count, k = scene.coefficients;
  scene.positions.resize(n * 3);
  scene.logScales.resize(n * 3);
  scene.rotations.resize(n * 4);
  scene.opacityLogits.resize(n);
  scene.sh.resize(n * k * 3);
  const char *body = file.data() + header.bodyOffset;
  llvm::endianness order =
      header.bigEndian ? llvm::endianness::big : llvm::endianness::little;
  SmallVector<float> values(columns.size());
  for (int64_t g = 0; g < n; ++g) {
    const char *vertex = body + g * header.vertexBytes;
    for (auto [c, column] : llvm::enumerate(columns)) {
      const char *at = vertex + column.property.offset;
      double value =
          column.property.bytes == 4
              ? llvm::bit_cast<float>(llvm::support::endian::read32(at, order))
              : llvm::bit_cast<double>(
                    llvm::support::endian::read64(at, order));
      if (std::isnan(value))
        return emitError(loc)
               << "Gaussian " << g << ": its " << column.name << " is NaN";
      if (!(std::fabs(value) <= std::numeric_limits<float>::max()))
        return emitError(loc) << "Gaussian " << g << ": its " << column.name
                              << " is infinite or beyond float's range";
      values[c] = static_cast<float>(value);
    }
    llvm::copy(ArrayRef(values).slice(0, 3), &scene.positions[g * 3]);
    llvm::copy(ArrayRef(values).slice(3, 3), &scene.logScales[g * 3]);
    llvm::copy(ArrayRef(values).slice(6, 4), &scene.rotations[g * 4]);
    double length = std::sqrt(
        double(values[6]) * values[6] + double(values[7]) * values[7] +
        double(values[8]) * values[8] + double(values[9]) * values[9]);
    // Training leaves quaternions of any length and renderers normalize
    // them; one too short to normalize in float has no rotation.
    if (!(length >= 1e-6))
      return emitError(loc) << "Gaussian " << g
                            << ": its rotation quaternion (rot_0-3) has "
                               "length "
                            << llvm::formatv("{0:g}", length).str()
                            << ", too short to normalize";
    if (values[3] > 80 || values[4] > 80 || values[5] > 80)
      return emitError(loc)
             << "Gaussian " << g << ": a log scale above 80 overflows float";
    scene.opacityLogits[g] = values[10];
    for (int64_t ch = 0; ch < 3; ++ch) {
      scene.sh[(g * k) * 3 + ch] = values[11 + ch];
      for (int64_t j = 1; j < k; ++j)
        scene.sh[(g * k + j) * 3 + ch] = values[14 + ch * (k - 1) + (j - 1)];
    }
  }
  return scene;
}

/// A constant of `shape` holding `data`.
Value constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
               ArrayRef<float> data) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  ElementsAttr elements =
      kiln::createElements(type, [&](MutableArrayRef<char> bytes) {
        std::memcpy(bytes.data(), data.data(), data.size() * sizeof(float));
      });
  return kiln::ConstantOp::create(b, loc, elements);
}

} // namespace

OwningOpRef<ModuleOp> kiln::importSplatScene(StringRef path,
                                             MLIRContext &context,
                                             const SplatSceneOptions &options) {
  context.loadDialect<kiln::KilnDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  for (int64_t side : {options.width, options.height})
    if (side < 1 || side > kiln::kMaxSplatImageSide) {
      emitError(loc) << "the image is " << options.width << "x"
                     << options.height << " pixels; its sides must be 1 to "
                     << kiln::kMaxSplatImageSide;
      return {};
    }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(loc) << "cannot read the scene: " << buffer.getError().message();
    return {};
  }
  StringRef file = (*buffer)->getBuffer();
  FailureOr<PlyHeader> header = parseHeader(file, loc);
  if (failed(header))
    return {};
  FailureOr<Scene> scene = readScene(file, *header, loc);
  if (failed(scene))
    return {};

  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  int64_t n = scene->count, k = scene->coefficients;
  auto f32 = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  };
  SmallVector<std::pair<StringRef, RankedTensorType>> inputs;
  if (options.gaussiansAsInputs)
    inputs = {{"positions", f32({n, 3})},
              {"log_scales", f32({n, 3})},
              {"rotations", f32({n, 4})},
              {"opacity_logits", f32({n})},
              {"sh", f32({n, k, 3})}};
  inputs.append({{"view", f32({4, 4})},
                 {"intrinsics", f32({4})},
                 {"background", f32({3})}});
  if (options.imageSizeInput)
    inputs.push_back(
        {"image_size", RankedTensorType::get({2}, b.getI64Type())});
  auto imageType = options.imageSizeInput
                       ? f32({ShapedType::kDynamic, ShapedType::kDynamic, 3})
                       : f32({options.height, options.width, 3});
  SmallVector<Type> inputTypes = llvm::to_vector(llvm::map_range(
      inputs, [](const auto &input) -> Type { return input.second; }));
  auto func = func::FuncOp::create(b, loc, "main",
                                   b.getFunctionType(inputTypes, {imageType}));
  Block *body = func.addEntryBlock();
  for (auto [i, input] : llvm::enumerate(inputs))
    func.setArgAttr(i, kNameAttr, b.getStringAttr(input.first));
  func.setResultAttr(0, kNameAttr, b.getStringAttr("image"));
  if (options.imageSizeInput) {
    // The image's sides are named dimensions that the image_size input's
    // elements set.
    (*module)->setAttr(
        kDimsAttr,
        b.getArrayAttr({DimAttr::get(&context, "height", 1, options.height),
                        DimAttr::get(&context, "width", 1, options.width)}));
    func.setArgAttr(inputs.size() - 1, kDimValuesAttr,
                    b.getStrArrayAttr({"height", "width"}));
    func.setResultAttr(0, kDimNamesAttr,
                       b.getStrArrayAttr({"height", "width", ""}));
  }
  b.setInsertionPointToEnd(body);

  SmallVector<Value> gaussians;
  if (options.gaussiansAsInputs) {
    for (int64_t i = 0; i < 5; ++i)
      gaussians.push_back(body->getArgument(i));
  } else {
    gaussians = {constant(b, loc, {n, 3}, scene->positions),
                 constant(b, loc, {n, 3}, scene->logScales),
                 constant(b, loc, {n, 4}, scene->rotations),
                 constant(b, loc, {n}, scene->opacityLogits),
                 constant(b, loc, {n, k, 3}, scene->sh)};
  }
  ValueRange camera =
      body->getArguments().drop_front(options.gaussiansAsInputs ? 5 : 0);
  SmallVector<Value> size;
  DenseI64ArrayAttr maxSize;
  if (options.imageSizeInput) {
    for (int64_t side = 0; side < 2; ++side)
      size.push_back(arith::IndexCastOp::create(
          b, loc, b.getIndexType(),
          tensor::ExtractOp::create(
              b, loc, camera[3],
              ValueRange{arith::ConstantIndexOp::create(b, loc, side)})));
    maxSize = b.getDenseI64ArrayAttr({options.height, options.width});
  }
  Value splats = kiln::SplatProjectOp::create(
      b, loc, f32({11, n}), gaussians[0], gaussians[1], gaussians[2],
      gaussians[3], gaussians[4], camera[0], camera[1], options.width,
      options.height, size, DenseF32ArrayAttr(), DenseF32ArrayAttr());
  Value image =
      kiln::SplatRasterizeOp::create(b, loc, imageType, splats, camera[2], size,
                                     maxSize, kiln::SplatCulling::Square);
  func::ReturnOp::create(b, loc, image);
  return module;
}
