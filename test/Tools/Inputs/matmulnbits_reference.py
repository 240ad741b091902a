#!/usr/bin/python3
"""Writes what Kiln's int4 kernel must give for a model of MatMulNBits.

usage: matmulnbits_reference.py MODEL_DIR OUTPUT

MODEL_DIR holds model.onnx (MatMulNBits, Add and Relu nodes, as
test/models/quantized/make_models.py writes them) and input_0.pb. The
graph is evaluated here with numpy: each MatMulNBits' 4-bit weights and
zero points unpacked as com.microsoft's specification lays them out (low
nibble first; zero point 8 where none are given), and its product
computed as kiln.int4_matmul defines it: each row of the input quantized
to uint8 over its range widened to 0, exact integer sums of the rows
times (weight - zero point) within a block, scaled by the block's scale.
OUTPUT gets the graph's output.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quantized_mlp import quantize_rows  # noqa: E402


def nibbles(packed, count):
    """The first `count` 4-bit values of each row of `packed`, low first."""
    values = np.stack([packed & 15, packed >> 4], axis=-1)
    return values.reshape(packed.shape[0], -1)[:, :count].astype(np.int64)


def matmul_nbits(x, node, constants):
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    k, n, block = attrs["K"], attrs["N"], attrs["block_size"]
    assert attrs.get("bits", 4) == 4
    blocks = -(-k // block)
    weights = nibbles(constants[node.input[1]].reshape(n, -1), blocks * block)
    weights = weights.reshape(n, blocks, block)
    scales = constants[node.input[2]].reshape(n, blocks).astype(np.float64)
    if len(node.input) > 3 and node.input[3]:
        zeros = nibbles(constants[node.input[3]].reshape(n, -1), blocks)
    else:
        zeros = np.full((n, blocks), 8, np.int64)
    q, row_scale, row_zero = quantize_rows(x)
    q = np.pad(q, ((0, 0), (0, blocks * block - k)))
    total = np.zeros((q.shape[0], n))
    column_sums = np.zeros(n)
    for b in range(blocks):
        w = (weights[:, b, :] - zeros[:, b:b + 1]).T  # [block, n]
        w[max(0, k - b * block):] = 0
        total += (q[:, b * block:(b + 1) * block] @ w) * scales[:, b]
        column_sums += w.sum(axis=0) * scales[:, b]
    y = row_scale[:, None] * (total - row_zero[:, None] * column_sums)
    return y.reshape(x.shape[:-1] + (n,)).astype(np.float32)


def main():
    folder, output = sys.argv[1:3]
    model = onnx.load(os.path.join(folder, "model.onnx"))
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "input_0.pb")))
    values[model.graph.input[0].name] = x
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            y = matmul_nbits(values[node.input[0]], node, values)
            if len(node.input) > 5 and node.input[5]:
                y = (y + values[node.input[5]]).astype(np.float32)
        elif node.op_type == "Add":
            y = (values[node.input[0]] + values[node.input[1]]).astype(np.float32)
        elif node.op_type == "Relu":
            y = np.maximum(values[node.input[0]], 0).astype(np.float32)
        else:
            sys.exit(f"unexpected {node.op_type}")
        values[node.output[0]] = y
    result = values[model.graph.output[0].name]
    with open(output, "wb") as f:
        f.write(numpy_helper.from_array(result, "y").SerializeToString())


if __name__ == "__main__":
    main()
