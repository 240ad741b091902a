//===- KilnCompositeOps.td - composite kiln ops ------------*- tablegen -*-===//
//
// Ops that stand for a whole subgraph: an ONNX op that is one (opset-17
// LayerNormalization, Conv) imports to them directly, and fusion passes form
// them from the decomposed spellings exporters emit.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_COMPOSITE_OPS
#define KILN_DIALECT_KILN_COMPOSITE_OPS

def Kiln_LayerNormOp : Kiln_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over the dimensions `[axis, rank)`:
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, with the biased
    variance. `scale` and `bias` broadcast to those dimensions.

    ```mlir
    %0 = kiln.layer_norm %x, %gamma, %beta axis = 2 epsilon = 1.0e-05 : tensor<1x128x384xf32>, tensor<384xf32>, tensor<384xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `axis` `=` $axis `epsilon` `=` $epsilon
    attr-dict `:` type($input) `,` type($scale) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Kiln_GroupNormOp : Kiln_Op<"group_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "group normalization of [N, C, spatial...] feature maps";
  let description = [{
    Splits the `C` channels into `groups` groups of consecutive channels and
    normalizes each group of each item over its channels and spatial
    dimensions, `(x - mean) / sqrt(var + epsilon)` with the biased
    variance, then scales and shifts channel `c` by `scale[c]` and
    `bias[c]`. ONNX GroupNormalization, InstanceNormalization (`groups` =
    `C`) and PyTorch's export of GroupNorm (Reshape, InstanceNormalization,
    Reshape, Mul, Add) become this op; its lowering reads the input twice
    for the statistics and once for the normalized, scaled result.

    ```mlir
    %0 = kiln.group_norm %x, %gamma, %beta groups = 32 epsilon = 9.99999974E-6 : tensor<2x64x32x32xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, I64Attr:$groups,
                       F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `groups` `=` $groups `epsilon` `=` $epsilon
    attr-dict `:` type($input) `,` type($scale) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def Kiln_Conv2DOp : Kiln_Op<"conv2d",
    [Pure, InferTypeOpAdaptor, AllElementTypesMatch<["input", "filter"]>]> {
  let summary = "2-D convolution, NCHW input and FCHW filter";
  let description = [{
    ONNX Conv: `result[n, f, y, x]` sums
    `input[n, g*C' + c, y*sy + i*dy - pad_top, x*sx + j*dx - pad_left] *
    filter[f, c, i, j]` over `c < C'`, `i`, `j`, where `g` is the group of
    output channel `f` and `C' = C / groups` (the filter's channel count).
    Zeros are read outside the input; `pads` is `[top, left, bottom, right]`.
    f32, or i32 for the integer convolutions (wrapping, as integer sums do).

    ```mlir
    %0 = kiln.conv2d %img, %w strides = [16, 16] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x3x224x224xf32>, tensor<384x3x16x16xf32> -> tensor<1x384x14x14xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, I32]>:$input,
                       RankedTensorOf<[F32, I32]>:$filter,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads, I64Attr:$groups);
  let results = (outs RankedTensorOf<[F32, I32]>:$result);
  let assemblyFormat = [{
    $input `,` $filter `strides` `=` $strides `dilations` `=` $dilations
    `pads` `=` $pads `groups` `=` $groups attr-dict `:` type($input) `,`
    type($filter) `->` type($result)
  }];
}

def Kiln_PoolOp : Kiln_Op<"pool", [Pure, InferTypeOpAdaptor]> {
  let summary = "max, sum or average over sliding windows, NC + 1-3 spatial";
  let description = [{
    ONNX MaxPool, AveragePool and (as a sum) LpPool: for each output
    position, the reduction over the window of `kernel` elements starting at
    `position * strides - pads_begin`, its elements `dilations` apart.
    `pads` holds the begin pads of every spatial dimension, then the end
    pads. Elements outside the input are left out of a max or sum. An
    average divides by the number of window elements inside the input, or,
    with `count_include_pad`, inside the padded input. With `ceil_mode` the
    output size rounds up, so a last window may reach past the end padding;
    a window that would start in the end padding is dropped. A dynamic
    spatial dimension gives `(size + pads - extent) floordiv stride + 1`
    windows (no `ceil_mode` then).

    ```mlir
    %0 = kiln.pool max %x kernel = [3, 3] strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] : tensor<1x64x112x112xf32> -> tensor<1x64x56x56xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_PoolKindAttr:$kind,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations, DenseI64ArrayAttr:$pads,
                       UnitAttr:$ceil_mode, UnitAttr:$count_include_pad);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    `` $kind $input `kernel` `=` $kernel `strides` `=` $strides `dilations` `=`
    $dilations `pads` `=` $pads (`ceil_mode` $ceil_mode^)?
    (`count_include_pad` $count_include_pad^)? attr-dict `:` type($input)
    `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// How far the last window of spatial dimension `d` reaches past the
    /// end padding (ceil_mode only; 0 otherwise).
    int64_t getOverhang(unsigned d);
  }];
}

def Kiln_WinogradConv2DOp : Kiln_Op<"winograd_conv2d", [Pure]> {
  let summary = "3x3 stride-1 convolution by Winograd's F(m x m, 3x3), m = 2 or 4";
  let description = [{
    The single-group convolution of an NCHW `input` with a 3x3 filter at
    stride and dilation 1, zero padding `pads` (`[top, left, bottom,
    right]`), computed on t x t input tiles (t = m + 2, overlapping by two)
    that each give an m x m output tile:
    `Y = A^T [(G g G^T) . (B^T d B)] A`. The filter comes transformed:
    `filter_transform[t * a + b, f, c]` is element `(a, b)` of `G g G^T`
    for output channel `f` and input channel `c`; its t * t rows say m (16:
    F(2x2, 3x3), with
    `G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]`; 36:
    F(4x4, 3x3), G from the points 0, 1, -1, 2, -2 and infinity). The
    t * t elementwise products become as many matrix products over the
    channels, with 9/4 (m = 2) or 4 (m = 4) times fewer multiplications
    per output than the direct convolution's. The output's height and
    width are multiples of m.

    ```mlir
    %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<2x64x32x32xf32>, tensor<16x128x64xf32> -> tensor<2x128x32x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       Kiln_FloatTensor:$filter_transform,
                       DenseI64ArrayAttr:$pads);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter_transform `pads` `=` $pads attr-dict `:`
    type($input) `,` type($filter_transform) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The output tile side m the filter transform is for: 2 or 4 (0 for
    /// neither, which the verifier rejects).
    int64_t getOutputTile();
  }];
  let hasVerifier = 1;
}

