//===- OnnxImporter.cpp - ONNX model to kiln dialect ----------------------===//
//
// Loads and validates the model with libonnx (which reports problems by
// throwing; this file catches everything it throws), then imports the graph.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxImporter.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "lib/Import/ExternalData.h"
#include "lib/Import/GraphImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

using namespace mlir;
using namespace kiln;

namespace {

/// Protobuf can't hold a message of 2 GiB or more; larger models must keep
/// their weights in external data files.
constexpr uint64_t kMaxModelFileSize = (uint64_t(1) << 31) - 1;

/// Opset version per domain, with "" standing for "ai.onnx".
llvm::StringMap<int64_t> getOpsetImports(const onnx::ModelProto &model) {
  llvm::StringMap<int64_t> opsets;
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = opset.version();
  return opsets;
}

LogicalResult loadAllExternalData(onnx::ModelProto &model, StringRef path,
                                  Location loc) {
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  for (onnx::TensorProto &tensor :
       *model.mutable_graph()->mutable_initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    std::string error = loadExternalData(tensor, std::string(dir));
    if (!error.empty())
      return emitError(loc)
             << "initializer '" << tensor.name() << "': " << error;
  }
  return success();
}

/// The static tensor type of a graph input or output, or an error.
/// `kind` ("graph input" or "graph output") names the value in messages.
FailureOr<RankedTensorType> getValueType(const onnx::ValueInfoProto &info,
                                         StringRef kind, MLIRContext *ctx,
                                         Location loc) {
  if (!info.type().has_tensor_type())
    return emitError(loc) << kind << " '" << info.name()
                          << "' is not a tensor; Kiln supports tensors only";
  const onnx::TypeProto::Tensor &tensor = info.type().tensor_type();
  Type elementType = getElementType(ctx, tensor.elem_type());
  if (!elementType)
    return emitError(loc) << kind << " '" << info.name()
                          << "' has element type "
                          << getOnnxTypeName(tensor.elem_type())
                          << "; Kiln supports FLOAT, INT64 and BOOL";
  if (!tensor.has_shape())
    return emitError(loc) << kind << " '" << info.name() << "' has no shape";
  SmallVector<int64_t> shape;
  for (auto [i, dim] : llvm::enumerate(tensor.shape().dim())) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) {
      auto diag = emitError(loc)
                  << kind << " '" << info.name() << "' dimension " << i;
      if (dim.has_dim_param())
        diag << " is the symbol '" << dim.dim_param() << "'";
      else
        diag << " is unknown";
      return diag << "; Kiln needs static shapes today";
    }
    shape.push_back(dim.dim_value());
  }
  return RankedTensorType::get(shape, elementType);
}

Location getNodeLoc(const onnx::NodeProto &node, int index, MLIRContext *ctx) {
  std::string name = node.name();
  if (name.empty())
    name = node.op_type() + "#" + std::to_string(index);
  return NameLoc::get(StringAttr::get(ctx, name));
}

LogicalResult importGraph(const onnx::GraphProto &graph,
                          llvm::StringMap<int64_t> opsets, ModuleOp module,
                          Location fileLoc) {
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(module.getBodyRegion());
  GraphImporter importer(builder, std::move(opsets));

  std::set<std::string> initializerNames;
  for (const onnx::TensorProto &tensor : graph.initializer()) {
    initializerNames.insert(tensor.name());
    importer.bindConstant(tensor.name(), &tensor);
  }
  SmallVector<Type> inputTypes;
  SmallVector<std::string> inputNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    FailureOr<RankedTensorType> type =
        getValueType(input, "graph input", ctx, fileLoc);
    if (failed(type))
      return failure();
    inputTypes.push_back(*type);
    inputNames.push_back(input.name());
  }

  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(inputTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(inputNames)) {
    func.setArgAttr(i, kNameAttr, builder.getStringAttr(name));
    importer.bindValue(name, body->getArgument(i));
  }

  builder.setInsertionPointToStart(body);
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importer.importNode(node, getNodeLoc(node, index, ctx))))
      return failure();

  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    FailureOr<Value> value = importer.lookup(output.name(), fileLoc);
    if (failed(value))
      return failure();
    // A declared static output type must match what the graph computes.
    FailureOr<RankedTensorType> declared =
        getValueType(output, "graph output", ctx, fileLoc);
    if (failed(declared))
      return failure();
    if (*declared != value->getType())
      return emitError(fileLoc)
             << "graph output '" << output.name() << "' is declared as "
             << *declared << " but computes " << value->getType();
    results.push_back(*value);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(inputTypes, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, kNameAttr, builder.getStringAttr(output.name()));
  return success();
}

} // namespace

OwningOpRef<ModuleOp> kiln::importOnnxModel(StringRef path,
                                            MLIRContext &context) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);

  uint64_t size = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, size)) {
    emitError(fileLoc) << "cannot read the model: " << ec.message();
    return nullptr;
  }
  if (size > kMaxModelFileSize) {
    emitError(fileLoc) << "the model file is " << size
                       << " bytes; ONNX files of 2 GiB or more must keep "
                          "weights in external data";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(fileLoc) << "cannot read the model: "
                       << buffer.getError().message();
    return nullptr;
  }

  onnx::ModelProto model;
  if (!model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize()))) {
    emitError(fileLoc) << "not a valid ONNX model: the protobuf data is "
                          "truncated or corrupt";
    return nullptr;
  }
  if (!model.has_graph()) {
    emitError(fileLoc) << "not a valid ONNX model: it has no graph";
    return nullptr;
  }
  if (failed(loadAllExternalData(model, path, fileLoc)))
    return nullptr;

  try {
    onnx::checker::check_model(model);
    // Type checking stays off: exporters wrote models (an int64 Constant at
    // opset 6, say) that other runtimes accept, and Kiln's own verifier
    // checks every type it computes with.
    onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/false};
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    std::string message = e.what();
    // The checker's messages end with a redundant "==> Context: ..." block.
    if (size_t context = message.find("\n\n==> Context");
        context != std::string::npos)
      message.resize(context);
    emitError(fileLoc) << "the ONNX checker rejected the model: " << message;
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  if (failed(
          importGraph(model.graph(), getOpsetImports(model), *module, fileLoc)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
