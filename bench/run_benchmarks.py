#!/usr/bin/env python3
"""Kiln vs ONNX Runtime, side by side, on the transformer benchmark models.

One command (README, "Benchmarks"):

  python3 -m venv build/bench-venv && build/bench-venv/bin/pip install onnxruntime onnx numpy iree-base-compiler iree-base-runtime
  build/bench-venv/bin/python bench/run_benchmarks.py --bin-dir build/bin --work build/bench

For each model this exports it with PyTorch (bench/models/make_models.py,
run by Debian's /usr/bin/python3), compiles it with kiln-compile (wall time
and peak memory), runs Kiln and ONNX Runtime (graph optimization level ALL,
the same intra-op thread count) on the same inputs, and reports median
latency over --runs runs after warm-up, peak RSS of each runtime process,
and the largest relative difference between their outputs. IREE (PyPI
iree-base-compiler and iree-base-runtime, llvm-cpu backend for the host) is a
second peer where it is installed and compiles the model. It writes
docs/benchmarks.md with the table and this machine's CPU model.

Kiln, ONNX Runtime and IREE each run at 1 and at 2 threads.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from machine_peaks import (checked_floor, host_chip,  # noqa: F401
                           measure_fma_peak, update_machine_section)

HERE = os.path.dirname(os.path.abspath(__file__))


def load_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def read_peak_rss_mib(pid):
    """VmHWM of a running process in MiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0


def time_process(cmd):
    """Runs cmd, returning (stdout, wall seconds, its peak RSS in MiB)."""
    # The peak comes from polling VmHWM, which exec resets: getrusage's
    # ru_maxrss would include the RSS this Python process had at fork time.
    # Output goes to files, so a full pipe can't stall the child.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, read_peak_rss_mib(proc.pid))
            # Rarely: each poll takes a core from a 2-thread run for a moment.
            time.sleep(0.05)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{err.read()}")
        return out.read(), wall, peak


ORT_WORKER = r"""
import json, sys, time
import numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
model, threads, runs, inputs, save = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(","), sys.argv[5]
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
feeds = {}
for info, path in zip(session.get_inputs(), inputs):
    t = onnx.TensorProto(); t.ParseFromString(open(path, "rb").read())
    feeds[info.name] = numpy_helper.to_array(t)
for _ in range(3):
    outputs = session.run(None, feeds)
times = []
for _ in range(runs):
    start = time.perf_counter(); session.run(None, feeds); times.append(time.perf_counter() - start)
np.save(save, outputs[0])
print(json.dumps({"median_ms": 1000 * sorted(times)[len(times) // 2]}))
"""


IREE_WORKER = r"""
import json, sys, time
import numpy as np, onnx
from onnx import numpy_helper
import iree.runtime as rt
vmfb, threads, runs, inputs, save, entry = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(","), sys.argv[5], sys.argv[6]
if threads > 1:
    rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
config = rt.Config("local-sync" if threads == 1 else "local-task")
context = rt.SystemContext(config=config)
context.add_vm_module(rt.VmModule.mmap(config.vm_instance, vmfb))
function = context.modules.module[entry]
feeds = []
for path in inputs:
    t = onnx.TensorProto(); t.ParseFromString(open(path, "rb").read())
    feeds.append(numpy_helper.to_array(t))
for _ in range(3):
    output = function(*feeds)
times = []
for _ in range(runs):
    start = time.perf_counter()
    output = np.asarray(function(*feeds).to_host())
    times.append(time.perf_counter() - start)
np.save(save, output)
print(json.dumps({"median_ms": 1000 * sorted(times)[len(times) // 2]}))
"""


def contraction_gflop(model, inputs=None):
    """GFLOP (2 per multiply-add) of the model's MatMul, Gemm and Conv nodes,
    from ONNX shape inference: work no fp32 kernel can skip. Where inference
    leaves a product's shapes unknown (PyTorch's exports compute some shapes
    at run time), and `inputs` (arrays, in the graph's input order) are
    given, the shapes come from one ONNX Runtime run that returns those
    tensors; else the product is left out and the floor reads low."""
    graph = onnx.shape_inference.infer_shapes(
        onnx.load(model, load_external_data=False), data_prop=True).graph
    shapes = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = [d.dim_value for d in dims]
    for init in graph.initializer:
        shapes[init.name] = list(init.dims)
    contractions = [node for node in graph.node
                    if node.op_type in ("MatMul", "Gemm", "Conv")]
    unknown = sorted({name for node in contractions
                      for name in (node.input[0], node.output[0])
                      if not shapes.get(name) or not all(shapes[name])})
    if unknown and inputs is not None:
        shapes.update(run_shapes(model, unknown, inputs))
    flop = 0
    for node in contractions:
        out = shapes.get(node.output[0])
        if not out or not all(out):
            continue
        if node.op_type in ("MatMul", "Gemm"):
            a = shapes.get(node.input[0], [])
            trans_a = any(attr.name == "transA" and attr.i for attr in node.attribute)
            k = a[-2] if trans_a and len(a) >= 2 else (a[-1] if a else 0)
            flop += 2 * int(np.prod(out)) * k
        else:
            w = shapes.get(node.input[1], [])
            if len(w) >= 3:
                flop += 2 * int(np.prod(out)) * int(np.prod(w[1:]))
    return flop / 1e9


