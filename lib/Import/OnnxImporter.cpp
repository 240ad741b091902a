//===- OnnxImporter.cpp - ONNX model to kiln dialect ----------------------===//
//
// Loads and validates the model with libonnx (which reports problems by
// throwing; this file catches everything it throws), then imports the graph.
//
//===----------------------------------------------------------------------===//
#include "kiln/compiler.hpp"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "dialects/Kiln/IR/Weights.h"
#include "lib/Import/ExternalData.h"
#include "lib/Import/GraphImporter.h"
#include "lib/Import/ModelChecks.h"
#include "lib/Import/OnnxLibraryCheck.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/schema.h>

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

/// Loads the initializers stored in external data from files inside `dir`;
/// with no `dir` (a model given as bytes), such an initializer is an error.
LogicalResult loadAllExternalData(onnx::ModelProto &model, StringRef dir,
                                  uint64_t maxTensorBytes, Location loc) {
  for (onnx::TensorProto &tensor :
       *model.mutable_graph()->mutable_initializer()) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    if (dir.empty())
      return emitError(loc) << "initializer '" << tensor.name()
                            << "' is in external data, and no folder to "
                               "read it from was given";
    std::string error = loadExternalData(tensor, dir.str(), maxTensorBytes);
    if (!error.empty())
      return emitError(loc)
             << "initializer '" << tensor.name() << "': " << error;
  }
  return success();
}

/// Gives every graph input dimension a size from `options` or marks it a
/// ranged named dimension, before ONNX's checker and shape inference run.
LogicalResult applyInputShapes(onnx::ModelProto &model,
                               const ImportOptions &options, Location loc) {
  onnx::GraphProto &graph = *model.mutable_graph();
  std::set<std::string> initializers, inputNames, dimParams;
  for (const onnx::TensorProto &tensor : graph.initializer())
    initializers.insert(tensor.name());
  SmallVector<onnx::ValueInfoProto *> inputs;
  for (onnx::ValueInfoProto &input : *graph.mutable_input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type())
      continue;
    inputs.push_back(&input);
    inputNames.insert(input.name());
    for (const onnx::TensorShapeProto::Dimension &dim :
         input.type().tensor_type().shape().dim())
      if (dim.has_dim_param())
        dimParams.insert(dim.dim_param());
  }
  // The options must fit the model before they are applied.
  for (const auto &[name, dims] : options.inputShapes)
    if (!inputNames.count(name))
      return emitError(loc) << "--shape names '" << name
                            << "', which is not an input of the model";
  for (const auto &[name, range] : options.dims) {
    if (!dimParams.count(name))
      return emitError(loc) << "--dim names '" << name
                            << "', which no input of the model has";
    if (range.min < 0 || range.min > range.max)
      return emitError(loc) << "--dim " << name << " has the range "
                            << range.min << ".." << range.max
                            << "; it needs 0 <= MIN <= MAX";
  }

  for (onnx::ValueInfoProto *input : inputs) {
    onnx::TypeProto::Tensor &tensor =
        *input->mutable_type()->mutable_tensor_type();
    auto given = options.inputShapes.find(input->name());
    if (given != options.inputShapes.end()) {
      const std::vector<int64_t> &dims = given->second;
      if (tensor.has_shape() && tensor.shape().dim_size() !=
                                    static_cast<int>(dims.size()))
        return emitError(loc) << "--shape " << input->name() << " gives "
                              << dims.size() << " dimensions, but the input "
                              << "has rank " << tensor.shape().dim_size();
      for (auto [i, size] : llvm::enumerate(dims)) {
        // Older exporters (Paddle's) write an unknown size as -1.
        if (tensor.has_shape() && tensor.shape().dim(i).has_dim_value() &&
            tensor.shape().dim(i).dim_value() >= 0 &&
            tensor.shape().dim(i).dim_value() != size)
          return emitError(loc)
                 << "--shape " << input->name() << " gives dimension " << i
                 << " the size " << size << ", but the model fixes it at "
                 << tensor.shape().dim(i).dim_value();
      }
      tensor.clear_shape();
      for (int64_t size : dims)
        tensor.mutable_shape()->add_dim()->set_dim_value(size);
      continue;
    }
    if (!tensor.has_shape())
      return emitError(loc) << "graph input '" << input->name()
                            << "' has no shape; give it with --shape "
                            << input->name() << "=D0,D1,...";
    for (auto [i, dim] :
         llvm::enumerate(*tensor.mutable_shape()->mutable_dim())) {
      if (dim.has_dim_value() && dim.dim_value() >= 0)
        continue;
      if (!dim.has_dim_param() || dim.dim_param().empty())
        return emitError(loc) << "graph input '" << input->name()
                              << "' dimension " << i
                              << " has no size; give the input's shape with "
                                 "--shape "
                              << input->name() << "=D0,D1,...";
      std::string param = dim.dim_param();
      auto range = options.dims.find(param);
      if (range == options.dims.end())
        return emitError(loc)
               << "graph input '" << input->name() << "' dimension " << i
               << " is the named dimension '" << param
               << "'; give its size with --dim " << param
               << "=N or its range with --dim " << param << "=MIN..MAX";
      if (range->second.min == range->second.max)
        dim.set_dim_value(range->second.min);
    }
  }
  return success();
}

