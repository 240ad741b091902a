//===- KilnOps.td - core kiln tensor ops -------------------*- tablegen -*-===//
//
// Core tensor ops: the operations ONNX nodes map to. All are pure and work on
// statically shaped tensors of f32 or i64.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_OPS
#define KILN_DIALECT_KILN_OPS

include "dialects/Kiln/IR/KilnBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "tensor constant (ONNX initializers and Constant nodes)";
  let description = [{
    Materializes a tensor from its elements attribute.

    ```mlir
    %w = kiln.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultElementType,
                                             InferTypeOpAdaptor])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  // The result shape is the ONNX multidirectional broadcast of both operands.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferBroadcastResultType(location, adaptor.getLhs().getType(),
                                      adaptor.getRhs().getType(), types);
    }
  }];
}

def Kiln_AddOp : Kiln_BinaryOp<"add", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise addition with broadcasting";
  let description = [{
    `lhs + rhs` after ONNX multidirectional (numpy-style) broadcasting.

    ```mlir
    %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<3xf32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_SubOp : Kiln_BinaryOp<"sub", Kiln_NumericTensor> {
  let summary = "elementwise subtraction with broadcasting";
  let description = [{
    `lhs - rhs` after ONNX multidirectional broadcasting.

    ```mlir
    %0 = kiln.sub %a, %b : tensor<4x1xf32>, tensor<1x5xf32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_MulOp : Kiln_BinaryOp<"mul", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise multiplication with broadcasting";
  let description = [{
    `lhs * rhs` after ONNX multidirectional broadcasting.

    ```mlir
    %0 = kiln.mul %a, %b : tensor<2x3xi64>, tensor<i64>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_DivOp : Kiln_BinaryOp<"div", Kiln_NumericTensor> {
  let summary = "elementwise division with broadcasting";
  let description = [{
    `lhs / rhs` after ONNX multidirectional broadcasting. Integer division
    truncates toward zero; an integer division by zero yields 0 rather than
    trapping. `is_unsigned` divides integers as unsigned numbers.

    ```mlir
    %0 = kiln.div %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
    %1 = kiln.div %c, %d {is_unsigned} : tensor<4xi64>, tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                       UnitAttr:$is_unsigned);
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_RemOp : Kiln_BinaryOp<"rem", Kiln_NumericTensor> {
  let summary = "elementwise remainder of truncated division, with broadcasting";
  let description = [{
    `lhs - trunc(lhs / rhs) * rhs` after ONNX multidirectional broadcasting:
    C's fmod, with the sign of `lhs`. An integer remainder by zero (or by
    -1) yields 0 rather than trapping. `is_unsigned` divides integers as
    unsigned numbers.

    ```mlir
    %0 = kiln.rem %a, %b : tensor<2x3xi64>, tensor<i64>
    %1 = kiln.rem %c, %d {is_unsigned} : tensor<4xi64>, tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                       UnitAttr:$is_unsigned);
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_PowOp : Kiln_BinaryOp<"pow", Kiln_NumericTensor> {
  let summary = "elementwise power with broadcasting";
  let description = [{
    `lhs ^ rhs` after ONNX multidirectional broadcasting. Both operands have
    the same element type; the importer casts a differently typed exponent.

    ```mlir
    %0 = kiln.pow %x, %y : tensor<3xf32>, tensor<f32>
    ```
  }];
}

class Kiln_UnaryOp<string mnemonic, Type operandType, string formula>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` for every element.\n\n"
    "```mlir\n%0 = kiln." # mnemonic # " %x : tensor<2x3xf32>\n```";
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_NegOp : Kiln_UnaryOp<"neg", Kiln_NumericTensor, "-x"> {
  let hasFolder = 1;
}
def Kiln_AbsOp : Kiln_UnaryOp<"abs", Kiln_NumericTensor, "|x|">;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", Kiln_NumericTensor, "max(x, 0)">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", Kiln_RealTensor, "e^x">;
def Kiln_LogOp : Kiln_UnaryOp<"log", Kiln_RealTensor, "ln(x)">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", Kiln_RealTensor, "sqrt(x)">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", Kiln_RealTensor, "1 / (1 + e^-x)">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", Kiln_RealTensor, "tanh(x)">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", Kiln_RealTensor, "erf(x)">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", Kiln_RealTensor, "sin(x)">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", Kiln_RealTensor, "cos(x)">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", Kiln_RealTensor, "tan(x)">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", Kiln_RealTensor, "asin(x)">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", Kiln_RealTensor, "acos(x)">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", Kiln_RealTensor, "atan(x)">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", Kiln_RealTensor, "sinh(x)">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", Kiln_RealTensor, "cosh(x)">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", Kiln_RealTensor, "asinh(x)">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", Kiln_RealTensor, "acosh(x)">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", Kiln_RealTensor, "atanh(x)">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", Kiln_RealTensor, "floor(x)">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", Kiln_RealTensor, "ceil(x)">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", Kiln_RealTensor,
                                "x rounded to the nearest integer, halves to even">;
def Kiln_NotOp : Kiln_UnaryOp<"not", Kiln_BitsTensor, "!x (~x on integers)"> {
  let hasFolder = 1;
}

def Kiln_MinOp : Kiln_BinaryOp<"min", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise minimum with broadcasting";
  let description = [{
    The smaller of `lhs` and `rhs` after ONNX multidirectional broadcasting;
    a NaN in either float operand gives NaN, as ONNX Min does.

    ```mlir
    %0 = kiln.min %a, %b : tensor<2x3xf32>, tensor<f32>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_MaxOp : Kiln_BinaryOp<"max", Kiln_NumericTensor, [Commutative]> {
  let summary = "elementwise maximum with broadcasting";
  let description = [{
    The larger of `lhs` and `rhs` after ONNX multidirectional broadcasting;
    a NaN in either float operand gives NaN, as ONNX Max does.

    ```mlir
    %0 = kiln.max %a, %b : tensor<2x3xi64>, tensor<3xi64>
    ```
  }];
  let hasFolder = 1;
}

def Kiln_ShiftLeftOp : Kiln_BinaryOp<"shift_left", Kiln_IntegerTensor> {
  let summary = "elementwise left shift with broadcasting";
  let description = [{
    `lhs << rhs` after ONNX multidirectional broadcasting; a shift by the
    bit width or more (or by a negative amount) gives 0.

    ```mlir
    %0 = kiln.shift_left %a, %b : tensor<3xi64>, tensor<i64>
    ```
  }];
}

def Kiln_ShiftRightOp : Kiln_BinaryOp<"shift_right", Kiln_IntegerTensor> {
  let summary = "elementwise right shift with broadcasting";
  let description = [{
    `lhs >> rhs` after ONNX multidirectional broadcasting, shifting in
    zeros, or copies of the sign bit with `arithmetic` (signed operands). A
    shift by the bit width or more (or by a negative amount) shifts every
    bit out: 0, or -1 for a negative `lhs` with `arithmetic`.

    ```mlir
    %0 = kiln.shift_right %a, %b : tensor<3xi32>, tensor<3xi32>
    %1 = kiln.shift_right %a, %b {arithmetic} : tensor<3xi32>, tensor<3xi32>
    ```
  }];
  let arguments = (ins Kiln_IntegerTensor:$lhs, Kiln_IntegerTensor:$rhs,
                       UnitAttr:$arithmetic);
}

class Kiln_LogicalOp<string mnemonic, string formula>
    : Kiln_BinaryOp<mnemonic, Kiln_BitsTensor, [Commutative]> {
  let summary = "elementwise logical or bitwise " # mnemonic #
    " with broadcasting";
  let description = "`" # formula # "` on booleans, bit by bit on "
    "integers, after ONNX multidirectional broadcasting.\n\n"
    "```mlir\n%0 = kiln." # mnemonic # " %a, %b : tensor<3x4xi1>, tensor<4xi1>\n```";
  let hasFolder = 1;
}

def Kiln_AndOp : Kiln_LogicalOp<"and", "lhs && rhs">;
def Kiln_OrOp : Kiln_LogicalOp<"or", "lhs || rhs">;
def Kiln_XorOp : Kiln_LogicalOp<"xor", "lhs != rhs">;

def Kiln_CastOp : Kiln_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "element type conversion";
  let description = [{
    Converts every element to the result's element type. Float to integer
    truncates toward zero; float to float rounds to nearest even. Integers
    are signed unless marked: `input_unsigned` reads the input's 8- or
    16-bit integers as unsigned (zero-extends them), `result_unsigned`
    converts floats to an unsigned 8-bit result.

    ```mlir
    %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi64>
    %1 = kiln.cast %pixels {input_unsigned} : tensor<4xi8> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, UnitAttr:$input_unsigned,
                       UnitAttr:$result_unsigned);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and normalizations
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul",
    [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor]> {
  let summary = "matrix product with numpy semantics";
  let description = [{
    ONNX MatMul: a 1-D operand is promoted to a matrix (and the added
    dimension removed from the result); leading batch dimensions broadcast.

    ```mlir
    %0 = kiln.matmul %a, %b : tensor<8x2x3xf32>, tensor<3x4xf32>
    // %0 : tensor<8x2x4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `axis` (ONNX opset-13
    semantics; the importer reshapes older opsets' flattened form into this).

    ```mlir
    %0 = kiln.softmax %x, axis = 1 : tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Kiln_ReduceOp<string mnemonic, string combiner>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor]> {
  let summary = combiner # " over a set of axes";
  let description = "Reduces `axes` (sorted, unique, non-negative) with " #
    combiner # ". With `keep_dims` the reduced axes stay as size-1 dimensions.\n\n"
    "```mlir\n%0 = kiln." # mnemonic #
    " %x axes = [1] keep_dims : tensor<2x3xf32> -> tensor<2x1xf32>\n```";
  let arguments = (ins Kiln_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes (`keep_dims` $keep_dims^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferReduceResultType(location, adaptor.getInput().getType(),
                                   adaptor.getAxes(),
                                   adaptor.getKeepDims(), types);
    }
  }];
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "the sum">;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "the arithmetic mean">;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max",
    "the maximum (of no elements: -inf, or the lowest integer)">;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min",
    "the minimum (of no elements: +inf, or the highest integer)">;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod",
    "the product (of no elements: 1)">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "reinterpret a tensor with another shape";
  let description = [{
    Keeps the elements in row-major order and changes the shape. ONNX
    Reshape, Flatten, Squeeze and Unsqueeze all import to this op. `dims`
    gives the sizes of the result's dynamic dimensions, in order.

    ```mlir
    %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6x1xf32>
    %1 = kiln.reshape %h dims(%seq) : tensor<1x?x384xf32> -> tensor<1x?x12x32xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Variadic<Index>:$dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input (`dims` `(` $dims^ `)`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose",
    [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor]> {
  let summary = "permute dimensions";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %0 = kiln.transpose %x, perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `,` `perm` `=` $perm attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat",
    [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor]> {
  let summary = "join tensors along one axis";
  let description = [{
    All inputs have the same rank and agree on every dimension but `axis`.

    ```mlir
    %0 = kiln.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices of `data` along `axis` at `indices`";
  let description = [{
    ONNX Gather: the result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end. Indices out
    of range are clamped, so generated code never reads outside `data`.

    ```mlir
    %0 = kiln.gather %table[%ids], axis = 0 : tensor<100x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `,` `axis` `=` $axis attr-dict
    `:` type($data) `,` type($indices) `->` type($result)
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "take elements of `data` along `axis` at `indices`";
  let description = [{
    ONNX GatherElements: `result[i0, .., ik, ..] = data[i0, .., indices[i0,
    .., ik, ..], ..]` with the index replacing coordinate `axis`; the result
    has the shape of `indices`. Negative indices count from the end. Indices
    out of range are clamped, so generated code never reads outside `data`.

    ```mlir
    %0 = kiln.gather_elements %logp[%target], axis = 1 : tensor<4x10xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `,` `axis` `=` $axis attr-dict
    `:` type($data) `,` type($indices) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

def Kiln_EqualOp : Kiln_Op<"equal", [Pure, Commutative, InferTypeOpAdaptor]> {
  let summary = "elementwise equality with broadcasting";
  let description = [{
    `lhs == rhs` after ONNX multidirectional broadcasting, as booleans. Both
    operands have the same element type.

    ```mlir
    %0 = kiln.equal %a, %b : tensor<3xi64>, tensor<i64>
    // %0 : tensor<3xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasFolder = 1;
}

class Kiln_OrderOp<string mnemonic, string formula>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise `" # formula # "` with broadcasting";
  let description = "`" # formula # "` after ONNX multidirectional "
    "broadcasting, as booleans (false where a float operand is NaN). Both "
    "operands have the same element type; the importer swaps them for ONNX's "
    "Greater and GreaterOrEqual.\n\n"
    "```mlir\n%0 = kiln." # mnemonic # " %a, %b : tensor<3xf32>, tensor<f32>\n"
    "// %0 : tensor<3xi1>\n```";
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return inferComparisonResultType(context, location,
                                       adaptor.getLhs().getType(),
                                       adaptor.getRhs().getType(), types);
    }
  }];
}

def Kiln_LessOp : Kiln_OrderOp<"less", "lhs < rhs">;
def Kiln_LessEqualOp : Kiln_OrderOp<"less_equal", "lhs <= rhs">;

def Kiln_SelectOp : Kiln_Op<"select", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors";
  let description = [{
    ONNX Where: `condition ? true_value : false_value`, with all three
    operands broadcast together.

    ```mlir
    %0 = kiln.select %mask, %scores, %neg_inf : tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$true_value,
                       Kiln_Tensor:$false_value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict
    `:` type($condition) `,` type($true_value) `,` type($false_value)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Slicing and broadcasting
//===----------------------------------------------------------------------===//

def Kiln_SliceOp : Kiln_Op<"slice",
    [Pure, SameOperandsAndResultElementType, InferTypeOpAdaptor]> {
  let summary = "a strided box of a tensor";
  let description = [{
    Takes `sizes[d]` elements along each dimension `d`, starting at
    `offsets[d]` and stepping by `strides[d]` (at least 1). ONNX Slice and
    Split import to this op; every element read lies inside the input. A
    dynamic size (`?`) keeps a dynamic dimension whole.

    ```mlir
    %0 = kiln.slice %x offsets = [0, 128] sizes = [16, 128] strides = [1, 1] : tensor<16x384xf32> -> tensor<16x128xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `offsets` `=` $offsets `sizes` `=` $sizes `strides` `=` $strides
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Kiln_DynamicSliceOp : Kiln_Op<"dynamic_slice",
    [Pure, AllElementTypesMatch<["input", "result"]>,
     SameVariadicOperandSize]> {
  let summary = "a box of a tensor at run-time offsets and sizes";
  let description = [{
    Along each of `axes`, takes `sizes[i]` consecutive elements starting at
    `offsets[i]`; every other dimension is taken whole. ONNX Slice imports
    to this op when its starts or ends are computed from named dimensions
    (a decoder's causal mask `bias[:, :, past:past + seq, :past + seq]`).
    The importer proves the box inside the input for every size the named
    dimensions may take; the lowering still clamps each offset to
    `[0, dim - size]`, so a read never leaves the input.

    ```mlir
    %0 = kiln.dynamic_slice %bias axes = [2, 3] offsets(%past, %zero) sizes(%seq, %total) : tensor<1x1x1024x1024xf32> -> tensor<1x1x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes,
                       Variadic<Index>:$offsets, Variadic<Index>:$sizes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `axes` `=` $axes `offsets` `(` $offsets `)` `sizes` `(` $sizes `)`
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_BroadcastOp : Kiln_Op<"broadcast",
    [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "repeat size-1 dimensions to a larger shape";
  let description = [{
    ONNX Expand and ConstantOfShape: the input's dimensions align to the
    right of the result's, and each is either equal or 1. `dims` gives the
    sizes of the result's dynamic dimensions, in order.

    ```mlir
    %0 = kiln.broadcast %cls : tensor<1x1x384xf32> -> tensor<4x1x384xf32>
    %1 = kiln.broadcast %zero dims(%seq) : tensor<i64> -> tensor<1x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Variadic<Index>:$dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input (`dims` `(` $dims^ `)`)? attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_RangeOp : Kiln_Op<"range",
    [Pure, AllElementTypesMatch<["start", "delta", "result"]>]> {
  let summary = "an arithmetic sequence";
  let description = [{
    ONNX Range: `result[i] = start + i * delta` for each of the result's
    elements. `start` and `delta` are scalars (0-d); `size` gives the
    length when the result's one dimension is dynamic.

    ```mlir
    %0 = kiln.range %zero, %one size %seq : tensor<i64>, tensor<i64> -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$start, Kiln_NumericTensor:$delta,
                       Optional<Index>:$size);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $start `,` $delta (`size` $size^)? attr-dict `:` type($start) `,`
    type($delta) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Run-time checks
//===----------------------------------------------------------------------===//

def Kiln_CheckIndexRangeOp : Kiln_Op<"check_index_range", [Pure]> {
  let summary = "record an error code if an index lies outside its axis";
  let description = [{
    Returns `status` unchanged if it is non-zero (an earlier check failed).
    Otherwise returns `code` if any element of `indices` lies outside
    `[-size, size)`, and 0 if all are in range. Checks are chained through
    `status`, so an entry point reports the first check that failed; the
    `kiln-insert-runtime-checks` pass creates them.

    ```mlir
    %s1 = kiln.check_index_range %ids, %s0, size = 100, code = 1 : tensor<2x8xi64>
    ```
  }];
  let arguments = (ins Kiln_IndexTensor:$indices, Kiln_StatusTensor:$status,
                       I64Attr:$size, I32Attr:$code);
  let results = (outs Kiln_StatusTensor:$result);
  let assemblyFormat = [{
    $indices `,` $status `,` `size` `=` $size `,` `code` `=` $code attr-dict
    `:` type($indices)
  }];
  let hasVerifier = 1;
}

include "dialects/Kiln/IR/KilnCompositeOps.td"
include "dialects/Kiln/IR/KilnIndexedOps.td"
include "dialects/Kiln/IR/KilnQuantOps.td"
include "dialects/Kiln/IR/KilnStateOps.td"
include "dialects/Kiln/IR/KilnPipelineOps.td"
include "dialects/Kiln/IR/KilnTokenOps.td"
include "dialects/Kiln/IR/KilnSplatOps.td"

#endif // KILN_DIALECT_KILN_OPS
