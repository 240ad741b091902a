//===- ExportEntries.cpp - ABI wrappers and the artifact descriptor -------===//
//
// The one place that knows both sides of kiln/abi.h: each entry function,
// with its arguments told apart by their attributes (inputs, outputs marked
// `bufferize.result`, the status, context arguments), gets a wrapper taking
// the ABI's call structure, and the module gets the descriptor tables and
// the exported getter. Struct types come from AbiLayout.h.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Config.h"
#include "lib/Conversion/LinalgToCpu/AbiLayout.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace kiln {
#define GEN_PASS_DEF_EXPORTENTRIESPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Set by buffer-results-to-out-params{add-result-attribute} on the
/// arguments that were results.
constexpr StringLiteral kResultAttr = "bufferize.result";

struct TensorArgument {
  unsigned index; // of the entry function's argument
  std::string name;
  int32_t dtype;
  MemRefType type;
  /// The signature's dims: sizes, or KILN_ABI_DIM_REF of a named dimension.
  SmallVector<int64_t> dims;
};

/// What the artifact says about one entry, and where its arguments are.
struct Entry {
  func::FuncOp func;
  SmallVector<TensorArgument> inputs, outputs;
  /// (input, element, dimension) of each kiln_abi_value_dim.
  SmallVector<std::array<int64_t, 3>> valueDims;
  std::optional<unsigned> status, scratch, executor, state;
  SmallVector<std::string> errors;
  int64_t scratchSize = 0;
  LLVM::LLVMFuncOp wrapper;
};

/// The ABI dtype of elements of `element`; integers are signed unless the
/// argument is marked unsigned.
FailureOr<int32_t> getDtype(Type element, bool isUnsigned) {
  if (element.isF32())
    return KILN_DTYPE_F32;
  if (element.isF64())
    return KILN_DTYPE_F64;
  if (element.isF16())
    return KILN_DTYPE_F16;
  if (element.isBF16())
    return KILN_DTYPE_BF16;
  if (element.isInteger(64))
    return isUnsigned ? KILN_DTYPE_U64 : KILN_DTYPE_I64;
  if (element.isInteger(32))
    return isUnsigned ? KILN_DTYPE_U32 : KILN_DTYPE_I32;
  if (element.isInteger(16))
    return isUnsigned ? KILN_DTYPE_U16 : KILN_DTYPE_I16;
  if (element.isInteger(8))
    return isUnsigned ? KILN_DTYPE_U8 : KILN_DTYPE_I8;
  if (element.isInteger(1))
    return KILN_DTYPE_BOOL;
  return failure();
}

/// Records the dimensions the last input's elements set (kDimValuesAttr).
LogicalResult describeValueDims(Entry &entry, ArrayAttr names,
                                const llvm::StringMap<unsigned> &dimIndex) {
  const TensorArgument &input = entry.inputs.back();
  int64_t position = entry.inputs.size() - 1;
  if (input.type.getRank() != 1 || input.type.isDynamicDim(0) ||
      input.dtype != KILN_DTYPE_I64 ||
      static_cast<int64_t>(names.size()) != input.type.getDimSize(0))
    return entry.func.emitError()
           << "internal error: input '" << input.name
           << "' sets dimensions but is not a fixed-length int64 vector "
              "with one name per element";
  for (auto [element, name] :
       llvm::enumerate(names.getAsValueRange<StringAttr>())) {
    if (name.empty())
      continue;
    auto known = dimIndex.find(name);
    if (known == dimIndex.end())
      return entry.func.emitError()
             << "internal error: input '" << input.name << "' sets dimension '"
             << name << "', which the module does not declare";
    entry.valueDims.push_back({position, static_cast<int64_t>(element),
                               static_cast<int64_t>(known->second)});
  }
  return success();
}