/// The element type of a graph input or output, or an error. `kind`
/// ("graph input" or "graph output") names the value in messages.
FailureOr<Type> getValueElementType(const onnx::ValueInfoProto &info,
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
                          << "; Kiln supports " << kSupportedTypes;
  return elementType;
}

/// An error if graph input `name` of `type` (dynamic sizes at 1) takes more
/// than `maxBytes`: its caller would have to allocate it.
LogicalResult checkInputSize(StringRef name, RankedTensorType type,
                             uint64_t maxBytes, Location loc) {
  uint64_t bytes = std::max<int64_t>(getElementBytes(type.getElementType()), 1);
  for (int64_t dim : type.getShape())
    if (!ShapedType::isDynamic(dim) &&
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      bytes = UINT64_MAX;
      break;
    }
  if (bytes <= maxBytes)
    return success();
  return emitError(loc) << "graph input '" << name << "' of type " << type
                        << " takes more than the " << maxBytes
                        << " bytes a tensor may take (--max-tensor-size)";
}

/// Attributes naming, per dimension of `shape`, its named dimension (""
/// where fixed). A size computed from several (a with-past decoder's
/// `past_seq + seq`) is named by its expression, the name of the computed
/// dimension getComputedDims adds.
ArrayAttr getDimNames(ArrayRef<AffineExpr> shape, const GraphImporter &importer,
                      MLIRContext *context) {
  Builder b(context);
  SmallVector<Attribute> names;
  for (AffineExpr dim : shape) {
    if (isa<AffineConstantExpr>(dim))
      names.push_back(b.getStringAttr(""));
    else if (auto symbol = dyn_cast<AffineSymbolExpr>(dim))
      names.push_back(
          b.getStringAttr(importer.getSymbols()[symbol.getPosition()].name));
    else
      names.push_back(b.getStringAttr(importer.describe(dim)));
  }
  return b.getArrayAttr(names);
}

/// A computed dimension (#kiln.dim with a size) `name` of the range
/// `min`..`max` whose size is `size`, a function of the importer's symbols;
/// its map reads only the named dimensions `size` uses.
DimAttr getComputedDim(StringRef name, AffineExpr size, int64_t min,
                       int64_t max, ArrayRef<DimSymbol> symbols) {
  MLIRContext *context = size.getContext();
  SmallVector<AffineExpr> compact;
  SmallVector<Attribute> operands;
  for (auto [k, symbol] : llvm::enumerate(symbols)) {
    if (size.isFunctionOfSymbol(k)) {
      compact.push_back(getAffineSymbolExpr(operands.size(), context));
      operands.push_back(StringAttr::get(context, symbol.name));
    } else {
      compact.push_back(getAffineConstantExpr(0, context));
    }
  }
  AffineMap map =
      AffineMap::get(0, operands.size(), size.replaceSymbols(compact), context);
  return DimAttr::get(context, name, min, max, AffineMapAttr::get(map),
                      ArrayAttr::get(context, operands));
}

