//===- GraphImporter.h - state shared by the ONNX op importers --*- C++ -*-===//
#ifndef KILN_LIB_IMPORT_GRAPHIMPORTER_H
#define KILN_LIB_IMPORT_GRAPHIMPORTER_H

#include "lib/Import/SymbolicShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <deque>
#include <optional>

namespace kiln {

/// The kiln element type of an ONNX TensorProto data type, or null.
mlir::Type getElementType(mlir::MLIRContext *ctx, int32_t onnxType);

/// The ONNX data type of a kiln element type; `isUnsigned` picks the
/// unsigned type of an integer's width. UNDEFINED (0) for types ONNX lacks.
int32_t getOnnxType(mlir::Type elementType, bool isUnsigned);

/// The ONNX element types Kiln imports, for messages.
inline constexpr llvm::StringLiteral kSupportedTypes =
    "FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, UINT64, INT32, UINT32, INT16, "
    "UINT16, INT8, UINT8 and BOOL";

/// Data types newer than the onnx.proto Debian ships (ONNX 1.13): the
/// numbers the ONNX specification fixes for them.
inline constexpr int32_t kOnnxFloat8E4M3FN = 17;
inline constexpr int32_t kOnnxUint4 = 21;
inline constexpr int32_t kOnnxInt4 = 22;
inline constexpr int32_t kOnnxFloat4E2M1 = 23;

/// The ONNX name of a TensorProto data type (e.g. "DOUBLE") for messages.
std::string getOnnxTypeName(int32_t onnxType);

/// Converts an in-memory TensorProto (external data already loaded) to an
/// elements attribute, checking its element count and byte size. Emits an
/// error at `loc` and returns null if it can't.
mlir::DenseElementsAttr convertTensorProto(const onnx::TensorProto &tensor,
                                           mlir::MLIRContext *ctx,
                                           mlir::Location loc);

/// The same, but a large tensor's bytes move into the attribute (a
/// resource blob) without a copy, leaving `tensor` without them.
mlir::ElementsAttr takeTensorProto(onnx::TensorProto &tensor,
                                   mlir::MLIRContext *ctx, mlir::Location loc);

/// A named dimension of the graph's inputs that stays dynamic: symbol
/// `index` of the importer's shape expressions, read from dimension
/// `sourceDim` of the function argument `source`, or, where `fromElement`,
/// the value of its element `sourceDim` (an int64 vector input that sets
/// sizes, such as SplatRender's image_size).
struct DimSymbol {
  std::string name;
  int64_t min, max;
  mlir::Value source;
  unsigned sourceDim;
  bool fromElement = false;
};

/// Values and constants of one ONNX graph while its nodes are imported.
class GraphImporter {
public:
  /// `opsets` maps each imported domain ("" for ai.onnx) to its version;
  /// no result of an imported node may take more than `maxTensorBytes`.
  GraphImporter(mlir::OpBuilder &builder, llvm::StringMap<int64_t> opsets,
                uint64_t maxTensorBytes)
      : builder(builder), opsets(std::move(opsets)),
        maxTensorBytes(maxTensorBytes) {}

  /// The graph's named dimensions, symbol k of the shape expressions being
  /// dimension k here; `entry` is the function's entry block, where their
  /// values are read.
  void setSymbols(llvm::SmallVector<DimSymbol> dims, mlir::Block *entry) {
    symbols = std::move(dims);
    entryBlock = entry;
  }
  llvm::ArrayRef<DimSymbol> getSymbols() const { return symbols; }
  /// The symbol of element `element` of the function argument `source`,
  /// declared as `name` in `min`..`max` on first use; an error at `loc` if
  /// another named dimension already has that name.
  mlir::FailureOr<mlir::AffineExpr>
  getElementSymbol(mlir::Value source, unsigned element, llvm::StringRef name,
                   int64_t min, int64_t max, mlir::Location loc);

