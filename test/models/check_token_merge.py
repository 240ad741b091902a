#!/usr/bin/python3
"""Checks token merging (kiln-merge-tokens and the kiln.token_* ops) against
a float64 numpy reference of the same algorithm.

usage: check_token_merge.py KILN_BIN_DIR RUNTIME_LIBRARY WORK_DIR

1. The ops alone (a kiln-dialect module compiled by kiln-compile): for
   seeded metrics, sizes and padding biases, kiln.token_match's
   destinations and kept tokens equal the reference's exactly, and
   kiln.token_merge's sizes sum to the original token count per entry (with
   the merged rows to 1e-5). Cases: a class token, padding (which merges
   only with padding while pairs of one kind last), padding interleaved
   with real tokens (every pair mixed, merged all the same), and the
   unmerge of the merged rows.
2. Proportional attention: kiln.attention over merged keys with log(size)
   added to their scores equals attention over the keys duplicated size
   times (a property of softmax), to 1e-5.
3. Whole encoders exported as ONNX graphs (seeded weights): a pre-LN
   encoder with a class token (ViT) and a post-LN one over a padded batch
   (BERT), compiled with --merge-tokens (constant and decreasing
   schedules), against the reference forward pass with the same merges.
   Outputs are of order 1; tolerance 2e-4. Without --merge-tokens, and
   with --merge-tokens=0, the output is bitwise the same. The same
   encoders with --merge-scope=attention (ToMe-SD: merged around each
   attention only, by the similarity of the rows its projections read).
4. The budget search (--accelerate=token-merge --quality-budget cos=0.99;
   check_token_prune.py runs it for pruning) on 8 calibration inputs: its choice is the fastest candidate its report
   lists within the budget, merges something, and keeps the budget on 8
   held-out inputs.

The reference's matching must not hinge on float rounding: a seed whose
choices are within 1e-4 of a tie (between an even token's two best
partners, or at the merge count's cut) is skipped for the next.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import Runtime, Session  # noqa: E402

PADDING = -1e4
MARGIN = 1e-4
ATOL = 2e-4
# Tokens merged around each attention by --merge-scope=attention.
BRANCH_R = 4


# --- reference --------------------------------------------------------------

def match(metric, bias, merged, protected=1):
    """Bipartite soft matching as kiln.token_match documents it; returns
    the destinations [B, N], the kept tokens [B, N - merged] and the
    smallest decision margin."""
    batch, tokens, _ = metric.shape
    norms = np.sqrt(np.maximum((metric ** 2).sum(-1, keepdims=True), 1e-30))
    unit = metric / norms
    scores = unit[:, 0::2] @ np.swapaxes(unit[:, 1::2], 1, 2)
    even = np.arange(0, tokens, 2)
    odd = np.arange(1, tokens, 2)
    if bias is not None:
        pad_even = (bias[:, 0::2] <= PADDING)[:, :, None]
        pad_odd = (bias[:, 1::2] <= PADDING)[:, None, :]
        scores = np.where(pad_even == pad_odd,
                          np.where(pad_even, 2.0, scores), scores - 4.0)
    unprotected = (even >= protected)[:, None] & (odd >= protected)[None, :]
    scores = np.where(unprotected[None], scores, -np.inf)
    destination = np.zeros((batch, tokens), np.int64)
    kept = np.zeros((batch, tokens - merged), np.int64)
    margin = np.inf
    for b in range(batch):
        best = scores[b].max(-1)
        partner = scores[b].argmax(-1)
        order = sorted(range(len(best)), key=lambda i: (-best[i], i))
        merges = np.zeros(len(best), bool)
        merges[order[:merged]] = True
        # Padding pairs tie exactly (at 2), which float32 keeps; cosines
        # must not come within MARGIN of a tie that decides something.
        for i, row in enumerate(scores[b]):
            finite = np.sort(row[np.isfinite(row)])
            if merges[i] and len(finite) > 1 and finite[-1] < 2.0:
                margin = min(margin, finite[-1] - finite[-2])
        if 0 < merged < len(order) and np.isfinite(best[order[merged]]):
            last, first_out = best[order[merged - 1]], best[order[merged]]
            if not last == first_out == 2.0:
                margin = min(margin, last - first_out)
        keeps = np.ones(tokens, bool)
        keeps[0::2] = ~merges
        slot = np.cumsum(keeps) - keeps
        for t in range(tokens):
            if keeps[t]:
                destination[b, t] = slot[t]
                kept[b, slot[t]] = t
            else:
                destination[b, t] = slot[2 * partner[t // 2] + 1]
    return destination, kept, margin


def merge(x, sizes, destination, slots):
    """Size-weighted average of the rows sharing a slot; empty slots 0."""
    batch, _, width = x.shape
    sums = np.zeros((batch, slots, width))
    totals = np.zeros((batch, slots))
    for b in range(batch):
        np.add.at(sums[b], destination[b], sizes[b][:, None] * x[b])
        np.add.at(totals[b], destination[b], sizes[b])
    rows = np.divide(sums, totals[:, :, None], out=np.zeros_like(sums),
                     where=totals[:, :, None] > 0)
    return rows, totals


def unmerge(x, destination):
    return np.take_along_axis(x, destination[:, :, None], axis=1)


def attention(q, kt, v, bias):
    scores = q @ kt + bias
    scores -= scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    return (weights / weights.sum(-1, keepdims=True)) @ v


# --- compiling and running --------------------------------------------------

def compile_model(kiln_bin, source, artifact, *options):
    result = subprocess.run(
        [os.path.join(kiln_bin, "kiln-compile"), source, "-o", artifact,
         *options], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"kiln-compile {source} {' '.join(options)} failed:\n"
                 f"{result.stderr[-3000:]}")
    return artifact


def tensor_type(array):
    element = {np.float32: "f32", np.int64: "i64"}[array.dtype.type]
    return f"tensor<{'x'.join(map(str, array.shape))}x{element}>"


def op_module(metric, sizes, bias, x, merged):
    """@main(metric, sizes, bias, x) -> (destination, kept, merged rows,
    merged sizes, the merged rows unmerged)."""
    batch, tokens, _ = metric.shape
    slots = tokens - merged
    f32 = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xf32>"
    i64 = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xi64>"
    width = x.shape[2]
    return f"""