/// The computed dimensions that the outputs' sizes other than fixed ones
/// and input dimensions call for, named by their expressions and bounded
/// by the input dimensions' ranges, then the graph's requirements, each a
/// computed dimension of its one allowed size.
FailureOr<SmallVector<Attribute>>
getComputedDims(ArrayRef<SymbolicInts> outputShapes,
                const onnx::GraphProto &graph, const GraphImporter &importer,
                Location loc) {
  ArrayRef<DimSymbol> symbols = importer.getSymbols();
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (const DimSymbol &symbol : symbols)
    ranges.push_back({symbol.min, symbol.max});
  SmallVector<Attribute> computed;
  llvm::StringSet<> names;
  for (auto [shape, output] : llvm::zip(outputShapes, graph.output()))
    for (auto [d, size] : llvm::enumerate(shape)) {
      if (isa<AffineConstantExpr, AffineSymbolExpr>(size))
        continue;
      std::string name = importer.describe(size);
      if (!names.insert(name).second)
        continue;
      std::optional<std::pair<int64_t, int64_t>> bounds =
          getBounds(size, ranges);
      if (!bounds || bounds->second < 0)
        return emitError(loc)
               << "graph output '" << output.name() << "' dimension " << d
               << " has the size " << name
               << (bounds ? ", which is negative for every input size"
                          : ", which Kiln cannot bound");
      computed.push_back(getComputedDim(name, size,
                                        std::max<int64_t>(bounds->first, 0),
                                        bounds->second, symbols));
    }
  for (const GraphImporter::Requirement &requirement :
       importer.getRequirements()) {
    std::string name =
        importer.describe(requirement.expr) + " at " + requirement.where;
    std::optional<std::pair<int64_t, int64_t>> bounds =
        getBounds(requirement.expr, ranges);
    if (bounds &&
        (requirement.max < bounds->first || requirement.min > bounds->second))
      return emitError(loc) << requirement.where << " needs "
                            << importer.describe(requirement.expr) << " in "
                            << requirement.min << ".." << requirement.max
                            << ", which no input sizes in range give";
    if (!names.insert(name).second)
      continue;
    // Within the bounds the sizes give, the range is what the runtime
    // checks.
    int64_t min = requirement.min, max = requirement.max;
    if (bounds) {
      min = std::max(min, bounds->first);
      max = std::min(max, bounds->second);
    }
    computed.push_back(
        getComputedDim(name, requirement.expr, min, max, symbols));
  }
  return computed;
}

