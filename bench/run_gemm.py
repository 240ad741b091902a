#!/usr/bin/env python3
"""Kiln's fp32 matrix products beside ONNX Runtime's and oneDNN's.

  build/bench-venv/bin/python bench/run_gemm.py --bin-dir build/bin --work build/bench

Each shape M x K by K x N is a one-node ONNX model: a MatMul of the input
(M x K) by a constant (K x N), the way a model's weights meet its
activations. Kiln compiles it (packing the constant at compile time), ONNX
Runtime runs it at graph optimization level ALL (MLAS prepacks it), and
oneDNN's dnnl_sgemm (Debian's libdnnl-dev, where it is installed) multiplies
the same sizes through bench/gemm_onednn.c. At 1 and at 2 threads the three
take turns over --rounds rounds, and each cell is the median of the round
medians. Rates are in GFLOP/s and as a share of the measured peak: one
core's fp32 FMA peak (bench/fma_peak.c, built and checked for the widest
vectors) times the threads. One-row products read each weight once, so
their rate is the weights' GB/s; repeated calls find them in the last-level
cache when it holds them, so the streaming read of memory
(bench/stream_read.c, printed beside) bounds them only in a model too large
for that cache.

The shapes are those of the benchmark models' products (MiniLM and GPT-2 at
128 tokens, ViT at 197, DiT-S/2 at 2 x 256, decode steps) and square sizes
256-2048. It writes this machine kind's section of docs/benchmarks-gemm.md,
keeping the other kinds' sections.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine_peaks import (build, checked_floor, host_chip,  # noqa: E402
                           measure_fma_peak, stream_bandwidth,
                           update_machine_section)
from run_benchmarks import (ORT_WORKER, cpu_model, load_tensor,  # noqa: E402
                            time_process)

# (label, M, K, N), grouped as the table shows them.
SHAPES = [
    ("MiniLM qkv", 128, 384, 1152),
    ("MiniLM fc1", 128, 384, 1536),
    ("MiniLM fc2", 128, 1536, 384),
    ("GPT-2 qkv", 128, 768, 2304),
    ("GPT-2 proj", 128, 768, 768),
    ("GPT-2 fc1", 128, 768, 3072),
    ("GPT-2 fc2", 128, 3072, 768),
    ("ViT fc1", 197, 768, 3072),
    ("ViT fc2", 197, 3072, 768),
    ("DiT qkv", 512, 384, 1152),
    ("DiT fc1", 512, 384, 1536),
    ("DiT fc2", 512, 1536, 384),
    ("512x768x768", 512, 768, 768),
    ("square 256", 256, 256, 256),
    ("square 512", 512, 512, 512),
    ("square 1024", 1024, 1024, 1024),
    ("square 2048", 2048, 2048, 2048),
    ("decode fc1", 1, 768, 3072),
    ("decode fc2", 1, 3072, 768),
]


def make_model(folder, m, k, n):
    """folder/model.onnx (input a, constant b) and folder/input_0.pb."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(m * 1_000_003 + k * 1009 + n)
    b = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    a = rng.standard_normal((m, k), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])], "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(folder, "model.onnx"))
    with open(os.path.join(folder, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(a, "a").SerializeToString())
    return a.astype(np.float64) @ b.astype(np.float64)


def runs_for(flop, peak):
    """Timed calls per round: about 0.3 s at half the peak, 5 to 4000.

    One-row products take about 0.1 ms: at most 200 calls (20 ms a round)
    gave medians that a worker thread joining late on a shared machine
    could double at 2 threads (one round read 0.098 ms where 2000 calls
    read 0.049)."""
    seconds = flop / (0.5 * peak * 1e9)
    return int(min(4000, max(5, 0.3 / max(seconds, 1e-9))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default="",
                        help="comma-separated labels to run (default: all)")
    parser.add_argument("--output", default=os.path.join(
        HERE, "..", "docs", "benchmarks-gemm.md"))
    args = parser.parse_args()
    work = os.path.join(args.work, "gemm")
    os.makedirs(work, exist_ok=True)
    shapes = [s for s in SHAPES
              if not args.shapes or s[0] in args.shapes.split(",")]

    peak = measure_fma_peak()
    bandwidth = {t: stream_bandwidth(t) for t in (1, 2)}
    onednn = os.path.join(work, "gemm_onednn")
    try:
        build("gemm_onednn.c", onednn, extra=["-ldnnl"])
    except subprocess.CalledProcessError:
        onednn = None
        print("oneDNN not installed (libdnnl-dev): its column is left empty")

    rows = []
    for label, m, k, n in shapes:
        folder = os.path.join(work, f"{m}x{k}x{n}")
        expected = make_model(folder, m, k, n)
        model = os.path.join(folder, "model.onnx")
        inputs = [os.path.join(folder, "input_0.pb")]
        artifact = os.path.join(folder, "model.so")
        subprocess.run([os.path.join(args.bin_dir, "kiln-compile"), model,
                        "-o", artifact], check=True)
        flop = 2.0 * m * k * n
        runs = runs_for(flop, peak)

        def run_kiln(threads):
            saved = os.path.join(folder, f"kiln-out-{threads}")
            os.makedirs(saved, exist_ok=True)
            out, _, _ = time_process(
                [os.path.join(args.bin_dir, "kiln-run"), artifact, "--input",
                 inputs[0], "--repeat", str(runs + 1), "--threads",
                 str(threads), "--save", saved])
            error = np.abs(load_tensor(os.path.join(saved, "output_0.pb"))
                           - expected).max() / np.abs(expected).max()
            return float(re.search(r"median run time: ([0-9.]+) ms",
                                   out).group(1)), float(error)

        def run_ort(threads):
            save = os.path.join(folder, f"ort-{threads}.npy")
            out, _, _ = time_process(
                [sys.executable, "-c", ORT_WORKER, model, str(threads),
                 str(runs), inputs[0], save])
            return json.loads(out)["median_ms"], 0.0

        def run_onednn(threads):
            env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                       OMP_PROC_BIND="true")
            out = subprocess.run([onednn, str(m), str(n), str(k), str(runs)],
                                 capture_output=True, text=True, check=True,
                                 env=env).stdout
            return float(out.strip()), 0.0

        peers = {"kiln": run_kiln, "ort": run_ort}
        if onednn:
            peers["onednn"] = run_onednn
        cells = {}
        for threads in (1, 2):
            times = {name: [] for name in peers}
            error = 0.0
            for _ in range(args.rounds):
                for name, run in peers.items():
                    ms, err = run(threads)
                    times[name].append(ms)
                    error = max(error, err)
            cells[threads] = ({name: sorted(t)[len(t) // 2]
                               for name, t in times.items()}, error)
            checked_floor(f"{label} at {threads} threads", flop / 1e9,
                          threads, cells[threads][0])
        rows.append((label, m, k, n, cells))
        summary = ", ".join(
            f"{t} thr: " + " / ".join(f"{name} {ms:.3f}"
                                      for name, ms in cells[t][0].items())
            for t in (1, 2))
        print(f"{label} ({m}x{k}x{n}): {summary} ms", flush=True)

    # The highest reading, where a check measured it again.
    peak = measure_fma_peak()

    def rate(m, k, n, threads, ms):
        if m == 1:
            gbs = 4.0 * k * n / (ms * 1e-3) / 1e9
            return f"{gbs:.1f} GB/s", None
        gflops = 2.0 * m * k * n / (ms * 1e-3) / 1e9
        return f"{gflops:.1f}", gflops / (peak * threads)

    names = ["Kiln", "ONNX Runtime"] + (["oneDNN"] if onednn else [])
    keys = ["kiln", "ort"] + (["onednn"] if onednn else [])
    lines = [
        f"Measured by `bench/run_gemm.py` on {cpu_model()}, {os.cpu_count()} "
        f"cores, {platform.system()}; ONNX Runtime {ort.__version__}"
        + (", oneDNN (Debian's libdnnl, dnnl_sgemm)" if onednn else "")
        + f". Each cell is the median of {args.rounds} round medians, the "
        "runtimes taking turns. Peak: one core's fp32 FMA throughput, "
        f"{peak:.1f} GFLOP/s (bench/fma_peak.c, built for the widest "
        "vectors and checked in its disassembly); streaming read "
        f"{bandwidth[1]:.1f} GB/s on 1 thread, {bandwidth[2]:.1f} on 2 "
        "(bench/stream_read.c); same run. Share: of the peak times the "
        "threads. One-row products show the GB/s of weights they read: "
        "repeated calls find the weights in the last-level cache where it "
        "holds them.",
        "",
        "| product | M x K x N | threads | "
        + " | ".join(f"{n} GFLOP/s | {n} share" for n in names)
        + " | Kiln / ORT time | Kiln rel. error |",
        "|" + " --- |" * (3 + 2 * len(names) + 2),
    ]
    for label, m, k, n, cells in rows:
        for threads in (1, 2):
            times, error = cells[threads]
            parts = []
            for key in keys:
                value, share = rate(m, k, n, threads, times[key])
                parts += [value, "n/a" if share is None
                          else f"{100 * share:.0f}%"]
            lines.append(
                f"| {label} | {m}x{k}x{n} | {threads} | " + " | ".join(parts)
                + f" | {times['kiln'] / times['ort']:.2f}x | {error:.1e} |")
    update_machine_section(args.output, "Benchmark: fp32 matrix products",
                           f"{cpu_model()} ({host_chip()})", "\n".join(lines))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
