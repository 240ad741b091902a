#!/usr/bin/env python3
"""Gaussian splatting: frames per second of Kiln's compiled renderer.

  build/bench-venv/bin/python bench/run_splatting.py --bin-dir build/bin --work build/bench

A procedural scene of --count Gaussians (scripts/make_splat_scenes.py, SH
degree 3) is compiled by kiln-compile into a 1920x1080 renderer four times: with
the reference rasterizer's binning (every tile of each splat's 3-sigma
square, --splat-square-culling), with exact culling (-O2's default), and
with exact culling and the Gaussians pruned within --budget dB PSNR
(--accelerate=splat-prune, ranked on 8 calibration views and checked on 8
others, orbiting between the benchmark's), and pruned within the same
budget after storing the attributes as int8 where it allows
(--splat-int8-attributes). All run in this process through Kiln's
C runtime, taking turns frame by frame over --views cameras orbiting the
scene, at 1 and 2 threads; each cell is the median over --rounds rounds of
the views' frame times. The square and exact images must be identical to
the bit; the pruned renders' PSNR against the exact ones is measured on
the benchmark's views, which the search never saw.

Per frame it reports the Gaussian-tile pairs each binning walks (counted
here in numpy from a float64 projection of the same algorithm) and, as a
bound, the time the pairs' blending would take at the machine's measured
fp32 FMA peak: each pair is 256 pixel evaluations of at least
BLEND_OPERATIONS vector-lane operations, each at most one lane of an FMA
slot. Then the scaling of the exactly culled renderer over scenes of
--scaling-counts Gaussians: frame time against pair count.

Writes docs/benchmarks-splatting.md.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import make_splat_scenes as scenes  # noqa: E402
import splat_reference as reference  # noqa: E402
from kiln_runtime import Runtime, Session  # noqa: E402
from machine_peaks import measure_fma_peak  # noqa: E402
from run_benchmarks import cpu_model  # noqa: E402

# Vector-lane operations of one Gaussian-pixel evaluation in the blend: the
# power (2 differences, 7 products, 2 sums), exp (a degree-5 polynomial and
# its range reduction, about 10), alpha (a product and a minimum), the
# transmittance (a difference and a product), three colour updates (a
# product and a sum each), the weight and the masks' selects (5).
BLEND_OPERATIONS = 35


def pair_counts(g):
    """The pairs the square binning and exact culling bin: each splat's
    tiles within its square, and those of them whose pixel centres come
    within its reach (as the lowering tests, in float64)."""
    visible = np.flatnonzero(g["radius"] > 0)
    rect = g["rect"][visible]
    w = rect[:, 2] - rect[:, 0]
    h = rect[:, 3] - rect[:, 1]
    sizes = w * h
    owner = np.repeat(np.arange(len(visible)), sizes)
    local = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    tx = rect[owner, 0] + local % w[owner]
    ty = rect[owner, 1] + local // w[owner]
    index = visible[owner]
    mx, my = g["mean"][index, 0], g["mean"][index, 1]
    a, b, c = (g["conic"][index, k] for k in range(3))
    with np.errstate(divide="ignore"):
        reach = 2 * np.log(255 * g["opacity"][index]) * 1.001 + 0.01
    x0 = tx * reference.TILE
    y0 = ty * reference.TILE
    dx_low, dx_high = mx - (x0 + reference.TILE - 1), mx - x0
    dy_low, dy_high = my - (y0 + reference.TILE - 1), my - y0

    def along(p, q, r, d, low, high):
        e = np.clip(-q * d / p, low, high)
        return p * e * e + 2 * q * e * d + r * d * d

    least = np.minimum.reduce([
        along(c, b, a, dx_low, dy_low, dy_high),
        along(c, b, a, dx_high, dy_low, dy_high),
        along(a, b, c, dy_low, dx_low, dx_high),
        along(a, b, c, dy_high, dx_low, dx_high)])
    inside = (dx_low <= 0) & (dx_high >= 0) & (dy_low <= 0) & (dy_high >= 0)
    return int(sizes.sum()), int(((inside | (least <= reach)) &
                                  (reach >= 0)).sum())


def compile_renderer(kiln_bin, scene_path, artifact, width, height, *options):
    subprocess.run([os.path.join(kiln_bin, "kiln-compile"), scene_path,
                    f"--splat-image={width}x{height}", "-o", artifact,
                    *options], check=True)
    return artifact


def camera_inputs(camera):
    return [np.array(camera["view"], np.float32),
            np.array(camera["intrinsics"], np.float32),
            np.zeros(3, np.float32)]


def psnr(image, reference_image):
    error = np.clip(image, 0, 1).astype(np.float64) - np.clip(
        reference_image, 0, 1)
    return -10 * np.log10(max(float(np.mean(error * error)), 1e-30))


def time_frames(sessions, cameras, rounds):
    """Median frame time (ms) per session over rounds of all cameras, the
    sessions taking turns on each frame; the last images."""
    times = {name: [] for name in sessions}
    images = {}
    for name, session in sessions.items():  # untimed: pages and pools
        session.run("main", camera_inputs(cameras[0]))
    for _ in range(rounds):
        for camera in cameras:
            inputs = camera_inputs(camera)
            for name, session in sessions.items():
                start = time.perf_counter()
                images[name] = session.run("main", inputs)[0]
                times[name].append((time.perf_counter() - start) * 1e3)
    return {n: float(np.median(t)) for n, t in times.items()}, images


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runtime",
                        default=os.path.join(ROOT, "build", "lib",
                                             "libkiln_runtime.so"))
    parser.add_argument("--count", type=int, default=500000)
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scaling-counts", default="100000,500000,2000000")
    parser.add_argument("--budget", type=float, default=35.0,
                        help="pruning's PSNR budget in dB")
    parser.add_argument("--out",
                        default=os.path.join(ROOT, "docs",
                                             "benchmarks-splatting.md"))
    args = parser.parse_args()
    work = os.path.join(args.work, "splatting")
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(args.runtime)
    cameras = scenes.orbit_cameras(args.views, args.width, args.height)
    peak = measure_fma_peak()

    def scene_file(count):
        path = os.path.join(work, f"scene-{count}.ply")
        if not os.path.exists(path):
            scenes.write_ply(path, scenes.make_scene(count, 0))
        return path

    def mean_pairs(count, pruned=()):
        scene = scenes.make_scene(count, 0)
        keep = np.ones(count, bool)
        keep[list(pruned)] = False
        scene = {name: value[keep] for name, value in scene.items()}
        square, exact = [], []
        for camera in cameras:
            g = reference.project(scene, np.array(camera["view"]),
                                  camera["intrinsics"], args.width,
                                  args.height)
            s, e = pair_counts(g)
            square.append(s)
            exact.append(e)
        return float(np.mean(square)), float(np.mean(exact))

    path = scene_file(args.count)
    artifacts = {
        "square": compile_renderer(args.bin_dir, path,
                                   os.path.join(work, "square.so"),
                                   args.width, args.height,
                                   "--splat-square-culling"),
        "exact": compile_renderer(args.bin_dir, path,
                                  os.path.join(work, "exact.so"),
                                  args.width, args.height)}
    calibration = os.path.join(work, "calibration-views")
    scenes.write_views(calibration, scenes.orbit_cameras(
        16, args.width, args.height, phase=0.25))
    report_path = os.path.join(work, "prune-report.json")
    start = time.perf_counter()
    artifacts["pruned"] = compile_renderer(
        args.bin_dir, path, os.path.join(work, "pruned.so"), args.width,
        args.height, "--accelerate=splat-prune",
        f"--calibration={calibration}", f"--quality-budget=psnr={args.budget}",
        f"--accelerate-report={report_path}")
    prune_seconds = time.perf_counter() - start
    int8_report_path = os.path.join(work, "prune-int8-report.json")
    artifacts["int8"] = compile_renderer(
        args.bin_dir, path, os.path.join(work, "pruned-int8.so"), args.width,
        args.height, "--accelerate=splat-prune", "--splat-int8-attributes",
        f"--calibration={calibration}", f"--quality-budget=psnr={args.budget}",
        f"--accelerate-report={int8_report_path}")
    with open(report_path) as f:
        report = json.load(f)
    with open(int8_report_path) as f:
        int8_report = json.load(f)
    square_pairs, exact_pairs = mean_pairs(args.count)
    _, pruned_pairs = mean_pairs(args.count, report["pruned_indices"])
    _, int8_pairs = mean_pairs(args.count, int8_report["pruned_indices"])
    rows = []
    for threads in (1, 2):
        sessions = {n: Session(runtime, a, threads=threads)
                    for n, a in artifacts.items()}
        medians, images = time_frames(sessions, cameras, args.rounds)
        if not np.array_equal(images["square"], images["exact"]):
            sys.exit("exact culling changed the image")
        quality, int8_quality = ([
            psnr(sessions[name].run("main", camera_inputs(c))[0],
                 sessions["exact"].run("main", camera_inputs(c))[0])
            for c in cameras] for name in ("pruned", "int8"))
        for session in sessions.values():
            session.close()
        rows.append((threads, medians))
        print(threads, medians, flush=True)

    def bound_ms(pairs, threads):
        lanes_per_second = peak * 1e9 / 2 * threads
        return pairs * 256 * BLEND_OPERATIONS / lanes_per_second * 1e3

    # The scaling scenes take turns frame by frame too, so that a noisy
    # neighbour slows them alike.
    counts = [int(c) for c in args.scaling_counts.split(",")]
    scaling_sessions = {}
    for count in counts:
        artifact = compile_renderer(
            args.bin_dir, scene_file(count),
            os.path.join(work, f"exact-{count}.so"), args.width, args.height)
        scaling_sessions[count] = Session(runtime, artifact, threads=2)
    scaling_ms, _ = time_frames(scaling_sessions, cameras, args.rounds)
    for session in scaling_sessions.values():
        session.close()
    scaling = []
    for count in counts:
        _, pairs = mean_pairs(count)
        scaling.append((count, pairs, scaling_ms[count]))
        print(count, pairs, scaling_ms[count], flush=True)
    # Frame time as a cost per pair plus a cost per Gaussian (projection,
    # sort, gather: work a scene's Gaussians need whatever pairs they make),
    # least squares over the scenes, neither cost below zero.
    walked_pairs = np.array([pairs for _, pairs, _ in scaling])
    gaussian_counts = np.array([count for count, _, _ in scaling], float)
    frame_ms = np.array([ms for _, _, ms in scaling])
    (per_pair, per_gaussian), *_ = np.linalg.lstsq(
        np.stack([walked_pairs, gaussian_counts], 1), frame_ms, rcond=None)
    if per_gaussian < 0:
        per_pair = float(walked_pairs @ frame_ms / (walked_pairs @ walked_pairs))
        per_gaussian = 0.0
    elif per_pair < 0:
        per_gaussian = float(gaussian_counts @ frame_ms /
                             (gaussian_counts @ gaussian_counts))
        per_pair = 0.0

    lines = [
        "# Benchmark: Gaussian splatting",
        "",
        f"Measured by `bench/run_splatting.py` on {cpu_model()}, "
        f"{os.cpu_count()} cores, {platform.system()}; fp32 FMA peak "
        f"{peak:.1f} GFLOP/s per core (bench/fma_peak.c) in the same run.",
        f"A procedural scene of {args.count:,} Gaussians "
        "(`scripts/make_splat_scenes.py`, SH degree 3) rendered at "
        f"{args.width}x{args.height} from {args.views} cameras orbiting it.",
        "Kiln's renderers take turns frame by frame; each cell is the "
        f"median over {args.rounds} rounds of all views. Images of the two "
        "culling modes are identical to the bit (checked).",
        "",
        f"Pruning (`--accelerate=splat-prune --quality-budget "
        f"psnr={args.budget:g}`) ranked the Gaussians on 8 calibration "
        "views and checked the budget on 8 others, all orbiting between the "
        f"benchmark's views: it pruned {report['pruned']:,} of "
        f"{args.count:,} Gaussians ({report['pruned_percent']}%; the next "
        "percent broke the budget), held-out PSNR "
        f"{report['psnr_min']:.2f} dB. On the benchmark's own views, which "
        "the search never saw, the pruned renders' PSNR against the exact "
        f"ones is {min(quality):.2f} dB at least (mean "
        f"{np.mean(quality):.2f}). The compile with the search took "
        f"{prune_seconds:.0f} s.",
        "",
        "With `--splat-int8-attributes` the search first stores the "
        "attributes as int8 where the budget allows ("
        + ", ".join(f"{name} {how}" for name, how in
                    int8_report["storage"].items())
        + f"; {int8_report['tried'][3]['psnr_min']:.2f} dB unpruned), "
        f"then prunes {int8_report['pruned_percent']}% (held-out PSNR "
        f"{int8_report['psnr_min']:.2f} dB; on the benchmark's views "
        f"{min(int8_quality):.2f} dB at least). Artifacts: "
        + ", ".join(f"{name} {os.path.getsize(a) / 1e6:.0f} MB"
                    for name, a in artifacts.items()) + ".",
        "",
        "Pairs are Gaussian-tile pairs per frame (mean over the views, "
        "counted in numpy from a float64 projection). Bound: the frame "
        "time the pairs' blending would take at the FMA peak, each pair 256 "
        f"pixel evaluations of {BLEND_OPERATIONS} vector-lane operations.",
        "",
        "| threads | binning | pairs / frame | ms / frame | frames / s "
        "| bound ms | speed-up |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for threads, medians in rows:
        for name, pairs, label in (
                ("square", square_pairs, "3-sigma squares (reference)"),
                ("exact", exact_pairs, "exact culling"),
                ("pruned", pruned_pairs, "exact culling + pruning"),
                ("int8", int8_pairs, "exact culling + int8 + pruning")):
            ms = medians[name]
            lines.append(
                f"| {threads} | {label} | {pairs / 1e6:.2f} M | {ms:.0f} | "
                f"{1e3 / ms:.2f} | {bound_ms(pairs, threads):.0f} | "
                f"{medians['square'] / ms:.2f}x |")
    lines += [
        "",
        "Scaling with exact culling, 2 threads: frame time against the "
        "pairs it walks.",
        "",
        "| Gaussians | pairs / frame | ms / frame | µs per 1000 pairs | "
        "per-Gaussian share |",
        "| --- | --- | --- | --- | --- |",
    ]
    for count, pairs, ms in scaling:
        lines.append(f"| {count:,} | {pairs / 1e6:.2f} M | {ms:.0f} | "
                     f"{ms * 1e3 / (pairs / 1e3):.1f} | "
                     f"{per_gaussian * count / ms:.0%} |")
    growth = "; ".join(
        f"from {a[0]:,} to {b[0]:,} Gaussians the pairs grow "
        f"{b[1] / a[1]:.2f}x and the frame {b[2] / a[2]:.2f}x"
        for a, b in zip(scaling, scaling[1:]))
    lines += [
        "",
        "The scenes took turns frame by frame. Fitted over them (least "
        "squares, neither cost below zero), a frame costs "
        f"{per_pair * 1e6:.0f} µs per 1000 pairs plus "
        f"{per_gaussian * 1e6:.1f} µs per 1000 Gaussians; the last column is "
        f"the Gaussians' share of each frame. Scene to scene: {growth}.",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
