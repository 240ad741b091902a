//===- KilnBase.td - kiln dialect definition ---------------*- tablegen -*-===//
//
// The kiln dialect: value-semantics tensor ops that ONNX graphs are imported
// into and that Kiln's graph passes rewrite.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_BASE
#define KILN_DIALECT_KILN_BASE

include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor ops for compiling ONNX models";
  let description = [{
    The kiln dialect holds the tensor operations of an imported model. Every
    op has value semantics on ranked tensors; several ONNX spellings may map
    to one kiln op. A dimension may be dynamic (`?`): its size is then one of
    the module's named dimensions (`#kiln.dim`, bounded) or computed from
    them, and ops whose result sizes don't follow from their operands' types
    take the dynamic ones as `index` operands, like `tensor.empty`. Ops carry
    the location of the ONNX node they were imported from, so diagnostics
    name the user's node.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  // Sizes of dynamic dimensions are computed with these (tensor.dim, and
  // arith on index values).
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

// Element types: any tensor Kiln moves around may be f32, f64, f16, bf16,
// i64, i32, i16, i8 or i1; arithmetic takes the numeric ones. Integers are
// signless, as in arith and TOSA 1.0: an 8-bit tensor holds ONNX's int8 or
// uint8, and the ops that read or write its values as numbers (quantize,
// dequantize, matmul_integer, cast, div, rem) say which with an `unsigned`
// flag; the entry point's arguments and results carry `kiln.unsigned` for
// the unsigned types.
def Kiln_Tensor : RankedTensorOf<[F32, F64, F16, BF16, I64, I32, I16, I8, I1]>;
def Kiln_NumericTensor : RankedTensorOf<[F32, F64, I64, I32]>;
def Kiln_IntegerTensor : RankedTensorOf<[I64, I32]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;
// What the logical ops take: booleans, or integers bit by bit.
def Kiln_BitsTensor : RankedTensorOf<[I1, I64, I32]>;
// The composite ops (convolution, attention, normalization, ...) and their
// kernels compute in f32; elementwise float math also in f64.
def Kiln_FloatTensor : RankedTensorOf<[F32]>;
// Values kept in memory at half precision and widened where they are read.
// A splatting scene's attribute as stored: float, float16, or int8 with an
// affine map per column.
def Kiln_SplatAttributeTensor : RankedTensorOf<[F32, F16, I8]>;
def Kiln_RealTensor : RankedTensorOf<[F32, F64]>;
def Kiln_IndexTensor : RankedTensorOf<[I64]>;
// Quantized values and their zero points (8-bit), and integer products.
def Kiln_QuantTensor : RankedTensorOf<[I8]>;
// What QuantizeLinear makes and DequantizeLinear reads: 8 or 16 bits.
def Kiln_QdqTensor : RankedTensorOf<[I8, I16]>;
def Kiln_AccumulatorTensor : RankedTensorOf<[I32]>;
// The error code an entry point's run-time checks produce (0: no error).
def Kiln_StatusTensor : 0DTensorOf<[I32]>, BuildableType<
    "::mlir::RankedTensorType::get({}, $_builder.getI32Type())">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kiln_DimAttr : Kiln_Attr<"Dim", "dim"> {
  let summary = "a named dimension and the sizes it may take";
  let description = [{
    A dynamic dimension of the model's inputs (an ONNX `dim_param` such as
    `seq`) with the range of sizes the artifact accepts, bounds included.
    The module lists them in its `kiln.dims` attribute; buffers are planned
    for `max`, and the runtime checks each call's sizes against the range.

    ```mlir
    module attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>]} { ... }
    ```

    A dimension the model computes from the others, such as the size of an
    output that concatenates two `seq`-long inputs, is named by its
    expression and carries it: an affine map of no dims and one result,
    whose symbols are the named dimensions listed after `of`. The runtime
    evaluates it once the inputs have set the dimensions it reads.

    ```mlir
    #kiln.dim<"seq * 2", 2, 1024, size = affine_map<()[s0] -> (s0 * 2)> of ["seq"]>
    ```
  }];
  let parameters = (ins StringRefParameter<"the ONNX dim_param">:$name,
                        "int64_t":$min, "int64_t":$max,
                        OptionalParameter<"::mlir::AffineMapAttr",
                          "for a computed dimension, its size">:$size,
                        OptionalParameter<"::mlir::ArrayAttr",
                          "the named dimensions `size` reads">:$operands);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name, "int64_t":$min,
                     "int64_t":$max,
                     CArg<"::mlir::AffineMapAttr", "{}">:$size,
                     CArg<"::mlir::ArrayAttr", "{}">:$operands), [{
      return $_get($_ctxt, name, min, max, size, operands);
    }]>
  ];
  let skipDefaultBuilders = 1;
  let assemblyFormat = [{
    `<` $name `,` $min `,` $max (`,` `size` `=` $size^ `of` $operands)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the model computes this dimension from the others.
    bool isComputed() const { return static_cast<bool>(getSize()); }
  }];
}

