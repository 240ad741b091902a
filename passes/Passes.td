//===- Passes.td - graph passes on the kiln dialect --------*- tablegen -*-===//
#ifndef KILN_PASSES_PASSES
#define KILN_PASSES_PASSES

include "mlir/Pass/PassBase.td"

def FoldConstantsPass : Pass<"kiln-fold-constants"> {
  let summary = "Evaluate kiln ops whose operands are all constants";
  let description = [{
    Replaces every op whose operands are all `kiln.constant` and that
    `evaluateConstantOp` knows (arithmetic, comparisons, select, casts and
    the data-movement ops) by the constant it computes. Exported graphs are full of these: `Gemm` with `transB`
    on a weight, `alpha`/`beta` scaling of a constant bias, shape
    arithmetic. Results that grow past their operands and past
    `max-elements` (a broadcast of a small constant: cheap to compute at
    run time, costly as bytes in the artifact) are left to run time, and
    so is everything once the pass has created `max-created-bytes` (plus
    four times the constants it started from) in all: constants live as
    long as the context, and a tiny model can't make the compiler allocate
    without bound.

    ```mlir
    %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    %t = kiln.transpose %w, perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
    // becomes
    %t = kiln.constant dense<[[1.0, 3.0], [2.0, 4.0]]> : tensor<2x2xf32>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 20",
           "Largest constant (in elements) the pass creates beyond the size "
           "of the operands it folds">,
    Option<"maxCreatedBytes", "max-created-bytes", "int64_t",
           "int64_t(1) << 30",
           "Bytes of constants the pass may create in all beyond four times "
           "the bytes of the constants it starts from; past them, ops are "
           "left to run time">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def ExposePastKeysValuesPass : Pass<"kiln-expose-past-keys-values", "mlir::ModuleOp"> {
  let summary = "Give a plain full-sequence decoder past_key_values inputs";
  let description = [{
    A decoder exported as a plain graph (token ids `[batch, seq]` to logits,
    every position attending to those before it) recomputes the whole
    prefix at each step. This pass rewrites it into the Hugging Face "with
    past" form that `kiln-build-kv-cache` turns into an in-place cache:

    - each attention (a softmax between the scores product
      `query x key_t` and the product with the values, with scaling and
      masks between) gets inputs `past_key_values.N.key` and `.value`
      (`[..., past_seq, depth]`, N counting attentions in program order);
      the past rows are concatenated before the new ones and returned as
      `present.N.key` and `.value`;
    - a mask window sliced from a table by the sequence length (GPT-2's
      `bias[:, :, :seq, :seq]`) becomes the window of the new positions:
      rows from `past_seq`, columns `past_seq + seq`;
    - a range of `seq` positions (the position embeddings' indices) starts
      at `past_seq`.

    Modules whose entry already has `past_key_values` inputs are left as
    they are. Masks computed from positions in other ways are an error
    naming the op.

    ```mlir
    %s = kiln.matmul %q, %kt : tensor<1x4x?x32xf32>, tensor<1x4x32x?xf32>
    // becomes, with %past an input named past_key_values.0.key
    %k = kiln.transpose %kt, perm = [0, 1, 3, 2] : ...
    %present = kiln.concat %past, %k axis = 2 : ...
    %s = kiln.matmul %q, (kiln.transpose %present ...) : ...
    ```
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", "0",
           "The most positions the cache will hold: the range of past_seq">
  ];
  let dependentDialects = ["::kiln::KilnDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def BuildKvCachePass : Pass<"kiln-build-kv-cache", "mlir::ModuleOp"> {
  let summary = "Keep a with-past decoder's keys and values in session state";
  let description = [{
    A decoder exported in the Hugging Face "with past" form takes the keys
    and values of earlier tokens as inputs `past_key_values.N.key` and
    `.value` (`[batch, heads, past, depth]`) and returns them with the new
    tokens' appended as `present.N.key` and `.value`. Run in a loop by the
    caller, every step copies the whole cache in and out.

    This pass moves the cache into the artifact. Each pair becomes a
    `kiln.state` of `max-context` positions, and one more state counts the
    positions filled. The entry, renamed `decode`, takes only the new
    tokens: a past input becomes the filled prefix of its state, and the
    `kiln.concat` that made the present output becomes a `kiln.state_update`
    writing the new positions in place, after which attention reads the
    prefix including them. Nothing reads or computes the empty positions.
    Float keys that the graph transposes for attention's scores (the
    present's last two dimensions swapped, as GPT-2's `k.transpose(-2, -1)`)
    are stored transposed, `[..., depth, max-context]`: the new positions
    are transposed as they are written, and the prefix read back is
    transposed to the graph's layout, which the graph's own transpose then
    cancels, so attention reads the cache in place instead of a copy of
    all of it transposed on every call.
    The past and present values leave the signature; `kiln_session_reset`
    starts a new sequence, and a second entry, `truncate(length)`, keeps
    only the first `length` positions (rolling back tokens a caller
    rejects) and returns how many it kept. A step that would fill the cache past
    `max-context` is a run-time error (the update carries the message for
    `kiln-insert-runtime-checks`).

    With `int8`, the cache holds int8 values and one f32 scale per head and
    position (symmetric: the largest magnitude of the position's vector
    over 127): a quarter of the float cache plus 4 bytes per vector. New
    positions are quantized as they are written, and attention reads the
    prefix dequantized.

    ```mlir
    func.func @main(%ids: tensor<1x?xi64>, %past: tensor<1x4x?x32xf32> {kiln.name = "past_key_values.0.key"})
        -> (tensor<1x?x100xf32>, tensor<1x4x?x32xf32> {kiln.name = "present.0.key"}) {
      %present = kiln.concat %past, %k axis = 2 : ...
    // becomes
    kiln.state @kv_cache.length : tensor<i64>
    kiln.state @kv_cache.0.key : tensor<1x4x256x32xf32>
    func.func @decode(%ids: tensor<1x?xi64>) -> tensor<1x?x100xf32> {
      kiln.state_update %k, @kv_cache.0.key, axis = 2, offset = %length : ...
      %cache = kiln.state_read @kv_cache.0.key : tensor<1x4x256x32xf32>
      %present = kiln.dynamic_slice %cache axes = [2] offsets(%c0) sizes(%total) : ...
    ```
  }];
  let options = [
    Option<"maxContext", "max-context", "int64_t", "0",
           "Positions the cache holds (prompt and generated tokens together)">,
    Option<"int8", "int8", "bool", "false",
           "Store keys and values as int8, with one scale per head and "
           "position (their largest magnitude over 127)">
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def MergeTokensPass : Pass<"kiln-merge-tokens", "mlir::func::FuncOp"> {
  let summary = "Merge similar tokens between each block's attention and MLP";
  let description = [{
    Token merging (ToMe, Bolya et al. 2023) on an encoder's blocks: after
    block k's attention, the residual stream's tokens are matched by the
    similarity of their keys (averaged over heads; kiln.token_match), and
    the `r_k` most similar pairs merge into their size-weighted average
    (kiln.token_merge), so the MLP and every later block run on fewer
    tokens. Token sizes are tracked: later attentions add `log(size)` to
    each key's scores through their mask operand (proportional attention,
    inside the fused kernel), and their padding mask is merged along. The
    first token (a class token) and padding never merge with other tokens.
    Where the merged stream meets an op that needs every token (the
    output, pooling, a slice of the class token), kiln.token_unmerge copies
    each merged token back to its sources, so the function's types do not
    change.

    With `scope=attention` (ToMe-SD, Bolya and Hoffman 2023, for denoisers
    and other dense outputs) the merges hold around each attention alone:
    the rows the attention's projections read are matched by their own
    similarity (no token protected), merged, attended to with log(size)
    added, and the attention branch's output is unmerged where the
    residual add reads it; the stream and the MLPs keep every token.
    Attentions in a captured sampler's loop (kiln.sample) merge as those
    of the function body do.

    The block is found from each kiln.attention: the add that puts its
    output back on the stream (pre-LN), or the layer norm right after that
    add (post-LN, BERT). `r_k` is `tokens` for every block (`constant`), or
    falls linearly from `2 * tokens` to 0 over the blocks (`decreasing`);
    `per-block` lists it block by block instead. A block that cannot take
    its `r_k` (too few tokens, a dynamic token count, a mask that varies
    along queries) is left unmerged with a warning.

    ```mlir
    %h = kiln.add %x, %attn : ...                      // block k's stream
    // with tokens = 8 on 197 tokens:
    %dst, %kept = kiln.token_match %keys merged = 8 protected = 1 : ...
    %hm, %sm = kiln.token_merge %h, %sizes, %dst : ... -> tensor<1x189x384xf32>, ...
    ```
  }];
  let options = [
    Option<"tokens", "tokens", "int64_t", "0",
           "Tokens each block merges away (r)">,
    Option<"schedule", "schedule", "::kiln::MergeSchedule",
           "::kiln::MergeSchedule::Constant", "How r changes over the blocks",
           [{::llvm::cl::values(
             clEnumValN(::kiln::MergeSchedule::Constant, "constant",
                        "r in every block"),
             clEnumValN(::kiln::MergeSchedule::Decreasing, "decreasing",
                        "from 2r in the first block down to 0"))}]>,
    ListOption<"perBlock", "per-block", "int64_t",
               "r block by block (overrides tokens and schedule)">,
    Option<"scope", "scope", "::kiln::MergeScope",
           "::kiln::MergeScope::Model", "Where the merges hold",
           [{::llvm::cl::values(
             clEnumValN(::kiln::MergeScope::Model, "model",
                        "from the block on, unmerged at the outputs"),
             clEnumValN(::kiln::MergeScope::Attention, "attention",
                        "around each attention only (ToMe-SD)"))}]>
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PruneTokensPass : Pass<"kiln-prune-tokens", "mlir::func::FuncOp"> {
  let summary = "Fuse each pruning block's least attended tokens into one";
  let description = [{
    Token pruning (EViT, Liang et al. 2022) on an encoder's blocks: after
    block k's attention, the class token's attention to each token
    (recomputed for its one query row, averaged over heads) ranks the
    other tokens; the `keep` best keep their slots and the others fuse into
    one token, their size-weighted average (kiln.token_select,
    kiln.token_merge). Without a class token (`importance=key-norm`) the
    norm of each token's key, averaged over heads, ranks every token.
    Padding ranks last and fuses into a token of its own. Sizes, the
    proportional attention of later blocks, the padding mask and the
    unmerging where an op needs every token work as in kiln-merge-tokens.

    `keep` is `keep-rate` of the tokens ranked (rounded up), in `blocks`
    (numbered from 0; by default every third block from the fourth, EViT's
    placement); `per-block` lists it block by block instead (a negative
    entry: the block does not prune). A block that cannot prune is left as
    it is, with a warning.

    ```mlir
    %h = kiln.add %x, %attn : ...                      // block 3's stream
    // with keep-rate = 0.7 on 197 tokens:
    %dst, %kept = kiln.token_select %class_attn kept = 137 protected = 1 : ...
    %hp, %sp = kiln.token_merge %h, %sizes, %dst : ... -> tensor<1x139x384xf32>, ...
    ```
  }];
  let options = [
    Option<"keepRate", "keep-rate", "double", "1.0",
           "Share of the ranked tokens a pruning block keeps (1: none pruned)">,
    ListOption<"blocks", "blocks", "int64_t",
               "Blocks that prune at keep-rate (default 3, 6, 9, ...)">,
    ListOption<"perBlock", "per-block", "int64_t",
               "Tokens kept block by block, negative for none pruned "
               "(overrides keep-rate and blocks)">,
    Option<"importance", "importance", "::kiln::PruneImportance",
           "::kiln::PruneImportance::ClassAttention",
           "What ranks the tokens",
           [{::llvm::cl::values(
             clEnumValN(::kiln::PruneImportance::ClassAttention,
                        "class-attention",
                        "the first token's attention (it is kept)"),
             clEnumValN(::kiln::PruneImportance::KeyNorm, "key-norm",
                        "the norm of each token's key"))}]>
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def SkipLayersPass : Pass<"kiln-skip-layers", "mlir::ModuleOp"> {
  let summary = "Drop whole blocks of a pre-LN transformer";
  let description = [{
    Finds the residual stream of each entry point's pre-LN blocks (block k:
    `h = x_k + attention(norm(x_k))`, `x_{k+1} = h + mlp(norm(h))`, then a
    final norm; layer norms in program order) and, for each block in
    `layers` (numbered from 0), sends `x_k` on where `x_{k+1}` went: the
    block is skipped, and everything only it used is erased. State only the
    skipped blocks read (their KV cache, after kiln-build-kv-cache) goes
    with its writes, so a skipped layer neither computes nor stores its
    keys and values.

    With `draft-entry`, the entries stay whole and a copy of the one that
    runs the model (a decoder's `decode`) is added under that name, with
    the blocks skipped (with no `layers`, a whole copy, for a draft that is
    quantized instead): a draft for self-speculative decoding. The draft
    shares the state, but drops its writes to state it no longer reads (the
    skipped blocks' cache): those positions are past the cache's length
    once the full entry verifies the draft's tokens after a truncate, and
    the full entry writes them again.

    ```mlir
    %h = kiln.add %x1, %attn1 : ...
    %x2 = kiln.add %h, %mlp1 : ...
    %n = kiln.layer_norm %x2, ...
    // with layers = [1]: %n = kiln.layer_norm %x1, ... and block 1 is gone
    ```
  }];
  let options = [
    ListOption<"layers", "layers", "int64_t", "Blocks to skip, from 0">,
    Option<"draftEntry", "draft-entry", "std::string", "\"\"",
           "Leave the entries whole and add this one: a copy of the model's "
           "entry with the blocks skipped, sharing its state (a "
           "self-speculative draft)">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def InsertRuntimeChecksPass : Pass<"kiln-insert-runtime-checks", "mlir::ModuleOp"> {
  let summary = "Give every entry point an error status computed from run-time checks";
  let description = [{
    Data-dependent indices can't be checked at compile time. For each public
    function this pass chains one `kiln.check_index_range` per
    `kiln.gather` and `kiln.gather_elements` along a static axis (in program
    order) and returns the result as an extra, last
    `tensor<i32>` result marked `kiln.status`. The function's
    `kiln.errors` attribute holds one message per code (code `k` is entry
    `k - 1`), naming the ONNX node. The artifact's entry wrapper returns the
    status, and the runtime turns it into an error naming that node.

    ```mlir
    func.func @main(%t: tensor<5x4xf32>, %i: tensor<2xi64>) -> tensor<2x4xf32> {
      %0 = kiln.gather %t[%i], axis = 0 : tensor<5x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    }
    // becomes
    func.func @main(%t: tensor<5x4xf32>, %i: tensor<2xi64>)
        -> (tensor<2x4xf32>, tensor<i32> {kiln.status})
        attributes {kiln.errors = ["Gather index out of range at node 'g'"]} {
      %0 = kiln.gather ...
      %ok = arith.constant dense<0> : tensor<i32>
      %s = kiln.check_index_range %i, %ok, size = 5, code = 1 : tensor<2xi64>
      return %0, %s : tensor<2x4xf32>, tensor<i32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::arith::ArithDialect"];
}

def FoldConvolutionScalesPass : Pass<"kiln-fold-convolution-scales"> {
  let summary = "Fold per-filter constant scales (batch norms) into "
                "convolution filters";
  let description = [{
    Rewrites `kiln.mul` of a single-use f32 `kiln.conv2d` with a constant
    filter and a constant that holds one factor per output channel (or one
    for all) into the convolution on the filter scaled at compile time:
    the scale of an inference BatchNormalization after kiln-fold-constants
    has computed `gamma / sqrt(var + eps)`.

    ```mlir
    %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
    %a = kiln.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf32>
    %c = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>
    %y = kiln.mul %c, %a : tensor<1x2x4x4xf32>, tensor<2x1x1xf32>
    // becomes
    %w2 = kiln.constant dense<[[[[3.0]]], [[[8.0]]]]> : tensor<2x1x1x1xf32>
    %y = kiln.conv2d %x, %w2 strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x4x4xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x4x4xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FewPixelConvolutionsPass : Pass<"kiln-few-pixel-convolutions"> {
  let summary = "Compute convolutions with few output pixels as transposed "
                "products";
  let description = [{
    Rewrites each f32 `kiln.conv2d` with a constant filter, one group,
    static shapes and at most `max-pixels` output pixels over all images
    into patches gathered from the input (`[P, C*kh*kw]`, zeros where a tap
    reads the padding) times the filter transposed at compile time
    (`[C*kh*kw, F]`), then transposed back to NCHW. The matmul kernel's
    vector columns are then the filters rather than a few pixels padded to
    a whole panel.

    ```mlir
    %w = kiln.constant dense<...> : tensor<8x4x1x1xf32>
    %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x1x1xf32>, tensor<8x4x1x1xf32> -> tensor<1x8x1x1xf32>
    // becomes
    %flat = kiln.reshape %x : tensor<1x4x1x1xf32> -> tensor<4xf32>
    %i = kiln.constant dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>
    %p = kiln.gather %flat[%i], axis = 0 : tensor<4xf32>, tensor<1x4xi64> -> tensor<1x4xf32>
    %wt = kiln.constant dense<...> : tensor<4x8xf32>
    %m = kiln.matmul %p, %wt : tensor<1x4xf32>, tensor<4x8xf32> -> tensor<1x8xf32>
    %y = kiln.reshape %m : tensor<1x8xf32> -> tensor<1x8x1x1xf32>
    ```
  }];
  let options = [
    Option<"maxPixels", "max-pixels", "int64_t", "8",
           "Most output pixels (all images) to compute transposed: half a "
           "column panel">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def WinogradConvolutionsPass : Pass<"kiln-winograd-convolutions"> {
  let summary = "Compute 3x3 stride-1 convolutions by Winograd's F(4x4, 3x3) or F(2x2, 3x3)";
  let description = [{
    Rewrites each f32 `kiln.conv2d` with a constant 3x3 filter, stride and
    dilation 1, one group, and at least `min-channels` input and output
    channels into a `kiln.winograd_conv2d` on the filter's transform
    `G g G^T`, computed here at compile time. The output's tiles must fill
    the matmul kernel's column panels (`panel-width` tiles) in whole tile
    rows or equal parts of one: 4x4 tiles (F(4x4, 3x3), 4x fewer
    multiplications than the direct convolution) where they do and
    `largest-tile` allows, else 2x2 tiles (F(2x2, 3x3), 2.25x fewer);
    convolutions whose tiles fill no panels stay direct.

    ```mlir
    %w = kiln.constant dense<...> : tensor<128x64x3x3xf32>
    %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<2x64x32x32xf32>, tensor<128x64x3x3xf32> -> tensor<2x128x32x32xf32>
    // becomes
    %u = kiln.constant dense<...> : tensor<36x128x64xf32>
    %y = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<2x64x32x32xf32>, tensor<36x128x64xf32> -> tensor<2x128x32x32xf32>
    ```
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", "32",
           "Tiles per column panel: the register block width of the "
           "products over a convolution's patches">,
    Option<"minChannels", "min-channels", "int64_t", "16",
           "Fewest input and output channels worth a matrix product per "
           "transform element">,
    Option<"largestTile", "largest-tile", "int64_t", "4",
           "Largest output tile side, 2 or 4">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def PackWeightsPass : Pass<"kiln-pack-weights"> {
  let summary = "Store constant matmul weights as contiguous column panels";
  let description = [{
    Rewrites each `kiln.matmul` whose right operand is a constant f32
    `[K, N]` matrix into a `kiln.packed_matmul` on a new constant holding
    the matrix as `ceil(N / panel-width)` contiguous `[K, panel-width]`
    panels, the last one padded with zero columns. The matmul
    kernel then reads each block of weights as one sequential stream
    instead of K strided rows. A weight shared by several matmuls is packed
    once per use; the unpacked constant goes away when nothing else uses it.

    ```mlir
    %w = kiln.constant dense<...> : tensor<384x1536xf32>
    %y = kiln.matmul %x, %w : tensor<1x128x384xf32>, tensor<384x1536xf32>
    // becomes
    %p = kiln.constant dense<...> : tensor<48x384x32xf32>
    %y = kiln.packed_matmul %x, %p : tensor<1x128x384xf32>, tensor<48x384x32xf32> -> tensor<1x128x1536xf32>
    ```
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", "32",
           "Columns per panel: the matmul kernel's register block width">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FloatIntegerProductsPass : Pass<"kiln-float-integer-products"> {
  let summary = "Integer products with constant weights as float products";
  let description = [{
    A `kiln.matmul_integer` whose right operand and zero points are
    constants, used only by a cast to f32 (the MatMulInteger, Cast, Mul
    chain of ONNX Runtime's quantize_dynamic models), becomes a float
    `kiln.matmul` of the left operand less its zero point, as f32, and the
    constant weights less theirs: the packed fp32 kernel instead of 32-bit
    integer multiplies. The differences are integers that f32 holds
    exactly; only the sums round, as any float product's do.

    ```mlir
    %p = kiln.matmul_integer %q, %w, %zq, %zw {lhs_unsigned} : tensor<8x64xi8>, tensor<64x32xi8>, tensor<i8>, tensor<i8> -> tensor<8x32xi32>
    %f = kiln.cast %p : tensor<8x32xi32> -> tensor<8x32xf32>
    // becomes
    %x = kiln.cast %q {input_unsigned} : tensor<8x64xi8> -> tensor<8x64xf32>
    %z = kiln.cast %zq {input_unsigned} : tensor<i8> -> tensor<f32>
    %d = kiln.sub %x, %z : tensor<8x64xf32>, tensor<f32>
    %c = kiln.constant dense<...> : tensor<64x32xf32>
    %f = kiln.matmul %d, %c : tensor<8x64xf32>, tensor<64x32xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def StripFloatQdqPass : Pass<"kiln-strip-float-qdq"> {
  let summary = "Drop a QDQ model's quantize-dequantize pairs around float ops";
  let description = [{
    Replaces `kiln.dequantize` of `kiln.quantize` with the same per-tensor
    scale and zero point (a QDQ model's fake-quantized activation) by the
    float activation itself, unless it is the input of a product with
    constant weights (which kiln-fuse-quantized-products makes an int8
    kernel). The ops between such pairs (Softmax, LayerNorm, GELU, adds,
    attention's products of two activations) run in fp32 in Kiln, where
    the pair only adds its rounding error and two passes over the data,
    and hides the chains the LayerNorm and attention fusions match. The
    result moves towards the float model's, by up to one quantization step
    of each removed pair.

    ```mlir
    %q = kiln.quantize %x, %s, %zp : tensor<8x64xf32>, tensor<f32>, tensor<i8> -> tensor<8x64xi8>
    %d = kiln.dequantize %q, %s, %zp : tensor<8x64xi8>, tensor<f32>, tensor<i8> -> tensor<8x64xf32>
    %y = kiln.softmax %d, axis = 1 : tensor<8x64xf32>
    // becomes
    %y = kiln.softmax %x, axis = 1 : tensor<8x64xf32>
    ```
  }];
}

def FuseQuantizedProductsPass : Pass<"kiln-fuse-quantized-products"> {
  let summary = "QDQ products (quantize, dequantize, float product) onto int8 panels";
  let description = [{
    Rewrites each `kiln.matmul` whose input is `kiln.dequantize` of
    `kiln.quantize` with the same per-tensor scale and zero point (a QDQ
    model's quantized activation) and whose weights are a constant (a QDQ
    model's dequantized int8 weights, folded) into `kiln.quantized_matmul`
    with a static input quantization: the activation is quantized with the
    model's scale and zero point (as uint8: an int8 quantization shifted
    by 128), the weights are packed in panels as by
    kiln-quantize-int8-dynamic. The weights are re-quantized to 7 bits per
    column from their dequantized values: the model's 8-bit weights would
    overflow the 16-bit pair sums of AVX2's `vpmaddubsw` (docs/design.md).

    ```mlir
    %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<8x64xf32>, tensor<f32>, tensor<i8> -> tensor<8x64xi8>
    %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<8x64xi8>, tensor<f32>, tensor<i8> -> tensor<8x64xf32>
    %y = kiln.matmul %d, %w : tensor<8x64xf32>, tensor<64x32xf32>
    // becomes
    %y = kiln.quantized_matmul %x, %p, %ws, %c static(%s, %zp : tensor<f32>, tensor<i8>) : tensor<8x64xf32>, tensor<2x16x16x4xi8>, tensor<32xf32>, tensor<32xi32> -> tensor<8x32xf32>
    ```
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", "16",
           "Columns per weight panel: the integer kernel's block width">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseInt4WeightProductsPass : Pass<"kiln-fuse-int4-weight-products"> {
  let summary = "Blocked 4-bit QDQ weights (ONNX opset 21) onto the int4 kernel";
  let description = [{
    Rewrites each `kiln.matmul` whose weights are `kiln.dequantize` of a
    constant `[K, N]` matrix of 4-bit integers (INT4 in [-8, 7] or UINT4
    in [0, 15], held as i8) with constant scales and zero points in blocks
    of a multiple of 8 rows along K, as ONNX opset 21's blocked
    DequantizeLinear writes weight-only quantization, into
    `kiln.int4_matmul` on the same integers, scales and zero points. Like
    ONNX Runtime, which fuses such chains into MatMulNBits at accuracy
    level 4 by default, the kernel quantizes each input row to uint8 at run
    time. Runs before constant folding, which would dequantize the weights
    to f32.

    ```mlir
    %w = kiln.dequantize %q, %s, %zp axis = 0 block_size = 32 : tensor<64x48xi8>, tensor<2x48xf32>, tensor<2x48xi8> -> tensor<64x48xf32>
    %y = kiln.matmul %x, %w : tensor<8x64xf32>, tensor<64x48xf32>
    // becomes
    %y = kiln.int4_matmul %x, %p, %ps, %c zero_points(%z : tensor<3x2x16xi8>) : tensor<8x64xf32>, tensor<3x8x16x4xi8>, tensor<3x2x16xf32>, tensor<48xf32> -> tensor<8x48xf32>
    ```
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", "16",
           "Columns per weight panel: the int4 kernel's block width">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeInt8DynamicPass : Pass<"kiln-quantize-int8-dynamic"> {
  let summary = "Matrix products with int8 weights and rows quantized at run time";
  let description = [{
    Rewrites each `kiln.matmul` of an f32 input (rank 2 or
    more) and a constant f32 `[K, N]` weight into `kiln.quantized_matmul`:
    each weight column is quantized symmetrically to 7 bits (scale
    `max |w| / 63`, integers in `[-63, 63]`; 7 rather than 8 bits so
    uint8 x int8 pairs never saturate the 16-bit sums of AVX2's
    `vpmaddubsw`), packed in panels of `panel-width` columns and groups of 4
    rows, with each column's integer sum for the zero-point correction.
    Products with fewer than `min-depth` rows of weights stay in float:
    their quantization costs more than it saves. A product carrying
    `kiln.input_scale` and `kiln.input_zero_point` (int8-static's, chosen
    by calibration) quantizes its input with them instead of per row.

    ```mlir
    %w = kiln.constant dense<...> : tensor<384x1536xf32>
    %y = kiln.matmul %x, %w : tensor<1x128x384xf32>, tensor<384x1536xf32>
    // becomes
    %q = kiln.constant dense<...> : tensor<96x96x16x4xi8>
    %s = kiln.constant dense<...> : tensor<1536xf32>
    %c = kiln.constant dense<...> : tensor<1536xi32>
    %y = kiln.quantized_matmul %x, %q, %s, %c : tensor<1x128x384xf32>, tensor<96x96x16x4xi8>, tensor<1536xf32>, tensor<1536xi32> -> tensor<1x128x1536xf32>
    ```
  }];
  let options = [
    Option<"panelWidth", "panel-width", "int64_t", "16",
           "Columns per weight panel: the integer kernel's block width">,
    Option<"minDepth", "min-depth", "int64_t", "64",
           "Fewest weight rows (K) a product needs to be quantized">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeInt4WeightPass : Pass<"kiln-quantize-int4-weight"> {
  let summary = "Matrix products with 4-bit weights, one scale per block of rows";
  let description = [{
    Rewrites each `kiln.matmul` of an f32 input (rank 2 or more) and a
    constant f32 `[K, N]` weight into `kiln.int4_matmul`: each block of
    `block-size` rows of a column is quantized to 4 bits over its range
    widened to 0 (scale `(max - min) / 15`, zero point `round(-min /
    scale)`), or with `zero-points=false` symmetrically (scale
    `max |w| / 7`, integers in `[-8, 7]`), two integers to a byte, packed
    in panels of `panel-width` columns. The rows of the input are
    quantized to uint8 at run time, as with int8-dynamic. Weight-only
    quantization for memory-bound products: a decoder step reads every
    weight once, and this reads half the bytes of int8. Products with
    fewer than `min-depth` rows of weights stay in float.

    ```mlir
    %w = kiln.constant dense<...> : tensor<768x2304xf32>
    %y = kiln.matmul %x, %w : tensor<1x1x768xf32>, tensor<768x2304xf32>
    // becomes
    %q = kiln.constant dense<...> : tensor<144x96x16x4xi8>
    %s = kiln.constant dense<...> : tensor<144x24x16xf32>
    %c = kiln.constant dense<...> : tensor<2304xf32>
    %y = kiln.int4_matmul %x, %q, %s, %c : tensor<1x1x768xf32>, tensor<144x96x16x4xi8>, tensor<144x24x16xf32>, tensor<2304xf32> -> tensor<1x1x2304xf32>
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "32",
           "Rows of a column that share one scale (a multiple of 8)">,
    Option<"panelWidth", "panel-width", "int64_t", "16",
           "Columns per weight panel: the integer kernel's block width">,
    Option<"minDepth", "min-depth", "int64_t", "64",
           "Fewest weight rows (K) a product needs to be quantized">,
    Option<"zeroPoints", "zero-points", "bool", "true",
           "Give each block a zero point (its range widened to 0 over 15 "
           "steps) rather than quantizing symmetrically">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseMatMulEpiloguePass : Pass<"kiln-fuse-matmul-epilogue"> {
  let summary = "Fuse bias, GELU and residual adds into the packed product they follow";
  let description = [{
    Gives a `kiln.packed_matmul` the epilogue its users compute, in the
    order the kernel applies it:
    - bias: `kiln.add` of the product (used only there) and a constant f32
      row of the product's column count (`[N]`, `[1, N]`, ...) becomes the
      product's `bias`, stored in its panels and padded with zeros; the sum
      must have the product's type;
    - activation: GELU of the product as exporters spell it, the factors of
      each product and the operands of each sum in any order:
      `x * (1 + erf(x / sqrt(2))) * 0.5` (PyTorch's nn.GELU) becomes
      `gelu_erf`, and
      `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` with the
      cube as `x * (x * x)` or `Pow(x, 3)` (GPT-2's) `gelu_tanh`, when the
      expression is the product's only user;
    - residual: `add(product, r)` (either operand order), where `r` has the
      product's shape and the product no other use, becomes `residual r`.
    A product that has a later stage takes no earlier one.

    ```mlir
    %y = kiln.packed_matmul %x, %w : tensor<128x384xf32>, tensor<12x384x32xf32> -> tensor<128x384xf32>
    %z = kiln.add %y, %b : tensor<128x384xf32>, tensor<384xf32>
    %o = kiln.add %r, %z : tensor<128x384xf32>, tensor<128x384xf32>
    // becomes
    %p = kiln.constant dense<...> : tensor<12x32xf32>
    %o = kiln.packed_matmul %x, %w bias %p residual %r : tensor<128x384xf32>, tensor<12x384x32xf32>, tensor<12x32xf32> -> tensor<128x384xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseAttentionPass : Pass<"kiln-fuse-attention"> {
  let summary = "Recognize scaled dot-product attention as kiln.attention";
  let description = [{
    Rewrites `MatMul(Softmax(mask(scale(MatMul(Q, K^T)))), V)`, the softmax
    over the last axis and every op in between used once, into one
    `kiln.attention`. Recognized spellings:
    - the scale as `Mul` or `Div` of the scores by a scalar constant, or
      `Mul` of Q and/or K^T by one (PyTorch's scaled_dot_product_attention
      export multiplies both by the square root of the scale); the factors
      multiply into the op's `scale`;
    - the mask as `Add` of an f32 tensor broadcasting to the scores, or
      `Where(mask, fill, scores)` / `Where(keep, scores, fill)` with a
      scalar fill (an inverted condition becomes `Equal(keep, false)`);
    - no scale or no mask.
    Products whose operands broadcast batch dimensions are left alone.

    ```mlir
    %s = kiln.matmul %q, %kt : tensor<1x12x128x32xf32>, tensor<1x12x32x128xf32>
    %d = kiln.div %s, %c : tensor<1x12x128x128xf32>, tensor<f32>
    %a = kiln.add %d, %mask : tensor<1x12x128x128xf32>, tensor<1x1x1x128xf32>
    %p = kiln.softmax %a, axis = 3 : tensor<1x12x128x128xf32>
    %o = kiln.matmul %p, %v : tensor<1x12x128x128xf32>, tensor<1x12x128x32xf32>
    // becomes (with %c = 5.65685415)
    %o = kiln.attention %q, %kt, %v mask %mask scale = 0.176776692 : tensor<1x12x128x32xf32>, tensor<1x12x32x128xf32>, tensor<1x12x128x32xf32>, tensor<1x1x1x128xf32> -> tensor<1x12x128x32xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FoldAttentionTransposesPass : Pass<"kiln-fold-attention-transposes"> {
  let summary = "Let kiln.attention read and write heads in the sequence-first layout";
  let description = [{
    A `kiln.attention` whose query or value is a `kiln.transpose` swapping
    the two dimensions before the last (`[B, S, H, D]` to `[B, H, S, D]`, the
    heads split exporters emit) takes the transpose's input instead, marked
    `query_seq_first` / `value_seq_first`. If the attention's only user is
    the inverse transpose (the heads merge), the attention produces that
    layout itself (`result_seq_first`). The keys, which the kernel needs
    transposed, are left as they are.

    ```mlir
    %q = kiln.transpose %q0, perm = [0, 2, 1, 3] : tensor<1x128x12x32xf32> -> tensor<1x12x128x32xf32>
    %v = kiln.transpose %v0, perm = [0, 2, 1, 3] : tensor<1x128x12x32xf32> -> tensor<1x12x128x32xf32>
    %a = kiln.attention %q, %kt, %v scale = 0.176776692 : tensor<1x12x128x32xf32>, tensor<1x12x32x128xf32>, tensor<1x12x128x32xf32> -> tensor<1x12x128x32xf32>
    %o = kiln.transpose %a, perm = [0, 2, 1, 3] : tensor<1x12x128x32xf32> -> tensor<1x128x12x32xf32>
    // becomes
    %o = kiln.attention %q0, %kt, %v0 scale = 0.176776692 {query_seq_first, result_seq_first, value_seq_first} : tensor<1x128x12x32xf32>, tensor<1x12x32x128xf32>, tensor<1x128x12x32xf32> -> tensor<1x128x12x32xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseGroupNormPass : Pass<"kiln-fuse-group-norm"> {
  let summary = "Recognize PyTorch's exported GroupNorm as one kiln.group_norm";
  let description = [{
    PyTorch exports GroupNorm as Reshape to `[N, G, -1]`,
    InstanceNormalization with unit scale and zero bias, Reshape back, then
    Mul by the weight and Add of the bias per channel. This pass rewrites
    the reshaped instance norm into a group norm of the feature maps
    themselves, then absorbs a per-channel Mul and Add that follow a group
    norm (their only use) into its scale and bias.

    ```mlir
    %g = kiln.reshape %x : tensor<2x64x32x32xf32> -> tensor<2x32x2048xf32>
    %n = kiln.group_norm %g, %ones, %zeros groups = 32 epsilon = 9.99999974E-6 : tensor<2x32x2048xf32>, tensor<32xf32>, tensor<32xf32>
    %b = kiln.reshape %n : tensor<2x32x2048xf32> -> tensor<2x64x32x32xf32>
    %s = kiln.mul %b, %w : tensor<2x64x32x32xf32>, tensor<64x1x1xf32>
    %y = kiln.add %s, %c : tensor<2x64x32x32xf32>, tensor<64x1x1xf32>
    // becomes
    %y = kiln.group_norm %x, %weight, %bias groups = 32 epsilon = 9.99999974E-6 : tensor<2x64x32x32xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def CullSplatsExactlyPass : Pass<"kiln-cull-splats-exactly", "mlir::func::FuncOp"> {
  let summary = "Bin Gaussian splats only to the tiles they can reach";
  let description = [{
    The reference rasterizer bins a splat to every tile of the square of
    its 3-sigma radius. Most of those pairs blend nothing: the corners of
    the square lie outside the ellipse, and a faint splat's alpha falls
    below 1/255 long before 3 sigma. This pass switches each
    kiln.splat_rasterize and kiln.splat_contributions to exact culling
    (Speedy-Splat's SnugBox and AccuTile): the splat's box shrinks to the
    ellipse where its alpha reaches 1/255, and each tile in it is tested
    against that ellipse exactly. Every pair it drops was skipped at every
    pixel, so the image (or the contributions) does not change; the
    blending walks fewer pairs.

    ```mlir
    %image = kiln.splat_rasterize %splats, %bg : tensor<11x1000xf32>, tensor<3xf32> -> tensor<480x640x3xf32>
    // becomes
    %image = kiln.splat_rasterize %splats, %bg culling = exact : tensor<11x1000xf32>, tensor<3xf32> -> tensor<480x640x3xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def FuseLayerNormPass : Pass<"kiln-fuse-layer-norm"> {
  let summary = "Recognize decomposed layer norms as kiln.layer_norm";
  let description = [{
    Exporters targeting opsets before 17 (PyTorch, TensorFlow's converters)
    write LayerNorm as `ReduceMean`, `Sub`, `Pow` (or `Mul` of the
    difference by itself), `ReduceMean`, `Add` of epsilon, `Sqrt`, `Div`,
    then `Mul` by gamma and `Add` of beta. This pass rewrites that chain,
    over trailing axes with kept dimensions, into one `kiln.layer_norm`
    (gamma 1 and beta 0 where they are missing).

    ```mlir
    %m = kiln.reduce_mean %x axes = [2] keep_dims : tensor<1x128x384xf32> -> tensor<1x128x1xf32>
    %d = kiln.sub %x, %m : tensor<1x128x384xf32>, tensor<1x128x1xf32>
    %p = kiln.pow %d, %two : tensor<1x128x384xf32>, tensor<f32>
    %v = kiln.reduce_mean %p axes = [2] keep_dims : tensor<1x128x384xf32> -> tensor<1x128x1xf32>
    %e = kiln.add %v, %eps : tensor<1x128x1xf32>, tensor<f32>
    %s = kiln.sqrt %e : tensor<1x128x1xf32>
    %n = kiln.div %d, %s : tensor<1x128x384xf32>, tensor<1x128x1xf32>
    %g = kiln.mul %n, %gamma : tensor<1x128x384xf32>, tensor<384xf32>
    %y = kiln.add %g, %beta : tensor<1x128x384xf32>, tensor<384xf32>
    // becomes
    %y = kiln.layer_norm %x, %gamma, %beta axis = 2 epsilon = 9.99999996E-13 : tensor<1x128x384xf32>, tensor<384xf32>, tensor<384xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def CaptureSamplerPass : Pass<"kiln-capture-sampler", "mlir::ModuleOp"> {
  let summary = "Add an entry that runs a diffusion sampler around the denoiser";
  let description = [{
    The module's one entry is a denoiser: its inputs are, in order, the
    noisy latent `[B, C, ...]`, the timestep (`[B]` or a scalar, float or
    integer) and optionally the class labels (`[B]`, integer); it returns
    the predicted noise, `[B, C, ...]` (or `[B, 2C, ...]` with a learned
    variance, whose first C channels are the noise). The pass adds the
    entry `entry(noise[, labels]) -> sample`, one `kiln.sample` op whose
    region is a copy of the denoiser's body, with the sampler's timesteps
    and update coefficients folded in (linear betas from `beta-start` to
    `beta-end` over `train-steps`). The denoiser entry stays.

    With a `cfg-scale` other than 1, classifier-free guidance runs the
    conditional and the unconditional prediction as one batch of B: the
    sample entry takes B/2 latents and labels, the unconditional half gets
    `null-label` (by default the last row of the table the labels index),
    and each step's noise is `u + cfg_scale * (c - u)`. Work that doesn't
    depend on the step (the labels' embedding) is moved out of the loop.

    ```mlir
    func.func @main(%x: tensor<2x4x32x32xf32>, %t: tensor<2xf32>, %y: tensor<2xi64>)
        -> tensor<2x4x32x32xf32>
    // with sampler=ddim steps=50 cfg-scale=4 also gets
    func.func @sample(%noise: tensor<1x4x32x32xf32>, %label: tensor<1xi64>)
        -> tensor<1x4x32x32xf32> {
      %labels = kiln.concat %label, %null axis = 0 : ...
      %s = kiln.sample ddim %noise noise_scale = 1.0 timesteps = ...
          coefficients = ... : tensor<1x4x32x32xf32> {
      ^bb0(%x: tensor<1x4x32x32xf32>, %t: tensor<f32>, %i: index):
        %batch = kiln.concat %x, %x axis = 0 : ...
        ...
        kiln.yield %guided : tensor<1x4x32x32xf32>
      }
      return %s : tensor<1x4x32x32xf32>
    }
    ```
  }];
  let options = [
    Option<"sampler", "sampler", "::kiln::Sampler", "::kiln::Sampler::Ddim",
           "The sampler", [{::llvm::cl::values(
             clEnumValN(::kiln::Sampler::Ddim, "ddim", "DDIM (eta 0)"),
             clEnumValN(::kiln::Sampler::Euler, "euler",
                        "Euler on Karras sigmas"),
             clEnumValN(::kiln::Sampler::DpmSolver2M, "dpm++2m",
                        "DPM-Solver++(2M)"))}]>,
    Option<"steps", "steps", "int64_t", "50", "Denoising steps">,
    Option<"cfgScale", "cfg-scale", "double", "1.0",
           "Classifier-free guidance scale (1: no guidance)">,
    Option<"nullLabel", "null-label", "int64_t", "-1",
           "The unconditional label (-1: the last row of the label table)">,
    Option<"entry", "entry", "std::string", "\"sample\"",
           "Name of the added entry">,
    Option<"trainSteps", "train-steps", "int64_t", "1000",
           "Timesteps the denoiser was trained on">,
    Option<"betaStart", "beta-start", "double", "1e-4",
           "First beta of the linear noise schedule">,
    Option<"betaEnd", "beta-end", "double", "0.02",
           "Last beta of the linear noise schedule">
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def CacheBlockResidualsPass : Pass<"kiln-cache-block-residuals", "mlir::ModuleOp"> {
  let summary = "Reuse transformer blocks' output across sampling steps";
  let description = [{
    In each `kiln.sample` region, finds the residual stream of the
    denoiser's pre-LN blocks (a DiT's) and computes blocks
    `[first, last)` only on every `interval`-th step (step i with
    i mod interval = 0, so the first step computes): a computing step
    stores what the blocks add to the stream, `out - in`, in a value the
    sample op carries; the steps between add the stored residual to their
    own input instead of running the blocks (FORA- and DeepCache-style
    reuse; the residual form follows the step's own input rather than
    freezing the features). The decision is made in the generated loop.

    With a `threshold`, the decision adapts (TeaCache-style): each step
    measures how much the first cached block's normalized (modulated)
    input changed since the previous step, `mean|m - m_prev| / mean|m_prev|`,
    adds it to a distance carried across steps, and runs the blocks (and
    zeroes the distance) once that reaches the threshold; the first and
    last steps always run them.

    With `forecast` = 1 or 2, the steps between predict the residual
    instead of reusing the stored one (Taylor-style forecasting, as
    TaylorSeer and FORA's successors do): the sample op also carries the
    residual's divided differences over the last 2 or 3 computing steps
    and those steps' indices, and a skipped step adds the value of their
    Newton polynomial at its own index, `r0 + d1 (i - s0) + d2 (i - s0)
    (i - s1)`. Until enough steps have run, the higher differences are 0.

    ```mlir
    %out = kiln.add %h, %mlp : tensor<2x256x384xf32>   // stream[last]
    // becomes
    %compute = arith.cmpi eq, (%step mod interval), 0
    %new:2 = scf.if %compute -> (tensor<2x256x384xf32>, tensor<2x256x384xf32>) {
      ... the blocks ...
      scf.yield %out, (%out - %in)
    } else {
      scf.yield (%in + %cache), %cache
    }
    kiln.yield %e, %new#1 : ...
    ```
  }];
  let options = [
    Option<"interval", "interval", "int64_t", "2",
           "Compute the blocks on every interval-th step">,
    Option<"first", "first", "int64_t", "0", "First block cached (from 0)">,
    Option<"last", "last", "int64_t", "-1",
           "Block after the last one cached (-1: to the end)">,
    Option<"threshold", "threshold", "double", "0",
           "Decide at run time instead (when above 0): run the blocks once "
           "the relative L1 change of the first one's normalized input, "
           "summed over the steps since they last ran, reaches this">,
    Option<"forecast", "forecast", "int64_t", "0",
           "Predict a skipped step's residual by the polynomial through "
           "the last forecast+1 computed ones (0: reuse the last)">
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CacheDeepFeaturesPass : Pass<"kiln-cache-deep-features", "mlir::ModuleOp"> {
  let summary = "Reuse a UNet's deeper levels across sampling steps";
  let description = [{
    In each `kiln.sample` region, finds the UNet's skip concatenations
    (`kiln.concat` of two feature maps along the channels) and computes the
    deeper levels' features that the outermost one (or, with `branch` = b,
    the b-th counted inwards) joins to its skip only on every
    `interval`-th step, from step 0 (DeepCache): the ops that only those
    features need move into an `scf.if`; the steps between take the
    features stored in a value the sample op carries, or with `forecast`
    = 1 or 2 the value at their index of the polynomial through the last 2
    or 3 computed ones (as kiln-cache-block-residuals forecasts). The first
    level (whose output is the skip) and the levels after the
    concatenation run every step.

    ```mlir
    %cat = kiln.concat %deep, %skip axis = 1 : ...
    // becomes
    %compute = arith.cmpi eq, (%step mod interval), 0
    %new:2 = scf.if %compute -> (tensor<2x128x32x32xf32>, tensor<2x128x32x32xf32>) {
      ... the deeper levels ...
      scf.yield %deep, %deep
    } else {
      scf.yield %stored, %stored
    }
    %cat = kiln.concat %new#0, %skip axis = 1 : ...
    kiln.yield %e, %new#1 : ...
    ```
  }];
  let options = [
    Option<"interval", "interval", "int64_t", "2",
           "Compute the deeper levels on every interval-th step">,
    Option<"branch", "branch", "int64_t", "0",
           "The skip concatenation whose deep input is cached, counted "
           "from the outermost (0)">,
    Option<"forecast", "forecast", "int64_t", "0",
           "Predict a skipped step's features by the polynomial through "
           "the last forecast+1 computed ones (0: reuse the last)">
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // KILN_PASSES_PASSES
