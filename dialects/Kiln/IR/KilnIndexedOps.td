//===- KilnIndexedOps.td - scatters and n-d gathers --------*- tablegen -*-===//
//
// Ops that read or write a tensor at positions another tensor holds, beyond
// kiln.gather and kiln.gather_elements: ONNX's ScatterElements (and the
// older Scatter), ScatterND and GatherND. Negative indices count from the
// end; indices out of range are clamped, so generated code never touches
// memory outside `data`, and the runtime checks report them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_INDEXED_OPS
#define KILN_DIALECT_KILN_INDEXED_OPS

def Kiln_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how a scatter combines an update with the value it lands on", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Add", 1, "add">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Max", 3, "max">,
    I32EnumAttrCase<"Min", 4, "min">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_ScatterReductionAttr
    : EnumAttr<Kiln_Dialect, Kiln_ScatterReduction, "scatter_reduction"> {
  let assemblyFormat = "$value";
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements",
    [Pure, AllTypesMatch<["data", "result"]>,
     AllShapesMatch<["indices", "updates"]>]> {
  let summary = "write `updates` into `data` along `axis` at `indices`";
  let description = [{
    ONNX ScatterElements: a copy of `data` where, for every position `p` of
    `updates`, the element at `p` with coordinate `axis` replaced by
    `indices[p]` becomes `updates[p]` (reduction `none`) or its combination
    with it (`add`, `mul`, `max`, `min`). Updates apply in row-major order
    of `p`, so with `none` the last of several to one element wins.

    ```mlir
    %0 = kiln.scatter_elements %data[%indices] = %updates, axis = 1, reduction = add : tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       Kiln_Tensor:$updates, I64Attr:$axis,
                       Kiln_ScatterReductionAttr:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `=` $updates `,` `axis` `=` $axis `,`
    `reduction` `=` $reduction attr-dict
    `:` type($data) `,` type($indices) `,` type($updates)
  }];
  let hasVerifier = 1;
}

def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd",
    [Pure, AllTypesMatch<["data", "result"]>]> {
  let summary = "write slices of `updates` into `data` at index tuples";
  let description = [{
    ONNX ScatterND: `indices` has shape `[..., k]`; each of its `k`-tuples
    picks a slice `data[i0, .., ik-1]`, which becomes (or is combined with)
    the matching slice of `updates`, of shape `indices.shape[:-1] +
    data.shape[k:]`. Updates apply in row-major order.

    ```mlir
    %0 = kiln.scatter_nd %data[%indices] = %updates, reduction = none : tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       Kiln_Tensor:$updates,
                       Kiln_ScatterReductionAttr:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `=` $updates `,` `reduction` `=` $reduction
    attr-dict `:` type($data) `,` type($indices) `,` type($updates)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd", [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices of `data` at index tuples";
  let description = [{
    ONNX GatherND: the first `batch_dims` dimensions of `data` and `indices`
    are shared; every `k`-tuple in the last dimension of `indices` picks the
    slice `data[b.., i0, .., ik-1]`. The result has shape
    `indices.shape[:-1] + data.shape[batch_dims + k:]`.

    ```mlir
    %0 = kiln.gather_nd %data[%indices], batch_dims = 0 : tensor<2x2xf32>, tensor<2x2xi64> -> tensor<2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       I64Attr:$batch_dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` `,` `batch_dims` `=` $batch_dims attr-dict
    `:` type($data) `,` type($indices) `->` type($result)
  }];
}

#endif // KILN_DIALECT_KILN_INDEXED_OPS