def Kiln_Activation : I32EnumAttr<"Activation", "activation of a fused product", [
    I32EnumAttrCase<"GeluErf", 0, "gelu_erf">,
    I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_ActivationAttr : EnumAttr<Kiln_Dialect, Kiln_Activation, "activation"> {
  let assemblyFormat = "$value";
}

def Kiln_PoolKind : I32EnumAttr<"PoolKind", "reduction of a pooling window", [
    I32EnumAttrCase<"Max", 0, "max">,
    I32EnumAttrCase<"Sum", 1, "sum">,
    I32EnumAttrCase<"Average", 2, "average">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_PoolKindAttr : EnumAttr<Kiln_Dialect, Kiln_PoolKind, "pool_kind"> {
  let assemblyFormat = "$value";
}

def Kiln_SplatCulling : I32EnumAttr<"SplatCulling", "which tiles a splat is binned to", [
    I32EnumAttrCase<"Square", 0, "square">,
    I32EnumAttrCase<"Exact", 1, "exact">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_SplatCullingAttr : EnumAttr<Kiln_Dialect, Kiln_SplatCulling, "splat_culling"> {
  let assemblyFormat = "$value";
}

def Kiln_TargetKind : I32EnumAttr<"TargetKind", "kind of machine", [
    I32EnumAttrCase<"Cpu", 0, "cpu">,
    I32EnumAttrCase<"Cuda", 1, "cuda">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_CpuModelAttr : Kiln_Attr<"CpuModel", "cpu_model"> {
  let summary = "what a CPU's kernels are sized by: FMA units and caches";
  let description = [{
    The facts about a CPU that the CPU lowering derives its block sizes from
    (register tiles, cache blocks, attention blocks), beside the vector
    width and register count its features give: how many full-width vector
    multiply-adds a core starts per cycle and how many cycles one takes,
    the data cache sizes one core has to itself (L1, L2), and the last-level
    cache its cores share. Read from the compiling machine for
    `--target-cpu=host`, from Kiln's table of known chips otherwise.

    ```mlir
    #kiln.cpu_model<fma_units = 2, fma_latency = 4, l1 = 49152, l2 = 2097152, l3 = 110100480>
    ```
  }];
  let parameters = (ins "int64_t":$fma_units, "int64_t":$fma_latency,
                        "int64_t":$l1, "int64_t":$l2, "int64_t":$l3);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Kiln_TargetAttr : Kiln_Attr<"Target", "target"> {
  let summary = "the machine a module is compiled for";
  let description = [{
    What the compiler generates code for: the kind of machine, its LLVM
    target triple, the chip (an LLVM CPU name such as `znver4`, or a CUDA
    architecture such as `sm_90`), how its features differ from that chip's
    defaults, as LLVM spells them (a virtual machine may hide some), and for
    a CPU, the model its kernels are sized for (`#kiln.cpu_model`). The
    compiler sets it on the module as `kiln.target` before any
    target-specific pass; those passes size their blocks from it, and the
    backend generates code for exactly this chip and these features.

    ```mlir
    module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4", "-avx512f,-avx512vl">} { ... }
    module attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "sapphirerapids" sized for <fma_units = 2, fma_latency = 4, l1 = 49152, l2 = 2097152, l3 = 110100480>>} { ... }
    ```

    A CPU target without a model is sized for its chip's entry in Kiln's
    table (or a generic one when the chip is not in it).
  }];
  let parameters = (ins EnumParameter<Kiln_TargetKind>:$kind,
                        StringRefParameter<"LLVM target triple">:$triple,
                        StringRefParameter<"CPU name or GPU architecture">:$chip,
                        StringRefParameter<"LLVM features changed from the chip's", "\"\"">:$features,
                        OptionalParameter<"CpuModelAttr",
                          "what a CPU's kernels are sized for">:$cpu_model);
  let builders = [
    AttrBuilder<(ins "TargetKind":$kind, "::llvm::StringRef":$triple,
                     "::llvm::StringRef":$chip,
                     CArg<"::llvm::StringRef", "\"\"">:$features,
                     CArg<"CpuModelAttr", "{}">:$cpu_model), [{
      return $_get($_ctxt, kind, triple, chip, features, cpu_model);
    }]>
  ];
  let skipDefaultBuilders = 1;
  let assemblyFormat = [{
    `<` $kind `,` $triple `,` $chip (`,` $features^)?
    (`sized` `for` $cpu_model^)? `>`
  }];
}

#endif // KILN_DIALECT_KILN_BASE
