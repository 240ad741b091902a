#!/usr/bin/python3
"""Checks token pruning (kiln-prune-tokens and kiln.token_select) against a
float64 numpy reference of the same algorithm (EViT with a size-weighted
fused token).

usage: check_token_prune.py KILN_BIN_DIR RUNTIME_LIBRARY WORK_DIR

1. kiln.token_select alone: for seeded importances, its destinations and
   kept tokens equal the reference's exactly. Cases: a class token,
   padding (ranked last, fused into a slot of its own), and no protected
   token.
2. Whole encoders exported as ONNX graphs (seeded weights, as in
   check_token_merge.py): a pre-LN encoder with a class token (ViT) pruned
   by the class token's attention, and a post-LN one over a padded batch
   (BERT) pruned by its attention and by key norms, against the reference
   forward pass with the same pruning. Outputs are of order 1; tolerance
   2e-4, where pruning moves the output by far more. With a keep rate of
   1 the output is bitwise the unpruned one.
3. The budget search (--accelerate=token-prune --quality-budget cos=0.99),
   as check_token_merge.py runs it for merging, on an encoder whose output
   is its class token's row (pruning's use: a classifier; every token's
   row would be the fused token's for each pruned one): the choice is the fastest
   candidate its report lists within the budget, prunes something, and
   keeps the budget on held-out inputs.

A seed whose ranking comes within 1e-4 of a tie at the cut is skipped for
the next, so that the check does not hinge on float rounding.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_token_merge import (MARGIN, PADDING, Encoder,  # noqa: E402
                               check_search, compare_reduced, compile_model,
                               compile_plain, tensor_type)
from kiln_runtime import Runtime, Session  # noqa: E402


def select(importance, bias, keep, protected):
    """kiln.token_select as it documents itself: the destinations [B, N],
    the kept tokens [B, S] and the smallest margin at the cut."""
    batch, tokens = importance.shape
    score = importance.astype(np.float64).copy()
    padding = (np.zeros_like(score, bool) if bias is None
               else bias <= PADDING)
    score[padding] = -np.inf
    score[:, :protected] = np.inf
    cut = protected + keep
    slots = cut + (1 if bias is None else 2)
    destination = np.zeros((batch, tokens), np.int64)
    kept = np.zeros((batch, slots), np.int64)
    margin = np.inf
    for b in range(batch):
        order = sorted(range(tokens), key=lambda i: (-score[b, i], i))
        if cut < tokens:
            last, first_out = score[b, order[cut - 1]], score[b, order[cut]]
            if np.isfinite(last) and np.isfinite(first_out):
                margin = min(margin, last - first_out)
        keeps = np.zeros(tokens, bool)
        keeps[order[:cut]] = True
        count = 0
        for t in range(tokens):
            if keeps[t]:
                slot = count
                count += 1
            else:
                slot = cut + 1 if padding[b, t] else cut
            destination[b, t] = slot
            kept[b, slot] = t
    return destination, kept, slots, margin


def class_attention(q, key, bias):
    """The first query's attention over the keys, averaged over heads."""
    scores = q[:, :, :1] @ key.transpose(0, 2, 3, 1) + bias[:, None, None, :]
    scores -= scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(-1, keepdims=True)).mean((1, 2))


def key_norms(key):
    return (key.mean(2) ** 2).sum(-1)


def op_module(importance, bias, keep, protected, slots):
    batch, tokens = importance.shape
    i64 = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xi64>"
    bias_use = "" if bias is None else f" bias %bias"
    bias_type = "" if bias is None else f", {tensor_type(bias)}"
    return f"""
func.func @main(%importance: {tensor_type(importance)}, %bias: {tensor_type(importance)})
    -> ({i64(batch, tokens)}, {i64(batch, slots)}) {{
  %d, %k = kiln.token_select %importance{bias_use} kept = {keep} protected = {protected} : {tensor_type(importance)}{bias_type} -> {i64(batch, tokens)}, {i64(batch, slots)}
  return %d, %k : {i64(batch, tokens)}, {i64(batch, slots)}
}}
"""