FailureOr<Entry> describeEntry(func::FuncOp func,
                               const llvm::StringMap<unsigned> &dimIndex) {
  Entry entry;
  entry.func = func;
  if (func.getNumResults() != 0)
    return func.emitError() << "internal error: entry point '"
                            << func.getSymName()
                            << "' still returns values after bufferization";
  for (BlockArgument argument : func.getArguments()) {
    unsigned i = argument.getArgNumber();
    if (func.getArgAttr(i, kStatusAttr)) {
      entry.status = i;
      continue;
    }
    if (func.getArgAttr(i, kScratchAttr)) {
      entry.scratch = i;
      entry.scratchSize = cast<MemRefType>(argument.getType()).getNumElements();
      continue;
    }
    if (func.getArgAttr(i, kExecutorAttr)) {
      entry.executor = i;
      continue;
    }
    if (func.getArgAttr(i, kStateAttr)) {
      entry.state = i;
      continue;
    }
    bool isOutput = static_cast<bool>(func.getArgAttr(i, kResultAttr));
    auto &list = isOutput ? entry.outputs : entry.inputs;
    std::string fallback = (isOutput ? "output_" : "input_") +
                           std::to_string(list.size());
    auto type = dyn_cast<MemRefType>(argument.getType());
    auto names = func.getArgAttrOfType<ArrayAttr>(i, kDimNamesAttr);
    SmallVector<int64_t> dims;
    for (int64_t d = 0; type && d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d)) {
        dims.push_back(type.getDimSize(d));
        continue;
      }
      auto name = names ? dyn_cast<StringAttr>(names[d]) : StringAttr();
      auto known = name ? dimIndex.find(name) : dimIndex.end();
      if (known == dimIndex.end())
        break;
      dims.push_back(KILN_ABI_DIM_REF(known->second));
    }
    if (!type || !type.getLayout().isIdentity() ||
        static_cast<int64_t>(dims.size()) != type.getRank())
      return func.emitError()
             << "entry point '" << func.getSymName() << "' "
             << (isOutput ? "output" : "input") << " #" << list.size()
             << " has type " << argument.getType()
             << "; artifacts take dense tensors whose dynamic dimensions are "
                "named dimensions of the module";
    FailureOr<int32_t> dtype = getDtype(
        type.getElementType(), static_cast<bool>(func.getArgAttr(i, kUnsignedAttr)));
    if (failed(dtype))
      return func.emitError()
             << "entry point '" << func.getSymName() << "' "
             << (isOutput ? "output" : "input") << " #" << list.size()
             << " has element type " << type.getElementType()
             << "; artifacts take f32, f16, bf16, i64, i32, i8 and i1 tensors";
    auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
    list.push_back({i, name ? name.str() : fallback, *dtype, type, dims});
    if (auto setting = func.getArgAttrOfType<ArrayAttr>(i, kDimValuesAttr))
      if (failed(describeValueDims(entry, setting, dimIndex)))
        return failure();
  }
  if (!entry.status)
    return func.emitError() << "internal error: entry point '"
                            << func.getSymName() << "' has no status";
  if (auto errors = func->getAttrOfType<ArrayAttr>(kErrorsAttr))
    for (auto message : errors.getAsRange<StringAttr>())
      entry.errors.push_back(message.str());
  return entry;
}

/// Builds LLVM dialect ops at the builder's insertion point.
class LLVMBuilder {
public:
  LLVMBuilder(OpBuilder &b, Location loc)
      : b(b), loc(loc), ptrType(LLVM::LLVMPointerType::get(b.getContext())) {}

  Value i32(int64_t value) { return constant(b.getI32Type(), value); }
  Value i64(int64_t value) { return constant(b.getI64Type(), value); }
  Value constant(Type type, int64_t value) {
    return LLVM::ConstantOp::create(b, loc, type,
                                    b.getIntegerAttr(type, value));
  }
  Value null() { return LLVM::ZeroOp::create(b, loc, ptrType); }
  Value address(StringRef symbol) {
    return LLVM::AddressOfOp::create(b, loc, ptrType, symbol);
  }

