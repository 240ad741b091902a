#!/usr/bin/python3
"""Writes a float MLP and the outputs Kiln's --quantize schemes must give.

usage: make_quantized_mlp.py OUTPUT_DIR

y = Relu(x W1 + b1) W2 + b2 with seeded weights on a [2, rows, 72] input,
the data for rows = 5 (rows and depth that are not multiples of the
kernel's blocks; 72 columns of W2's output, 4 panels and a half). `rows` is
a named dimension, to be fixed or kept dynamic when compiling. Writes model.onnx, input_0.pb,
expected_int8.pb (the quantization scheme computed here in numpy, from its
definition in kiln.quantized_matmul: per-column 7-bit symmetric weights,
per-row uint8 activations, exact integer sums), expected_int4.pb (from
kiln.int4_matmul's definition and int4-weight's quantization: 4-bit
weights with a scale and zero point per block of 32 rows of a column, the
same activations, exact integer sums within a block), expected_float.pb (the float model, to bound the
quantization error) and calibration/set_<k>/input_0.pb (4 more inputs).
outliers/ holds the same model with an input and calibration sets whose
columns OUTLIERS are 10 times wider than the others, as a transformer's
LayerNorm outputs have a few (what SmoothQuant's smoothing is for).
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "Inputs"))
from mlp_model import mlp_model  # noqa: E402

SHAPE = (2, 5, 72)
HIDDEN = 100
OUTLIERS = [3, 17, 40]


def quantize_weights(w):
    scale = (np.abs(w).max(axis=0) / np.float32(63)).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1))
    q = np.clip(np.rint(w / safe), -63, 63).astype(np.int64)
    return q, scale


def quantize_rows(x):
    """Each row to uint8 over its range widened to 0: (q, scale, zero)."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
    low = np.minimum(rows.min(axis=1), np.float32(0))
    high = np.maximum(rows.max(axis=1), np.float32(0))
    scale = ((high - low) / np.float32(255)).astype(np.float32)
    inverse = np.where(scale > 0, np.float32(1) / np.where(scale > 0, scale, 1),
                       np.float32(0)).astype(np.float32)
    zero = np.clip(np.rint(-low * inverse), 0, 255).astype(np.float32)
    q = np.clip(np.rint(rows * inverse[:, None]) + zero[:, None], 0, 255)
    return q.astype(np.int64), scale, zero


def quantized_product(x, w):
    """The product as kiln.quantized_matmul defines it, in float32 steps."""
    q_w, w_scale = quantize_weights(w)
    q, scale, zero = quantize_rows(x)
    acc = q.astype(np.int64) @ q_w - zero.astype(np.int64)[:, None] * q_w.sum(axis=0)
    real = acc.astype(np.float32) * (scale[:, None] * w_scale[None, :])
    return real.reshape(x.shape[:-1] + (w.shape[1],)).astype(np.float32)


def int4_block(w_block):
    """int4-weight's quantization of a block of rows: each column's range
    widened to 0 over 15 steps, its zero point round(-min / scale); the
    integers q - zero point and the scales."""
    low = np.minimum(w_block.min(axis=0), np.float32(0))
    high = np.maximum(w_block.max(axis=0), np.float32(0))
    w_scale = ((high - low) / np.float32(15)).astype(np.float32)
    safe = np.where(w_scale > 0, w_scale, np.float32(1))
    zero = np.clip(np.rint(-low / safe), 0, 15)
    q_w = np.clip(np.rint(w_block / safe) + zero, 0, 15) - zero
    return np.where(w_scale > 0, q_w, 0).astype(np.int64), w_scale


def int4_product(x, w, block=32):
    """The product as kiln.int4_matmul defines it, in float64."""
    q, scale, zero = quantize_rows(x)
    total = np.zeros((q.shape[0], w.shape[1]))
    for start in range(0, w.shape[0], block):
        q_w, w_scale = int4_block(w[start:start + block])
        acc = q[:, start:start + block] @ q_w - zero.astype(np.int64)[:, None] * q_w.sum(axis=0)
        total += acc * w_scale.astype(np.float64)
    real = total * scale[:, None]
    return real.reshape(x.shape[:-1] + (w.shape[1],)).astype(np.float32)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((SHAPE[-1], HIDDEN)) / 8).astype(np.float32)
    b1 = (rng.standard_normal(HIDDEN) / 10).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, SHAPE[-1])) / 10).astype(np.float32)
    b2 = (rng.standard_normal(SHAPE[-1]) / 10).astype(np.float32)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    model = mlp_model((SHAPE[0], "rows", SHAPE[2]), w1, b1, w2, b2)
    onnx.save(model, os.path.join(out, "model.onnx"))

    hidden = np.maximum(quantized_product(x, w1) + b1, 0).astype(np.float32)
    y_int8 = (quantized_product(hidden, w2) + b2).astype(np.float32)
    hidden4 = np.maximum(int4_product(x, w1) + b1, 0).astype(np.float32)
    y_int4 = (int4_product(hidden4, w2) + b2).astype(np.float32)
    y_float = (np.maximum(x @ w1 + b1, 0) @ w2 + b2).astype(np.float32)
    for name, array in (("input_0", x), ("expected_int8", y_int8),
                        ("expected_int4", y_int4), ("expected_float", y_float)):
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, "y" if name != "input_0"
                                            else "x").SerializeToString())
    # One row alone (the first of the batch's first sequence), for a
    # decoder-step-shaped run: the same MLP on a [1, rows, 72] input.
    onnx.save(mlp_model((1, "rows", SHAPE[2]), w1, b1, w2, b2),
              os.path.join(out, "row_model.onnx"))
    row = x[:1, :1]
    hidden_row = np.maximum(int4_product(row, w1) + b1, 0).astype(np.float32)
    y_row = (int4_product(hidden_row, w2) + b2).astype(np.float32)
    for name, array in (("row_input", row), ("row_expected_int4", y_row)):
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, "x" if name == "row_input"
                                            else "y").SerializeToString())
    # Calibration sets: 4 more seeded inputs, one folder each.
    for k in range(4):
        folder = os.path.join(out, "calibration", f"set_{k}")
        os.makedirs(folder, exist_ok=True)
        sample = rng.standard_normal(SHAPE).astype(np.float32)
        with open(os.path.join(folder, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(sample, "x").SerializeToString())
    # The same with outlier columns, in outliers/.
    os.makedirs(os.path.join(out, "outliers"), exist_ok=True)
    onnx.save(model, os.path.join(out, "outliers", "model.onnx"))
    for path in ["input_0.pb"] + [os.path.join("calibration", f"set_{k}", "input_0.pb")
                                  for k in range(4)]:
        sample = rng.standard_normal(SHAPE).astype(np.float32)
        sample[..., OUTLIERS] *= 10
        path = os.path.join(out, "outliers", path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(sample, "x").SerializeToString())
    for name, y in (("int8", y_int8), ("int4", y_int4)):
        error = np.abs(y - y_float).max() / np.abs(y_float).max()
        print(f"{name} vs float: max error {error:.4f} of the largest output")


if __name__ == "__main__":
    main()
