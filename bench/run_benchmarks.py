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

Kiln runs single-threaded today; its 2-thread column repeats the 1-thread
run until kiln-run grows --threads.
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
            time.sleep(0.005)
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
    parser.add_argument("--output", default=os.path.join(HERE, "..", "docs",
                                                         "benchmarks.md"))
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)

    export = ["/usr/bin/python3", os.path.join(HERE, "models", "make_models.py"),
              args.work, "--models", args.models]
    if args.layers:
        export += ["--layers", str(args.layers)]
    subprocess.run(export, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)

    rows = []
    for name in args.models.split(","):
        folder = os.path.join(args.work, name)
        model = os.path.join(folder, "model.onnx")
        inputs = sorted(p for p in os.listdir(folder) if p.startswith("input_"))
        inputs = [os.path.join(folder, p) for p in inputs]
        artifact = os.path.join(folder, "model.so")
        _, compile_s, compile_mib = time_process(
            [os.path.join(args.bin_dir, "kiln-compile"), model, "-o", artifact])
        saved = os.path.join(folder, "kiln-out")
        os.makedirs(saved, exist_ok=True)
        run_cmd = [os.path.join(args.bin_dir, "kiln-run"), artifact,
                   "--repeat", str(args.runs + 1), "--save", saved]
        for path in inputs:
            run_cmd += ["--input", path]
        out, _, kiln_mib = time_process(run_cmd)
        kiln_ms = float(re.search(r"median run time: ([0-9.]+) ms", out).group(1))
        kiln_out = load_tensor(os.path.join(saved, "output_0.pb"))
        ort_results = {}
        for threads in (1, 2):
            ort_save = os.path.join(folder, f"ort-{threads}.npy")
            out, _, ort_mib = time_process(
                [sys.executable, "-c", ORT_WORKER, model, str(threads),
                 str(args.runs), ",".join(inputs), ort_save])
            ort_results[threads] = (json.loads(out)["median_ms"], ort_mib,
                                    np.load(ort_save))
        reference = ort_results[1][2]
        scale = max(float(np.abs(reference).max()), 1e-30)
        rel_err = float(np.abs(kiln_out - reference).max()) / scale
        iree = run_iree(model, folder, inputs, args.runs)
        iree_cells = ("n/a", "n/a") if iree is None else (
            f"{iree[1][0]:.2f}", f"{iree[2][0]:.2f}")
        rows.append((name, kiln_ms, ort_results[1][0], ort_results[2][0],
                     iree_cells, kiln_mib, ort_results[1][1], compile_s,
                     compile_mib, rel_err))
        print(f"{name}: kiln {kiln_ms:.2f} ms, ort {ort_results[1][0]:.2f} ms "
              f"(1 thread), {ort_results[2][0]:.2f} ms (2 threads), iree "
              f"{iree_cells[0]} / {iree_cells[1]} ms; max rel err {rel_err:.2e}",
              flush=True)

    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    depth = f", {args.layers} layers" if args.layers else ""
    lines = [
        "# Benchmarks: Kiln vs ONNX Runtime",
        "",
        f"Measured by `bench/run_benchmarks.py` on {cpu}, {os.cpu_count()} "
        f"cores, {platform.system()}; ONNX Runtime {ort.__version__} with "
        f"graph optimization level ALL. Median of {args.runs} runs after "
        f"warm-up{depth}. Kiln runs one thread (threading is not built yet), "
        "so its time is compared with ONNX Runtime at 1 and at 2 threads.",
        "Ratios matter more than times: the machine is shared and noisy.",
        "",
        "| model | Kiln ms | ORT ms (1 thr) | ORT ms (2 thr) | Kiln/ORT (1 thr) "
        "| IREE ms (1 thr) | IREE ms (2 thr) | Kiln RSS MiB | ORT RSS MiB "
        "| Kiln compile s | Kiln compile MiB | max rel err vs ORT |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- |",
    ]
    for (name, kiln_ms, ort1, ort2, iree_cells, kiln_mib, ort_mib, compile_s,
         compile_mib, rel_err) in rows:
        lines.append(f"| {name} | {kiln_ms:.2f} | {ort1:.2f} | {ort2:.2f} | "
                     f"{kiln_ms / ort1:.2f}x | {iree_cells[0]} | {iree_cells[1]} | "
                     f"{kiln_mib:.0f} | {ort_mib:.0f} | {compile_s:.1f} | "
                     f"{compile_mib:.0f} | {rel_err:.1e} |")
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