  /// Loads field `index` of the struct of type `structType` at `base`.
  Value loadField(Value base, LLVM::LLVMStructType structType, unsigned index) {
    Value address =
        LLVM::GEPOp::create(b, loc, ptrType, structType, base,
                            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(index)});
    return LLVM::LoadOp::create(b, loc, structType.getBody()[index], address);
  }
  /// The address of element `index` of an array of `elementType` at `base`.
  Value element(Value base, Type elementType, int64_t index) {
    return LLVM::GEPOp::create(b, loc, ptrType, elementType, base,
                               ArrayRef<LLVM::GEPArg>{index});
  }

  /// A value of `type` (struct or array) with `fields` inserted in order.
  Value aggregate(Type type, ArrayRef<Value> fields) {
    Value value = LLVM::UndefOp::create(b, loc, type);
    for (auto [i, field] : llvm::enumerate(fields))
      value = LLVM::InsertValueOp::create(b, loc, value, field,
                                          ArrayRef<int64_t>{(int64_t)i});
    return value;
  }

  OpBuilder &b;
  Location loc;
  LLVM::LLVMPointerType ptrType;
};

/// A memref of the dense row-major `type` over `data`: its LLVM descriptor,
/// cast to the memref type (the cast cancels against the one the LLVM
/// conversion makes for the call's operand). Dynamic sizes are loaded from
/// the i64 array `dims`.
Value buildMemRef(LLVMBuilder &llvm, MemRefType type, Value data,
                  Value dims = {}) {
  MLIRContext *context = type.getContext();
  Type i64 = llvm.b.getI64Type();
  int64_t rank = type.getRank();
  SmallVector<Type> fieldTypes = {llvm.ptrType, llvm.ptrType, i64};
  SmallVector<Value> fields = {data, data, llvm.i64(0)};
  if (rank > 0) {
    auto arrayType = LLVM::LLVMArrayType::get(i64, rank);
    fieldTypes.append({arrayType, arrayType});
    SmallVector<Value> sizes, strides(rank);
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        sizes.push_back(llvm.i64(size));
        continue;
      }
      assert(dims && "a dynamic size needs the call's dims");
      sizes.push_back(LLVM::LoadOp::create(llvm.b, llvm.loc, i64,
                                           llvm.element(dims, i64, d)));
    }
    // Row-major strides (LLVM folds the products of constant sizes).
    Value stride = llvm.i64(1);
    for (int64_t d = rank - 1; d >= 0; --d) {
      strides[d] = stride;
      if (d > 0)
        stride = LLVM::MulOp::create(llvm.b, llvm.loc, stride, sizes[d]);
    }
    fields.push_back(llvm.aggregate(arrayType, sizes));
    fields.push_back(llvm.aggregate(arrayType, strides));
  }
  Value descriptor = llvm.aggregate(
      LLVM::LLVMStructType::getLiteral(context, fieldTypes), fields);
  return UnrealizedConversionCastOp::create(llvm.b, llvm.loc, type, descriptor)
      .getResult(0);
}

/// `i32 kiln_entry.<name>(const kiln_abi_call *call)`: unpacks the call into
/// the entry function's arguments and returns the status it writes.
LLVM::LLVMFuncOp buildWrapper(OpBuilder &b, Entry &entry) {
  func::FuncOp func = entry.func;
  MLIRContext *context = b.getContext();
  Location loc = func.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(context);
  auto wrapper = LLVM::LLVMFuncOp::create(
      b, loc, ("kiln_entry." + func.getSymName()).str(),
      LLVM::LLVMFunctionType::get(b.getI32Type(), {ptrType}),
      LLVM::Linkage::Internal);
  OpBuilder::InsertionGuard guard(b);
  Block *body = wrapper.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  LLVMBuilder llvm(b, loc);
  Value call = body->getArgument(0);
  auto callType = abi::getStructType(context, abi::kCallFields);
  auto bufferType = abi::getStructType(context, abi::kBufferFields);
  auto callField = [&](unsigned index) {
    return llvm.loadField(call, callType, index);
  };

  SmallVector<Value> arguments(func.getNumArguments());
  auto unpack = [&](ArrayRef<TensorArgument> tensors, unsigned field) {
    Value buffers = callField(field);
    for (auto [i, tensor] : llvm::enumerate(tensors)) {
      Value buffer = llvm.element(buffers, bufferType, i);
      Value data = llvm.loadField(
          buffer, bufferType,
          KILN_ABI_INDEX(abi::kBufferFields, kiln_abi_buffer, data));
      Value dims;
      if (!tensor.type.hasStaticShape())
        dims = llvm.loadField(
            buffer, bufferType,
            KILN_ABI_INDEX(abi::kBufferFields, kiln_abi_buffer, dims));
      arguments[tensor.index] = buildMemRef(llvm, tensor.type, data, dims);
    }
  };
  unpack(entry.inputs,
         KILN_ABI_INDEX(abi::kCallFields, kiln_abi_call, inputs));
  unpack(entry.outputs,
         KILN_ABI_INDEX(abi::kCallFields, kiln_abi_call, outputs));
  auto statusType = cast<MemRefType>(func.getArgument(*entry.status).getType());
  Value status = memref::AllocaOp::create(b, loc, statusType);
  arguments[*entry.status] = status;
  if (entry.scratch)
    arguments[*entry.scratch] = buildMemRef(
        llvm, cast<MemRefType>(func.getArgument(*entry.scratch).getType()),
        callField(KILN_ABI_INDEX(abi::kCallFields, kiln_abi_call, scratch)));
  if (entry.state)
    arguments[*entry.state] = buildMemRef(
        llvm, cast<MemRefType>(func.getArgument(*entry.state).getType()),
        callField(KILN_ABI_INDEX(abi::kCallFields, kiln_abi_call, state)));
  if (entry.executor)
    arguments[*entry.executor] =
        callField(KILN_ABI_INDEX(abi::kCallFields, kiln_abi_call, executor));
  func::CallOp::create(b, loc, func, arguments);
  Value code = memref::LoadOp::create(b, loc, status, ValueRange());
  LLVM::ReturnOp::create(b, loc, code);
  return wrapper;
}

