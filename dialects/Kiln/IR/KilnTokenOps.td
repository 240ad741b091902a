//===- KilnTokenOps.td - token merging ops -----------------*- tablegen -*-===//
//
// Fewer tokens inside a transformer. kiln-merge-tokens matches the tokens
// of a block's residual stream by the similarity of their keys (ToMe),
// kiln-prune-tokens keeps the most important ones and fuses the rest into
// one (EViT); both average the tokens that share a slot and copy merged
// tokens back to their sources where an output needs every token.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_TOKEN_OPS
#define KILN_DIALECT_KILN_TOKEN_OPS

def Kiln_TokenMatchOp : Kiln_Op<"token_match", [Pure]> {
  let summary = "bipartite soft matching of a sequence's tokens (ToMe)";
  let description = [{
    Chooses which `merged` tokens of each batch entry's `N` merge into
    another, by the cosine similarity of their `metric` rows (`[B, N, D]`,
    the keys averaged over heads). The even tokens are matched against the
    odd ones: each even token's partner is its most similar odd token, and
    the `merged` even tokens with the most similar partners merge into them
    (ties to the lower index). The other tokens keep their order, so the
    merged sequence of `N - merged` slots starts with the first kept token.

    The first `protected` tokens (a class token) never merge, in either
    role. With `key_bias` (the attention mask added to each key's scores,
    `[B, N]`), keys at -1e4 or less are padding: padding pairs come before
    any other (their merge costs nothing), and a pair of a padding and a
    real token only after every pair of one kind, so that such a pair
    merges only when fewer than `merged` pairs of one kind exist (never with
    padding at the end of the sequence and `merged` below `N / 2 - 1`).

    `destination[b, n]` is the slot token `n` goes to (`[B, N]`);
    `kept[b, s]` the token slot `s` was kept from (`[B, N - merged]`).
    `merged` is at most `(N - protected) / 2`.

    ```mlir
    %dst, %kept = kiln.token_match %metric merged = 8 protected = 1 : tensor<1x197x64xf32> -> tensor<1x197xi64>, tensor<1x189xi64>
    %d2, %k2 = kiln.token_match %m bias %mask merged = 4 protected = 1 : tensor<2x128x32xf32>, tensor<2x128xf32> -> tensor<2x128xi64>, tensor<2x124xi64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$metric,
                       Optional<Kiln_FloatTensor>:$key_bias, I64Attr:$merged,
                       I64Attr:$protected_prefix);
  let results = (outs Kiln_IndexTensor:$destination, Kiln_IndexTensor:$kept);
  let assemblyFormat = [{
    $metric (`bias` $key_bias^)? `merged` `=` $merged `protected` `=`
    $protected_prefix attr-dict `:` type($metric) (`,` type($key_bias)^)?
    `->` type($destination) `,` type($kept)
  }];
  let hasVerifier = 1;
}

def Kiln_TokenSelectOp : Kiln_Op<"token_select", [Pure]> {
  let summary = "keep the most important tokens, fuse the others (EViT)";
  let description = [{
    Ranks each batch entry's unprotected tokens by `importance` (`[B, N]`,
    higher first, ties to the lower index): the first `protected` tokens (a
    class token) and the `kept` best of the others keep slots of their own,
    in their order in the sequence. Every other token goes to one fused
    slot after them, slot `protected + kept`.

    With `key_bias` (the attention mask added to each key's scores,
    `[B, N]`), keys at -1e4 or less are padding: they rank after every real
    token, and those not kept go to a second extra slot of their own, so
    that padding never mixes into the fused token.

    `destination[b, n]` is the slot token `n` goes to (`[B, N]`);
    `kept[b, s]` a token in slot `s` (the last one; 0 for an extra slot no
    token reached), `[B, S]` with `S = protected + kept + 1`, plus 1 with
    `key_bias`. `S` is at most `N`.

    ```mlir
    %dst, %kept = kiln.token_select %attn kept = 137 protected = 1 : tensor<1x197xf32> -> tensor<1x197xi64>, tensor<1x139xi64>
    %d2, %k2 = kiln.token_select %norms bias %mask kept = 89 protected = 0 : tensor<2x128xf32>, tensor<2x128xf32> -> tensor<2x128xi64>, tensor<2x91xi64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$importance,
                       Optional<Kiln_FloatTensor>:$key_bias, I64Attr:$kept,
                       I64Attr:$protected_prefix);
  let results = (outs Kiln_IndexTensor:$destination,
                      Kiln_IndexTensor:$kept_tokens);
  let assemblyFormat = [{
    $importance (`bias` $key_bias^)? `kept` `=` $kept `protected` `=`
    $protected_prefix attr-dict `:` type($importance) (`,` type($key_bias)^)?
    `->` type($destination) `,` type($kept_tokens)
  }];
  let hasVerifier = 1;
}

def Kiln_TokenMergeOp : Kiln_Op<"token_merge", [Pure]> {
  let summary = "size-weighted average of the tokens that share a slot";
  let description = [{
    `result[b, s] = sum(sizes[b, n] * input[b, n]) / result_sizes[b, s]`
    over the tokens `n` with `destination[b, n] = s`, and `result_sizes[b,
    s]` the sum of their sizes (a slot no token reaches is zeros of size
    0). `input`
    is `[B, N, C]`, `sizes` and `destination` (from kiln.token_match)
    `[B, N]`; the result has `M` slots. Destinations outside `[0, M)` are
    clamped.

    ```mlir
    %x2, %s2 = kiln.token_merge %x, %sizes, %dst : tensor<1x197x384xf32>, tensor<1x197xf32>, tensor<1x197xi64> -> tensor<1x189x384xf32>, tensor<1x189xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$sizes,
                       Kiln_IndexTensor:$destination);
  let results = (outs Kiln_FloatTensor:$result,
                      Kiln_FloatTensor:$result_sizes);
  let assemblyFormat = [{
    $input `,` $sizes `,` $destination attr-dict `:` type($input) `,`
    type($sizes) `,` type($destination) `->` type($result) `,`
    type($result_sizes)
  }];
  let hasVerifier = 1;
}

def Kiln_TokenUnmergeOp : Kiln_Op<"token_unmerge", [Pure]> {
  let summary = "copy each merged token back to the tokens it merged";
  let description = [{
    `result[b, n] = input[b, destination[b, n]]`: `input` is `[B, M, C]`,
    `destination` `[B, N]` (from kiln.token_match), the result `[B, N, C]`.
    Destinations outside `[0, M)` are clamped.

    ```mlir
    %y = kiln.token_unmerge %x2, %dst : tensor<1x189x384xf32>, tensor<1x197xi64> -> tensor<1x197x384xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       Kiln_IndexTensor:$destination);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $destination attr-dict `:` type($input) `,`
    type($destination) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_TOKEN_OPS