def Kiln_PackedMatMulOp : Kiln_Op<"packed_matmul",
    [Pure, AttrSizedOperandSegments,
     OptionalTypesMatchWith<"the residual has the result's type", "result",
                            "residual", "$_self">]> {
  let summary = "matrix product with a constant right operand in column panels";
  let description = [{
    `lhs` (`[..., M, K]`) times a `[K, N]` matrix stored as `ceil(N / W)`
    column panels of `W` columns, each `[K, W]` and contiguous:
    `rhs[p, k, j]` is the matrix's element `(k, p * W + j)`; columns past
    `N` in the last panel are padding. The result is `[..., M, N]`. A
    product streams through its panels in order, which is the layout
    kiln-pack-weights gives constant weights at compile time.

    An optional `bias`, in the same panels (`[N / W, W]`, padded), is added
    to every row: the kernel starts its accumulators from it, so the
    product needs no pass of its own over the result. An optional
    `activation` is applied to each block of the result while it is still
    in cache: `gelu_erf` is `0.5 * x * (1 + erf(x / sqrt(2)))`, `gelu_tanh`
    `0.5 * x * (1 + tanh(0.7978846 * (x + 0.044715 * x^3)))`. An optional
    `residual`, of the result's type, is added last (a transformer's skip
    connection), also while the block is in cache.

    ```mlir
    %0 = kiln.packed_matmul %x, %w : tensor<1x128x384xf32>, tensor<48x384x32xf32> -> tensor<1x128x1536xf32>
    %1 = kiln.packed_matmul %x, %w bias %b activation gelu_erf : tensor<1x128x384xf32>, tensor<48x384x32xf32>, tensor<48x32xf32> -> tensor<1x128x1536xf32>
    %2 = kiln.packed_matmul %h, %w2 bias %b2 residual %x : tensor<1x128x1536xf32>, tensor<12x1536x32xf32>, tensor<12x32xf32> -> tensor<1x128x384xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$lhs, Kiln_FloatTensor:$rhs,
                       Optional<Kiln_FloatTensor>:$bias,
                       Optional<Kiln_FloatTensor>:$residual,
                       OptionalAttr<Kiln_ActivationAttr>:$activation);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` $bias^)? (`activation` `` $activation^)?
    (`residual` $residual^)? attr-dict `:` type($lhs) `,` type($rhs)
    (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(scale * query x key_t + mask) x value`, the softmax over the
    last axis. `query` is `[..., Sq, D]`, `key_t` the keys already
    transposed, `[..., D, Sk]`, `value` `[..., Sk, Dv]`; the leading batch
    dimensions (batch, heads) are equal and the result is `[..., Sq, Dv]`.

    The optional `mask` broadcasts (ONNX rules) to the scores'
    `[..., Sq, Sk]`. An f32 mask is added to the scaled scores; an i1 mask
    with `mask_fill` replaces the scores where it is true by that value (the
    `Where(mask, fill, scores)` spelling of causal and padding masks).

    `query_seq_first`, `value_seq_first` and `result_seq_first` say the
    operand is stored `[..., S, H, D]` (sequence before heads), the layout
    the projections produce before exporters transpose it into heads: the
    kernel reads and writes those rows in place of the transposes.

    Scores are never materialized: the lowering computes a block of query
    rows against a block of keys at a time and keeps a running maximum and
    sum per row (online softmax).

    ```mlir
    %0 = kiln.attention %q, %kt, %v scale = 0.176776692 : tensor<1x12x128x32xf32>, tensor<1x12x32x128xf32>, tensor<1x12x128x32xf32> -> tensor<1x12x128x32xf32>
    %1 = kiln.attention %q, %kt, %v mask %m scale = 1.250000e-01 mask_fill = 0xFF800000 : tensor<1x12x128x64xf32>, tensor<1x12x64x128xf32>, tensor<1x12x128x64xf32>, tensor<1x1x128x128xi1> -> tensor<1x12x128x64xf32>
    %2 = kiln.attention %q, %kt, %v scale = 1.250000e-01 {query_seq_first, result_seq_first, value_seq_first} : tensor<1x128x12x64xf32>, tensor<1x12x64x128xf32>, tensor<1x128x12x64xf32> -> tensor<1x128x12x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key_t,
                       Kiln_FloatTensor:$value,
                       Optional<RankedTensorOf<[F32, I1]>>:$mask,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$mask_fill,
                       UnitAttr:$query_seq_first, UnitAttr:$value_seq_first,
                       UnitAttr:$result_seq_first);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key_t `,` $value (`mask` $mask^)? `scale` `=` $scale
    (`mask_fill` `=` $mask_fill^)? attr-dict `:` type($query) `,`
    type($key_t) `,` type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_COMPOSITE_OPS