/// Writes the descriptor's constant tables as private globals.
class DescriptorBuilder {
public:
  DescriptorBuilder(ModuleOp module)
      : context(module.getContext()), b(context), loc(module.getLoc()),
        ptrType(LLVM::LLVMPointerType::get(context)) {
    b.setInsertionPointToEnd(module.getBody());
  }

  /// A NUL-terminated string constant's symbol.
  StringRef string(StringRef value) {
    std::string bytes = value.str();
    bytes.push_back('\0');
    return global(LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
                  b.getStringAttr(bytes));
  }

  /// An array of i64 constants' symbol.
  StringRef int64Array(ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
    return global(LLVM::LLVMArrayType::get(b.getI64Type(), values.size()),
                  DenseElementsAttr::get(type, values));
  }

  /// A global of `type` whose initializer `build` computes.
  StringRef global(Type type, function_ref<Value(LLVMBuilder &)> build) {
    LLVM::GlobalOp op = createGlobal(type, Attribute());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.createBlock(&op.getInitializerRegion()));
    LLVMBuilder llvm(b, loc);
    LLVM::ReturnOp::create(b, loc, build(llvm));
    return op.getSymName();
  }

  StringRef global(Type type, Attribute value) {
    return createGlobal(type, value).getSymName();
  }

  /// The address of `symbol`, or null for an empty table.
  static Value addressOrNull(LLVMBuilder &llvm, StringRef symbol) {
    return symbol.empty() ? llvm.null() : llvm.address(symbol);
  }

  StringRef tensorTable(ArrayRef<TensorArgument> tensors) {
    if (tensors.empty())
      return "";
    auto tensorType = abi::getStructType(context, abi::kTensorFields);
    SmallVector<std::array<StringRef, 2>> symbols; // name, dims
    for (const TensorArgument &tensor : tensors)
      symbols.push_back({string(tensor.name), tensor.dims.empty()
                                                  ? StringRef()
                                                  : int64Array(tensor.dims)});
    return global(LLVM::LLVMArrayType::get(tensorType, tensors.size()),
                  [&](LLVMBuilder &llvm) {
                    SmallVector<Value> rows;
                    for (auto [tensor, symbol] : llvm::zip(tensors, symbols))
                      rows.push_back(llvm.aggregate(
                          tensorType,
                          {llvm.address(symbol[0]), llvm.i32(tensor.dtype),
                           llvm.i32(tensor.type.getRank()),
                           addressOrNull(llvm, symbol[1])}));
                    return llvm.aggregate(
                        LLVM::LLVMArrayType::get(tensorType, rows.size()),
                        rows);
                  });
  }

  StringRef stringTable(ArrayRef<std::string> strings) {
    if (strings.empty())
      return "";
    SmallVector<StringRef> symbols;
    for (const std::string &s : strings)
      symbols.push_back(string(s));
    auto type = LLVM::LLVMArrayType::get(ptrType, strings.size());
    return global(type, [&](LLVMBuilder &llvm) {
      SmallVector<Value> pointers;
      for (StringRef symbol : symbols)
        pointers.push_back(llvm.address(symbol));
      return llvm.aggregate(type, pointers);
    });
  }

  /// An entry's table of dimensions its inputs' values set, or "" for none.
  StringRef valueDimTable(ArrayRef<std::array<int64_t, 3>> valueDims) {
    if (valueDims.empty())
      return "";
    auto rowType = abi::getStructType(context, abi::kValueDimFields);
    auto type = LLVM::LLVMArrayType::get(rowType, valueDims.size());
    return global(type, [&](LLVMBuilder &llvm) {
      SmallVector<Value> rows;
      for (auto [input, element, dim] : valueDims)
        rows.push_back(llvm.aggregate(
            rowType, {llvm.i32(input), llvm.i32(element), llvm.i64(dim)}));
      return llvm.aggregate(type, rows);
    });
  }

  /// The table of named dimensions, or "" for none.
  StringRef dimTable(ArrayRef<DimAttr> dims) {
    if (dims.empty())
      return "";
    auto dimType = abi::getStructType(context, abi::kDimFields);
    SmallVector<StringRef> names;
    for (DimAttr dim : dims)
      names.push_back(string(dim.getName()));
    auto type = LLVM::LLVMArrayType::get(dimType, dims.size());
    return global(type, [&](LLVMBuilder &llvm) {
      SmallVector<Value> rows;
      for (auto [dim, name] : llvm::zip(dims, names))
        rows.push_back(llvm.aggregate(dimType, {llvm.address(name),
                                                llvm.i64(dim.getMin()),
                                                llvm.i64(dim.getMax())}));
      return llvm.aggregate(type, rows);
    });
  }

  /// The table of computed dimensions' programs (kiln_abi_expr_op), or ""
  /// when no dimension is computed.
  StringRef dimExprTable(ArrayRef<SmallVector<int64_t>> programs) {
    if (llvm::all_of(programs, [](auto &p) { return p.empty(); }))
      return "";
    SmallVector<StringRef> symbols;
    for (ArrayRef<int64_t> program : programs)
      symbols.push_back(program.empty() ? StringRef() : int64Array(program));
    auto type = LLVM::LLVMArrayType::get(ptrType, programs.size());
    return global(type, [&](LLVMBuilder &llvm) {
      SmallVector<Value> pointers;
      for (StringRef symbol : symbols)
        pointers.push_back(addressOrNull(llvm, symbol));
      return llvm.aggregate(type, pointers);
    });
  }

  /// The artifact descriptor's symbol.
  StringRef artifact(MutableArrayRef<Entry> entries, ArrayRef<DimAttr> dims,
                     ArrayRef<SmallVector<int64_t>> dimPrograms,
                     int64_t stateSize, DenseElementsAttr stateInit,
                     StringRef cpuFeatures, int64_t draftTokens) {
    auto entryType = abi::getStructType(context, abi::kEntryFields);
    struct Tables {
      StringRef name, inputs, outputs, errors, valueDims;
    };
    SmallVector<Tables> tables;
    for (Entry &entry : entries)
      tables.push_back({string(entry.func.getSymName()),
                        tensorTable(entry.inputs), tensorTable(entry.outputs),
                        stringTable(entry.errors),
                        valueDimTable(entry.valueDims)});
    auto entriesType = LLVM::LLVMArrayType::get(entryType, entries.size());
    StringRef entryTable = global(entriesType, [&](LLVMBuilder &llvm) {
      SmallVector<Value> rows;
      for (auto [entry, table] : llvm::zip(entries, tables))
        rows.push_back(llvm.aggregate(
            entryType,
            {llvm.address(table.name), llvm.address(entry.wrapper.getSymName()),
             llvm.i32(entry.inputs.size()), llvm.i32(entry.outputs.size()),
             addressOrNull(llvm, table.inputs),
             addressOrNull(llvm, table.outputs), llvm.i32(entry.errors.size()),
             addressOrNull(llvm, table.errors), llvm.i64(entry.scratchSize),
             llvm.i64(entry.valueDims.size()),
             addressOrNull(llvm, table.valueDims)}));
      return llvm.aggregate(entriesType, rows);
    });
    StringRef dimensions = dimTable(dims);
    StringRef dimExprs = dimExprTable(dimPrograms);
    StringRef producer = string("kiln " KILN_VERSION);
    StringRef features = string(cpuFeatures);
    StringRef initial =
        stateInit ? global(LLVM::LLVMArrayType::get(b.getI8Type(),
                                                    stateInit.getNumElements()),
                           stateInit)
                  : StringRef();
    auto artifactType = abi::getStructType(context, abi::kArtifactFields);
    return global(artifactType, [&](LLVMBuilder &llvm) {
      return llvm.aggregate(
          artifactType,
          {llvm.i32(KILN_ABI_VERSION), llvm.i32(sizeof(kiln_abi_artifact)),
           llvm.i32(sizeof(kiln_abi_entry)), llvm.i32(entries.size()),
           llvm.address(entryTable), llvm.i32(dims.size()),
           addressOrNull(llvm, dimensions), llvm.i64(stateSize),
           addressOrNull(llvm, initial), llvm.address(producer),
           llvm.address(features), addressOrNull(llvm, dimExprs),
           llvm.i64(draftTokens)});
    });
  }

  /// `const kiln_abi_artifact *kiln_artifact_v3(void)`, the one export.
  void getter(StringRef artifactSymbol) {
    auto getter = LLVM::LLVMFuncOp::create(
        b, loc, KILN_ABI_ARTIFACT_SYMBOL,
        LLVM::LLVMFunctionType::get(ptrType, {}));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(getter.addEntryBlock(b));
    LLVMBuilder llvm(b, loc);
    LLVM::ReturnOp::create(b, loc, llvm.address(artifactSymbol));
  }

  OpBuilder &builder() { return b; }