  /// The shape of `value` in terms of the named dimensions.
  SymbolicInts getShape(mlir::Value value) const;
  void setShape(mlir::Value value, SymbolicInts shape) {
    shapes[value] = std::move(shape);
  }
  /// The elements of the int64 tensor `value` as expressions, if known
  /// (a constant, or computed from shapes).
  std::optional<SymbolicInts> getContents(mlir::Value value) const;
  void setContents(mlir::Value value, SymbolicInts elements) {
    contents[value] = std::move(elements);
  }
  /// The same for the graph value `name`.
  std::optional<SymbolicInts> getSymbolicInts(llvm::StringRef name);

  /// What the inputs' named dimensions must satisfy for the graph to be
  /// valid, such as the element count of a dynamic input reshaped to a
  /// fixed shape: `expr` must lie in `min`..`max`. The artifact lists each
  /// as a computed dimension of that range, which the runtime checks before
  /// a call runs.
  struct Requirement {
    mlir::AffineExpr expr;
    int64_t min, max;
    std::string where;
  };
  void require(mlir::AffineExpr expr, int64_t min, int64_t max,
               std::string where) {
    requirements.push_back({expr, min, max, std::move(where)});
  }
  void require(mlir::AffineExpr expr, int64_t value, std::string where) {
    require(expr, value, value, std::move(where));
  }
  llvm::ArrayRef<Requirement> getRequirements() const { return requirements; }

  /// `expr` as users write sizes: "seq * 12" rather than "s0 * 12".
  std::string describe(mlir::AffineExpr expr) const;

  /// An `index` value computing `expr` (at the builder's insertion point;
  /// the named dimensions are read once, at the start of the function).
  mlir::FailureOr<mlir::Value> materialize(mlir::AffineExpr expr,
                                           mlir::Location loc);
  /// The values of `shape`'s non-constant sizes, in order.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  materializeDynamicSizes(llvm::ArrayRef<mlir::AffineExpr> shape,
                          mlir::Location loc);

  mlir::OpBuilder &getBuilder() { return builder; }
  /// The opset version of `domain` ("" or "ai.onnx" for the default one).
  int64_t getOpset(llvm::StringRef domain = "") const {
    auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
    return it == opsets.end() ? 0 : it->second;
  }

  void bindValue(llvm::StringRef name, mlir::Value value) {
    values[name] = value;
  }
  /// A sequence whose length and elements are known at compile time (ONNX
  /// sequence ops over them resolve while importing).
  void bindSequence(llvm::StringRef name,
                    llvm::SmallVector<mlir::Value> items) {
    sequences[name] = std::move(items);
  }
  /// The elements of the sequence `name`, or null if it is no sequence.
  const llvm::SmallVector<mlir::Value> *
  lookupSequence(llvm::StringRef name) const {
    auto it = sequences.find(name);
    return it == sequences.end() ? nullptr : &it->second;
  }
  /// The ONNX element type of the graph value `name` (a TensorProto data
  /// type), as the model or its shape inference declares it; 0 if unknown.
  /// Kiln's integer types are signless, so this tells uint8 from int8.
  int32_t getValueType(llvm::StringRef name) const {
    return valueTypes.lookup(name);
  }
  void setValueType(llvm::StringRef name, int32_t onnxType) {
    valueTypes[name] = onnxType;
  }
  /// Whether `name` holds unsigned integers (UINT8 to UINT64, or UINT4 held
  /// as i8).
  bool isUnsigned(llvm::StringRef name) const {
    int32_t type = getValueType(name);
    return type == onnx::TensorProto::UINT8 ||
           type == onnx::TensorProto::UINT16 ||
           type == onnx::TensorProto::UINT32 ||
           type == onnx::TensorProto::UINT64 || type == kOnnxUint4;
  }
  /// A tensor whose value is known at compile time (an initializer or the
  /// output of a Constant node); materialized as kiln.constant on first use.
  void bindConstant(llvm::StringRef name, onnx::TensorProto *tensor) {
    constants[name] = tensor;
  }
  /// Like bindConstant, for a tensor the importer made itself.
  void bindOwnedConstant(llvm::StringRef name, onnx::TensorProto tensor) {
    ownedTensors.push_back(std::move(tensor));
    constants[name] = &ownedTensors.back();
  }

