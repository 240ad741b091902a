//===- Passes.td - kiln lowering passes --------------------*- tablegen -*-===//
#ifndef KILN_CONVERSION_PASSES
#define KILN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalgPass : Pass<"convert-kiln-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln tensor ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every kiln op into upstream ops on tensors: elementwise ops and
    contractions become `linalg.generic` (with broadcasting folded into the
    indexing maps), reshapes become `tensor.collapse_shape` /
    `tensor.expand_shape`, concatenation becomes `tensor.insert_slice`.
    A kiln op left over is an error naming the op.

    `kiln.attention` becomes a parallel loop over blocks of query rows, each
    going through the keys in blocks with a running maximum and sum per row.
    Where its mask removes keys, a key block the mask removes for every row
    of the query block is skipped at run time (padded batches, causal and
    windowed masks).
  }];
  let options = [
    Option<"attentionQueryRows", "attention-query-rows", "int64_t", "16",
           "Query rows of one attention block (a multiple of the matmul "
           "register rows)">,
    Option<"attentionKeyColumns", "attention-key-columns", "int64_t", "256",
           "Keys one attention block scores at a time (its scores, this "
           "many per query row, should stay in L1)">,
    Option<"attentionMaskedKeyColumns", "attention-masked-key-columns",
           "int64_t", "64",
           "Where a mask removes keys (adds -1e4 or less, or fills with it, "
           "varying along the keys: padding, causal, windows), keys in "
           "blocks this wide, a block skipped at run time when the mask "
           "removes it for every row of a query block; 0: no skipping">,
    Option<"patchColumns", "patch-columns", "int64_t", "0",
           "Convolution patches in column panels this wide, multiplied as "
           "packed weights are (the matmul register columns); 0: one "
           "plain matrix">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect", "mlir::vector::VectorDialect"
  ];
}

