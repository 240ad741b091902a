//===- KilnStateOps.td - session state ---------------------*- tablegen -*-===//
//
// Tensors an artifact keeps across calls in a runtime session: a KV cache, a
// diffusion feature cache, a step counter. Declared once at module level,
// read, written and updated in place by any entry or function; the runtime
// owns the memory (kiln_session) and resets it (kiln_session_reset). Compare
// TOSA's variable, variable.read and variable.write.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_STATE_OPS
#define KILN_DIALECT_KILN_STATE_OPS

include "mlir/IR/SymbolInterfaces.td"

def Kiln_StateResource : Resource<"::kiln::StateResource">;

def Kiln_StateOp : Kiln_Op<"state", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a tensor kept in the session across calls";
  let description = [{
    Declares session state named by its symbol. Every session starts with
    `initial_value`, or zeros without one, and returns to it when reset.
    The artifact's entries share it; `kiln.state_read`,
    `kiln.state_write` and `kiln.state_update` access it in program order.

    ```mlir
    kiln.state @cache : tensor<2x512x64xf32>
    kiln.state @step : tensor<i64> = dense<1> : tensor<i64>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Kiln_Tensor>:$type,
                       OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = [{
    $sym_name attr-dict `:` $type (`=` $initial_value^)?
  }];
  let hasVerifier = 1;
}

def Kiln_StateReadOp : Kiln_Op<"state_read",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead<Kiln_StateResource>]>]> {
  let summary = "the current value of session state";
  let description = [{
    The value of the state `state` at this point of the call: later writes
    don't change it.

    ```mlir
    %kv = kiln.state_read @cache : tensor<2x512x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def Kiln_StateWriteOp : Kiln_Op<"state_write",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite<Kiln_StateResource>]>]> {
  let summary = "replace the value of session state";
  let description = [{
    Stores `value`, of the state's type, as the new value of `state`.

    ```mlir
    kiln.state_write %next, @step : tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$value, FlatSymbolRefAttr:$state);
  let assemblyFormat = "$value `,` $state attr-dict `:` type($value)";
}

def Kiln_StateUpdateOp : Kiln_Op<"state_update",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemRead<Kiln_StateResource>,
                    MemWrite<Kiln_StateResource>]>]> {
  let summary = "write a slice of session state in place at a run-time offset";
  let description = [{
    Writes `update` into `state` starting at index `offset` along `axis`;
    along every other axis `update` spans the state whole. The rest of the
    state keeps its value, and nothing else is copied: appending the keys
    and values of one step to a cache writes one step's worth of memory.
    `offset` is clamped to `[0, size - update size]` along `axis`, so the
    write stays inside the state whatever the offset.

    ```mlir
    kiln.state_update %k_step, @cache, axis = 1, offset = %position : tensor<2x1x64xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$update, FlatSymbolRefAttr:$state,
                       I64Attr:$axis, Kiln_IndexTensor:$offset);
  let assemblyFormat = [{
    $update `,` $state `,` `axis` `=` $axis `,` `offset` `=` $offset attr-dict
    `:` type($update) `,` type($offset)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_STATE_OPS