def check_ops(kiln_bin, runtime, work, failures):
    batch, tokens = 3, 24
    # name: (kept, protected, real tokens per entry or None for no bias)
    cases = {"class token": (9, 1, None),
             "padding": (10, 1, [24, 15, 6]),
             "no class token": (12, 0, [24, 20, 3])}
    for name, (keep, protected, lengths) in cases.items():
        rng = np.random.default_rng(0)
        importance = rng.random((batch, tokens)).astype(np.float32)
        bias = np.zeros((batch, tokens), np.float32)
        for b, length in enumerate(lengths or []):
            bias[b, length:] = PADDING
        # Ties (the same importance twice) go to the lower index.
        importance[:, 5] = importance[:, 7]
        dest, kept, slots, _ = select(importance, None if lengths is None
                                      else bias, keep, protected)
        source = os.path.join(work, f"ops-{name.replace(' ', '-')}.mlir")
        with open(source, "w") as f:
            f.write(op_module(importance, None if lengths is None else bias,
                              keep, protected, slots))
        artifact = compile_model(kiln_bin, source, source[:-5] + ".so")
        session = Session(runtime, artifact, threads=2)
        got = session.run("main", [importance, bias], num_outputs=2)
        session.close()
        if not np.array_equal(got[0], dest):
            failures.append(f"ops {name}: destinations differ")
        if not np.array_equal(got[1], kept):
            failures.append(f"ops {name}: kept tokens differ")
        print(f"ops {name}: {slots} slots for {tokens} tokens, "
              f"fused slots hold {(dest >= protected + keep).sum(1)}")


def pruning(rule, protected):
    """A reduce callback for Encoder.reduced: rule(k, count) tokens kept
    besides the protected ones (None: no pruning), ranked by class
    attention (protected = 1) or key norms (protected = 0)."""
    def reduce(k, q, key, bias, key_mask):
        keep = rule(k, key.shape[1] - protected)
        if keep is None:
            return None
        importance = (class_attention(q, key, bias) if protected
                      else key_norms(key))
        return select(importance, key_mask, keep, protected)
    return reduce


def check_encoders(kiln_bin, runtime, work, failures):
    blocks, width, heads = 3, 32, 4
    at_rate = lambda rate, where: (
        lambda k, n: int(np.ceil(rate * n)) if k in where else None)
    per_block = lambda keeps: (
        lambda k, n: keeps[k] if keeps[k] >= 0 else None)
    # name, post-LN, batch, tokens, real tokens per entry, [(label,
    # options, keep rule, protected)]
    cases = [
        ("vit", False, 1, 25, None,
         [("rate 0.5 in blocks 0 and 2",
           ["--prune-tokens=0.5", "--prune-blocks=0,2"],
           at_rate(0.5, (0, 2)), 1)]),
        ("bert", True, 2, 24, [24, 13],
         [("rate 0.6 in blocks 0 and 1",
           ["--prune-tokens=0.6", "--prune-blocks=0,1"],
           at_rate(0.6, (0, 1)), 1),
          ("key norms, 12 then 6",
           ["--prune-tokens-per-block=12,-1,6", "--prune-importance=key-norm"],
           per_block([12, -1, 6]), 0)])]
    for name, post_ln, batch, tokens, lengths, variants in cases:
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        mask = None
        if lengths:
            mask = np.zeros((batch, tokens), np.int64)
            for b, length in enumerate(lengths):
                mask[b, :length] = 1
        for seed in range(100):
            encoder = Encoder(seed, blocks, width, heads, post_ln)
            rng = np.random.default_rng(1000 + seed)
            x = rng.standard_normal((batch, tokens, width)).astype(np.float32)
            margins = [encoder.reduced(x, mask, pruning(rule, protected))[1]
                       for _, _, rule, protected in variants]
            if min(margins) > MARGIN:
                break
        inputs = [x] if mask is None else [x, mask]
        path, _ = compile_plain(
            kiln_bin, runtime, folder, name,
            encoder.graph(batch, tokens, lengths is not None), inputs,
            ["--prune-tokens=1", "--prune-blocks=0,1,2"], failures)
        reference_plain, _ = encoder.reduced(x, mask, lambda *_: None)
        for index, (label, options, rule, protected) in enumerate(variants):
            label = f"{name} {label}"
            artifact = compile_model(
                kiln_bin, path, os.path.join(folder, f"pruned{index}.so"),
                *options)
            session = Session(runtime, artifact, threads=2)
            got = session.run("main", inputs)[0]
            session.close()
            expected, _ = encoder.reduced(x, mask, pruning(rule, protected))
            compare_reduced(f"{label} (seed {seed})", got, expected,
                            reference_plain, "pruning", failures)


def main():
    kiln_bin, library, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(library)
    failures = []
    check_ops(kiln_bin, runtime, work, failures)
    check_encoders(kiln_bin, runtime, work, failures)
    check_search(kiln_bin, runtime, work, failures, "token-prune", 0.99,
                 (("keep_rate", 1.0), ("blocks", "none")), class_output=True)
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
