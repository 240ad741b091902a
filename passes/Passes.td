//===- Passes.td - graph passes on the kiln dialect --------*- tablegen -*-===//
#ifndef KILN_PASSES_PASSES
#define KILN_PASSES_PASSES

include "mlir/Pass/PassBase.td"

def FoldConstantsPass : Pass<"kiln-fold-constants"> {
  let summary = "Evaluate kiln ops whose operands are all constants";
  let description = [{
    Replaces transposes, reshapes, casts, negations and broadcasting
    add/sub/mul/div whose operands are all `kiln.constant` by the constant
    they compute. Exported graphs are full of these: `Gemm` with `transB`
    on a weight, `alpha`/`beta` scaling of a constant bias, shape
    arithmetic. Results larger than `max-elements` are left to run time, so
    a tiny model can't make the compiler allocate without bound.

    ```mlir
    %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %t = kiln.transpose %w, perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
    // becomes
    %t = kiln.constant dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest constant (in elements) the pass will create">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_PASSES