LogicalResult importGraph(onnx::GraphProto &graph,
                          llvm::StringMap<int64_t> opsets,
                          const ImportOptions &options, ModuleOp module,
                          Location fileLoc) {
  MLIRContext *ctx = module.getContext();
  OpBuilder builder(module.getBodyRegion());
  GraphImporter importer(builder, std::move(opsets), options.maxTensorBytes);

  std::set<std::string> initializerNames;
  for (onnx::TensorProto &tensor : *graph.mutable_initializer()) {
    initializerNames.insert(tensor.name());
    importer.bindConstant(tensor.name(), &tensor);
    importer.setValueType(tensor.name(), tensor.data_type());
  }
  for (const auto *infos : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto &info : *infos)
      if (info.type().has_tensor_type() &&
          !initializerNames.count(info.name()))
        importer.setValueType(info.name(), info.type().tensor_type().elem_type());
  // Inputs' shapes: fixed sizes, and the named dimensions that stay
  // dynamic (symbol k is the k-th to appear).
  SmallVector<Type> inputTypes;
  SmallVector<const onnx::ValueInfoProto *> inputs;
  SmallVector<SymbolicInts> inputShapes;
  SmallVector<DimSymbol> symbols;
  SmallVector<unsigned> symbolInputs; // the input providing each's value
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    FailureOr<Type> elementType =
        getValueElementType(input, "graph input", ctx, fileLoc);
    if (failed(elementType))
      return failure();
    SymbolicInts shape;
    for (auto [d, dim] :
         llvm::enumerate(input.type().tensor_type().shape().dim())) {
      const std::string &param = dim.dim_param();
      if (dim.has_dim_value()) {
        shape.push_back(getAffineConstantExpr(dim.dim_value(), ctx));
        continue;
      }
      auto known = llvm::find_if(symbols, [&](const DimSymbol &symbol) {
        return symbol.name == param;
      });
      if (known == symbols.end()) {
        const DimRange &range = options.dims.at(dim.dim_param());
        symbols.push_back({dim.dim_param(), range.min, range.max, Value(),
                           static_cast<unsigned>(d)});
        symbolInputs.push_back(inputs.size());
        known = symbols.end() - 1;
      }
      shape.push_back(getAffineSymbolExpr(known - symbols.begin(), ctx));
    }
    auto inputType = RankedTensorType::get(getStaticSizes(shape), *elementType);
    if (failed(checkInputSize(input.name(), inputType, options.maxTensorBytes,
                              fileLoc)))
      return failure();
    inputTypes.push_back(inputType);
    inputs.push_back(&input);
    inputShapes.push_back(std::move(shape));
  }

  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(inputTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [symbol, input] : llvm::zip(symbols, symbolInputs))
    symbol.source = body->getArgument(input);
  importer.setSymbols(symbols, body);
  for (auto [i, input] : llvm::enumerate(inputs)) {
    Value argument = body->getArgument(i);
    func.setArgAttr(i, kNameAttr, builder.getStringAttr(input->name()));
    if (importer.isUnsigned(input->name()))
      func.setArgAttr(i, kUnsignedAttr, builder.getUnitAttr());
    importer.bindValue(input->name(), argument);
    if (!cast<RankedTensorType>(argument.getType()).hasStaticShape()) {
      importer.setShape(argument, inputShapes[i]);
      func.setArgAttr(i, kDimNamesAttr,
                      getDimNames(inputShapes[i], importer, ctx));
    }
  }

  builder.setInsertionPointToEnd(body);
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importer.importNode(node, getNodeLoc(node, index, ctx))))
      return failure();

  SmallVector<Value> results;
  SmallVector<ArrayAttr> resultDimNames;
  SmallVector<SymbolicInts> resultShapes;
  llvm::StringSet<> outputNames;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    // Outputs are found by name; two of one name can't both be returned.
    if (!outputNames.insert(output.name()).second)
      return emitError(fileLoc)
             << "graph output '" << output.name() << "' is listed twice";
    if (importer.lookupSequence(output.name()))
      return emitError(fileLoc) << "graph output '" << output.name()
                                << "' is a sequence; Kiln's outputs are "
                                   "tensors";
    FailureOr<Value> value = importer.lookup(output.name(), fileLoc);
    if (failed(value))
      return failure();
    if (failed(getValueElementType(output, "graph output", ctx, fileLoc)))
      return failure();
    SymbolicInts shape = importer.getShape(*value);
    // A declared output shape must agree with what the graph computes.
    const onnx::TypeProto::Tensor &declared = output.type().tensor_type();
    bool mismatch =
        declared.has_shape() &&
        declared.shape().dim_size() != static_cast<int>(shape.size());
    for (auto [d, dim] : llvm::enumerate(declared.shape().dim())) {
      if (mismatch || !dim.has_dim_value() || dim.dim_value() < 0)
        continue;
      auto constant = dyn_cast<AffineConstantExpr>(shape[d]);
      mismatch = !constant || constant.getValue() != dim.dim_value();
    }
    if (mismatch)
      return emitError(fileLoc)
             << "graph output '" << output.name()
             << "' is declared with another shape than the graph computes, "
             << value->getType();
    results.push_back(*value);
    resultDimNames.push_back(getDimNames(shape, importer, ctx));
    resultShapes.push_back(std::move(shape));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(
      builder.getFunctionType(inputTypes, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    func.setResultAttr(i, kNameAttr, builder.getStringAttr(output.name()));
    int32_t elementType = output.type().tensor_type().elem_type();
    if (elementType == onnx::TensorProto::UINT8 ||
        elementType == onnx::TensorProto::UINT16 ||
        elementType == onnx::TensorProto::UINT32 ||
        elementType == onnx::TensorProto::UINT64)
      func.setResultAttr(i, kUnsignedAttr, builder.getUnitAttr());
    if (!cast<RankedTensorType>(results[i].getType()).hasStaticShape())
      func.setResultAttr(i, kDimNamesAttr, resultDimNames[i]);
  }
  // Nodes may have declared dimensions that inputs' elements set.
  ArrayRef<DimSymbol> allSymbols = importer.getSymbols();
  for (BlockArgument argument : body->getArguments()) {
    SmallVector<StringRef> setting;
    for (const DimSymbol &symbol : allSymbols) {
      if (!symbol.fromElement || symbol.source != argument)
        continue;
      setting.resize(std::max<size_t>(setting.size(), symbol.sourceDim + 1));
      setting[symbol.sourceDim] = symbol.name;
    }
    if (setting.empty())
      continue;
    setting.resize(cast<RankedTensorType>(argument.getType()).getDimSize(0));
    func.setArgAttr(argument.getArgNumber(), kDimValuesAttr,
                    builder.getStrArrayAttr(setting));
  }
  if (!allSymbols.empty()) {
    FailureOr<SmallVector<Attribute>> dims =
        getComputedDims(resultShapes, graph, importer, fileLoc);
    if (failed(dims))
      return failure();
    for (const DimSymbol &symbol : llvm::reverse(allSymbols))
      dims->insert(dims->begin(),
                   DimAttr::get(ctx, symbol.name, symbol.min, symbol.max));
    module->setAttr(kDimsAttr, builder.getArrayAttr(*dims));
  }
  return success();
}

} // namespace