def MemRefCopyToLinalgPass : Pass<"kiln-memref-copy-to-linalg"> {
  let summary = "Rewrite memref.copy into linalg.copy";
  let description = [{
    Bufferization copies into strided views (for instance the slices a
    concatenation writes) with `memref.copy`, whose LLVM lowering calls
    `memrefCopy` from MLIR's C runner library. Artifacts link against libc
    alone, so the copies become `linalg.copy` and then plain loops.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def TileAndVectorizeContractionsPass
    : Pass<"kiln-tile-and-vectorize-contractions", "mlir::ModuleOp"> {
  let summary = "Tile matrix products for the caches and registers, then vectorize";
  let description = [{
    Tiles every `linalg.matmul` (on tensors; the kiln lowering expresses
    batched products as `scf.forall` loops of them) into an `scf.forall`
    over `thread-rows` x `thread-cols` output blocks, the unit of work
    threads share, then into
    reduction blocks of `cache-depth`, then into register blocks of
    `register-rows` x `register-cols` output elements with a reduction step
    of 1 (column blocks outside row blocks), peels the blocks that don't
    divide evenly, vectorizes the register blocks (masked only in the peeled
    remainders), and keeps the accumulator in registers across the
    reduction loop. The
    contraction becomes outer products (one broadcast-FMA per row), which
    LLVM turns into FMA instructions for the host's vector width.

    A product inside a parallel loop whose reduction is one cache block and
    whose output starts as a new fill or elementwise tensor (zeros, a
    broadcast bias) has that op fused into its register loops: the
    accumulators start from its tile in registers, so the output is written
    once instead of initialized in memory, read back and written again.

    With `narrow-cols` set, products whose output columns are not a
    multiple of `register-cols` (the panels of a convolution's patches,
    narrow attention heads, ragged attention blocks) get a register tile of
    `narrow-rows` x `narrow-cols` instead, so that a wide tile for the weight
    panels of other products does not leave most of its accumulators empty
    on them.
  }];
  let options = [
    Option<"registerRows", "register-rows", "int64_t", "8",
           "Output rows of one register block">,
    Option<"registerCols", "register-cols", "int64_t", "32",
           "Output columns of one register block (a multiple of the SIMD width)">,
    Option<"narrowRows", "narrow-rows", "int64_t", "0",
           "Output rows of the register block of narrow products">,
    Option<"narrowCols", "narrow-cols", "int64_t", "0",
           "Columns of the register block of products whose columns are not "
           "a multiple of register-cols (0: no such block; otherwise below "
           "register-cols)">,
    Option<"cacheDepth", "cache-depth", "int64_t", "512",
           "Reduction depth of a cache block (a block of B of this many rows "
           "and register-cols columns should fit in L1)">,
    Option<"threadRows", "thread-rows", "int64_t", "128",
           "Output rows of the block one thread computes at a time">,
    Option<"threadCols", "thread-cols", "int64_t", "64",
           "Output columns of the block one thread computes at a time">
  ];
  let dependentDialects = [
    "mlir::transform::TransformDialect", "mlir::linalg::LinalgDialect",
    "mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
    "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
    "mlir::affine::AffineDialect", "mlir::ub::UBDialect"
  ];
}

def TileDynamicDimsPass : Pass<"kiln-tile-dynamic-dims"> {
  let summary = "Split a dynamic dimension into loops of static tiles";
  let description = [{
    For each linalg op on tensors with exactly one dynamic loop, a parallel
    one (a sequence of tokens, say): `scf.forall` loops replace it, one over
    the full tiles of `matmul-rows` (products) or `generic-rows` (everything
    else) along that loop, each tile a statically shaped copy of the op,
    then loops of one iteration or none for the iterations left. A
    product's rows left are one static tile of exactly their count (one
    loop per count below `matmul-rows`), so every tile reads the weights
    once: a decoder checking K draft tokens reads them once for K + 1 < the
    register rows. Other ops' rows left are tiles of the powers of two
    below `generic-rows`. The vectorizing schedules, which need static
    shapes, then apply to every tile; sizes that are multiples of the tile
    run full tiles only. Ops with dynamic reductions or several dynamic
    loops are left as they are (correct, but not vectorized).

    ```mlir
    %0 = linalg.matmul ins(%a, %b : tensor<?x384xf32>, tensor<384x32xf32>) ...
    // becomes
    %full = scf.forall (%i) = (0) to (%rows_8) step (8) shared_outs(...) {
      ... linalg.matmul ins(... : tensor<8x384xf32>, tensor<384x32xf32>) ...
    }
    // 7 rows left, or none: one iteration or none
    %7 = scf.forall (%i) = (%rows_8) to (%end_7) step (7) shared_outs(...) {
      ... linalg.matmul ins(... : tensor<7x384xf32>, tensor<384x32xf32>) ...
    }
    ... 6, 5, 4, 3, 2 ...
    %0 = scf.forall (%i) = (%rows_8) to (%end_1) step (1) shared_outs(...) {
      ... linalg.matmul ins(... : tensor<1x384xf32>, tensor<384x32xf32>) ...
    }
    ```
  }];
  let options = [
    Option<"matmulRows", "matmul-rows", "int64_t", "8",
           "Rows of a full tile of a matrix product (the register rows)">,
    Option<"genericRows", "generic-rows", "int64_t", "16",
           "Rows of a full tile of any other op">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def FuseElementwisePass : Pass<"kiln-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise linalg ops into single loops";
  let description = [{
    Fuses an elementwise producer into its consumer when the consumer is
    itself all-parallel and the producer has no other use, so a chain such
    as GELU's div/erf/add/mul/mul becomes one loop and one buffer.
    Producers are never fused into reductions or contractions: that would
    recompute them once per reduction step (a layer norm per multiply-add)
    and hide matrix products from the contraction schedule.

    A fused loop's body holds at most `max-fused-ops` ops: each fusion
    copies both bodies, so fusing a chain of n ops without a bound costs
    n^2 (8000 Relus took 13 s).
  }];
  let options = [
    Option<"maxFusedOps", "max-fused-ops", "int64_t", /*default=*/"256",
           "Largest body, in ops, a fusion may make">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def AllocateResultBuffersPass : Pass<"kiln-allocate-result-buffers"> {
  let summary = "Allocate a returned reshape of a buffer in the returned shape";
  let description = [{
    Lowerings compute on flattened tensors and reshape at the end, so after
    bufferization an entry often returns an `expand_shape` (or a chain of
    reshapes) of a `memref.alloc`. `buffer-results-to-out-params` can only
    make a returned *allocation* the caller's output buffer; a returned view
    gets a copy into the output, element by element (GPT-2's 26 MB of
    logits). This pass allocates the returned shape instead and gives the
    allocation's other users the old shape as a reshape of it: the same
    bytes in the same order, since both are contiguous row-major.

    ```mlir
    %a = memref.alloc() : memref<128x3072xf32>
    ... writes %a ...
    %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 128, 3072] : memref<128x3072xf32> into memref<1x128x3072xf32>
    return %r : memref<1x128x3072xf32>
    // becomes
    %n = memref.alloc() : memref<1x128x3072xf32>
    %c = memref.collapse_shape %n [[0, 1, 2]] : memref<1x128x3072xf32> into memref<393216xf32>
    %a = memref.expand_shape %c [[0, 1]] output_shape [128, 3072] : memref<393216xf32> into memref<128x3072xf32>
    ... writes %a ...
    return %n : memref<1x128x3072xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def PromoteLoopBuffersPass : Pass<"kiln-promote-loop-buffers"> {
  let summary = "Put the scratch buffers of parallel loop iterations on the stack";
  let description = [{
    Bufferization allocates the temporaries of a parallel loop's body (an
    attention block's scores, running maxima and sums) with `memref.alloc`
    inside the body: a malloc and free per iteration, on every thread. This
    pass turns each statically shaped one of at most `max-bytes` bytes that
    stays within one iteration (no view of it is yielded or returned) into a
    `memref.alloca` at the start of the `scf.forall` body, and wraps the
    body in `memref.alloca_scope` so the stack is released after each
    iteration. Nested sequential loops reuse the same stack buffer in each of
    their iterations, which is correct because nothing carries it across.

    ```mlir
    scf.forall (%i) in (8) {
      scf.for %j = %c0 to %c4 step %c1 {
        %s = memref.alloc() : memref<16x64xf32>
        ...
      }
    }
    // becomes
    scf.forall (%i) in (8) {
      memref.alloca_scope {
        %s = memref.alloca() {alignment = 64 : i64} : memref<16x64xf32>
        scf.for %j = %c0 to %c4 step %c1 {
          ...
        }
      }
    }
    ```
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", "65536",
           "Largest buffer, in bytes, put on a thread's stack">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def PlanMemoryPass : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "Place each function's buffers in the session's scratch arena";
  let description = [{
    Every statically shaped `memref.alloc` in the body of a function
    becomes a `memref.view` into a scratch arena of bytes, a new argument
    marked `kiln.scratch` that the runtime's session owns and reuses across
    calls. Offsets are computed at compile time: buffers whose lifetimes
    (through all their views) don't overlap share memory, placed first-fit
    at 64-byte alignment. Functions are planned callees first; a call to a
    function with an arena of its own reserves that many bytes of the
    caller's arena while the call runs and passes a view of them, so an
    entry's arena (the `memref<Nxi8>` type of its argument) holds everything
    it calls. A function without buffers gets no arena. A buffer of dynamic
    shape gets the place its largest size needs, the upper bound of each
    dynamic size (ValueBounds; see kiln-bind-dimensions). The bodies of
    `scf.for` loops and the branches of `scf.if`s are planned the same way,
    as frames placed where the loop or branch is live: every iteration of a
    sampling loop reuses the same places, both branches share theirs. A
    buffer a loop body yields to its next iteration, the buffers of parallel
    loop iterations (which run at once), and buffers of unbounded size or
    of sub-byte elements stay on the heap.

    Without it every call mallocs and frees its intermediates, which for
    large ones means fresh pages from the kernel each time.

    ```mlir
    func.func @main(%in: memref<16xf32>, %out: memref<16xf32>) {
      %a = memref.alloc() : memref<16xf32>
      ...
    }
    // becomes
    func.func @main(%in: memref<16xf32>, %out: memref<16xf32>,
                    %arena: memref<64xi8> {kiln.scratch}) {
      %c0 = arith.constant 0 : index
      %a = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def LowerSampleLoopsPass : Pass<"kiln-lower-sample-loops", "mlir::ModuleOp"> {
  let summary = "Turn each kiln.sample into a loop over its steps";
  let description = [{
    A `kiln.sample` becomes an `scf.for` over its steps whose body is the
    op's region, with the step's timestep and update coefficients read from
    constant tables by the loop index. The latent (and a multistep
    sampler's previous estimate) are carried in buffers the loop writes in
    place, so every step reuses the same memory; the noise is copied first,
    so the caller's input stays unchanged.

    ```mlir
    %s = kiln.sample ddim %noise noise_scale = 1.0 timesteps = ... coefficients = ... : tensor<1x4x8x8xf32> {
    ^bb0(%x: tensor<1x4x8x8xf32>, %t: tensor<f32>, %i: index):
      ...
      kiln.yield %e : tensor<1x4x8x8xf32>
    }
    // becomes
    %x0 = bufferization.alloc_tensor() copy(%noise) : tensor<1x4x8x8xf32>
    %s = scf.for %i = %c0 to %cN step %c1 iter_args(%x = %x0) -> (tensor<1x4x8x8xf32>) {
      %t = ... timesteps[%i] ...
      ...
      %next = kiln.add (kiln.mul %x, c0[%i]), (kiln.mul %e, c1[%i])
      %y = bufferization.materialize_in_destination %next in %x : ...
      scf.yield %y : tensor<1x4x8x8xf32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect", "mlir::arith::ArithDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
}

def LowerStatePass : Pass<"kiln-lower-state", "mlir::ModuleOp"> {
  let summary = "Place session state in the runtime's state block";
  let description = [{
    Lays out every `kiln.state` in one block of bytes (64-byte aligned, in
    declaration order) and records its size in the module attribute
    `kiln.state_size`, with the block's initial contents in
    `kiln.state_init` when any state has an initial value. A function that
    touches state gets the block as an argument marked `kiln.state`
    (entries receive it from the call structure). A read becomes a tensor
    over the state's memory, copied only when the same state is written
    later in the function; a write materializes its value in that memory;
    an update writes its slice at the clamped run-time offset and nothing
    else.

    ```mlir
    kiln.state @step : tensor<i64>
    func.func @tick() -> tensor<i64> {
      %s = kiln.state_read @step : tensor<i64>
      ...
    }
    // becomes
    module attributes {kiln.state_size = 8 : i64} {
      func.func @tick(%block: memref<8xi8> {kiln.state}) -> tensor<i64> {
        %view = memref.view %block[%c0][] : memref<8xi8> to memref<i64>
        %s = bufferization.to_tensor %view restrict : memref<i64> to tensor<i64>
        ...
    ```
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::tensor::TensorDialect", "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect"];
}

def BindDimensionsPass : Pass<"kiln-bind-dimensions", "mlir::ModuleOp"> {
  let summary = "Read each named dimension once, clamped to its maximum";
  let description = [{
    For each entry point, reads every named dimension (the `kiln.dim_names`
    of its arguments, ranges from the module's `kiln.dims`) once at the
    entry's start, as `affine.min(size, max)`, and replaces every
    `tensor.dim` / `memref.dim` of an argument's named dimension by that
    value. The runtime checks each call's sizes against the range, so the
    clamp changes nothing at run time; it gives the size an upper bound
    that ValueBounds can see, and so every buffer sized from it can be
    planned in the arena at its largest (kiln-plan-memory). Runs after the
    lowering to linalg and again after bufferization.

    ```mlir
    func.func @main(%x: tensor<1x?xf32> {kiln.dim_names = ["", "seq"]}) ... {
      %d = tensor.dim %x, %c1 : tensor<1x?xf32>
    // becomes
      %0 = tensor.dim %x, %c1 : tensor<1x?xf32>
      %seq = affine.min affine_map<(d0) -> (d0, 512)>(%0)
      // every use of %d uses %seq
    ```
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::tensor::TensorDialect",
                           "mlir::memref::MemRefDialect"];
}

def ScopeLoopAllocasPass : Pass<"kiln-scope-loop-allocas"> {
  let summary = "Free a sequential loop body's stack buffers every iteration";
  let description = [{
    Saves the stack pointer at the start of the body of every `scf.for`
    and `scf.parallel` that directly contains a `memref.alloca`, and
    restores it before the body's terminator, so the buffers are released
    at the end of each iteration. Parallel loops are allocation scopes in
    MLIR's semantics, but once they run sequentially (an outlined body's
    loop over its range, or a loop left serial) and are lowered to control
    flow, nothing frees their allocas: the stack grew with the trip count.
    Runs right before loops are lowered. (`memref.alloca_scope` says the
    same but must stay one block, and the loops inside it are lowered to
    control flow first.)

    ```mlir
    scf.for %i = %lb to %ub step %c1 {
      %scores = memref.alloca() : memref<16x256xf32>
      ...
    }
    // becomes
    scf.for %i = %lb to %ub step %c1 {
      %sp = llvm.intr.stacksave : !llvm.ptr
      %scores = memref.alloca() : memref<16x256xf32>
      ...
      llvm.intr.stackrestore %sp : !llvm.ptr
    }
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def ExternalizeWeightsPass : Pass<"kiln-externalize-weights", "mlir::ModuleOp"> {
  let summary = "Declare large constant globals external; list them for the compiler";
  let description = [{
    Every constant `memref.global` whose value is at least `min-bytes` bytes
    (a weight, usually a `dense_resource` blob) loses its initial value,
    becomes a public declaration aligned to 64 bytes, and is listed in the
    module attribute `kiln.weights` (`{name, value}` dictionaries). The
    compiler writes those values into a data-only object linked into the
    artifact: LLVM emits a constant array one element at a time, which took
    16 of GPT-2-small's 28 seconds of compile time.

    ```mlir
    memref.global "private" constant @__constant_12x384x32xf32 : memref<12x384x32xf32> = dense_resource<kiln_weight>
    // becomes
    memref.global constant @__constant_12x384x32xf32 : memref<12x384x32xf32> {alignment = 64 : i64}
    // listed in the module attribute kiln.weights with its value
    ```
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", "65536",
           "Smallest value, in bytes, written to the weights object">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def ExportEntriesPass : Pass<"kiln-export-entries", "mlir::ModuleOp"> {
  let summary = "Give each entry point its ABI wrapper and describe the artifact";
  let description = [{
    Runs last before the LLVM conversion, on bufferized functions. For each
    entry point (a public function with a body) it builds
    `i32 kiln_entry.<name>(const kiln_abi_call *call)`, which takes the
    input and output buffers out of the call structure of `kiln/abi.h`,
    makes them memrefs of the function's argument types, passes the scratch
    arena, state and executor to the arguments marked `kiln.scratch`,
    `kiln.state` and `kiln.executor`, and returns the status the function
    writes to its `kiln.status` argument. Outputs are the arguments marked
    `bufferize.result`; the rest are inputs, named by `kiln.name`. It then
    writes the descriptor (entries, their signatures and error tables,
    scratch and state sizes) as constant globals and the one exported
    function, `kiln_artifact_v3`, returning it. Struct layouts come from
    the header's own field offsets (AbiLayout.h). The entry functions
    become private and `alwaysinline` (through `passthrough`): code
    generation inlines them into their wrappers before LLVM's
    interprocedural passes, some of which take time quadratic in a call's
    arguments.

    ```mlir
    func.func @main(%x: memref<4xf32> {kiln.name = "x"},
                    %y: memref<4xf32> {bufferize.result, kiln.name = "y"},
                    %status: memref<i32> {bufferize.result, kiln.status})
    // gains
    llvm.func internal @kiln_entry.main(%call: !llvm.ptr) -> i32
    llvm.func @kiln_artifact_v3() -> !llvm.ptr
    ```
  }];
  let options = [
    Option<"cpuFeatures", "cpu-features", "std::string", "\"\"",
           "CPU features the code may use, comma-separated (the descriptor's "
           "cpu_features)">,
  ];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
                           "mlir::func::FuncDialect"];
}

def ApproximateMathPass : Pass<"kiln-approximate-math"> {
  let summary = "Replace exp, erf and tanh with vectorizable polynomials";
  let description = [{
    libm's `expf`, `erff` and `tanhf` are calls, which keep LLVM from
    vectorizing the loops of softmax and GELU. This pass rewrites the f32
    `math.exp` and `math.tanh` into MLIR's polynomial approximations (plain
    arithmetic, within a few ulp of libm), and `math.erf` into one rational
    function of the clamped input (x P(x^2) / Q(x^2), max abs error 3.2e-7,
    a third of the instructions of MLIR's three-piece erf), which the loop
    vectorizer turns into SIMD code.
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect"];
}

def LowerDynamicExpandShapesPass : Pass<"kiln-lower-dynamic-expand-shapes"> {
  let summary = "memref.expand_shape with several dynamic sizes in a group as a reinterpret_cast";
  let description = [{
    A reshape of `[batch * seq]` into `[batch, 1, 1, seq]` (a BERT export's
    attention mask with both dims dynamic) is a `memref.expand_shape` whose
    one group holds two dynamic sizes. LLVM 22's `expand-strided-metadata`
    assumes at most one per group and crashes on it (llvm-project issue
    186830, fixed in LLVM 23). This pass, run just before it, rewrites such
    an op into what that pass would make of it: the source's strided
    metadata and a `memref.reinterpret_cast` to the op's output shape, each
    group's strides the product of the sizes inside it times its source
    dimension's stride.

    ```mlir
    %e = memref.expand_shape %m [[0, 1, 2, 3]] output_shape [%b, 1, 1, %s] : memref<?xi64> into memref<?x1x1x?xi64>
    // becomes
    %base, %offset, %size, %stride = memref.extract_strided_metadata %m : memref<?xi64> -> memref<i64>, index, index, index
    %e = memref.reinterpret_cast %base to offset: [%offset], sizes: [%b, 1, 1, %s], strides: [%s1, %s, %s, %stride] : memref<i64> to memref<?x1x1x?xi64>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def OutlineParallelLoopsPass
    : Pass<"kiln-outline-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Run large scf.parallel loops on the runtime's thread pool";
  let description = [{
    Moves the body of each outermost `scf.parallel` whose estimated work
    reaches `min-work` into a function over a range of iterations. Smaller
    loops stay on the calling thread: handing a loop to another core and
    back costs about a microsecond, plus moving its data between the
    cores' caches, more than a loop of a few thousand vector ops gains. The
    function containing the loop gets the runtime's `kiln_abi_executor` as
    an `!llvm.ptr` argument marked `kiln.executor` (its callers pass theirs;
    entries receive it from the call). The loop's leading dimensions are flattened into one
    iteration space (until it has enough iterations to share among threads);
    the rest stay an `scf.parallel` inside the body. The loop itself becomes
    a call to a declaration `kiln.parallel_for.<body>(executor, count,
    captures...)`, which code generation turns into a call of the
    executor's `parallel_for`.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c384) step (%c1, %c1) {
      ...
    }
    // becomes
    func.call @kiln.parallel_for.main_parallel_0(%executor, %c128, %buffer)
        : (!llvm.ptr, index, memref<128x384xf32>) -> ()
    ```

    Values the body uses that have no side effects (constants, views) are
    recomputed inside it; the others are passed, so they must be scalars or
    identity-layout memrefs. Loops that don't qualify, or
    carry reductions, stay serial.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "32768",
           "Estimated operations (loop trip counts times the ops inside) a "
           "loop needs to be run in parallel">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def LowerInt8PanelProductsPass : Pass<"kiln-lower-int8-panel-products"> {
  let summary = "Register-blocked AVX2 kernel for the integer products of kiln.quantized_matmul";
  let description = [{
    Replaces each bufferized `linalg.generic` marked
    `kiln.int8_panel_product` (uint8 rows `[R, G, 4]` times int8 weight
    panels `[P, G, W, 4]` into int32 `[R, P, W]`) with an `scf.parallel`
    over blocks of 4 rows and panels. Each block keeps its 4 x W sums in
    registers through the G groups of 4 products: the 4 bytes of a row are
    broadcast, `vpmaddubsw` multiplies them with 8 columns' bytes and adds
    pairs into 16 bits, `vpmaddwd` with ones adds pairs of those into 32
    bits. 32 multiply-adds take three instructions, where float32 FMA does
    8 in one. Only for targets with AVX2; the weights' 7-bit range keeps
    the 16-bit pair sums exact.

    ```mlir
    linalg.generic {..., kiln.int8_panel_product} ins(%q, %w : memref<128x96x4xi8>, memref<96x96x16x4xi8>) outs(%acc : memref<128x96x16xi32>)
    // becomes
    scf.parallel (%rb, %p) = (%c0, %c0) to (%c32, %c96) step (%c1, %c1) {
      %sums:8 = scf.for %g = %c0 to %c96 step %c1 iter_args(...) -> (vector<8xi32>, ...) {
        %t = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%row, %w0) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
        %u = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%t, %ones) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
        ...
      }
      vector.store ...
    }
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def LowerInt4PanelProductsPass : Pass<"kiln-lower-int4-panel-products"> {
  let summary = "Register-blocked AVX2 or AVX-512 kernel for the block-scaled products of kiln.int4_matmul";
  let description = [{
    Replaces each bufferized `linalg.generic` marked
    `kiln.int4_panel_product` (uint8 rows `[R, 2G, 4]` times packed 4-bit
    weight panels `[P, G, W, 4]`, block scales `[P, blocks, W]`, into f32
    `[R, P, W]`) with an `scf.parallel` over panels and blocks of 2 rows.
    Each 32-byte load of weights holds two groups of 4 rows: `vpand` keeps
    the low 4 bits, `vpsrlw` and `vpand` the high, and `vpsubb` of 8 makes
    them signed; the products then run as in the int8 kernel
    (`vpmaddubsw`, `vpmaddwd`) into int32 sums, which at the end of each
    block of rows are converted and multiplied by the block's scales into
    float sums (`vfmadd`). Only for targets with AVX2; 4-bit weights keep
    the 16-bit pair sums exact. With `lanes=16` (AVX-512BW) a 16-column
    panel's pair of groups is one 64-byte register and blocks have 4 rows;
    with `vnni`, `vpdpbusd` replaces the two multiply-adds and the add.

    ```mlir
    linalg.generic {..., kiln.int4_panel_product} ins(%q, %w, %s : memref<1x192x4xi8>, memref<144x96x16x4xi8>, memref<144x24x16xf32>) outs(%acc : memref<1x144x16xf32>)
    // becomes
    scf.parallel (%p, %rb) = (%c0, %c0) to (%c144, %c1) step (%c1, %c1) {
      %totals:4 = scf.for %b = %c0 to %c24 step %c1 iter_args(...) -> (vector<8xf32>, ...) {
        %sums:4 = scf.for %g = %c0 to %c4 step %c1 iter_args(...) -> (vector<8xi32>, ...) {
          %low = arith.andi %packed, %mask : vector<32xi8>
          ...
        }
        %t = vector.fma %real, %scale, %total : vector<8xf32>
      }
      vector.store ...
    }
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", "8",
           "32-bit lanes per register: 8 (AVX2) or 16 (AVX-512BW; panels "
           "of a multiple of 16 columns)">,
    Option<"vnni", "vnni", "bool", "false",
           "With 16 lanes: byte products as vpdpbusd (AVX512-VNNI)">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def VectorizeGenericsPass : Pass<"kiln-vectorize-generics"> {
  let summary = "Vectorize elementwise ops and reductions in SIMD-wide blocks";
  let description = [{
    Tiles each statically shaped `linalg.generic` on tensors into an
    `scf.forall` of blocks (threads share them) that are `vector-width`
    wide along a parallel innermost dimension (a whole row where the width
    doesn't divide it) and span the reduction dimensions whole, then
    vectorizes the blocks: elementwise code becomes SIMD arithmetic,
    reductions `vector.reduction`. Ops that read their innermost dimension
    other than contiguously (transposes), gather, or whose innermost
    dimension is shorter than the width stay scalar.

    ```mlir
    %y = linalg.generic {... iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<128x384xf32>) outs(%init : tensor<128x384xf32>) {...}
    // becomes
    %y = scf.forall (%i, %j) in (128, 24) shared_outs(%o = %init) {
      %v = vector.transfer_read %x[%i, %j16] ... : tensor<128x384xf32>, vector<16xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "Elements of the innermost dimension per block (one AVX-512 "
           "register of f32)">,
    Option<"maxElements", "max-elements", "int64_t", "4096",
           "Largest block, in elements, a reduction may span">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
                           "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect"];
}

def SplitForBufferizationPass
    : Pass<"kiln-split-for-bufferization", "mlir::ModuleOp"> {
  let summary = "Bound the sets of aliases one-shot bufferization searches: one empty tensor per use, entries with very many aliases split";
  let description = [{
    One-shot bufferization decides whether each tensor operand can be
    written in place by visiting every use of every value that may share
    its buffer, so a tensor with thousands of views (a Split into 2000
    outputs, 2000 Slices of one input) takes time quadratic in their
    number. This pass measures, in every entry point, the largest set of
    tensors that would share a buffer if every operation bufferized in
    place (by the ops' BufferizableOpInterface). When it holds more than
    `max-aliases` values, the entry is cut into runs of at most `max-ops`
    operations, each moved into a private function called in its place: a
    function's arguments begin sets of their own, so each set is bounded by
    the part's size. The parts are marked `kiln.bufferization_part`; once
    bufferized, `kiln-inline-bufferization-parts` puts them back in place.

    First, every use of an empty tensor is given one of its own, made just
    before the operation that holds the use (so its buffer's life starts
    there): the analysis would put all users of one empty tensor in one set
    (CSE leaves one per shape for a whole model), and a chain of
    convolutions' padded feature maps made a set as long as the chain.

    Constants, empty tensors and scalar computations are recomputed in each
    part that uses them; statically shaped tensors cross between parts (a
    run that would need a dynamically shaped one stays in the entry). An
    operation larger than `max-ops` is a part of its own: regions are never
    cut.
    Entries with small alias sets, all of the benchmark models among them,
    are left whole: a tensor a part returns is a buffer of its own, so a
    view crossing between parts is copied.

    ```mlir
    func.func @main(%x: tensor<2000xf32>) -> (tensor<1xf32>, ...) {
      %y0 = tensor.extract_slice %x[0] [1] [1] : tensor<2000xf32> to tensor<1xf32>
      ...
      %y1999 = tensor.extract_slice %x[1999] [1] [1] : tensor<2000xf32> to tensor<1xf32>
      return %y0, ..., %y1999 : tensor<1xf32>, ...
    }
    // becomes
    func.func @main(%x: tensor<2000xf32>) -> (tensor<1xf32>, ...) {
      %p0:256 = call @main_part(%x) : (tensor<2000xf32>) -> (tensor<1xf32>, ...)
      ...
      return %p0#0, ... : tensor<1xf32>, ...
    }
    func.func private @main_part(%x: tensor<2000xf32>) -> (tensor<1xf32>, ...)
        attributes {kiln.bufferization_part}
    ```
  }];
  let options = [
    Option<"maxAliases", "max-aliases", "int64_t", "512",
           "Values one buffer may be shared by before the entry is split">,
    Option<"maxOps", "max-ops", "int64_t", "256",
           "Operations, nested ones included, each part holds at most "
           "(unless one operation is larger)">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def InlineBufferizationPartsPass
    : Pass<"kiln-inline-bufferization-parts", "mlir::ModuleOp"> {
  let summary = "Put the parts cut for bufferization back into their callers";
  let description = [{
    Inlines every function marked `kiln.bufferization_part` (the parts
    `kiln-split-for-bufferization` cut out of an entry) at its one call and
    erases it, once bufferization is done. The rest of the pipeline then
    sees the entry whole, as it would have without the split; only the
    copies bufferization made at the parts' boundaries remain.

    ```mlir
    func.func @main(%x: memref<2000xf32>) -> (memref<1xf32>, ...) {
      %p:256 = call @main_part(%x) : (memref<2000xf32>) -> (memref<1xf32>, ...)
      ...
    }
    func.func private @main_part(%x: memref<2000xf32>) -> (memref<1xf32>, ...)
        attributes {kiln.bufferization_part} {
      %view = memref.subview %x[0] [1] [1] : ...
      %copy = memref.alloc() : memref<1xf32>
      memref.copy %view, %copy : ...
      ...
      return %copy, ... : memref<1xf32>, ...
    }
    // becomes
    func.func @main(%x: memref<2000xf32>) -> (memref<1xf32>, ...) {
      %view = memref.subview %x[0] [1] [1] : ...
      %copy = memref.alloc() : memref<1xf32>
      memref.copy %view, %copy : ...
      ...
    }
    ```
  }];
}

def SplitLargeFunctionsPass
    : Pass<"kiln-split-large-functions", "mlir::ModuleOp"> {
  let summary = "Split large entry functions into parts LLVM compiles in linear time";
  let description = [{
    Parts of LLVM's middle end and its instruction schedulers take time
    quadratic in the size of a function or of a basic block, and an entry
    function grows with the graph: a Concat of 2000 inputs is one function
    with a small loop per input. This pass cuts every entry point (a public
    function with a body) holding more than `max-ops` operations into
    consecutive runs of at most `max-ops` and moves each run into a private
    function, marked `noinline` (through `passthrough`), called where the
    run was. Code generation then spends time bounded by `max-ops` on each
    part, and compiles parts on several threads. Kernels (the bodies of
    outlined parallel loops) are left alone: their size is their tiles',
    whatever the graph.

    Values a run uses from before it are passed in, except those defined
    without side effects and without regions (constants, views), which are
    recomputed inside; values it defines for later operations are returned.
    A `memref.alloca` stays where it is, between runs: its buffer belongs
    to the frame of the function it was allocated in. An operation larger
    than `max-ops` by itself (a loop over the whole graph) has its regions
    split instead.

    ```mlir
    func.func @main(%x0: memref<1x8xf32>, ..., %y: memref<2000x8xf32>) {
      scf.parallel ... { copy %x0 into row 0 of %y }
      ...
      scf.parallel ... { copy %x1999 into row 1999 of %y }
      return
    }
    // becomes
    func.func @main(%x0: memref<1x8xf32>, ..., %y: memref<2000x8xf32>) {
      call @main_part(%x0, ..., %y) : (...) -> ()
      ...
      call @main_part_15(..., %x1999, %y) : (...) -> ()
      return
    }
    func.func private @main_part(...) attributes {passthrough = ["noinline"]}
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", "512",
           "Operations, nested ones included, an entry may hold before it "
           "is split, and that each part holds at most (unless one "
           "operation is larger and has no region to split)">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def PrefetchNextPanelPass
    : Pass<"kiln-prefetch-next-panel", "mlir::func::FuncOp"> {
  let summary = "Fetch the next weight panel into L2 while one is multiplied";
  let description = [{
    A product with packed weights multiplies one `[K, W]` panel of a
    constant `[P, K, W]` weight (`memref.get_global`) by every register
    tile of rows in turn: the first tile finds the panel in memory, the
    others in L2. Where the weights do not stay in the caches between calls
    (GPT-2's 154 MB vocabulary projection), that first pass waits on memory
    once per panel. This pass makes the first tiles of rows fetch the next
    panel meanwhile: in the reduction loop of row tile `t`, for `t` below
    the cache lines a panel row spans, one `memref.prefetch` (into L2) of
    line `t` of the same row of panel `p + 1`, so that those tiles together
    fetch all of it and the others add no work.

    ```mlir
    %panel = memref.subview %w[%p, 0, 0] [1, 768, 64] [1, 1, 1]
    scf.for %r = %c0 to %c126 step %c6 {
      scf.for %k = %c0 to %c768 step %c1 iter_args(...) {
        %row = memref.subview %panel[%k, 0] [1, 64] [1, 1]
        ...
    // gains, in each reduction step of the first 4 row tiles
        scf.if %first {
          memref.prefetch %w[%next, %k, %line], read, locality<2>, data
        }
    ```
  }];
  let options = [
    Option<"lineBytes", "line-bytes", "int64_t", "64",
           "Bytes of a cache line">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

#endif // KILN_CONVERSION_PASSES