func.func @main(%metric: {tensor_type(metric)}, %sizes: {tensor_type(sizes)},
                %bias: {tensor_type(bias)}, %x: {tensor_type(x)})
    -> ({i64(batch, tokens)}, {i64(batch, slots)}, {f32(batch, slots, width)},
        {f32(batch, slots)}, {f32(batch, tokens, width)}) {{
  %d, %k = kiln.token_match %metric bias %bias merged = {merged} protected = 1 : {tensor_type(metric)}, {tensor_type(bias)} -> {i64(batch, tokens)}, {i64(batch, slots)}
  %m, %s = kiln.token_merge %x, %sizes, %d : {tensor_type(x)}, {tensor_type(sizes)}, {i64(batch, tokens)} -> {f32(batch, slots, width)}, {f32(batch, slots)}
  %u = kiln.token_unmerge %m, %d : {f32(batch, slots, width)}, {i64(batch, tokens)} -> {f32(batch, tokens, width)}
  return %d, %k, %m, %s, %u : {i64(batch, tokens)}, {i64(batch, slots)}, {f32(batch, slots, width)}, {f32(batch, slots)}, {f32(batch, tokens, width)}
}}
"""


def check_ops(kiln_bin, runtime, work, failures):
    batch, tokens, depth, width = 3, 24, 8, 16
    # name: (merged, real tokens per entry (the rest padding), interleave:
    # every odd token padding, so that every pair is mixed)
    cases = {"class token": (6, None, False),
             "padding": (8, [24, 15, 6], False),
             "mixed pairs": (10, [24, 24, 24], True)}
    for name, (merged, lengths, interleave) in cases.items():
        for seed in range(100):
            rng = np.random.default_rng(seed)
            metric = rng.standard_normal((batch, tokens, depth)).astype(np.float32)
            sizes = rng.integers(1, 4, (batch, tokens)).astype(np.float32)
            bias = np.zeros((batch, tokens), np.float32)
            for b, length in enumerate(lengths or []):
                bias[b, length:] = PADDING
            if interleave:
                bias[:, 1::2] = PADDING
            x = rng.standard_normal((batch, tokens, width)).astype(np.float32)
            dest, kept, margin = match(metric.astype(np.float64), bias,
                                       merged)
            if margin > MARGIN:
                break
        source = os.path.join(work, f"ops-{name.replace(' ', '-')}.mlir")
        with open(source, "w") as f:
            f.write(op_module(metric, sizes, bias, x, merged))
        artifact = compile_model(kiln_bin, source, source[:-5] + ".so")
        session = Session(runtime, artifact, threads=2)
        got = session.run("main", [metric, sizes, bias, x], num_outputs=5)
        session.close()
        rows, totals = merge(x.astype(np.float64), sizes, dest,
                             tokens - merged)
        if not np.array_equal(got[0], dest):
            failures.append(f"ops {name}: destinations differ")
        if not np.array_equal(got[1], kept):
            failures.append(f"ops {name}: kept tokens differ")
        error = float(np.abs(got[2] - rows).max())
        if not error <= 1e-5:
            failures.append(f"ops {name}: merged rows off by {error:.2e}")
        if not np.array_equal(got[3].sum(1), sizes.sum(1)):
            failures.append(f"ops {name}: sizes sum to {got[3].sum(1)}, "
                            f"not {sizes.sum(1)}")
        if not np.array_equal(got[4], unmerge(got[2], got[0])):
            failures.append(f"ops {name}: unmerge is not a copy per token")
        merges = int((np.diff(np.sort(dest, 1), axis=1) == 0).sum())
        print(f"ops {name}: seed {seed}, {merges} tokens merged in "
              f"{batch} entries, merged rows to {error:.2e}")


def check_proportional_attention(kiln_bin, runtime, work, failures):
    """Attention over merged keys of sizes s with log(s) added to their
    scores against attention over each key repeated s times."""
    rng = np.random.default_rng(1)
    heads, queries, depth = 2, 5, 8
    sizes = np.array([1, 3, 2, 1, 4, 1], np.int64)
    keys, repeated = len(sizes), int(sizes.sum())
    q = rng.standard_normal((1, heads, queries, depth)).astype(np.float32)
    kt = rng.standard_normal((1, heads, depth, keys)).astype(np.float32)
    v = rng.standard_normal((1, heads, keys, depth)).astype(np.float32)
    bias = np.log(sizes).astype(np.float32).reshape(1, 1, 1, keys)
    kt_rep = np.repeat(kt, sizes, axis=3)
    v_rep = np.repeat(v, sizes, axis=2)
    t = lambda *shape: "tensor<" + "x".join(map(str, shape)) + "xf32>"
    source = os.path.join(work, "proportional.mlir")
    with open(source, "w") as f:
        f.write(f"""
