#!/usr/bin/env python3
"""Kiln under load and beside other work, against ONNX Runtime.

Three measurements on one model (ViT-S/16 by default, random weights,
bench/models/make_models.py), written to docs/benchmarks-load.md:

  busy neighbour  2-thread latency alone and while another process keeps one
                  core busy, Kiln and ONNX Runtime taking turns; the
                  slow-down of each (busy median / alone median).
  many sessions   4 sessions in one process, each on its own thread, at the
                  runtime's default thread count (one per CPU), against the
                  same 4 sessions at 1 thread each: runs per second for Kiln
                  (test/runtime/LoadTest.cpp) and ONNX Runtime (4 Python
                  threads; session.run releases the GIL).
  load            test/runtime/LoadTest.cpp for --load-minutes: twice the
                  CPUs' sessions, outputs bit-identical to a single run,
                  resident-set growth after the first tenth.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

from run_benchmarks import (ORT_WORKER, cpu_model, measure_fma_peak,
                            time_process)

HERE = os.path.dirname(os.path.abspath(__file__))

ORT_SESSIONS = r"""
import json, sys, threading, time
import onnx, onnxruntime as ort
from onnx import numpy_helper
model, threads, sessions, seconds, inputs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5].split(",")
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
runs = [0] * sessions
def work(k, deadline):
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for info, path in zip(session.get_inputs(), inputs):
        t = onnx.TensorProto(); t.ParseFromString(open(path, "rb").read())
        feeds[info.name] = numpy_helper.to_array(t)
    session.run(None, feeds)
    ready.wait()
    while time.perf_counter() < start[0] + seconds:
        session.run(None, feeds)
        runs[k] += 1
