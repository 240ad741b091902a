#!/usr/bin/env python3
"""Attention over padded batches and causal masks: Kiln's block skipping
against the same kernel with nothing to skip, and ONNX Runtime.

One command (README, "Benchmarks"):

  build/bench-venv/bin/python bench/run_masked_attention.py --bin-dir build/bin --work build/bench

Each case is an attention graph (MatMul, scale, mask, Softmax, MatMul;
test/models/check_masked_attention.py's), random queries, keys and values.
A padded batch masks its padding with BERT's (1 - mask) * -10000. Kiln's
artifact runs it twice: on the padded batch, where a block of 64 keys that
is all padding for a block of query rows is skipped, and on the same batch
unpadded, where the same kernel finds nothing to skip and does the work it
did before skipping existed (the speed-up column); ONNX Runtime runs the
padded batch. A causal case compares with ONNX Runtime only (every causal
mask skips). Kiln runs in this process through its C runtime with its
tensors made once (test/models/kiln_runtime.py's prepared calls), ONNX
Runtime from numpy; calls alternate in blocks of 5 (each after a pause and
opened by an untimed call), medians over --runs calls, 1 and 2 threads.
Writes docs/benchmarks-masked-attention.md.
"""
import argparse
import os
import platform
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
from check_masked_attention import (causal_graph, padding_graph,  # noqa: E402
                                    reference, write_model)
from kiln_runtime import Runtime, Session  # noqa: E402
from run_benchmarks import cpu_model, measure_fma_peak  # noqa: E402

BLOCK = 5
PAUSE = 0.05

# name: (batch, heads, tokens, head depth, token counts of the padded batch)
PADDED = {
    "MiniLM-shaped, halves": (8, 12, 128, 32, [64] * 8),
    "MiniLM-shaped, ragged": (8, 12, 128, 32,
                              [20, 35, 50, 64, 70, 83, 90, 100]),
    "BERT-base-shaped, halves": (4, 12, 512, 64, [256] * 4),
    "BERT-base-shaped, ragged": (4, 12, 512, 64, [100, 200, 300, 424]),
}
# name: (heads, tokens, head depth)
CAUSAL = {"GPT-2-shaped prompt": (12, 1024, 64)}


def compile_artifact(bin_dir, model, artifact):
    print("+ kiln-compile", model, flush=True)
    subprocess.run([os.path.join(bin_dir, "kiln-compile"), model, "-o",
                    artifact], check=True)


def ort_session(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model, options,
                                providers=["CPUExecutionProvider"])