  /// The value named `name`, materializing constants. Emits an error at
  /// `loc` if the name is unknown or the constant is unsupported.
  mlir::FailureOr<mlir::Value> lookup(llvm::StringRef name, mlir::Location loc);
  /// The node that computed the graph value `name`, if a node did.
  const onnx::NodeProto *getProducer(llvm::StringRef name) const {
    return producers.lookup(name);
  }

  /// The integer elements of the compile-time constant `name`, or nullopt if
  /// `name` is not a constant integer tensor.
  std::optional<llvm::SmallVector<int64_t>>
  getConstantInts(llvm::StringRef name);

  /// Imports one node; emits an error and fails on anything unsupported.
  llvm::LogicalResult importNode(const onnx::NodeProto &node,
                                 mlir::Location loc);

private:
  llvm::SmallVector<Requirement> requirements;
  llvm::StringMap<const onnx::NodeProto *> producers;
  /// Folds the ops importing a node created (those after `lastBefore`)
  /// whose operands are all constants through their op folders, keeping
  /// `results` pointing at the replacements. The folders take small results
  /// only: this is for shape computations, weights are left to
  /// kiln-fold-constants. Ops computing on shapes get
  /// their results' elements as expressions (folded when constant), and
  /// results of dynamic shape their shape; an error if one can't be told.
  llvm::LogicalResult foldNewOps(mlir::Operation *lastBefore,
                                 llvm::SmallVectorImpl<mlir::Value> &results);

  /// An error at `loc` if an op created after `lastBefore` has a result
  /// whose static sizes multiply past int64 or take more than
  /// maxTensorBytes (checked before anything is folded or sized from them).
  llvm::LogicalResult checkNewShapes(mlir::Operation *lastBefore,
                                     mlir::Location loc);

  /// `symbol`'s value, read at the function's start.
  mlir::Value readSymbol(const DimSymbol &symbol, mlir::Location loc);

  mlir::OpBuilder &builder;
  llvm::StringMap<int64_t> opsets;
  uint64_t maxTensorBytes;
  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<llvm::SmallVector<mlir::Value>> sequences;
  llvm::StringMap<int32_t> valueTypes;
  llvm::StringMap<onnx::TensorProto *> constants;
  std::deque<onnx::TensorProto> ownedTensors;
  llvm::SmallVector<DimSymbol> symbols;
  mlir::Block *entryBlock = nullptr;
  /// Values of the named dimensions, read at the function's start.
  llvm::SmallVector<mlir::Value> symbolValues;
  /// Shapes of values with dynamic dimensions (static ones are their type).
  mlir::DenseMap<mlir::Value, SymbolicInts> shapes;
  /// Elements of shape values that depend on named dimensions.
  mlir::DenseMap<mlir::Value, SymbolicInts> contents;
};

/// One node being imported: its operands, attributes and results.
class NodeImporter {
public:
  NodeImporter(GraphImporter &graph, const onnx::NodeProto &node,
               mlir::Location loc)
      : graph(graph), node(node), loc(loc), b(graph.getBuilder()) {}

  GraphImporter &graph;
  const onnx::NodeProto &node;
  mlir::Location loc;
  mlir::OpBuilder &b;
  /// One entry per ONNX input; null where an optional input is omitted or
  /// is a sequence (see GraphImporter::lookupSequence).
  llvm::SmallVector<mlir::Value> operands;
  /// Filled by the op importer, one per ONNX output.
  llvm::SmallVector<mlir::Value> results;

  int64_t getOpset() const { return graph.getOpset(); }
  mlir::InFlightDiagnostic emitError() const;
  /// "node 'NAME'", as errors name the node.
  std::string describe() const;

