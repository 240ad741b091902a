#!/usr/bin/python3
"""Checks graphs wide enough that kiln-split-large-functions cuts their
entry into parts, against numpy.

usage: check_wide_graphs.py KILN_BIN_DIR WORK_DIR

- split-scale-concat: x [1200, 4] Split into 1200 rows, row k multiplied by
  k + 1 (an initializer per row), Concat back: y = x * (k + 1) row by row.
- fan-in: a Concat of 700 graph inputs of [1, 8]: y stacks them.
- fan-out: x [900] Split into 900 outputs of [1]: output k is x[k].

Each model's optimized LLVM IR must still define at least two parts
(@main_part*, not inlined back), and the artifact's outputs must equal numpy's exactly
(each element is one multiplication or a copy).
"""

import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper



def save_tensors(folder, prefix, arrays):
    paths = []
    for k, array in enumerate(arrays):
        path = os.path.join(folder, f"{prefix}_{k}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())
        paths.append(path)
    return paths


def save_model(folder, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(
        nodes, os.path.basename(folder),
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, a.shape)
         for name, a in inputs],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, a.shape)
         for name, a in outputs], list(initializers))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, os.path.join(folder, "model.onnx"))


def split_scale_concat(folder, rng):
    rows = 1200
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    scales = [numpy_helper.from_array(np.array([k + 1], np.float32), f"s{k}")
              for k in range(rows)]
    nodes = [helper.make_node("Split", ["x"], [f"r{k}" for k in range(rows)],
                              axis=0, num_outputs=rows)]
    nodes += [helper.make_node("Mul", [f"r{k}", f"s{k}"], [f"m{k}"])
              for k in range(rows)]
    nodes.append(helper.make_node("Concat", [f"m{k}" for k in range(rows)],
                                  ["y"], axis=0))
    y = x * np.arange(1, rows + 1, dtype=np.float32)[:, None]
    save_model(folder, nodes, [("x", x)], [("y", y)], scales)
    return [x], [y]


def fan_in(folder, rng):
    xs = [rng.standard_normal((1, 8)).astype(np.float32) for _ in range(700)]
    y = np.concatenate(xs)
    save_model(folder, [helper.make_node(
        "Concat", [f"x{k}" for k in range(len(xs))], ["y"], axis=0)],
        [(f"x{k}", x) for k, x in enumerate(xs)], [("y", y)])
    return xs, [y]


def fan_out(folder, rng):
    x = rng.standard_normal(900).astype(np.float32)
    ys = [x[k:k + 1] for k in range(len(x))]
    save_model(folder, [helper.make_node(
        "Split", ["x"], [f"y{k}" for k in range(len(ys))], axis=0,
        num_outputs=len(ys))], [("x", x)],
        [(f"y{k}", y) for k, y in enumerate(ys)])
    return [x], ys


def main():
    kiln_bin, work = sys.argv[1], sys.argv[2]
    failures = []
    for seed, make in enumerate((split_scale_concat, fan_in, fan_out)):
        name = make.__name__.replace("_", "-")
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        inputs, outputs = make(folder, np.random.default_rng(seed))
        model = os.path.join(folder, "model.onnx")
        compiles = [subprocess.run(
            [os.path.join(kiln_bin, "kiln-compile"), model, "-o",
             os.path.join(folder, output)] + flags,
            capture_output=True, text=True)
            for output, flags in (("model.ll", ["--emit=llvm"]),
                                  ("model.so", []))]
        if any(c.returncode != 0 for c in compiles):
            failures.append(f"{name}: kiln-compile failed:\n" +
                            "".join(c.stderr[-2000:] for c in compiles))
            continue
        with open(os.path.join(folder, "model.ll")) as f:
            parts = sum(line.startswith("define ") and "@main_part" in line
                        for line in f)
        if parts < 2:
            failures.append(f"{name}: {parts} parts in the LLVM IR, "
                            "expected 2 or more")
        command = [os.path.join(kiln_bin, "kiln-run"),
                   os.path.join(folder, "model.so"), "--rtol", "0",
                   "--atol", "0"]
        for path in save_tensors(folder, "input", inputs):
            command += ["--input", path]
        for path in save_tensors(folder, "output", outputs):
            command += ["--expect", path]
        run = subprocess.run(command, capture_output=True, text=True)
        last = run.stdout.strip().splitlines()[-1:] or [run.stderr.strip()]
        print(f"{name}: {parts} parts; {last[0]}")
        if run.returncode != 0:
            failures.append(f"{name}: kiln-run failed:\n{run.stdout[-1000:]}"
                            f"{run.stderr[-1000:]}")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