ready = threading.Event(); start = [0.0]
workers = [threading.Thread(target=work, args=(k, 0)) for k in range(sessions)]
for w in workers: w.start()
time.sleep(2.0)
start[0] = time.perf_counter(); ready.set()
for w in workers: w.join()
print(json.dumps({"per_second": sum(runs) / (time.perf_counter() - start[0])}))
"""

BUSY = "while True: pass"


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def kiln_latency(args, artifact, inputs):
    cmd = [os.path.join(args.bin_dir, "kiln-run"), artifact, "--repeat",
           str(args.runs), "--threads", "2"]
    for path in inputs:
        cmd += ["--input", path]
    out, _, _ = time_process(cmd)
    return float(re.search(r"median run time: ([0-9.]+) ms", out).group(1))


def ort_latency(args, model, inputs, folder):
    out, _, _ = time_process(
        [sys.executable, "-c", ORT_WORKER, model, "2", str(args.runs),
         ",".join(inputs), os.path.join(folder, "ort-load.npy")])
    return json.loads(out)["median_ms"]


def busy_neighbour(args, model, artifact, inputs, folder):
    """Median 2-thread latencies {(runtime, busy): ms}, rounds alternating."""
    times = {}
    for _ in range(args.rounds):
        for busy in (False, True):
            neighbour = (subprocess.Popen([sys.executable, "-c", BUSY])
                         if busy else None)
            try:
                if neighbour:
                    time.sleep(0.5)
                times.setdefault(("kiln", busy), []).append(
                    kiln_latency(args, artifact, inputs))
                times.setdefault(("ort", busy), []).append(
                    ort_latency(args, model, inputs, folder))
            finally:
                if neighbour:
                    neighbour.kill()
                    neighbour.wait()
    return {key: median(values) for key, values in times.items()}


def load_test(args, artifact, seconds, sessions, threads):
    out, _, _ = time_process(
        [os.path.join(args.bin_dir, "..", "test", "runtime",
                      "runtime-load-test"), artifact, "--seconds",
         str(seconds), "--sessions", str(sessions), "--threads",
         str(threads)])
    line = out.strip().splitlines()[-1]
    found = re.search(r"([0-9.]+) per second\), (\d+) mismatches, (\d+) "
                      r"failures; resident (\d+) KiB after the first tenth, "
                      r"peak (\d+) KiB \(\+([0-9.]+)%\)", line)
    return {"per_second": float(found.group(1)),
            "mismatches": int(found.group(2)),
            "failures": int(found.group(3)),
            "resident_kib": int(found.group(4)),
            "peak_kib": int(found.group(5)),
            "growth_percent": float(found.group(6)), "line": line}


def ort_sessions(model, inputs, threads, seconds):
    out, _, _ = time_process(
        [sys.executable, "-c", ORT_SESSIONS, model, str(threads), "4",
         str(seconds), ",".join(inputs)])
    return json.loads(out)["per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model", default="vit")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--session-seconds", type=float, default=20)
    parser.add_argument("--load-minutes", type=float, default=10)
    parser.add_argument("--output", default=os.path.join(
        HERE, "..", "docs", "benchmarks-load.md"))
    args = parser.parse_args()

    folder = os.path.join(args.work, args.model)
    model = os.path.join(folder, "model.onnx")
    if not os.path.exists(model):
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "models", "make_models.py"),
                        args.work, "--models", args.model], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    inputs = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                    if p.startswith("input_"))
    artifact = os.path.join(folder, "model.so")
    subprocess.run([os.path.join(args.bin_dir, "kiln-compile"), model, "-o",
                    artifact], check=True)
    peak = measure_fma_peak()

    latency = busy_neighbour(args, model, artifact, inputs, folder)
    print("busy neighbour:", latency, flush=True)
    cpus = os.cpu_count()
    sessions = {
        ("kiln", 0): load_test(args, artifact, args.session_seconds, 4, 0),
        ("kiln", 1): load_test(args, artifact, args.session_seconds, 4, 1),
        ("ort", 0): {"per_second": ort_sessions(model, inputs, 0,
                                                args.session_seconds)},
        ("ort", 1): {"per_second": ort_sessions(model, inputs, 1,
                                                args.session_seconds)},
    }
    print("many sessions:", {k: v["per_second"] for k, v in sessions.items()},
          flush=True)
    load = load_test(args, artifact, 60 * args.load_minutes, 2 * cpus, 0)
    print("load:", load["line"], flush=True)

    def slowdown(runtime):
        return latency[(runtime, True)] / latency[(runtime, False)]

    lines = [
        "# Benchmarks: load, shared cores and many sessions",
        "",
        f"Measured by `bench/run_load.py` on {cpu_model()}, {cpus} cores, "
        f"{platform.system()}; fp32 FMA peak "
        + (f"{peak:.1f} GFLOP/s per core" if peak else "not measured")
        + " (bench/fma_peak.c, same run). Model: "
        f"{args.model} (bench/models/make_models.py, random weights). Kiln "
        "and ONNX Runtime run in the same run on the same machine; ratios "
        "matter more than times, as the machine is shared and noisy.",
        "",
        "## A busy neighbour",
        "",
        f"2 threads; median of {args.rounds} alternating rounds of "
        f"{args.runs} runs, alone and while another process keeps one core "
        "busy (a Python loop).",
        "",
        "| Runtime | Alone | One core busy | Slow-down |",
        "|---|---|---|---|",
    ]
    for runtime, name in (("kiln", "Kiln"), ("ort", "ONNX Runtime")):
        lines.append(f"| {name} | {latency[(runtime, False)]:.2f} ms | "
                     f"{latency[(runtime, True)]:.2f} ms | "
                     f"{slowdown(runtime):.2f}x |")
    lines += [
        "",
        "## Many sessions in one process",
        "",
        f"4 sessions, each on its own thread, for {args.session_seconds:g} s:"
        " runs per second, all sessions together. At the default thread "
        f"count every session asks for {cpus} threads; Kiln's sessions share "
        "the process's workers.",
        "",
        "| Runtime | Default threads | 1 thread each | Default / 1 thread |",
        "|---|---|---|---|",
    ]
    for runtime, name in (("kiln", "Kiln"), ("ort", "ONNX Runtime")):
        default = sessions[(runtime, 0)]["per_second"]
        single = sessions[(runtime, 1)]["per_second"]
        lines.append(f"| {name} | {default:.1f} | {single:.1f} | "
                     f"{default / single:.2f} |")
    lines += [
        "",
        "## Load",
        "",
        f"`runtime-load-test` for {args.load_minutes:g} minutes: "
        f"{2 * cpus} sessions at the default thread count, every output "
        "compared bit for bit with a run made before the load, the resident "
        "set sampled every 100 ms.",
        "",
        f"- {load['per_second']:.1f} runs per second, "
        f"{load['mismatches']} mismatches, {load['failures']} failures;",
        f"- resident set {load['resident_kib'] / 1024:.1f} MiB after the "
        f"first tenth, peak {load['peak_kib'] / 1024:.1f} MiB "
        f"(+{load['growth_percent']:.2f}%).",
        "",
    ]
    with open(args.output, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
