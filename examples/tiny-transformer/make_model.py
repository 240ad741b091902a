#!/usr/bin/python3
"""Builds Kiln's bundled example: one pre-LayerNorm transformer encoder block.

The graph is spelled the way exporters spell it: LayerNorm decomposed into
ReduceMean/Sub/Pow/Sqrt/Div, two-head self-attention with Reshape/Transpose
and a scaled Softmax, an erf-GELU MLP, and residual adds. Shapes: sequence 16,
model width 64, 2 heads, MLP width 256; weights are random (fixed seed).

Writes model.onnx, input_0.pb and output_0.pb next to this script. The
expected output is computed here with numpy, independently of Kiln.

usage: /usr/bin/python3 make_model.py   (needs python3-onnx and python3-numpy)
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ, WIDTH, HEADS, MLP = 16, 64, 2, 256
HEAD = WIDTH // HEADS
EPS = 1e-5


def make_weights(rng):
    def dense(rows, cols):
        return (rng.standard_normal((rows, cols)) / math.sqrt(rows)).astype(np.float32)

    def vector(n, scale=0.1):
        return (rng.standard_normal(n) * scale).astype(np.float32)

    return {
        "ln1_scale": 1 + vector(WIDTH), "ln1_bias": vector(WIDTH),
        "w_qkv": dense(WIDTH, 3 * WIDTH), "b_qkv": vector(3 * WIDTH),
        "w_out": dense(WIDTH, WIDTH), "b_out": vector(WIDTH),
        "ln2_scale": 1 + vector(WIDTH), "ln2_bias": vector(WIDTH),
        "w_up": dense(WIDTH, MLP), "b_up": vector(MLP),
        "w_down": dense(MLP, WIDTH), "b_down": vector(WIDTH),
    }


class GraphBuilder:
    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def const(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, name, **attrs):
        self.count += 1
        output = f"{name}_out"
        self.nodes.append(helper.make_node(op_type, inputs, [output],
                                           name=name, **attrs))
        return output


def layer_norm(g, x, scale, bias, prefix):
    mean = g.op("ReduceMean", [x], f"{prefix}/mean", axes=[-1])
    centered = g.op("Sub", [x, mean], f"{prefix}/center")
    squared = g.op("Pow", [centered, g.const(f"{prefix}/two", np.float32(2))],
                   f"{prefix}/square")
    variance = g.op("ReduceMean", [squared], f"{prefix}/variance", axes=[-1])
    shifted = g.op("Add", [variance, g.const(f"{prefix}/eps", np.float32(EPS))],
                   f"{prefix}/add_eps")
    std = g.op("Sqrt", [shifted], f"{prefix}/std")
    normed = g.op("Div", [centered, std], f"{prefix}/normalize")
    scaled = g.op("Mul", [normed, scale], f"{prefix}/scale")
    return g.op("Add", [scaled, bias], f"{prefix}/shift")


def build_graph(weights):
    g = GraphBuilder()
    w = {name: g.const(name, value) for name, value in weights.items()}
    x = "x"
    h = layer_norm(g, x, w["ln1_scale"], w["ln1_bias"], "ln1")
    qkv = g.op("Add", [g.op("MatMul", [h, w["w_qkv"]], "attn/qkv_proj"),
                       w["b_qkv"]], "attn/qkv_bias")
    heads = g.op("Reshape", [qkv, g.const("attn/split_shape",
                                          np.array([SEQ, 3, HEADS, HEAD], np.int64))],
                 "attn/split_heads")
    # [3, heads, seq, head]
    per_head = g.op("Transpose", [heads], "attn/heads_first", perm=[1, 2, 0, 3])
    q, k, v = (g.op("Gather", [per_head, g.const(f"attn/{n}_index", np.int64(i))],
                    f"attn/take_{n}", axis=0) for i, n in enumerate("qkv"))
    k_t = g.op("Transpose", [k], "attn/k_transpose", perm=[0, 2, 1])
    scores = g.op("MatMul", [q, k_t], "attn/scores")
    scaled = g.op("Mul", [scores, g.const("attn/scale",
                                          np.float32(1 / math.sqrt(HEAD)))],
                  "attn/scale_scores")
    probs = g.op("Softmax", [scaled], "attn/softmax", axis=-1)
    context = g.op("MatMul", [probs, v], "attn/context")
    merged = g.op("Reshape", [g.op("Transpose", [context], "attn/seq_first",
                                   perm=[1, 0, 2]),
                              g.const("attn/merge_shape",
                                      np.array([SEQ, WIDTH], np.int64))],
                  "attn/merge_heads")
    attn = g.op("Gemm", [merged, w["w_out"], w["b_out"]], "attn/out_proj")
    x = g.op("Add", [x, attn], "attn/residual")

    h = layer_norm(g, x, w["ln2_scale"], w["ln2_bias"], "ln2")
    up = g.op("Add", [g.op("MatMul", [h, w["w_up"]], "mlp/up_proj"), w["b_up"]],
              "mlp/up_bias")
    # GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))
    erf = g.op("Erf", [g.op("Div", [up, g.const("mlp/sqrt2", np.float32(math.sqrt(2)))],
                            "mlp/gelu_div")], "mlp/gelu_erf")
    gelu = g.op("Mul", [g.op("Mul", [up, g.op("Add", [erf, g.const("mlp/one", np.float32(1))],
                                              "mlp/gelu_add")], "mlp/gelu_mul"),
                        g.const("mlp/half", np.float32(0.5))], "mlp/gelu")
    down = g.op("Add", [g.op("MatMul", [gelu, w["w_down"]], "mlp/down_proj"),
                        w["b_down"]], "mlp/down_bias")
    y = g.op("Add", [x, down], "mlp/residual")
    g.nodes.append(helper.make_node("Identity", [y], ["y"], name="output"))

    graph = helper.make_graph(
        g.nodes, "tiny_transformer_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SEQ, WIDTH])],
        initializer=g.initializers)
    model = helper.make_model(graph, producer_name="kiln-example",
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def reference(x, w):
    """The same block in float64 numpy, as the expected output."""
    from math import erf
    x = x.astype(np.float64)
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def ln(v, scale, bias):
        mean = v.mean(-1, keepdims=True)
        var = ((v - mean) ** 2).mean(-1, keepdims=True)
        return (v - mean) / np.sqrt(var + EPS) * scale + bias

    h = ln(x, w["ln1_scale"], w["ln1_bias"])
    qkv = (h @ w["w_qkv"] + w["b_qkv"]).reshape(SEQ, 3, HEADS, HEAD)
    q, k, v = (qkv[:, i].transpose(1, 0, 2) for i in range(3))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(HEAD)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    merged = (probs @ v).transpose(1, 0, 2).reshape(SEQ, WIDTH)
    x = x + merged @ w["w_out"] + w["b_out"]
    up = ln(x, w["ln2_scale"], w["ln2_bias"]) @ w["w_up"] + w["b_up"]
    gelu = 0.5 * up * (1 + np.vectorize(erf)(up / math.sqrt(2)))
    return (x + gelu @ w["w_down"] + w["b_down"]).astype(np.float32)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(2026)
    weights = make_weights(rng)
    onnx.save(build_graph(weights), os.path.join(here, "model.onnx"))
    x = rng.standard_normal((SEQ, WIDTH)).astype(np.float32)
    for name, array, tensor_name in (("input_0.pb", x, "x"),
                                     ("output_0.pb", reference(x, weights), "y")):
        with open(os.path.join(here, name), "wb") as f:
            f.write(numpy_helper.from_array(array, tensor_name).SerializeToString())


if __name__ == "__main__":
    main()