private:
  LLVM::GlobalOp createGlobal(Type type, Attribute value) {
    std::string name = "kiln.abi." + std::to_string(counter++);
    return LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                  LLVM::Linkage::Private, name, value);
  }

  MLIRContext *context;
  OpBuilder b;
  Location loc;
  LLVM::LLVMPointerType ptrType;
  unsigned counter = 0;
};

/// Appends the postfix program computing `expr` to `program`, its symbol k
/// the artifact's dimension `operands[k]`.
void appendProgram(AffineExpr expr, ArrayRef<int64_t> operands,
                   SmallVectorImpl<int64_t> &program) {
  if (auto constant = dyn_cast<AffineConstantExpr>(expr)) {
    program.append({KILN_ABI_EXPR_CONST, constant.getValue()});
    return;
  }
  if (auto symbol = dyn_cast<AffineSymbolExpr>(expr)) {
    program.append({KILN_ABI_EXPR_DIM, operands[symbol.getPosition()]});
    return;
  }
  auto binary = cast<AffineBinaryOpExpr>(expr);
  appendProgram(binary.getLHS(), operands, program);
  appendProgram(binary.getRHS(), operands, program);
  switch (binary.getKind()) {
  case AffineExprKind::Add:
    program.append({KILN_ABI_EXPR_ADD, 0});
    return;
  case AffineExprKind::Mul:
    program.append({KILN_ABI_EXPR_MUL, 0});
    return;
  case AffineExprKind::FloorDiv:
    program.append({KILN_ABI_EXPR_FLOORDIV, 0});
    return;
  case AffineExprKind::CeilDiv:
    program.append({KILN_ABI_EXPR_CEILDIV, 0});
    return;
  case AffineExprKind::Mod:
    program.append({KILN_ABI_EXPR_MOD, 0});
    return;
  default:
    llvm_unreachable("a dimension's size has no dims");
  }
}

