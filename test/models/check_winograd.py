#!/usr/bin/python3
"""Checks 3x3 convolutions compiled by Winograd's F(2x2, 3x3) against
PyTorch's direct convolution.

usage: check_winograd.py KILN_BIN_DIR WORK_DIR

Each case is a one-Conv ONNX model (seeded random weights scaled so that
outputs are of order 1) whose tiles fill the matmul panels in a different
way: a whole row of tiles per panel, several rows per panel, two panels per
row, asymmetric padding, a batch of three with a bias. The -O2 artifact
must have rewritten the convolution into kiln.winograd_conv2d (and a case
whose tiles can't fill panels must not have), and its output must match
PyTorch's to an absolute tolerance of 1e-4 (F(2x2, 3x3) in f32 adds errors
near 1e-6 at these magnitudes).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

# name: (batch, channels, filters, height, width, pads, bias, winograd)
CASES = {
    "row-per-panel": (1, 16, 24, 64, 64, [1, 1, 1, 1], False, True),
    "rows-per-panel": (3, 20, 16, 16, 16, [1, 1, 1, 1], True, True),
    "panels-per-row": (1, 16, 16, 130, 130, [0, 0, 0, 0], False, True),
    "asymmetric-pads": (2, 32, 32, 32, 32, [2, 1, 0, 1], True, True),
    "odd-tiles": (2, 32, 32, 30, 30, [1, 1, 1, 1], False, False),
}


def make_case(folder, batch, channels, filters, height, width, pads, bias,
              seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
    w = (rng.standard_normal((filters, channels, 3, 3)) /
         np.sqrt(9 * channels)).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32)
    out_h = height + pads[0] + pads[2] - 2
    out_w = width + pads[1] + pads[3] - 2
    inputs = ["x", "w"] + (["b"] if bias else [])
    initializers = [numpy_helper.from_array(w, "w")]
    if bias:
        initializers.append(numpy_helper.from_array(b, "b"))
    node = helper.make_node("Conv", inputs, ["y"], kernel_shape=[3, 3],
                            pads=pads)
    graph = helper.make_graph(
        [node], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       [batch, filters, out_h, out_w])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    # ONNX pads are [top, left, bottom, right]; F.pad takes (left, right,
    # top, bottom).
    padded = torch.nn.functional.pad(
        torch.from_numpy(x), (pads[1], pads[3], pads[0], pads[2]))
    expected = torch.nn.functional.conv2d(
        padded, torch.from_numpy(w),
        torch.from_numpy(b) if bias else None).numpy()
    assert expected.shape == (batch, filters, out_h, out_w)
    for name, array in (("input_0.pb", x), ("output_0.pb", expected)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())


def winograd_count(kiln_bin, folder):
    """kiln.winograd_conv2d ops in the IR after kiln-winograd-convolutions."""
    result = subprocess.run(
        [os.path.join(kiln_bin, "kiln-compile"),
         os.path.join(folder, "model.onnx"), "-o",
         os.path.join(folder, "model.so"), "--mlir-print-ir-after-all",
         "--mlir-disable-threading"],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{folder}: kiln-compile failed:\n{result.stderr[-2000:]}")
    dumps = result.stderr.split("// -----// IR Dump After ")
    after = [d for d in dumps if d.startswith("WinogradConvolutionsPass")]
    if len(after) != 1:
        sys.exit(f"{folder}: no IR dump after WinogradConvolutionsPass")
    return after[0].count("kiln.winograd_conv2d")


def main():
    kiln_bin, work = sys.argv[1], sys.argv[2]
    failures = []
    for seed, (name, case) in enumerate(CASES.items()):
        folder = os.path.join(work, name)
        *shape, winograd = case
        make_case(folder, *shape, seed=seed)
        count = winograd_count(kiln_bin, folder)
        if count != (1 if winograd else 0):
            failures.append(f"{name}: {count} winograd_conv2d ops, expected "
                            f"{1 if winograd else 0}")
        run = subprocess.run(
            [os.path.join(kiln_bin, "kiln-run"),
             os.path.join(folder, "model.so"), "--input",
             os.path.join(folder, "input_0.pb"), "--expect",
             os.path.join(folder, "output_0.pb"), "--rtol", "0", "--atol",
             "1e-4"], capture_output=True, text=True)
        print(f"{name}: winograd_conv2d x{count}; {run.stdout.strip()}")
        if run.returncode != 0:
            failures.append(f"{name}: {run.stdout.strip()} "
                            f"{run.stderr.strip()}")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