def medians(calls, runs):
    """{name: median seconds} of `calls`, alternating in blocks."""
    times = {name: [] for name in calls}
    for _ in range(max(runs // BLOCK, 1)):
        for name, call in calls.items():
            time.sleep(PAUSE)
            call()
            for _ in range(BLOCK):
                started = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - started)
    return {name: float(np.median(t)) for name, t in times.items()}


def relative_error(got, expected):
    return float(np.abs(got - expected).max() /
                 max(np.abs(expected).max(), 1e-30))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runtime", default=None,
                        help="libkiln_runtime.so (default: next to bin-dir)")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--out", default=os.path.join(
        ROOT, "docs", "benchmarks-masked-attention.md"))
    args = parser.parse_args()
    runtime = Runtime(args.runtime or os.path.join(
        os.path.dirname(os.path.abspath(args.bin_dir)), "lib",
        "libkiln_runtime.so"))
    folder = os.path.join(args.work, "masked-attention")
    peak = measure_fma_peak()
    rng = np.random.default_rng(0)
    padded_rows, causal_rows = [], []
    for index, (name, (batch, heads, seq, depth, lengths)) in enumerate(
            PADDED.items()):
        case = os.path.join(folder, f"padded-{index}")
        model = write_model(case, padding_graph(batch, heads, seq, depth,
                                                -10000.0))
        artifact = os.path.join(case, "model.so")
        compile_artifact(args.bin_dir, model, artifact)
        q, k, v = (rng.standard_normal((batch, heads, seq, depth))
                   .astype(np.float32) for _ in range(3))
        full = np.ones((batch, seq), np.int64)
        padded = np.zeros((batch, seq), np.int64)
        for b, length in enumerate(lengths):
            padded[b, :length] = 1
        padding = 1 - sum(lengths) / (batch * seq)
        expected = reference(q, k, v,
                             ((1 - padded) * -10000.0)[:, None, None, :])
        for threads in (1, 2):
            session = Session(runtime, artifact, threads=threads)
            kiln_padded = session.prepare("main", [q, k, v, padded])
            kiln_full = session.prepare("main", [q, k, v, full])
            reference_session = ort_session(model, threads)
            feeds = {"q": q, "k": k, "v": v, "mask": padded}
            kiln_padded()
            error = relative_error(kiln_padded.outputs()[0], expected)
            ort_error = relative_error(
                reference_session.run(None, feeds)[0], expected)
            t = medians({"padded": kiln_padded, "full": kiln_full,
                         "ort": lambda: reference_session.run(None, feeds)},
                        args.runs)
            kiln_padded.close()
            kiln_full.close()
            session.close()
            print(f"{name} {threads} thr: Kiln padded {1e3 * t['padded']:.2f}"
                  f" ms, unpadded {1e3 * t['full']:.2f} ms, ONNX Runtime "
                  f"padded {1e3 * t['ort']:.2f} ms", flush=True)
            padded_rows.append(
                f"| {name} | {batch}x{heads}x{seq}x{depth} | "
                f"{padding:.0%} | {threads} | {1e3 * t['padded']:.2f} | "
                f"{1e3 * t['full']:.2f} | {t['full'] / t['padded']:.2f}x | "
                f"{1e3 * t['ort']:.2f} | {t['padded'] / t['ort']:.2f}x | "
                f"{error:.1e} / {ort_error:.1e} |")
    for index, (name, (heads, seq, depth)) in enumerate(CAUSAL.items()):
        case = os.path.join(folder, f"causal-{index}")
        model = write_model(case, causal_graph(heads, seq, depth))
        artifact = os.path.join(case, "model.so")
        compile_artifact(args.bin_dir, model, artifact)
        q, k, v = (rng.standard_normal((1, heads, seq, depth))
                   .astype(np.float32) for _ in range(3))
        future = np.triu(np.ones((seq, seq), bool), 1)
        expected = reference(q, k, v, np.where(future, -np.inf, 0.0))
        for threads in (1, 2):
            session = Session(runtime, artifact, threads=threads)
            kiln_call = session.prepare("main", [q, k, v])
            reference_session = ort_session(model, threads)
            feeds = {"q": q, "k": k, "v": v}
            kiln_call()
            error = relative_error(kiln_call.outputs()[0], expected)
            ort_error = relative_error(
                reference_session.run(None, feeds)[0], expected)
            t = medians({"kiln": kiln_call,
                         "ort": lambda: reference_session.run(None, feeds)},
                        args.runs)
            kiln_call.close()
            session.close()
            print(f"{name} {threads} thr: Kiln {1e3 * t['kiln']:.2f} ms, "
                  f"ONNX Runtime {1e3 * t['ort']:.2f} ms", flush=True)
            causal_rows.append(
                f"| {name} | 1x{heads}x{seq}x{depth} | {threads} | "
                f"{1e3 * t['kiln']:.2f} | {1e3 * t['ort']:.2f} | "
                f"{t['kiln'] / t['ort']:.2f}x | {error:.1e} / "
                f"{ort_error:.1e} |")
    lines = [
        "# Masked attention: skipping the key blocks a mask removes",
        "",
        f"Generated by `bench/run_masked_attention.py` on {cpu_model()} "
        f"({platform.machine()}), ONNX Runtime {ort.__version__}; fp32 FMA "
        f"peak {peak:.1f} GFLOP/s per core (bench/fma_peak.c), same run. "
        "One attention (batch x heads x tokens x head depth), random "
        "inputs; medians over "
        f"{args.runs} calls, the columns alternating in blocks of {BLOCK} "
        "calls, same thread count. Kiln skips a block of 64 keys when the "
        "mask removes it for every row of a block of 16 query rows. "
        "*Unpadded* is the same artifact on the same batch with no "
        "padding: the same kernel, nothing to skip, the work it did before "
        "it skipped anything. Errors: largest difference from a float64 "
        "numpy reference relative to the largest output, Kiln / ONNX "
        "Runtime.",
        "",
        "## Padded batches (BERT's -10000 padding mask)",
        "",
        "| case | shape | padding | threads | Kiln padded (ms) | Kiln "
        "unpadded (ms) | skipping's speed-up | ONNX Runtime padded (ms) | "
        "Kiln / ONNX Runtime | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ] + padded_rows + [
        "",
        "## Causal masks (Where(future, -inf, scores))",
        "",
        "| case | shape | threads | Kiln (ms) | ONNX Runtime (ms) | Kiln / "
        "ONNX Runtime | error |",
        "|---|---|---|---|---|---|---|",
    ] + causal_rows + [""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
