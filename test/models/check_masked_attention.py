#!/usr/bin/python3
"""Checks attention whose mask removes whole blocks of keys, which the
fused kernel skips, against a float64 numpy reference.

usage: check_masked_attention.py KILN_BIN_DIR RUNTIME_LIBRARY WORK_DIR

Each case is an ONNX attention graph (MatMul, scale, mask, Softmax, MatMul,
which Kiln fuses into kiln.attention) with seeded random queries, keys and
values, run on several masks:
- BERT's padding mask, (1 - mask) * -10000 added per batch entry, 128
  keys: sequences half padded (a block of 64 keys skipped), of 1 and 127
  tokens, unpadded, and wholly padding (every key masked: no block may be
  skipped, the softmax then being that of the unmasked scores);
- the same with Hugging Face's -3.4e38 (float32's lowest) for the padding;
- a causal mask as Where(future, -inf, scores) over 160 keys (blocks of 64
  and a tail of 32), where each block of query rows skips the blocks after
  it.
The IR after convert-kiln-to-linalg must hold the run-time skip (an
scf.if), and every output must match the reference to 2e-5 (outputs are
of order 1), the wholly padded rows to 5e-3: there every score is -10000
plus the score, which float32 holds to 2^-10 (skipping every block would
give NaN, and computing one block alone errors of order 1).
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import Runtime, Session  # noqa: E402

ATOL = 2e-5
WHOLLY_PADDED_ATOL = 5e-3
LOWEST = float(np.finfo(np.float32).min)


def padding_graph(batch, heads, seq, depth, masked):
    """q, k, v [batch, heads, seq, depth] and an int64 mask [batch, seq]
    (1: a token, 0: padding) added as (1 - mask) * masked."""
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "mf"], ["inv"]),
        helper.make_node("Mul", ["inv", "masked"], ["additive"]),
        helper.make_node("Unsqueeze", ["additive", "axes"], ["m4"]),
        helper.make_node("Add", ["s1", "m4"], ["s2"]),
        helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    constants = {"scale": np.float32(1 / np.sqrt(depth)),
                 "one": np.float32(1), "masked": np.float32(masked),
                 "axes": np.array([1, 2], np.int64)}
    shape = [batch, heads, seq, depth]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
              for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT64,
                                                [batch, seq]))
    return nodes, constants, inputs, shape


def causal_graph(heads, seq, depth):
    """q, k, v [1, heads, seq, depth]; scores where a key follows its query
    replaced by -inf."""
    future = np.triu(np.ones((seq, seq), bool), 1)[None, None]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s1"]),
        helper.make_node("Where", ["future", "lowest", "s1"], ["s2"]),
        helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    constants = {"scale": np.float32(1 / np.sqrt(depth)),
                 "lowest": np.float32(-np.inf), "future": future}
    shape = [1, heads, seq, depth]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
              for n in "qkv"]
    return nodes, constants, inputs, shape


def reference(q, k, v, additive):
    """softmax(q k^T / sqrt(d) + additive) v in float64."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + additive
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v


def write_model(folder, graph):
    """folder/model.onnx of `graph` (a *_graph result); its path."""
    nodes, constants, inputs, shape = graph
    model = helper.make_model(
        helper.make_graph(
            nodes, os.path.basename(folder), inputs,
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
            [numpy_helper.from_array(np.asarray(v), k)
             for k, v in constants.items()]),
        opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    return path


def compile_case(kiln_bin, folder, graph):
    """Compiles `graph`; the artifact and the scf.ifs after lowering."""
    path = write_model(folder, graph)
    artifact = os.path.join(folder, "model.so")
    result = subprocess.run(
        [os.path.join(kiln_bin, "kiln-compile"), path, "-o", artifact,
         "--mlir-print-ir-after-all", "--mlir-disable-threading"],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{folder}: kiln-compile failed:\n{result.stderr[-2000:]}")
    dumps = result.stderr.split("// -----// IR Dump After ")
    lowered = [d for d in dumps if d.startswith("ConvertKilnToLinalgPass")]
    if len(lowered) != 1 or "kiln.attention" not in "".join(
            d for d in dumps if d.startswith("FuseAttentionPass")):
        sys.exit(f"{folder}: the attention was not fused and lowered")
    return artifact, lowered[0].count("scf.if")


def main():
    kiln_bin, library, work = sys.argv[1:4]
    runtime = Runtime(library)
    failures = []
    rng = np.random.default_rng(0)

    def check(name, session, inputs, additive, atol=ATOL):
        got = session.run("main", inputs)[0]
        error = float(np.abs(got - reference(*inputs[:3], additive)).max())
        print(f"{name}: max error {error:.2e}")
        if not error <= atol:
            failures.append(f"{name}: max error {error:.2e} > {atol}")

    for case, masked in (("padding", -10000.0), ("padding-lowest", LOWEST)):
        batch, heads, seq, depth = 2, 3, 128, 16
        artifact, skips = compile_case(
            kiln_bin, os.path.join(work, case),
            padding_graph(batch, heads, seq, depth, masked))
        if skips == 0:
            failures.append(f"{case}: no run-time skip in the lowered IR")
        session = Session(runtime, artifact, threads=2)
        q, k, v = (rng.standard_normal((batch, heads, seq, depth))
                   .astype(np.float32) for _ in range(3))
        lengths = [(64, 128), (1, 127), (128, 128)]
        if masked == -10000.0:
            # float32's lowest added to a score rounds to itself, so a
            # wholly padded row is uniform in float32 but not in float64:
            # only the finite -10000 mask has a reference for it.
            lengths.append((0, 64))
        for pair in lengths:
            mask = np.zeros((batch, seq), np.int64)
            for b, length in enumerate(pair):
                mask[b, :length] = 1
            additive = ((1 - mask) * masked)[:, None, None, :]
            check(f"{case} lengths {pair}", session, [q, k, v, mask],
                  additive, WHOLLY_PADDED_ATOL if 0 in pair else ATOL)
        session.close()

    heads, seq, depth = 2, 160, 32
    artifact, skips = compile_case(kiln_bin, os.path.join(work, "causal"),
                                   causal_graph(heads, seq, depth))
    if skips == 0:
        failures.append("causal: no run-time skip in the lowered IR")
    session = Session(runtime, artifact, threads=2)
    q, k, v = (rng.standard_normal((1, heads, seq, depth)).astype(np.float32)
               for _ in range(3))
    future = np.triu(np.ones((seq, seq), bool), 1)
    check("causal", session, [q, k, v], np.where(future, -np.inf, 0.0))
    session.close()
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
