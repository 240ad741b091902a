#!/usr/bin/python3
"""Writes ONNX attention subgraphs in exporters' spellings, with inputs and
expected outputs computed by numpy in float64.

usage: make_attention_models.py CASE OUTPUT_DIR

Writes OUTPUT_DIR/model.onnx, input_N.pb and output_0.pb. Every case is
MatMul(Q, K^T), a scale, a mask, Softmax over the last axis and MatMul with
V, sized so the kernel meets ragged query blocks, several key blocks and,
in `padded`, rows whose first key blocks are all masked.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def scalar(name, value):
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


def unmasked(rng, h, queries, keys, depth, value_depth, divide):
    """Q, K^T and V as inputs, scores scaled by 1/sqrt(depth) (as a Div by
    sqrt(depth) or a Mul by its inverse), no mask."""
    q = rng.standard_normal((1, h, queries, depth)).astype(np.float32)
    kt = rng.standard_normal((1, h, depth, keys)).astype(np.float32)
    v = rng.standard_normal((1, h, keys, value_depth)).astype(np.float32)
    if divide:
        scale = helper.make_node("Div", ["s", "c"], ["ss"])
        init = [scalar("c", np.sqrt(depth))]
    else:
        scale = helper.make_node("Mul", ["c", "s"], ["ss"])
        init = [scalar("c", 1 / np.sqrt(depth))]
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        scale,
        helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    ref = softmax(q.astype(np.float64) @ kt / np.sqrt(depth)) @ v
    return nodes, {"q": q, "kt": kt, "v": v}, init, ref


def added_mask(rng, h, depth, mask):
    """Q, K^T and V of `h` heads for the `[B, 1, 1, S]` padding `mask`,
    scores divided by sqrt(depth), then the mask added (eager BERT's and
    transformers' spelling)."""
    b, s = mask.shape[0], mask.shape[-1]
    q, k, v = (rng.standard_normal((b, h, s, depth)).astype(np.float32)
               for _ in range(3))
    kt = k.transpose(0, 1, 3, 2).copy()
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Div", ["s", "sqrt_d"], ["sd"]),
        helper.make_node("Add", ["sd", "mask"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["out"]),
    ]
    inputs = {"q": q, "kt": kt, "v": v, "mask": mask}
    init = [scalar("sqrt_d", np.sqrt(depth))]
    ref = softmax(q.astype(np.float64) @ kt / np.sqrt(depth) + mask) @ v
    return nodes, inputs, init, ref


def make_case(case, rng):
    """Returns (nodes, inputs {name: array}, initializers, reference)."""
    if case == "bert":
        # Eager BERT: scores / sqrt(d) + (1 - attention_mask) * -10000.
        b, h, s, d = 2, 3, 37, 16
        mask = np.zeros((b, 1, 1, s), np.float32)
        mask[1, ..., 30:] = -10000.0
        return added_mask(rng, h, d, mask)
    if case == "lowest":
        # transformers' padding mask: (1 - attention_mask) * float32 min
        # added, batch entry 1 wholly padded. Scaled by 1/4 in the exponent,
        # the mask is divided by it, which overflows: it must stay finite,
        # so entry 1's rows average all their keys, as numpy's do (the
        # scores vanish beside the minimum).
        b, h, s, d = 2, 2, 20, 16
        mask = np.zeros((b, 1, 1, s), np.float32)
        mask[0, ..., 15:] = np.finfo(np.float32).min
        mask[1] = np.finfo(np.float32).min
        return added_mask(rng, h, d, mask)
    if case == "causal":
        # GPT-2: scores * 1/sqrt(d), Where(future, -inf, scores), with more
        # keys than one block holds.
        h, s, d = 2, 300, 64
        q, k, v = (rng.standard_normal((1, h, s, d)).astype(np.float32)
                   for _ in range(3))
        kt = k.transpose(0, 1, 3, 2).copy()
        future = np.triu(np.ones((s, s), bool), 1)[None, None]
        nodes = [
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Mul", ["s", "inv_sqrt_d"], ["ss"]),
            helper.make_node("Where", ["future", "neg_inf", "ss"], ["sm"]),
            helper.make_node("Softmax", ["sm"], ["p"], axis=3),
            helper.make_node("MatMul", ["p", "v"], ["out"]),
        ]
        inputs = {"q": q, "kt": kt, "v": v}
        init = [scalar("inv_sqrt_d", 1 / np.sqrt(d)),
                scalar("neg_inf", -np.inf),
                numpy_helper.from_array(future, "future")]
        scores = q.astype(np.float64) @ kt / np.sqrt(d)
        ref = softmax(np.where(future, -np.inf, scores)) @ v
        return nodes, inputs, init, ref
    if case == "padded":
        # Left padding given at run time as a boolean keep-mask:
        # Where(keep, scores, -inf). Batch entry 0 masks its first 520 keys,
        # so every row sees two all-masked blocks of keys before any other.
        b, h, s, d = 2, 2, 600, 32
        q, k, v = (rng.standard_normal((b, h, s, d)).astype(np.float32)
                   for _ in range(3))
        kt = k.transpose(0, 1, 3, 2).copy()
        keep = np.ones((b, 1, 1, s), bool)
        keep[0, ..., :520] = False
        nodes = [
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Mul", ["s", "scale"], ["ss"]),
            helper.make_node("Where", ["keep", "ss", "neg_inf"], ["sm"]),
            helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["out"]),
        ]
        inputs = {"q": q, "kt": kt, "v": v, "keep": keep}
        init = [scalar("scale", 1 / np.sqrt(d)), scalar("neg_inf", -np.inf)]
        scores = q.astype(np.float64) @ kt / np.sqrt(d)
        ref = softmax(np.where(keep, scores, -np.inf)) @ v
        return nodes, inputs, init, ref
    if case == "minfill":
        # transformers' masked_fill with the float32 minimum instead of -inf:
        # Where(keep, scores, min), a causal keep-mask given at run time.
        h, s, d = 3, 40, 8
        q, k, v = (rng.standard_normal((1, h, s, d)).astype(np.float32)
                   for _ in range(3))
        kt = k.transpose(0, 1, 3, 2).copy()
        keep = np.tril(np.ones((s, s), bool))[None, None]
        lowest = np.finfo(np.float32).min
        nodes = [
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Div", ["s", "sqrt_d"], ["ss"]),
            helper.make_node("Where", ["keep", "ss", "lowest"], ["sm"]),
            helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["out"]),
        ]
        inputs = {"q": q, "kt": kt, "v": v, "keep": keep}
        init = [scalar("sqrt_d", np.sqrt(d)), scalar("lowest", lowest)]
        scores = q.astype(np.float64) @ kt / np.sqrt(d)
        ref = softmax(np.where(keep, scores, lowest)) @ v
        return nodes, inputs, init, ref
    if case == "heads":
        # The whole head split and merge around attention, as exporters
        # write it: Reshape and Transpose of each projection, the inverse
        # after, for two batch entries.
        b, s, h, d = 2, 37, 3, 16
        x = {n: rng.standard_normal((b, s, h * d)).astype(np.float32)
             for n in ("q_in", "k_in", "v_in")}
        split = numpy_helper.from_array(np.array([b, s, h, d], np.int64),
                                        "split")
        merge = numpy_helper.from_array(np.array([b, s, h * d], np.int64),
                                        "merge")
        nodes = [
            helper.make_node("Reshape", ["q_in", "split"], ["q4"]),
            helper.make_node("Transpose", ["q4"], ["q"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["k_in", "split"], ["k4"]),
            helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
            helper.make_node("Reshape", ["v_in", "split"], ["v4"]),
            helper.make_node("Transpose", ["v4"], ["v"], perm=[0, 2, 1, 3]),
            helper.make_node("MatMul", ["q", "kt"], ["s"]),
            helper.make_node("Div", ["s", "sqrt_d"], ["ss"]),
            helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["o"]),
            helper.make_node("Transpose", ["o"], ["o4"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["o4", "merge"], ["out"]),
        ]
        init = [scalar("sqrt_d", np.sqrt(d)), split, merge]
        q, k, v = (x[n].astype(np.float64).reshape(b, s, h, d)
                   .transpose(0, 2, 1, 3) for n in ("q_in", "k_in", "v_in"))
        o = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)) @ v
        ref = o.transpose(0, 2, 1, 3).reshape(b, s, h * d)
        return nodes, x, init, ref
    if case == "cross":
        # Cross-attention (a denoiser's text conditioning): 5 queries over 77
        # keys whose values are wider than the queries; scale as Mul.
        return unmasked(rng, h=4, queries=5, keys=77, depth=40,
                        value_depth=24, divide=False)
    if case == "decode":
        # One new token against 300 cached keys (GPT-2 decoding with a KV
        # cache), in two blocks of keys; scale as Div.
        return unmasked(rng, h=12, queries=1, keys=300, depth=64,
                        value_depth=64, divide=True)
    if case == "sdpa":
        # torch.onnx's scaled_dot_product_attention: Q and K^T each times
        # sqrt(scale), then an additive float mask.
        h, s, d = 4, 50, 24
        q, k, v = (rng.standard_normal((1, h, s, d)).astype(np.float32)
                   for _ in range(3))
        kt = k.transpose(0, 1, 3, 2).copy()
        mask = (rng.standard_normal((s, s)) * 2).astype(np.float32)
        root = np.float32(np.sqrt(1 / np.sqrt(d)))
        nodes = [
            helper.make_node("Mul", ["q", "root"], ["qs"]),
            helper.make_node("Mul", ["kt", "root"], ["ks"]),
            helper.make_node("MatMul", ["qs", "ks"], ["s"]),
            helper.make_node("Add", ["s", "mask"], ["sm"]),
            helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["out"]),
        ]
        inputs = {"q": q, "kt": kt, "v": v, "mask": mask}
        init = [scalar("root", root)]
        ref = softmax(q.astype(np.float64) @ kt / np.sqrt(d) + mask) @ v
        return nodes, inputs, init, ref
    raise SystemExit(
        f"unknown case {case!r} (bert, causal, padded, minfill, heads, "
        "cross, decode, sdpa)")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    case, out_dir = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(7)
    nodes, inputs, init, ref = make_case(case, rng)
    elem = {np.dtype(np.float32): TensorProto.FLOAT,
            np.dtype(bool): TensorProto.BOOL}
    graph_inputs = [helper.make_tensor_value_info(n, elem[a.dtype], a.shape)
                    for n, a in inputs.items()]
    ref = ref.astype(np.float32)
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, ref.shape)
    graph = helper.make_graph(nodes, case, graph_inputs, [output],
                              initializer=init)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    os.makedirs(out_dir, exist_ok=True)
    onnx.save(model, os.path.join(out_dir, "model.onnx"))
    for i, (name, array) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(array, name),
                         os.path.join(out_dir, f"input_{i}.pb"))
    onnx.save_tensor(numpy_helper.from_array(ref, "out"),
                     os.path.join(out_dir, "output_0.pb"))


if __name__ == "__main__":
    main()