  const onnx::AttributeProto *getAttr(llvm::StringRef name) const;
  int64_t getIntAttr(llvm::StringRef name, int64_t defaultValue) const;
  float getFloatAttr(llvm::StringRef name, float defaultValue) const;
  std::string getStringAttr(llvm::StringRef name,
                            llvm::StringRef defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>>
  getIntsAttr(llvm::StringRef name) const;

  /// Operand `i`, or an error if it is missing.
  mlir::FailureOr<mlir::Value> getOperand(unsigned i) const;
  mlir::RankedTensorType getOperandType(unsigned i) const {
    return mlir::cast<mlir::RankedTensorType>(operands[i].getType());
  }
  /// Whether operand `i` holds one of ONNX's unsigned integer types
  /// (rather than the signed one of its width).
  bool isUnsignedOperand(unsigned i) const {
    return static_cast<int>(i) < node.input_size() &&
           graph.isUnsigned(node.input(i));
  }
  /// Integers given either by attribute `attrName` (older opsets) or by the
  /// constant input `inputIndex` (newer ones). nullopt if neither is present;
  /// failure (with an error) if the input is not a compile-time constant.
  mlir::FailureOr<std::optional<llvm::SmallVector<int64_t>>>
  getIntsFromAttrOrInput(llvm::StringRef attrName, unsigned inputIndex) const;
  /// Like getIntsFromAttrOrInput, but the input may also be computed from
  /// the named dimensions (a shape value).
  mlir::FailureOr<std::optional<SymbolicInts>>
  getSymbolicIntsFromAttrOrInput(llvm::StringRef attrName,
                                 unsigned inputIndex) const;
  /// Normalizes a possibly negative axis against `rank`; error if invalid.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) const;
};

/// Importers of ONNX ops; each fills `node.results` or emits an error.
using OpImportFn = llvm::LogicalResult (*)(NodeImporter &node);

/// The importer for ONNX op `opType` in the default domain, or null.
OpImportFn lookupOpImporter(llvm::StringRef opType);
/// The importer for ONNX's comparison, logic, rounding and activation op
/// `opType` (OnnxElementwiseOps.cpp), or null.
OpImportFn lookupElementwiseOpImporter(llvm::StringRef opType);
/// The importer for ONNX's Reduce* op `opType` (OnnxReduceOps.cpp), or null.
OpImportFn lookupReduceOpImporter(llvm::StringRef opType);
/// The importer for ONNX's ops over element positions (ArgMax, Trilu,
/// OneHot, ...; OnnxIndexOps.cpp), or null.
OpImportFn lookupIndexOpImporter(llvm::StringRef opType);
/// The importer for ONNX's ops that make a tensor from a few scalars
/// (Range, the window functions; OnnxGeneratorOps.cpp), or null.
OpImportFn lookupGeneratorOpImporter(llvm::StringRef opType);
/// The importer for ONNX's sequence op `opType`, over sequences known at
/// compile time (OnnxSequenceOps.cpp), or null.
OpImportFn lookupSequenceOpImporter(llvm::StringRef opType);
/// Whether ONNX op `opType` computes elementwise (or, as Softmax, MatMul,
/// TopK and the reductions, gives results of its inputs' type computed from
/// their values alone), so
/// that it may compute on int8, int16, uint32, float16 and bfloat16 in
/// wider types and on uint64 (OnnxNarrowTypes.cpp).
bool computesInWideTypes(llvm::StringRef opType);
/// Imports the node with `importFn`, its int8/int16 operands widened to i32,
/// uint32 ones to i64 and float16/bfloat16 ones to f32, and its results of
/// that type narrowed back; uint64 ones ordered and divided as unsigned.
llvm::LogicalResult importInComputeTypes(NodeImporter &node,
                                         OpImportFn importFn);
/// The importer for ONNX Runtime's contrib op `opType` (domain
/// com.microsoft), or null.
OpImportFn lookupMicrosoftOpImporter(llvm::StringRef opType);
/// The importer for op `opType` of domain ai.onnx.preview.training
/// (Gradient), or null.
OpImportFn lookupTrainingOpImporter(llvm::StringRef opType);
/// Kiln's own ONNX operators' domain (docs/splatting.md).
inline constexpr llvm::StringLiteral kKilnOnnxDomain = "ai.kiln";
/// The importer for Kiln's own op `opType` (domain ai.kiln: SplatRender),
/// or null.
OpImportFn lookupKilnOpImporter(llvm::StringRef opType);

} // namespace kiln

#endif // KILN_LIB_IMPORT_GRAPHIMPORTER_H