namespace {

/// Whether the ONNX library Kiln links (Debian's, IR version 8 and opset
/// 17) knows `model`'s IR version and every opset it imports. Its checker
/// refuses newer IR versions outright, and checks newer ops against the
/// old schemas (DequantizeLinear-21's block_size is "unrecognized").
bool isKnownToOnnxLibrary(const onnx::ModelProto &model) {
  if (model.ir_version() > onnx::IR_VERSION)
    return false;
  const auto &known =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    auto range = known.find(opset.domain() == "ai.onnx" ? "" : opset.domain());
    if (range != known.end() && opset.version() > range->second.second)
      return false;
  }
  return true;
}

/// Whether `graph` or one of its subgraphs has a node of an op whose shape
/// inference in the ONNX library Kiln links is wrong: ONNX 1.12's STFT
/// ignores onesided's default and refuses correct output shapes.
bool hasFaultyShapeInference(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() == "STFT")
      return true;
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.has_g() && hasFaultyShapeInference(attr.g()))
        return true;
  }
  return false;
}

/// The newest opset of the default domain whose ops Kiln imports (ONNX
/// 1.23's, whose node tests it runs). A newer opset may change what an op
/// means.
constexpr int64_t kNewestOnnxOpset = 28;

/// An error if `model` imports a default-domain opset newer than Kiln knows.
LogicalResult checkOpsets(const onnx::ModelProto &model, Location fileLoc) {
  for (const onnx::OperatorSetIdProto &opset : model.opset_import())
    if ((opset.domain().empty() || opset.domain() == "ai.onnx") &&
        opset.version() > kNewestOnnxOpset)
      return emitError(fileLoc)
             << "the model imports opset " << opset.version()
             << " of the ONNX operators; Kiln knows them up to opset "
             << kNewestOnnxOpset;
  return success();
}

/// Runs the ONNX library's checker and shape inference on `model`. Where
/// libonnx crashes on the model, its results are simply missing: Kiln's
/// importer checks every node it reads and infers its own types and shapes,
/// as it does for models newer than libonnx.
LogicalResult checkAndInferShapes(onnx::ModelProto &model,
                                  const ImportOptions &options,
                                  Location fileLoc) {
  OnnxLibraryCheck check =
      runOnnxLibraryCheck(model, !hasFaultyShapeInference(model.graph()),
                          options.onnxLibraryInChildProcess);
  if (check.outcome == OnnxLibraryCheck::Outcome::Rejected)
    return emitError(fileLoc)
           << "the ONNX checker rejected the model: " << check.message;
  return success();
}