def run_shapes(model, names, inputs):
    """The shapes the tensors `names` take when ONNX Runtime runs `model` on
    `inputs`: each added to the graph's outputs (untyped: the runtime infers
    their types)."""
    proto = onnx.load(model)
    proto.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    session = ort.InferenceSession(proto.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    feeds = {i.name: value for i, value in zip(session.get_inputs(), inputs)}
    return {name: list(value.shape) for name, value in
            zip(names, session.run(names, feeds))}


def cpu_model():
    """The CPU's model name, from /proc/cpuinfo."""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def run_iree(model, folder, inputs, runs):
    """IREE's times at 1 and 2 threads and its output, or None if IREE is not
    installed or does not compile the model."""
    bin_dir = os.path.dirname(sys.executable)
    importer = os.path.join(bin_dir, "iree-import-onnx")
    compiler = os.path.join(bin_dir, "iree-compile")
    if not (os.path.exists(importer) and os.path.exists(compiler)):
        return None
    imported = os.path.join(folder, "iree.mlir")
    vmfb = os.path.join(folder, "iree.vmfb")
    try:
        subprocess.run([importer, model, "-o", imported], check=True,
                       capture_output=True, timeout=1800)
        subprocess.run([compiler, imported, "--iree-hal-target-device=local",
                        "--iree-hal-local-target-device-backends=llvm-cpu",
                        "--iree-llvmcpu-target-cpu=host", "-o", vmfb],
                       check=True, capture_output=True, timeout=1800)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    with open(imported) as f:
        entry = next(match.group(1) for match in
                     (re.search(r"func\.func @([\w$.]+)", line) for line in f)
                     if match)
    results = {}
    for threads in (1, 2):
        save = os.path.join(folder, f"iree-{threads}.npy")
        out, _, _ = time_process([sys.executable, "-c", IREE_WORKER, vmfb,
                                  str(threads), str(runs), ",".join(inputs),
                                  save, entry])
        results[threads] = (json.loads(out)["median_ms"], np.load(save))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--models", default="minilm,gpt2,vit")
    parser.add_argument("--layers", type=int, default=0,
                        help="override model depth (0: the real depth)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating Kiln / ORT processes per thread "
                             "count")
    parser.add_argument("--reuse", action="store_true",
                        help="keep models already exported to --work")
    parser.add_argument("--no-iree", action="store_true",
                        help="leave IREE out (its compile is slow)")
    parser.add_argument("--output", default=os.path.join(HERE, "..", "docs",
                                                         "benchmarks.md"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    export = ["/usr/bin/python3", os.path.join(HERE, "models", "make_models.py"),
              args.work, "--models", args.models]
    if args.layers:
        export += ["--layers", str(args.layers)]
    exported = all(os.path.exists(os.path.join(args.work, m, "model.onnx"))
                   for m in args.models.split(","))
    if not (args.reuse and exported):
        subprocess.run(export, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    peak = measure_fma_peak()
    rows = []
    for name in args.models.split(","):
        folder = os.path.join(args.work, name)
        model = os.path.join(folder, "model.onnx")
        inputs = sorted(p for p in os.listdir(folder) if p.startswith("input_"))
        inputs = [os.path.join(folder, p) for p in inputs]
        artifact = os.path.join(folder, "model.so")
        _, compile_s, compile_mib = time_process(
            [os.path.join(args.bin_dir, "kiln-compile"), model, "-o", artifact])
        def run_kiln(threads):
            saved = os.path.join(folder, f"kiln-out-{threads}")
            os.makedirs(saved, exist_ok=True)
            run_cmd = [os.path.join(args.bin_dir, "kiln-run"), artifact,
                       "--repeat", str(args.runs + 1), "--threads",
                       str(threads), "--save", saved]
            for path in inputs:
                run_cmd += ["--input", path]
            out, _, mib = time_process(run_cmd)
            ms = float(re.search(r"median run time: ([0-9.]+) ms",
                                 out).group(1))
            return ms, mib, load_tensor(os.path.join(saved, "output_0.pb"))

        def run_ort(threads):
            save = os.path.join(folder, f"ort-{threads}.npy")
            out, _, mib = time_process(
                [sys.executable, "-c", ORT_WORKER, model, str(threads),
                 str(args.runs), ",".join(inputs), save])
            return json.loads(out)["median_ms"], mib, np.load(save)

        # Kiln and ONNX Runtime take turns, so a burst of load from other
        # tenants of the machine lands on both; each reports the median of
        # its per-round medians.
        kiln_results, ort_results, round_ratios = {}, {}, {}
        for threads in (1, 2):
            rounds = {"kiln": [], "ort": []}
            for _ in range(args.rounds):
                rounds["kiln"].append(run_kiln(threads))
                rounds["ort"].append(run_ort(threads))
            # Each round's ratio of its neighbouring runs: their spread shows
            # how far the machine's noise moves the median's.
            round_ratios[threads] = sorted(
                k[0] / o[0] for k, o in zip(rounds["kiln"], rounds["ort"]))
            for key, results in (("kiln", kiln_results),
                                 ("ort", ort_results)):
                times = sorted(r[0] for r in rounds[key])
                results[threads] = (times[len(times) // 2],
                                    max(r[1] for r in rounds[key]),
                                    rounds[key][-1][2])
        reference = ort_results[1][2]
        scale = max(float(np.abs(reference).max()), 1e-30)
        rel_err = max(float(np.abs(kiln_results[t][2] - reference).max())
                      for t in (1, 2)) / scale
        iree = None if args.no_iree else run_iree(model, folder, inputs,
                                                  args.runs)
        iree_cells = ("n/a", "n/a") if iree is None else (
            f"{iree[1][0]:.2f}", f"{iree[2][0]:.2f}")
        rows.append((name, kiln_results, ort_results, iree_cells, compile_s,
                     compile_mib, rel_err, contraction_gflop(model),
                     round_ratios))
        print(f"{name}: kiln {kiln_results[1][0]:.2f} / "
              f"{kiln_results[2][0]:.2f} ms, ort {ort_results[1][0]:.2f} / "
              f"{ort_results[2][0]:.2f} ms, iree {iree_cells[0]} / "
              f"{iree_cells[1]} ms (1 / 2 threads); max rel err {rel_err:.2e}",
              flush=True)

    # Checked first: a check may measure the peak again and keep the higher
    # reading, which the header then gives.
    for row in rows:
        for threads in (1, 2):
            checked_floor(f"{row[0]} at {threads} threads", row[7], threads,
                          {"Kiln": row[1][threads][0],
                           "ORT": row[2][threads][0]})
    peak = measure_fma_peak()
    cpu = cpu_model()
    depth = f", {args.layers} layers" if args.layers else ""
    lines = [
        f"Measured by `bench/run_benchmarks.py` on {cpu}, {os.cpu_count()} "
        f"cores, {platform.system()}; ONNX Runtime {ort.__version__} with "
        f"graph optimization level ALL. Every runtime at 1 and at 2 "
        f"intra-op threads, one process at a time{depth}: Kiln and ONNX "
        f"Runtime alternate over {args.rounds} rounds of {args.runs} runs "
        "after warm-up, and each cell is the median of the round medians "
        f"(IREE: one round). Kiln/ORT below 1 means Kiln is faster.",
        "Ratios matter more than times: the machine is shared and noisy.",
        "",
        "The floor is the model's MatMul/Gemm/Conv work (from ONNX shape "
        "inference) at this machine's fp32 FMA peak on every thread, "
        + f"{peak:.1f} GFLOP/s per core (bench/fma_peak.c, built for the "
        "widest vectors and checked in its disassembly; same run): no fp32 "
        "runtime can be faster than it, and the benchmark stops rather than "
        "print a floor that a measured time beats.",
        "",
        "\"Rounds\" gives the lowest and highest Kiln/ORT of a single round; "
        "\"floor/Kiln\" is Kiln's speed as a fraction of the floor's.",
        "",
        "| model | threads | Kiln ms | ORT ms | Kiln/ORT | rounds | IREE ms "
        "| floor ms | floor/Kiln | Kiln RSS MiB | ORT RSS MiB "
        "| Kiln compile s | Kiln compile MiB | max rel err vs ORT |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- | --- |",
    ]
    for (name, kiln, ort_results, iree_cells, compile_s, compile_mib,
         rel_err, gflop, ratios) in rows:
        for threads in (1, 2):
            kiln_ms, kiln_mib, _ = kiln[threads]
            ort_ms, ort_mib, _ = ort_results[threads]
            floor_ms = gflop / (peak * threads) * 1e3
            spread = f"{ratios[threads][0]:.2f}-{ratios[threads][-1]:.2f}x"
            lines.append(
                f"| {name} | {threads} | {kiln_ms:.2f} | {ort_ms:.2f} | "
                f"{kiln_ms / ort_ms:.2f}x | {spread} | "
                f"{iree_cells[threads - 1]} | {floor_ms:.1f} | "
                f"{floor_ms / kiln_ms:.0%} | {kiln_mib:.0f} | {ort_mib:.0f} | "
                f"{compile_s:.1f} | {compile_mib:.0f} | {rel_err:.1e} |")
    update_machine_section(args.output, "Benchmarks: Kiln vs ONNX Runtime",
                           f"{cpu} ({host_chip()})", "\n".join(lines))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