func.func @main(%q: {t(1, heads, queries, depth)}, %kt: {t(1, heads, depth, keys)},
                %v: {t(1, heads, keys, depth)}, %bias: {t(1, 1, 1, keys)},
                %ktr: {t(1, heads, depth, repeated)},
                %vr: {t(1, heads, repeated, depth)})
    -> ({t(1, heads, queries, depth)}, {t(1, heads, queries, depth)}) {{
  %a = kiln.attention %q, %kt, %v mask %bias scale = 1.0 : {t(1, heads, queries, depth)}, {t(1, heads, depth, keys)}, {t(1, heads, keys, depth)}, {t(1, 1, 1, keys)} -> {t(1, heads, queries, depth)}
  %b = kiln.attention %q, %ktr, %vr scale = 1.0 : {t(1, heads, queries, depth)}, {t(1, heads, depth, repeated)}, {t(1, heads, repeated, depth)} -> {t(1, heads, queries, depth)}
  return %a, %b : {t(1, heads, queries, depth)}, {t(1, heads, queries, depth)}
}}
""")
    artifact = compile_model(kiln_bin, source, source[:-5] + ".so")
    session = Session(runtime, artifact, threads=1)
    merged, duplicated = session.run("main", [q, kt, v, bias, kt_rep, v_rep],
                                     num_outputs=2)
    session.close()
    error = float(np.abs(merged - duplicated).max())
    print(f"proportional attention: max difference {error:.2e}")
    if not error <= 1e-5:
        failures.append(f"proportional attention differs by {error:.2e}")


# --- encoders ---------------------------------------------------------------

class Encoder:
    """Seeded weights of a small encoder; its ONNX graph and a float64
    forward pass with token merging."""

    def __init__(self, seed, blocks, width, heads, post_ln):
        rng = np.random.default_rng(seed)
        self.blocks, self.width, self.heads = blocks, width, heads
        self.post_ln = post_ln
        self.weights = {}
        for k in range(blocks):
            for name, shape in (("wq", (width, width)), ("wk", (width, width)),
                                ("wv", (width, width)), ("wo", (width, width)),
                                ("w1", (width, 2 * width)),
                                ("w2", (2 * width, width))):
                self.weights[f"{name}{k}"] = (
                    rng.standard_normal(shape) / np.sqrt(shape[0])
                ).astype(np.float32)
            for name, size in (("bq", width), ("bk", width), ("bv", width),
                               ("bo", width), ("b1", 2 * width),
                               ("b2", width)):
                self.weights[f"{name}{k}"] = (
                    0.1 * rng.standard_normal(size)).astype(np.float32)
            for norm in ("n1", "n2"):
                self.weights[f"{norm}g{k}"] = (
                    1 + 0.1 * rng.standard_normal(width)).astype(np.float32)
                self.weights[f"{norm}b{k}"] = (
                    0.1 * rng.standard_normal(width)).astype(np.float32)
        self.weights["fg"] = np.ones(width, np.float32)
        self.weights["fb"] = np.zeros(width, np.float32)

    def graph(self, batch, tokens, masked, class_output=False):
        """The encoder as ONNX; its output every token, or with
        class_output the first token's row (as a classifier reads it)."""
        w, h = self.width, self.heads
        nodes, names = [], iter(range(10 ** 6))

        def node(op, inputs, **attributes):
            out = f"t{next(names)}"
            nodes.append(helper.make_node(op, inputs, [out], **attributes))
            return out

        def norm(x, g, b):
            return node("LayerNormalization", [x, g, b], axis=-1,
                        epsilon=1e-5)

        def heads_of(x, perm):
            return node("Transpose", [node("Reshape", [x, "split"])],
                        perm=perm)

        x = "x"
        mask = None
        if masked:
            inverse = node("Sub", ["one", node("Cast", ["mask"],
                                               to=TensorProto.FLOAT)])
            mask = node("Unsqueeze", [node("Mul", [inverse, "padding"]),
                                      "axes"])
        for k in range(self.blocks):
            n = x if self.post_ln else norm(x, f"n1g{k}", f"n1b{k}")
            proj = {p: node("Add", [node("MatMul", [n, f"w{p}{k}"]),
                                    f"b{p}{k}"]) for p in "qkv"}
            q = heads_of(proj["q"], [0, 2, 1, 3])
            kt = heads_of(proj["k"], [0, 2, 3, 1])
            v = heads_of(proj["v"], [0, 2, 1, 3])
            s = node("Mul", [node("MatMul", [q, kt]), "scale"])
            if mask:
                s = node("Add", [s, mask])
            a = node("MatMul", [node("Softmax", [s], axis=-1), v])
            a = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]),
                                 "join"])
            x = node("Add", [x, node("Add", [node("MatMul", [a, f"wo{k}"]),
                                             f"bo{k}"])])
            if self.post_ln:
                x = norm(x, f"n1g{k}", f"n1b{k}")
            m = x if self.post_ln else norm(x, f"n2g{k}", f"n2b{k}")
            f = node("Add", [node("MatMul", [m, f"w1{k}"]), f"b1{k}"])
            gelu = node("Mul", [node("Mul", [f, "half"]), node(
                "Add", [node("Erf", [node("Div", [f, "root2"])]), "one"])])
            x = node("Add", [x, node("Add", [node("MatMul", [gelu, f"w2{k}"]),
                                             f"b2{k}"])])
            if self.post_ln:
                x = norm(x, f"n2g{k}", f"n2b{k}")
        if not self.post_ln:
            x = norm(x, "fg", "fb")
        if class_output:
            x = node("Slice", [x, "first", "second", "axes1"])
        nodes.append(helper.make_node("Identity", [x], ["y"]))
        constants = dict(self.weights)
        constants.update({
            "split": np.array([batch, tokens, h, w // h], np.int64),
            "join": np.array([batch, tokens, w], np.int64),
            "scale": np.float32(1 / np.sqrt(w // h)), "one": np.float32(1),
            "half": np.float32(0.5), "root2": np.float32(np.sqrt(2)),
            "padding": np.float32(PADDING), "axes": np.array([1, 2], np.int64),
            "first": np.array([0], np.int64),
            "second": np.array([1], np.int64),
            "axes1": np.array([1], np.int64)})
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                [batch, tokens, w])]
        if masked:
            inputs.append(helper.make_tensor_value_info(
                "mask", TensorProto.INT64, [batch, tokens]))
        return helper.make_model(
            helper.make_graph(
                nodes, "encoder", inputs,
                [helper.make_tensor_value_info(
                    "y", TensorProto.FLOAT,
                    [batch, 1 if class_output else tokens, w])],
                [numpy_helper.from_array(np.asarray(v), k)
                 for k, v in constants.items()]),
            opset_imports=[helper.make_opsetid("", 17)])

    def forward(self, x, mask, schedule):
        """The output with schedule[k] tokens merged after block k, and the
        smallest decision margin of the matches."""

        def merging(k, q, key, bias, key_mask):
            if not schedule[k]:
                return None
            dest, kept, margin = match(key.mean(2), key_mask, schedule[k])
            return dest, kept, key.shape[1] - schedule[k], margin

        return self.reduced(x, mask, merging)

    def reduced(self, x, mask, reduce, branch_r=None):
        """The output with the tokens of block k reduced after its attention
        as reduce(k, q / sqrt(depth) [B, H, N, D], keys [B, N, H, D], the
        attention's key bias [B, N], the padding mask [B, N] or None) says:
        None, or (destination, kept, slots, margin); and the smallest
        margin. With branch_r, block k instead merges branch_r[k] tokens
        around its attention alone (--merge-scope=attention): the rows the
        projections read match by their own cosine, nothing protected, and
        the attention branch's output is unmerged for the residual add."""
        p = {k: v.astype(np.float64) for k, v in self.weights.items()}
        x = x.astype(np.float64)
        batch, tokens, w = x.shape
        h, depth = self.heads, w // self.heads
        key_mask = None if mask is None else (1 - mask) * PADDING
        sizes = np.ones((batch, tokens))
        chain, margin = [], np.inf

        def norm(y, g, b):
            mean = y.mean(-1, keepdims=True)
            var = ((y - mean) ** 2).mean(-1, keepdims=True)
            return (y - mean) / np.sqrt(var + 1e-5) * p[g] + p[b]

        for k in range(self.blocks):
            n = x if self.post_ln else norm(x, f"n1g{k}", f"n1b{k}")
            count = x.shape[1]
            block_mask = key_mask
            if branch_r and branch_r[k]:
                branch, branch_kept, m = match(n, key_mask, branch_r[k],
                                               protected=0)
                margin = min(margin, m)
                count -= branch_r[k]
                n, sizes = merge(n, np.ones((batch, n.shape[1])), branch,
                                 count)
                if key_mask is not None:
                    block_mask = np.take_along_axis(key_mask, branch_kept, 1)
            split = lambda y: y.reshape(batch, count, h, depth)
            q = split(n @ p[f"wq{k}"] + p[f"bq{k}"]).transpose(0, 2, 1, 3)
            key = split(n @ p[f"wk{k}"] + p[f"bk{k}"])
            v = split(n @ p[f"wv{k}"] + p[f"bv{k}"]).transpose(0, 2, 1, 3)
            with np.errstate(divide="ignore"):
                bias = np.log(sizes)
            if block_mask is not None:
                bias = bias + block_mask
            q = q / np.sqrt(depth)
            a = attention(q, key.transpose(0, 2, 3, 1), v,
                          bias[:, None, None, :])
            a = a.transpose(0, 2, 1, 3).reshape(batch, count, w)
            a = a @ p[f"wo{k}"] + p[f"bo{k}"]
            if branch_r and branch_r[k]:
                a = unmerge(a, branch)
                sizes = np.ones((batch, x.shape[1]))
            x = x + a
            if self.post_ln:
                x = norm(x, f"n1g{k}", f"n1b{k}")
            reduction = reduce(k, q, key, bias, key_mask)
            if reduction:
                dest, kept, slots, m = reduction
                margin = min(margin, m)
                x, sizes = merge(x, sizes, dest, slots)
                if key_mask is not None:
                    key_mask = np.take_along_axis(key_mask, kept, 1)
                chain.append(dest)
            m = x if self.post_ln else norm(x, f"n2g{k}", f"n2b{k}")
            f = m @ p[f"w1{k}"] + p[f"b1{k}"]
            from math import erf
            gelu = f * 0.5 * (1 + np.vectorize(erf)(f / np.sqrt(2)))
            x = x + gelu @ p[f"w2{k}"] + p[f"b2{k}"]
            if self.post_ln:
                x = norm(x, f"n2g{k}", f"n2b{k}")
        if not self.post_ln:
            x = norm(x, "fg", "fb")
        for dest in reversed(chain):
            x = unmerge(x, dest)
        return x, margin


def compile_plain(kiln_bin, runtime, folder, name, graph, inputs, identity,
                  failures):
    """Saves `graph` in `folder`; returns its path and Kiln's output on
    `inputs` as it is. Options `identity` that reduce nothing must leave
    that output bitwise the same."""
    path = os.path.join(folder, "model.onnx")
    onnx.save(graph, path)
    outputs = []
    for artifact, options in (("plain.so", []), ("identity.so", identity)):
        session = Session(runtime, compile_model(
            kiln_bin, path, os.path.join(folder, artifact), *options),
            threads=2)
        outputs.append(session.run("main", inputs)[0])
        session.close()
    if not np.array_equal(outputs[1], outputs[0]):
        failures.append(f"{name}: {' '.join(identity)} changes the output")
    return path, outputs[0]


def compare_reduced(label, got, expected, unreduced, what, failures):
    """Kiln's output `got` against the reference's `expected` (ATOL), and
    the reduction must move the output (from `unreduced`) by far more."""
    error = float(np.abs(got - expected).max())
    change = float(np.abs(expected - unreduced).max())
    print(f"{label}: max error {error:.2e}; {what} changes the output by "
          f"{change:.2e}")
    if not error <= ATOL:
        failures.append(f"{label}: max error {error:.2e}")
    if not change > 100 * ATOL:
        failures.append(f"{label}: {what} changed too little ({change:.2e}) "
                        "for the check to tell")


def schedule_of(blocks, r, decreasing):
    if not decreasing:
        return [r] * blocks
    return [2 * r * (blocks - 1 - k) // (blocks - 1) for k in range(blocks)]


def check_encoders(kiln_bin, runtime, work, failures):
    cases = [("vit", False, 1, 25, None, [(3, False), (2, True)]),
             ("bert", True, 2, 24, [24, 13], [(3, False), (2, True)])]
    blocks, width, heads = 3, 32, 4
    for name, post_ln, batch, tokens, lengths, schedules in cases:
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        for seed in range(100):
            encoder = Encoder(seed, blocks, width, heads, post_ln)
            rng = np.random.default_rng(1000 + seed)
            x = rng.standard_normal((batch, tokens, width)).astype(np.float32)
            mask = None
            if lengths:
                mask = np.zeros((batch, tokens), np.int64)
                for b, length in enumerate(lengths):
                    mask[b, :length] = 1
            margins = [encoder.forward(x, mask, schedule_of(blocks, r, d))[1]
                       for r, d in schedules]
            margins.append(encoder.reduced(x, mask, lambda *_: None,
                                           [BRANCH_R] * blocks)[1])
            if min(margins) > MARGIN:
                break
        inputs = [x] if mask is None else [x, mask]
        path, unmerged = compile_plain(kiln_bin, runtime, folder, name,
                                       encoder.graph(batch, tokens,
                                                     lengths is not None),
                                       inputs, ["--merge-tokens=0"], failures)
        reference_plain, _ = encoder.forward(x, mask, [0] * blocks)
        error = float(np.abs(unmerged - reference_plain).max())
        print(f"{name} (seed {seed}) unmerged: max error {error:.2e}")
        if not error <= ATOL:
            failures.append(f"{name} unmerged: max error {error:.2e}")
        for r, decreasing in schedules:
            schedule = schedule_of(blocks, r, decreasing)
            options = [f"--merge-tokens={r}"]
            if decreasing:
                options.append("--merge-schedule=decreasing")
            label = f"{name} {'decreasing' if decreasing else 'constant'} r={r}"
            artifact = compile_model(
                kiln_bin, path, os.path.join(folder, f"r{r}{decreasing}.so"),
                *options)
            session = Session(runtime, artifact, threads=2)
            got = session.run("main", inputs)[0]
            session.close()
            expected, _ = encoder.forward(x, mask, schedule)
            compare_reduced(f"{label} (blocks merge {schedule})", got,
                            expected, reference_plain, "merging", failures)
        # Around each attention only (ToMe-SD).
        label = f"{name} attention scope r={BRANCH_R}"
        session = Session(runtime, compile_model(
            kiln_bin, path, os.path.join(folder, "scoped.so"),
            f"--merge-tokens={BRANCH_R}", "--merge-scope=attention"),
            threads=2)
        got = session.run("main", inputs)[0]
        session.close()
        expected, _ = encoder.reduced(x, mask, lambda *_: None,
                                      [BRANCH_R] * blocks)
        compare_reduced(label, got, expected, reference_plain, "merging",
                        failures)


def write_sets(folder, arrays_per_set):
    """folder/set_KK/input_I.pb for each set's input arrays."""
    for k, arrays in enumerate(arrays_per_set):
        data = os.path.join(folder, f"set_{k:02d}")
        os.makedirs(data, exist_ok=True)
        for i, array in enumerate(arrays):
            with open(os.path.join(data, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(array).SerializeToString())


def check_search(kiln_bin, runtime, work, failures,
                 acceleration="token-merge", budget=0.99,
                 nothing=(("tokens", 0), ("schedule", "constant")),
                 class_output=False):
    """--accelerate=ACCELERATION on 8 calibration inputs; the choice keeps
    its cosine budget on 8 held-out ones, and is the report's fastest
    candidate within the budget (`nothing` where none is). The model's
    output: every token, or with class_output the first token's row."""
    folder = os.path.join(work, f"search-{acceleration}")
    os.makedirs(folder, exist_ok=True)
    # Large enough (about 5 ms a call) for merging to pay clearly over the
    # matching's own cost.
    batch, tokens, width, blocks = 1, 197, 128, 4
    encoder = Encoder(7, blocks, width, 4, post_ln=False)
    path = os.path.join(folder, "model.onnx")
    onnx.save(encoder.graph(batch, tokens, False, class_output), path)
    rng = np.random.default_rng(3)
    # Tokens near a few centres, as patches of one image are: merging has
    # pairs to find.
    centres = rng.standard_normal((8, width))

    def sample():
        picks = rng.integers(0, len(centres), tokens)
        noise = 0.3 * rng.standard_normal((tokens, width))
        return (centres[picks] + noise)[None].astype(np.float32)

    calibration = [[sample()] for _ in range(8)]
    held_out = [sample() for _ in range(8)]
    write_sets(os.path.join(folder, "calibration"), calibration)
    report_path = os.path.join(folder, "report.json")
    artifact = compile_model(
        kiln_bin, path, os.path.join(folder, "chosen.so"),
        f"--accelerate={acceleration}", f"--quality-budget=cos={budget}",
        "--calibration", os.path.join(folder, "calibration"),
        "--accelerate-report", report_path)
    with open(report_path) as f:
        report = json.load(f)
    chosen = report["chosen"]
    kept = [t for t in report["tried"] if t["within_budget"]
            and t["speed_up"] > 1.05]
    fastest = max(kept, key=lambda t: t["speed_up"], default=None)
    nothing = dict(nothing)
    expected = (nothing if fastest is None else
                {key: fastest[key] for key in nothing})
    if chosen != expected:
        failures.append(f"{acceleration} search chose {chosen}, its report's "
                        f"fastest candidate within the budget is {expected}")
    if chosen == nothing:
        failures.append(f"{acceleration} search chose nothing: the check "
                        "cannot tell")
    plain = Session(runtime, compile_model(
        kiln_bin, path, os.path.join(folder, "plain.so")), threads=2)
    session = Session(runtime, artifact, threads=2)
    cosines = []
    for x in held_out:
        a = session.run("main", [x])[0].ravel().astype(np.float64)
        b = plain.run("main", [x])[0].ravel().astype(np.float64)
        cosines.append(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    session.close()
    plain.close()
    print(f"{acceleration} search: {len(report['tried'])} candidates, "
          f"chose {chosen}; "
          f"held-out cosine {np.mean(cosines):.4f} (budget {budget})")
    if not np.mean(cosines) >= budget:
        failures.append(f"{acceleration} search: held-out cosine "
                        f"{np.mean(cosines):.4f} "
                        f"below the budget {budget}")


def main():
    kiln_bin, library, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(library)
    failures = []
    check_ops(kiln_bin, runtime, work, failures)
    check_proportional_attention(kiln_bin, runtime, work, failures)
    check_encoders(kiln_bin, runtime, work, failures)
    check_search(kiln_bin, runtime, work, failures)
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
