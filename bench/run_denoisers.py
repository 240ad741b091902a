#!/usr/bin/env python3
"""Diffusion denoisers: Kiln vs ONNX Runtime, one call and whole sampling loops.

One command (README, "Benchmarks"):

  build/bench-venv/bin/python bench/run_denoisers.py --bin-dir build/bin --work build/bench

The models are bench/models/make_denoisers.py's DiT-S/2 and small UNet
(random weights: speed only), exported by Debian's /usr/bin/python3, on a
batch of 2 (a classifier-free-guidance step: conditional and unconditional).
Kiln runs in this process through its C runtime (test/models/kiln_runtime.py),
ONNX Runtime with graph optimization level ALL, both at 1 and 2 threads;
each call is timed alone, the two systems alternate in blocks of 5 calls
(each block after a pause and opened by an untimed call), and the table
gives medians over --runs calls, with the largest difference between their
outputs.

Then whole sampling loops: --steps DDIM steps (classifier-free guidance at
scale 4 for DiT, one latent; the UNet unguided on its batch of 2), Kiln's
captured loop (kiln-compile --pipeline=diffusion, entry sample) against
ONNX Runtime called from bench/models/samplers.py's numpy loop, both from
the same noise, alternating, medians over --sampling-runs loops each.
Writes this machine kind's section of docs/benchmarks-denoisers.md,
keeping the other kinds' sections.
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
from kiln_runtime import Runtime, Session  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "models"))
import samplers  # noqa: E402
from machine_peaks import (checked_floor, host_chip,  # noqa: E402
                           measure_fma_peak, update_machine_section)
from run_benchmarks import contraction_gflop, cpu_model, load_tensor  # noqa: E402

BLOCK = 5
# The models whose floor is their products at the peak. Winograd
# convolutions (Kiln's, ONNX Runtime's) multiply less than the direct
# convolution the floor counts, so a convolutional network's "floor" is
# beaten and means nothing.
FLOORED = {"dit"}
# Seconds between one system's calls and the other's: thread pools' workers
# spin for a while after a call (Kiln's for 2 ms, ONNX Runtime's its own),
# and while they spin they hold a core the other system's threads need.
PAUSE = 0.05

MODELS = {
    "dit": "DiT-S/2 (latent 4x32x32, 12 blocks, width 384, class labels)",
    "unet": "small UNet (latent 4x32x32, 64/128/128 channels, attention "
            "at 8x8)",
}


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def compile_artifact(bin_dir, model, artifact, extra=(), reuse=False):
    """kiln-compile MODEL EXTRA -o ARTIFACT, unless reuse and it exists."""
    if reuse and os.path.exists(artifact):
        return
    started = time.perf_counter()
    run([os.path.join(bin_dir, "kiln-compile"), model, *extra, "-o",
         artifact])
    print(f"compiled {artifact} in {time.perf_counter() - started:.1f} s")


def ort_session(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, options,
                                providers=["CPUExecutionProvider"])


def measure_sampling(name, model, artifact, runtime, threads, steps, runs):
    """Median seconds of one sampling loop, Kiln's and ONNX Runtime's, the
    lowest and highest Kiln / ONNX Runtime of one pair of neighbouring
    loops, and the largest difference of their samples relative to the
    largest."""
    reference = ort_session(model, threads)
    names = [i.name for i in reference.get_inputs()]
    rng = np.random.default_rng(0)
    guided = name == "dit"
    noise = rng.standard_normal((1 if guided else 2, 4, 32, 32)).astype(
        np.float32)
    labels = np.array([207], np.int64)

    def call(x, t, y=None):
        feeds = {names[0]: x.astype(np.float32),
                 names[1]: np.asarray(t, np.float32)}
        if y is not None:
            feeds[names[2]] = y
        return reference.run(None, feeds)[0].astype(np.float64)

    if guided:
        denoise = samplers.guided(call, labels, 1000, 4.0)
        kiln_inputs = [noise, labels]
    else:
        def denoise(x, t):
            return call(x, np.full(len(x), t))
        kiln_inputs = [noise]
    session = Session(runtime, artifact, threads=threads)
    results = {}
    loops = {"kiln": lambda: session.run("sample", kiln_inputs)[0],
             "ort": lambda: samplers.ddim(denoise, noise, steps)}
    times = {"kiln": [], "ort": []}
    for _ in range(runs):
        for system, loop in loops.items():
            time.sleep(PAUSE)
            started = time.perf_counter()
            results[system] = loop()
            times[system].append(time.perf_counter() - started)
    session.close()
    difference = float(np.max(np.abs(results["kiln"] - results["ort"])) /
                       max(np.max(np.abs(results["ort"])), 1e-30))
    ratios = [k / o for k, o in zip(times["kiln"], times["ort"])]
    return (float(np.median(times["kiln"])), float(np.median(times["ort"])),
            (min(ratios), max(ratios)), difference)


CACHE_MODES = [("cache 3", ["--cache-interval=3"]),
               ("cache 3, linear forecast", ["--cache-interval=3",
                                             "--cache-forecast=1"]),
               ("cache 5, linear forecast", ["--cache-interval=5",
                                             "--cache-forecast=1"])]


def measure_kiln_loops(name, artifacts, runtime, threads, runs):
    """Median seconds of one sampling loop of each artifact, alternating."""
    rng = np.random.default_rng(0)
    guided = name == "dit"
    noise = rng.standard_normal((1 if guided else 2, 4, 32, 32)).astype(
        np.float32)
    inputs = [noise, np.array([207], np.int64)] if guided else [noise]
    sessions = {mode: Session(runtime, path, threads=threads)
                for mode, path in artifacts.items()}
    times = {mode: [] for mode in artifacts}
    for session in sessions.values():
        session.run("sample", inputs)
    for _ in range(runs):
        for mode, session in sessions.items():
            time.sleep(PAUSE)
            started = time.perf_counter()
            session.run("sample", inputs)
            times[mode].append(time.perf_counter() - started)
    for session in sessions.values():
        session.close()
    return {mode: float(np.median(t)) for mode, t in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runtime", default=None,
                        help="libkiln_runtime.so (default: next to bin-dir)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--sampling-runs", type=int, default=3)
    parser.add_argument("--reuse", action="store_true",
                        help="keep exported models and artifacts from an "
                             "earlier run")
    parser.add_argument("--out", default=os.path.join(
        ROOT, "docs", "benchmarks-denoisers.md"))
    args = parser.parse_args()
    runtime_path = args.runtime or os.path.join(
        os.path.dirname(os.path.abspath(args.bin_dir)), "lib",
        "libkiln_runtime.so")
    folder = os.path.join(args.work, "denoisers")
    if not (args.reuse and all(os.path.exists(os.path.join(
            folder, name, "model.onnx")) for name in MODELS)):
        run(["/usr/bin/python3", os.path.join(HERE, "models",
                                              "make_denoisers.py"), folder])
    runtime = Runtime(runtime_path)
    peak = measure_fma_peak()
    rows = []
    gflop = {}
    for name in MODELS:
        model = os.path.join(folder, name, "model.onnx")
        artifact = os.path.join(folder, f"{name}.so")
        compile_artifact(args.bin_dir, model, artifact, reuse=args.reuse)
        inputs = []
        index = 0
        while os.path.exists(os.path.join(folder, name,
                                          f"input_{index}.pb")):
            inputs.append(load_tensor(os.path.join(folder, name,
                                                   f"input_{index}.pb")))
            index += 1
        if name in FLOORED:
            gflop[name] = contraction_gflop(model, inputs)
        for threads in (1, 2):
            reference = ort_session(model, threads)
            feeds = {i.name: value for i, value in
                     zip(reference.get_inputs(), inputs)}
            session = Session(runtime, artifact, threads=threads)
            kiln_out = session.run("main", inputs)[0]
            ort_out = reference.run(None, feeds)[0]
            difference = float(np.max(np.abs(kiln_out - ort_out)) /
                               max(np.max(np.abs(ort_out)), 1e-30))
            # Blocks of calls alternate between the systems, each after a
            # pause and opened by an untimed call.
            times = {"kiln": [], "ort": []}
            calls = {"kiln": lambda: session.run("main", inputs),
                     "ort": lambda: reference.run(None, feeds)}
            for _ in range(max(args.runs // BLOCK, 1)):
                for system, call in calls.items():
                    time.sleep(PAUSE)
                    call()
                    for _ in range(BLOCK):
                        started = time.perf_counter()
                        call()
                        times[system].append(time.perf_counter() - started)
            session.close()
            kiln_ms = 1000 * float(np.median(times["kiln"]))
            ort_ms = 1000 * float(np.median(times["ort"]))
            floor = "n/a | n/a"
            if name in FLOORED:
                floor_ms = checked_floor(
                    f"{name} at {threads} threads", gflop[name], threads,
                    {"Kiln": kiln_ms, "ONNX Runtime": ort_ms})
                floor = f"{floor_ms:.2f} | {floor_ms / kiln_ms:.0%}"
            print(f"{name} {threads} thr: Kiln {kiln_ms:.2f} ms, ONNX Runtime "
                  f"{ort_ms:.2f} ms, floor {floor}", flush=True)
            rows.append(f"| {name} | {threads} | {kiln_ms:.2f} | {ort_ms:.2f} "
                        f"| {kiln_ms / ort_ms:.2f}x | {floor} | "
                        f"{50 * kiln_ms / 1000:.2f} s | {difference:.1e} |")
    sampling_rows = []
    for name in MODELS:
        model = os.path.join(folder, name, "model.onnx")
        artifact = os.path.join(folder, f"{name}-ddim{args.steps}.so")
        compile_artifact(
            args.bin_dir, model, artifact,
            ["--pipeline=diffusion", "--sampler=ddim",
             f"--steps={args.steps}"] +
            (["--cfg-scale=4"] if name == "dit" else []), args.reuse)
        for threads in (1, 2):
            kiln_s, ort_s, spread, difference = measure_sampling(
                name, model, artifact, runtime, threads, args.steps,
                args.sampling_runs)
            floor = "n/a | n/a | n/a"
            if name in FLOORED:
                # One denoiser call a step: the floor is the steps' products.
                floor_s = args.steps * checked_floor(
                    f"{name} sampling at {threads} threads", gflop[name],
                    threads, {"Kiln": 1000 * kiln_s / args.steps,
                              "ONNX Runtime": 1000 * ort_s / args.steps}) / 1000
                floor = (f"{floor_s:.2f} | {0.8 * ort_s / floor_s:.2f} | "
                         f"{floor_s / kiln_s:.0%}")
            print(f"{name} sampling {threads} thr: Kiln {kiln_s:.2f} s, "
                  f"ONNX Runtime loop {ort_s:.2f} s, floor {floor}",
                  flush=True)
            sampling_rows.append(
                f"| {name} | {threads} | {kiln_s:.2f} | {ort_s:.2f} | "
                f"{kiln_s / ort_s:.2f}x | {spread[0]:.2f}-{spread[1]:.2f}x | "
                f"{floor} | {difference:.1e} |")
    cache_rows = []
    equal_steps = max(1, round(args.steps / 3))
    for name in MODELS:
        model = os.path.join(folder, name, "model.onnx")
        base = ["--pipeline=diffusion", "--sampler=ddim"] + (
            ["--cfg-scale=4"] if name == "dit" else [])
        artifacts = {"uncached": os.path.join(
            folder, f"{name}-ddim{args.steps}.so")}
        modes = [(mode, [f"--steps={args.steps}"] + extra)
                 for mode, extra in CACHE_MODES] + [
            (f"steps {equal_steps}", [f"--steps={equal_steps}"])]
        for mode, extra in modes:
            artifacts[mode] = os.path.join(
                folder, f"{name}-" + mode.replace(", ", "-").replace(" ", "-")
                + ".so")
            compile_artifact(args.bin_dir, model, artifacts[mode],
                             base + extra, args.reuse)
        for threads in (1, 2):
            medians = measure_kiln_loops(name, artifacts, runtime, threads,
                                         args.sampling_runs)
            print(f"{name} caching {threads} thr: " + ", ".join(
                f"{mode} {t:.2f} s" for mode, t in medians.items()),
                flush=True)
            for mode, t in medians.items():
                cache_rows.append(
                    f"| {name} | {threads} | {mode} | {t:.3f} | "
                    f"{medians['uncached'] / t:.2f}x |")
    lines = [
        f"Generated by `bench/run_denoisers.py` on {cpu_model()} "
        f"({platform.machine()}), ONNX Runtime {ort.__version__}. One "
        f"denoiser call on a batch of 2 (conditional and unconditional), "
        f"random weights; medians over {args.runs} calls, Kiln and ONNX "
        f"Runtime alternating in blocks of {BLOCK} calls (each after a "
        f"{PAUSE * 1000:.0f} ms pause, so that the other system's spinning "
        f"workers have gone to sleep, and opened by an untimed call), same "
        f"thread count. fp32 FMA "
        f"peak: {peak:.1f} GFLOP/s per core (bench/fma_peak.c), same run. "
        "The floor is the model's MatMul/Gemm/Conv work (" +
        ", ".join(f"{name} {value:.1f} GFLOP a call"
                  for name, value in gflop.items()) +
        ") at that peak on every thread: no fp32 runtime can be faster. "
        "The UNet has none: its Winograd convolutions multiply less than "
        "the direct convolutions the floor would count.",
        "",
    ] + [f"- `{name}`: {text}" for name, text in MODELS.items()] + [
        "",
        "| model | threads | Kiln (ms) | ONNX Runtime (ms) | Kiln / ONNX "
        "Runtime latency | floor (ms) | Kiln's speed, share of the "
        "floor's | 50 steps, Kiln | max output difference (relative to "
        "the largest) |",
        "|---|---|---|---|---|---|---|---|---|",
    ] + rows + [
        "",
        f"### Sampling: {args.steps} DDIM steps",
        "",
        "DiT with classifier-free guidance (scale 4: each step one call on "
        "the conditional and unconditional batch of 2), the UNet unguided "
        "on its batch of 2. Kiln: the artifact's `sample` entry "
        "(`kiln-compile --pipeline=diffusion --sampler=ddim "
        f"--steps={args.steps}`), the whole loop in generated code. ONNX "
        "Runtime: the denoiser called from `bench/models/samplers.py`'s "
        "numpy DDIM loop. Same noise; medians over "
        f"{args.sampling_runs} loops each, alternating. The floor is "
        f"{args.steps} calls' floor; \"0.8x ORT / floor\" below 1 means "
        "that 0.8x ONNX Runtime's time is faster than any fp32 runtime "
        "can go on this machine.",
        "",
        "| model | threads | Kiln (s) | ONNX Runtime + numpy loop (s) | "
        "Kiln / ONNX Runtime latency | one pair of loops, lowest-highest | "
        "floor (s) | 0.8x ORT / floor | "
        "Kiln's speed, share of the floor's | max sample difference "
        "(relative to the largest) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ] + sampling_rows + [
        "",
        f"### Caching across the {args.steps} steps (speed only)",
        "",
        "Random weights, so only the time is meaningful here; what each "
        "mode costs in quality is measured on a trained DiT by "
        "`bench/run_diffusion_caching.py` "
        "(docs/benchmarks-diffusion-caching.md). The DiT caches its "
        "transformer blocks' residual, the UNet its deeper levels' "
        "features (DeepCache), every K-th step (`--cache-interval=K`), "
        "reused or forecast linearly in between (`--cache-forecast=1`); "
        f"`steps {equal_steps}` is plain step reduction at about the "
        "compute of cache 3. Medians over "
        f"{args.sampling_runs} loops each, the modes alternating.",
        "",
        "| model | threads | mode | Kiln (s) | speed-up over uncached |",
        "|---|---|---|---|---|",
    ] + cache_rows
    update_machine_section(args.out, "Diffusion denoisers",
                           f"{cpu_model()} ({host_chip()})", "\n".join(lines))
    print(f"wrote this machine kind's section of {args.out}")


if __name__ == "__main__":
    main()