/// The depth of the stack evaluating `expr` needs.
unsigned getStackDepth(AffineExpr expr) {
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return 1;
  return std::max(getStackDepth(binary.getLHS()),
                  1 + getStackDepth(binary.getRHS()));
}

/// Each dimension's program: empty for one the inputs set.
FailureOr<SmallVector<SmallVector<int64_t>>>
getDimPrograms(ModuleOp module, ArrayRef<DimAttr> dims,
               const llvm::StringMap<unsigned> &dimIndex) {
  SmallVector<SmallVector<int64_t>> programs(dims.size());
  for (auto [dim, program] : llvm::zip(dims, programs)) {
    if (!dim.isComputed())
      continue;
    SmallVector<int64_t> operands;
    for (auto name : dim.getOperands().getAsValueRange<StringAttr>()) {
      auto known = dimIndex.find(name);
      if (known == dimIndex.end() || dims[known->second].isComputed())
        return module.emitError()
               << "internal error: computed dimension '" << dim.getName()
               << "' reads '" << name
               << "', which is not a dimension the inputs set";
      operands.push_back(known->second);
    }
    AffineExpr size = dim.getSize().getValue().getResult(0);
    if (getStackDepth(size) > KILN_ABI_EXPR_MAX_DEPTH)
      return module.emitError() << "dimension '" << dim.getName()
                                << "' is too deep an expression for the ABI";
    appendProgram(size, operands, program);
    program.append({KILN_ABI_EXPR_END, 0});
  }
  return programs;
}