/// Imports a parsed `model`, its external data read from `externalDataDir`.
OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model,
                                  StringRef externalDataDir,
                                  const ImportOptions &options,
                                  Location fileLoc) {
  if (!model.has_graph()) {
    emitError(fileLoc) << "not a valid ONNX model: it has no graph";
    return nullptr;
  }
  if (failed(checkGraphLimits(model.graph(), options.maxGraphNodes,
                              options.maxGraphDepth, fileLoc)) ||
      failed(checkOpsets(model, fileLoc)) ||
      failed(loadAllExternalData(model, externalDataDir, options.maxTensorBytes,
                                 fileLoc)) ||
      failed(applyInputShapes(model, options, fileLoc)))
    return nullptr;

  // A newer model than the ONNX library knows skips its checks and shape
  // inference: Kiln's importer checks every node it reads and infers its
  // own types and shapes.
  if (failed(checkAttributeRanges(model.graph(), fileLoc)) ||
      failed(checkConvWeightRanks(model.graph(), fileLoc)) ||
      (isKnownToOnnxLibrary(model) &&
       failed(checkAndInferShapes(model, options, fileLoc))))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  if (failed(importGraph(*model.mutable_graph(), getOpsetImports(model),
                         options, *module, fileLoc)))
    return nullptr;
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

void loadImportDialects(MLIRContext &context) {
  context.loadDialect<KilnDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
}

/// Protobuf's default limit of 100 nested messages stops a model at about
/// 32 levels of subgraphs (a graph, node and attribute a level) with a
/// "corrupt" error; this one parses kMaxGraphDepthLimit levels, so that
/// --max-graph-depth decides, with an error that says so.
constexpr int kParseRecursionLimit = 3 * kMaxGraphDepthLimit + 64;

bool parseModel(google::protobuf::io::ZeroCopyInputStream &stream,
                onnx::ModelProto &model) {
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetRecursionLimit(kParseRecursionLimit);
  return model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

const char *const kCorruptModel =
    "not a valid ONNX model: the protobuf data is truncated or corrupt";

} // namespace

OwningOpRef<ModuleOp> kiln::importOnnxFile(StringRef path,
                                           MLIRContext &context,
                                           const ImportOptions &options) {
  loadImportDialects(context);
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);

  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status)) {
    emitError(fileLoc) << "cannot read the model: " << ec.message();
    return nullptr;
  }
  // A FIFO or device would block the read or never end.
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    emitError(fileLoc) << "cannot read the model: not a regular file";
    return nullptr;
  }
  uint64_t size = status.getSize();
  if (size > kMaxModelFileSize) {
    emitError(fileLoc) << "the model file is " << size
                       << " bytes; ONNX files of 2 GiB or more must keep "
                          "weights in external data";
    return nullptr;
  }
  // Parsed from the file a chunk at a time: its bytes are in memory once,
  // in the parsed tensors, whose large ones the importer then takes over.
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd)) {
    emitError(fileLoc) << "cannot read the model: " << ec.message();
    return nullptr;
  }
  onnx::ModelProto model;
  google::protobuf::io::FileInputStream stream(fd);
  bool parsed = parseModel(stream, model);
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  if (!parsed) {
    emitError(fileLoc) << kCorruptModel;
    return nullptr;
  }
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  return importModel(model, dir, options, fileLoc);
}

OwningOpRef<ModuleOp> kiln::importOnnxBytes(StringRef bytes, StringRef name,
                                            StringRef externalDataDir,
                                            MLIRContext &context,
                                            const ImportOptions &options) {
  loadImportDialects(context);
  Location fileLoc = FileLineColLoc::get(&context, name, 0, 0);
  if (bytes.size() > kMaxModelFileSize) {
    emitError(fileLoc) << "the model is " << bytes.size()
                       << " bytes; ONNX models of 2 GiB or more must keep "
                          "weights in external data";
    return nullptr;
  }
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(bytes.size()));
  if (!parseModel(stream, model)) {
    emitError(fileLoc) << kCorruptModel;
    return nullptr;
  }
  return importModel(model, externalDataDir, options, fileLoc);
}
