//===- KilnQuantOps.td - quantization ops ------------------*- tablegen -*-===//
//
// Linear (affine) quantization as ONNX defines it: a real value x is stored
// as the 8-bit integer q with x = (q - zero_point) * scale. Scales and zero
// points are operands, not part of the element type (see docs/design.md):
// ONNX gives them as tensors, DynamicQuantizeLinear computes them at run
// time, and per-channel ones for a large layer would make unwieldy types.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_QUANT_OPS
#define KILN_DIALECT_KILN_QUANT_OPS

def Kiln_QuantizeOp : Kiln_Op<"quantize",
    [Pure, AllShapesMatch<["input", "result"]>,
     AllElementTypesMatch<["zero_point", "result"]>]> {
  let summary = "float to 8- or 16-bit integers (ONNX QuantizeLinear)";
  let description = [{
    `q = saturate(round(x / scale) + zero_point)`, rounding half to even
    and saturating to the result's range: for 8 bits `[0, 255]` with
    `result_unsigned`, `[-128, 127]` without; for 16 bits `[0, 65535]` or
    `[-32768, 32767]`. A 0-D `scale` and `zero_point` quantize the
    whole tensor; 1-D ones hold one value per index of dimension `axis`
    (per-channel quantization); with `block_size`, one per block of that
    many indices along `axis`, as for `kiln.dequantize`.

    ```mlir
    %q = kiln.quantize %x, %s, %zp : tensor<6xf32>, tensor<f32>, tensor<i8> -> tensor<6xi8>
    %w = kiln.quantize %x, %s, %zp axis = 0 {result_unsigned} : tensor<3x4xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<3x4xi8>
    %b = kiln.quantize %x, %s, %zp axis = 1 block_size = 2 : tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xi8> -> tensor<3x4xi8>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_QdqTensor:$zero_point,
                       OptionalAttr<I64Attr>:$axis,
                       OptionalAttr<I64Attr>:$block_size,
                       UnitAttr:$result_unsigned);
  let results = (outs Kiln_QdqTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $zero_point (`axis` `=` $axis^)?
    (`block_size` `=` $block_size^)? attr-dict `:`
    type($input) `,` type($scale) `,` type($zero_point) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize",
    [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "integers to float (ONNX DequantizeLinear)";
  let description = [{
    `x = (q - zero_point) * scale`, the difference taken exactly in 32-bit
    integers. `input` is 8- or 16-bit (unsigned with `input_unsigned`;
    ONNX's 4-bit types are held in 8) or 32-bit (a quantized bias), and
    `zero_point` has its element type. Scales and zero points are per
    tensor (0-D) or per index of `axis` (1-D), as for `kiln.quantize`; or,
    with `block_size` B (ONNX opset 21's blocked quantization), they have
    the input's rank and shape but for `ceil(size / B)` along `axis`: index
    `i` of that axis reads entry `i / B`.

    ```mlir
    %x = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<4xi8>, tensor<f32>, tensor<i8> -> tensor<4xf32>
    %w = kiln.dequantize %q4, %s, %zp axis = 0 block_size = 32 : tensor<64x48xi8>, tensor<2x48xf32>, tensor<2x48xi8> -> tensor<64x48xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8, I16, I32]>:$input,
                       Kiln_FloatTensor:$scale,
                       RankedTensorOf<[I8, I16, I32]>:$zero_point,
                       OptionalAttr<I64Attr>:$axis,
                       OptionalAttr<I64Attr>:$block_size,
                       UnitAttr:$input_unsigned);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $zero_point (`axis` `=` $axis^)?
    (`block_size` `=` $block_size^)? attr-dict `:`
    type($input) `,` type($scale) `,` type($zero_point) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_DynamicQuantizeOp : Kiln_Op<"dynamic_quantize",
    [Pure, AllShapesMatch<["input", "result"]>]> {
  let summary = "float to uint8 with a scale from the data (ONNX DynamicQuantizeLinear)";
  let description = [{
    Quantizes `input` to unsigned 8-bit integers over the range of its
    values widened to include 0: `scale = (max - min) / 255` and
    `zero_point = saturate(round(-min / scale))`, then as `kiln.quantize`
    with `result_unsigned`. An all-zero input has scale 0; its elements
    quantize to the zero point, 0.

    ```mlir
    %q, %s, %zp = kiln.dynamic_quantize %x : tensor<6xf32> -> tensor<6xi8>, tensor<f32>, tensor<i8>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_QuantTensor:$result, 0DTensorOf<[F32]>:$scale,
                      0DTensorOf<[I8]>:$zero_point);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result) `,` type($scale) `,`
    type($zero_point)
  }];
}

def Kiln_MatMulIntegerOp : Kiln_Op<"matmul_integer", [Pure]> {
  let summary = "product of 8-bit integer matrices in 32 bits (ONNX MatMulInteger)";
  let description = [{
    `matmul(lhs - lhs_zero_point, rhs - rhs_zero_point)` with the numpy
    semantics of `kiln.matmul`, every product and sum exact in 32-bit
    integers. Each operand is signed or, with `lhs_unsigned` /
    `rhs_unsigned`, unsigned, and its zero point (of the same signedness)
    broadcasts to it: a 0-D zero point is per tensor, `[M, 1]` per row of
    the left operand, `[N]` per column of the right one.

    ```mlir
    %0 = kiln.matmul_integer %a, %b, %azp, %bzp {lhs_unsigned} : tensor<4x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<4x2xi32>
    ```
  }];
  let arguments = (ins Kiln_QuantTensor:$lhs, Kiln_QuantTensor:$rhs,
                       Kiln_QuantTensor:$lhs_zero_point,
                       Kiln_QuantTensor:$rhs_zero_point,
                       UnitAttr:$lhs_unsigned, UnitAttr:$rhs_unsigned);
  let results = (outs Kiln_AccumulatorTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $lhs_zero_point `,` $rhs_zero_point attr-dict `:`
    type($lhs) `,` type($rhs) `,` type($lhs_zero_point) `,`
    type($rhs_zero_point) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_QuantizedMatMulOp : Kiln_Op<"quantized_matmul",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "float product with int8 weights and uint8-quantized rows";
  let description = [{
    `input` (`[..., M, K]`, f32) times a `[K, N]` matrix stored as 7-bit
    integers in column panels. Each row of `input` is quantized to uint8,
    multiplied exactly in 32-bit integers with the weights, and scaled
    back:
    `result[m, n] = row_scale[m] * scales[n] * (sum_k q[m, k] * w[k, n] -
    row_zero_point[m] * column_sums[n])`.

    By default each row is quantized over its own range at run time
    (widened to include 0: scale `(max - min) / 255`, zero point
    `round(-min / scale)`). With `static(%s, %zp)`, every row uses the
    given 0-D scale and uint8 zero point, as ONNX's QuantizeLinear does:
    `q = saturate(round(x / s) + zp)` (a QDQ model's or a calibrated
    activation quantization). With `smooth(%f)` as well (`[K]`, f32), input
    column `k` is divided by `s * f[k]` instead: SmoothQuant's per-channel
    smoothing, which moves an outlier column's range into the weights
    (the weights are then the float matrix's rows times `f`, quantized).

    `weights` is `[ceil(N / W), ceil(K / 4), W, 4]`: panel `p` holds
    columns `p * W` to `p * W + W - 1`, and for every group of four rows of
    the matrix, the four values of each column side by side (zeros past
    `K` and `N`). The values lie in `[-64, 63]`, so that a pair of
    uint8 x int8 products always fits the 16 bits x86's `vpmaddubsw` sums
    them in. `scales` and `column_sums` (the sum of each column's
    integers) have one entry per padded column.

    ```mlir
    %0 = kiln.quantized_matmul %x, %w, %s, %sums : tensor<1x128x384xf32>, tensor<96x96x16x4xi8>, tensor<1536xf32>, tensor<1536xi32> -> tensor<1x128x1536xf32>
    %1 = kiln.quantized_matmul %x, %w, %s, %sums static(%xs, %xzp : tensor<f32>, tensor<i8>) : tensor<1x128x384xf32>, tensor<96x96x16x4xi8>, tensor<1536xf32>, tensor<1536xi32> -> tensor<1x128x1536xf32>
    %2 = kiln.quantized_matmul %x, %w, %s, %sums static(%xs, %xzp : tensor<f32>, tensor<i8>) smooth(%f : tensor<384xf32>) : tensor<1x128x384xf32>, tensor<96x96x16x4xi8>, tensor<1536xf32>, tensor<1536xi32> -> tensor<1x128x1536xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       RankedTensorOf<[I8], [HasStaticShapePred]>:$weights,
                       Kiln_FloatTensor:$scales,
                       Kiln_AccumulatorTensor:$column_sums,
                       Optional<0DTensorOf<[F32]>>:$input_scale,
                       Optional<0DTensorOf<[I8]>>:$input_zero_point,
                       Optional<1DTensorOf<[F32]>>:$smoothing);
  let results = (outs Kiln_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weights, "::mlir::Value":$scales,
                   "::mlir::Value":$column_sums), [{
      build($_builder, $_state, result, input, weights, scales, column_sums,
            ::mlir::Value(), ::mlir::Value(), ::mlir::Value());
    }]>
  ];
  let assemblyFormat = [{
    $input `,` $weights `,` $scales `,` $column_sums
    (`static` `(` $input_scale^ `,` $input_zero_point `:` type($input_scale)
     `,` type($input_zero_point) `)`)?
    (`smooth` `(` $smoothing^ `:` type($smoothing) `)`)? attr-dict `:`
    type($input) `,` type($weights) `,` type($scales) `,` type($column_sums)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_Int4MatMulOp : Kiln_Op<"int4_matmul", [Pure]> {
  let summary = "float product with 4-bit block-quantized weights";
  let description = [{
    `input` (`[..., M, K]`, f32) times a `[K, N]` matrix stored as 4-bit
    integers with one scale per block of `B` rows of each column
    (weight-only quantization, as in ONNX Runtime's MatMulNBits). As in
    `kiln.quantized_matmul`, each row of `input` is quantized to uint8 at
    run time, so the products are exact integer sums within a block:
    `result[m, n] = row_scale[m] * (sum_b scales[b, n] * sum_{k in b}
    q[m, k] * w[k, n] - row_zero_point[m] * column_sums[n])`.

    `weights` is `[ceil(N / W), Kp / 8, W, 4]` for `K` padded to `Kp`, a
    multiple of `B`: like `kiln.quantized_matmul`'s panels, but each byte
    holds two unsigned values `u` in `[0, 15]`, `w = u - z` for the block's
    zero point `z`: the low 4 bits belong to group of four rows `2g`, the
    high 4 bits to group `2g + 1`. `scales` is `[ceil(N / W), Kp / B, W]`,
    panel by panel like the weights (a panel's scales are read in order
    with its weights), so `B` is `Kp` over its second dimension and must be
    a multiple of 8. The zero points are 8 for every block (symmetric
    weights), or given by `zero_points(%z)` (asymmetric ones, as ONNX
    Runtime's MatMulNBits has by default): `[ceil(N / W), Kp / B, W]` i8
    in `[0, 15]`, laid out like the scales. `column_sums[n]` is `sum_b
    scales[b, n] * sum_{k in b} w[k, n]`, the correction for the rows'
    zero points.

    With `float_input`, the rows are not quantized: `result[m, n] = sum_k
    input[m, k] * w[k, n] * scales[b(k), n]`, the weights dequantized in
    registers (as ONNX Runtime's MatMulNBits computes below accuracy level
    4), and `column_sums` is not read.

    ```mlir
    %0 = kiln.int4_matmul %x, %w, %s, %sums : tensor<1x1x768xf32>, tensor<144x96x16x4xi8>, tensor<144x24x16xf32>, tensor<2304xf32> -> tensor<1x1x2304xf32>
    %1 = kiln.int4_matmul %x, %w, %s, %sums zero_points(%z : tensor<144x24x16xi8>) : tensor<1x1x768xf32>, tensor<144x96x16x4xi8>, tensor<144x24x16xf32>, tensor<2304xf32> -> tensor<1x1x2304xf32>
    %2 = kiln.int4_matmul %x, %w, %s, %sums {float_input} : tensor<1x1x768xf32>, tensor<144x96x16x4xi8>, tensor<144x24x16xf32>, tensor<2304xf32> -> tensor<1x1x2304xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       RankedTensorOf<[I8], [HasStaticShapePred]>:$weights,
                       Kiln_FloatTensor:$scales,
                       Kiln_FloatTensor:$column_sums,
                       Optional<RankedTensorOf<[I8]>>:$zero_points,
                       UnitAttr:$float_input);
  let results = (outs Kiln_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weights, "::mlir::Value":$scales,
                   "::mlir::Value":$column_sums), [{
      build($_builder, $_state, result, input, weights, scales, column_sums,
            ::mlir::Value(), /*float_input=*/false);
    }]>
  ];
  let assemblyFormat = [{
    $input `,` $weights `,` $scales `,` $column_sums
    (`zero_points` `(` $zero_points^ `:` type($zero_points) `)`)? attr-dict `:`
    type($input) `,` type($weights) `,` type($scales) `,` type($column_sums)
    `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Rows of the matrix that share one scale (B).
    int64_t getBlockSize() {
      return getWeights().getType().getDimSize(1) * 8 /
             getScales().getType().getDimSize(1);
    }
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_QUANT_OPS