struct ExportEntriesPass
    : kiln::impl::ExportEntriesPassBase<ExportEntriesPass> {
  using ExportEntriesPassBase::ExportEntriesPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<DimAttr> dims;
    llvm::StringMap<unsigned> dimIndex;
    if (auto table = module->getAttrOfType<ArrayAttr>(kDimsAttr))
      for (auto dim : table.getAsRange<DimAttr>()) {
        dimIndex[dim.getName()] = dims.size();
        dims.push_back(dim);
      }
    FailureOr<SmallVector<SmallVector<int64_t>>> dimPrograms =
        getDimPrograms(module, dims, dimIndex);
    if (failed(dimPrograms))
      return signalPassFailure();
    std::vector<Entry> entries;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!isEntryPoint(func))
        continue;
      FailureOr<Entry> entry = describeEntry(func, dimIndex);
      if (failed(entry))
        return signalPassFailure();
      entries.push_back(std::move(*entry));
    }
    if (entries.empty()) {
      module.emitError("the module has no public function to export");
      return signalPassFailure();
    }
    int64_t stateSize = 0;
    if (auto size = module->getAttrOfType<IntegerAttr>(kStateSizeAttr))
      stateSize = size.getInt();
    auto stateInit = module->getAttrOfType<DenseElementsAttr>(kStateInitAttr);
    module->removeAttr(kStateSizeAttr);
    module->removeAttr(kStateInitAttr);
    int64_t draftTokens = 0;
    if (auto tokens = module->getAttrOfType<IntegerAttr>(kDraftTokensAttr))
      draftTokens = tokens.getInt();
    module->removeAttr(kDraftTokensAttr);

    DescriptorBuilder descriptor(module);
    for (Entry &entry : entries)
      entry.wrapper = buildWrapper(descriptor.builder(), entry);
    descriptor.getter(descriptor.artifact(entries, dims, *dimPrograms,
                                          stateSize, stateInit, cpuFeatures,
                                          draftTokens));
    module->removeAttr(kDimsAttr);

    // The descriptor now holds what the attributes said (LLVM has no use
    // for them on any function); the entries are the wrappers' internals.
    for (auto func : module.getOps<func::FuncOp>())
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.setArgAttrs(i, DictionaryAttr::get(&getContext()));
    // Each is inlined into its wrapper first thing: LLVM's
    // CalledValuePropagation takes time quadratic in a call's arguments, and
    // the call passes every input and output as a descriptor (seven values
    // for a 2-D buffer): 18 of 30 seconds for a Concat of 2000 inputs.
    for (Entry &entry : entries) {
      entry.func->removeAttr(kErrorsAttr);
      entry.func.setPrivate();
      entry.func->setAttr(
          "passthrough",
          ArrayAttr::get(&getContext(),
                         {StringAttr::get(&getContext(), "alwaysinline")}));
    }
  }
};

} // namespace
