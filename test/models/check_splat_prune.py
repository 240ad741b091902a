#!/usr/bin/python3
"""Checks kiln.splat_contributions and Gaussian pruning within a PSNR
budget (kiln-compile --accelerate=splat-prune).

usage: check_splat_prune.py KILN_BIN_DIR KILN_RUNTIME_LIBRARY WORK_DIR

1. Contributions (a kiln-dialect module compiled by kiln-compile): each
Gaussian's blending weight alpha T summed over the image must match the
float64 reference renderer's (splat_reference.contributions) to 1e-3
relative plus 1e-4, plus its alpha over the pixels where a decision of the
reference lies within float32 rounding of its threshold. The weights of
all Gaussians at a pixel sum to 1 - T, which two compiled renders give
(backgrounds 1 and 0): their totals must agree to 1e-4 relative. The sums
must be the same at 1 and 2 threads, and under square and exact culling.

2. Pruning: a procedural scene (.ply) compiled with --accelerate=splat-prune
--quality-budget psnr=35 on eight orbit views, and again with
--splat-reduce-sh, with --splat-half-attributes and with
--splat-int8-attributes. The pruned artifacts' renders of the held-out views
(the odd ones), measured here against the unpruned artifact's, must keep
35 dB, and the least of them must be the PSNR the search reports (its
candidates render exactly what the pruned scene renders). Something must
be pruned, the next percent the search tried must have broken the budget,
--splat-reduce-sh must lower the degree and --splat-half-attributes take
float16. Those artifacts must render a held-out view as the reference
renderer renders the scene less the Gaussians the report lists as pruned,
with SH cut to the reported degree, or its attributes but the positions
rounded to float16, or to int8 codes of an affine map per column
(--splat-int8-attributes: at least the SH coefficients must take int8). A renderer whose image size is an input
(--splat-size-input) prunes on views that carry their size, and renders as
the reference does.

3. Misuse: pruning a scene with run-time Gaussians, one view, a cosine
budget, a PSNR budget without pruning, --splat-reduce-sh or
--splat-half-attributes without pruning, views of the wrong shape: exit 1, one error line saying what is wrong, no
output file.
"""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import make_splat_scenes as scenes  # noqa: E402
import splat_reference as reference  # noqa: E402
from check_splatting import (compile_module, extreme_opacities,  # noqa: E402
                             render_module, run_compile, screen_edges,
                             tensor_type, WIDTH, HEIGHT)
from kiln_runtime import Runtime, Session  # noqa: E402

BUDGET = 35.0
# Pruning: a scene with the structure of a trained one, small enough to
# compile and search in seconds, in an image that is not whole tiles.
PRUNE_GAUSSIANS = 20000
PRUNE_WIDTH, PRUNE_HEIGHT = 200, 120


def contributions_module(count, coefficients):
    t = tensor_type
    inputs = [t(count, 3), t(count, 3), t(count, 4), t(count),
              t(count, coefficients, 3), t(4, 4), t(4)]
    return f"""
func.func @main(%p: {inputs[0]}, %s: {inputs[1]}, %r: {inputs[2]},
                %o: {inputs[3]}, %sh: {inputs[4]}, %view: {inputs[5]},
                %k: {inputs[6]}) -> {t(count)} {{
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = {WIDTH} height = {HEIGHT} : {", ".join(inputs)} -> {t(11, count)}
  %weights = kiln.splat_contributions %splats width = {WIDTH} height = {HEIGHT} : {t(11, count)} -> {t(count)}
  return %weights : {t(count)}
}}
"""


def check_contributions(kiln_bin, runtime, work, name, edit, failures):
    count = 400
    seed = 7 + len(name)
    scene = scenes.make_scene(count, seed, 3)
    if edit:
        scene = edit(scene, np.random.default_rng(seed))
    stem = os.path.join(work, name.replace(" ", "-"))
    with open(stem + ".mlir", "w") as f:
        f.write(contributions_module(count, scene["sh"].shape[1]))
    with open(stem + "-render.mlir", "w") as f:
        f.write(render_module(count, scene["sh"].shape[1]))
    sessions = [Session(runtime, compile_module(
        kiln_bin, stem + ".mlir", stem + ".so"), threads=t) for t in (1, 2)]
    square = Session(runtime, compile_module(
        kiln_bin, stem + ".mlir", stem + "-square.so",
        "--splat-square-culling"), threads=2)
    render = Session(runtime, compile_module(
        kiln_bin, stem + "-render.mlir", stem + "-render.so"), threads=2)
    gaussians = [scene["positions"], scene["log_scales"], scene["rotations"],
                 scene["opacity_logits"], scene["sh"]]
    worst, blended = 0.0, 0
    for i, camera in enumerate(scenes.orbit_cameras(3, WIDTH, HEIGHT)):
        view = np.array(camera["view"], np.float32)
        intrinsics = np.array(camera["intrinsics"], np.float32)
        expected, bound = reference.contributions(
            scene, np.array(camera["view"]), camera["intrinsics"], WIDTH,
            HEIGHT)
        one, two = (s.run("main", gaussians + [view, intrinsics])[0]
                    for s in sessions)
        excess = np.abs(one - expected) - (1e-3 * expected + 1e-4 + bound)
        worst = max(worst, float(np.abs(one - expected).max()))
        blended += int((expected > 1).sum())
        if not excess.max() <= 0:
            n = int(excess.argmax())
            failures.append(f"{name}, camera {i}: Gaussian {n} weighs "
                            f"{one[n]:.6g}, the reference {expected[n]:.6g} "
                            f"(close calls allow {bound[n]:.3g})")
        if not np.array_equal(one, two):
            failures.append(f"{name}, camera {i}: 1 and 2 threads differ")
        if not np.array_equal(
                one, square.run("main", gaussians + [view, intrinsics])[0]):
            failures.append(f"{name}, camera {i}: exact culling changed the "
                            "sums")
        white, black = (render.run("main", gaussians + [
            view, intrinsics, np.full(3, value, np.float32)])[0]
            for value in (1.0, 0.0))
        covered = float((1 - (white - black)[:, :, 0].astype(np.float64)).sum())
        total = float(one.astype(np.float64).sum())
        if not abs(total - covered) <= 1e-4 * covered:
            failures.append(f"{name}, camera {i}: the weights sum to "
                            f"{total:.6g}, the renders' coverage to "
                            f"{covered:.6g}")
    for session in sessions + [square, render]:
        session.close()
    if blended < 10:
        failures.append(f"{name}: only {blended} Gaussians blend more than "
                        "one pixel's worth; the case tests nothing")
    print(f"contributions, {name}: {count} Gaussians, largest difference "
          f"{worst:.1e}, {blended} weights above 1")


def psnr(image, reference_image):
    error = np.clip(image, 0, 1).astype(np.float64) - np.clip(
        reference_image, 0, 1)
    mse = float(np.mean(error * error))
    return float("inf") if mse == 0 else -10 * np.log10(mse)


def check_pruning(kiln_bin, runtime, work, failures):
    ply = os.path.join(work, "prune-scene.ply")
    views = os.path.join(work, "prune-views")
    scene = scenes.make_scene(PRUNE_GAUSSIANS, 11, 3)
    scenes.write_ply(ply, scene)
    cameras = scenes.orbit_cameras(8, PRUNE_WIDTH, PRUNE_HEIGHT)
    scenes.write_views(views, cameras)
    image = f"--splat-image={PRUNE_WIDTH}x{PRUNE_HEIGHT}"
    full_so = os.path.join(work, "full.so")
    result = run_compile(kiln_bin, ply, image, "-o", full_so)
    if result.returncode != 0:
        failures.append(f"the unpruned scene failed to compile: "
                        f"{result.stderr[-2000:]}")
        return
    for label, options in (("pruning", []),
                           ("pruning and SH", ["--splat-reduce-sh"]),
                           ("pruning and float16",
                            ["--splat-half-attributes"]),
                           ("pruning and int8",
                            ["--splat-int8-attributes"])):
        stem = os.path.join(work, label.replace(" ", "-"))
        result = run_compile(kiln_bin, ply, image, "-o", stem + ".so",
                             "--accelerate=splat-prune",
                             f"--calibration={views}",
                             f"--quality-budget=psnr={BUDGET}",
                             f"--accelerate-report={stem}.json", *options)
        if result.returncode != 0:
            failures.append(f"{label} failed to compile: "
                            f"{result.stderr[-2000:]}")
            continue
        report = check_pruned(runtime, stem, full_so, cameras, label,
                              failures)
        if "--splat-reduce-sh" in options and not report["sh_degree"] < 3:
            failures.append(f"{label}: the SH degree stayed 3")
        if report["half_attributes"] != ("--splat-half-attributes" in
                                         options):
            failures.append(f"{label}: float16 attributes "
                            f"{report['half_attributes']}")
        if "--splat-int8-attributes" in options and \
                report["storage"]["sh"] != "int8":
            failures.append(f"{label}: the SH coefficients stayed "
                            f"{report['storage']['sh']}")
        if options:
            check_against_reference(runtime, stem + ".so", scene, report,
                                    cameras[1], label, failures)
    return ply, views


def check_sized_pruning(kiln_bin, runtime, work, ply, failures):
    """Pruning a renderer whose image size is an input (--splat-size-input):
    the views carry their size, below the compiled bound, and the pruned
    artifact renders a view at that size as the reference renders the
    scene less the reported Gaussians."""
    scene = scenes.make_scene(PRUNE_GAUSSIANS, 11, 3)
    views = os.path.join(work, "prune-sized-views")
    cameras = scenes.orbit_cameras(4, PRUNE_WIDTH, PRUNE_HEIGHT)
    scenes.write_views(views, cameras,
                       image_size=(PRUNE_HEIGHT, PRUNE_WIDTH))
    stem = os.path.join(work, "pruning-sized")
    result = run_compile(
        kiln_bin, ply, f"--splat-image={PRUNE_WIDTH + 40}x{PRUNE_HEIGHT + 24}",
        "--splat-size-input", "-o", stem + ".so", "--accelerate=splat-prune",
        f"--calibration={views}", f"--quality-budget=psnr={BUDGET}",
        f"--accelerate-report={stem}.json")
    if result.returncode != 0:
        failures.append(f"sized pruning failed to compile: "
                        f"{result.stderr[-2000:]}")
        return
    with open(stem + ".json") as f:
        report = json.load(f)
    if not 0 < report["pruned"] < PRUNE_GAUSSIANS:
        failures.append(f"sized pruning pruned {report['pruned']} Gaussians")
    check_against_reference(runtime, stem + ".so", scene, report, cameras[1],
                            "sized pruning", failures,
                            image_size=(PRUNE_HEIGHT, PRUNE_WIDTH))


def check_against_reference(runtime, artifact, scene, report, camera, label,
                            failures, image_size=None):
    keep = np.ones(PRUNE_GAUSSIANS, bool)
    keep[report["pruned_indices"]] = False
    coefficients = (report["sh_degree"] + 1) ** 2
    cut = {name: value[keep] for name, value in scene.items()}
    for name, storage in report["storage"].items():
        if storage == "float16":
            cut[name] = cut[name].astype(np.float16).astype(np.float32)
        elif storage == "int8":
            cut[name] = as_int8(scene[name], keep)
    cut["sh"] = cut["sh"][:, :coefficients]
    expected, _, fragile = reference.render(
        cut, np.array(camera["view"]), camera["intrinsics"], PRUNE_WIDTH,
        PRUNE_HEIGHT, np.zeros(3))
    session = Session(runtime, artifact)
    inputs = [np.array(camera["view"], np.float32),
              np.array(camera["intrinsics"], np.float32),
              np.zeros(3, np.float32)]
    if image_size is not None:
        inputs.append(np.array(image_size, np.int64))
    got = session.run("main", inputs)[0]
    session.close()
    error = np.abs(got - expected).max(2)
    robust = float(np.where(fragile, 0, error).max())
    if not robust <= 1e-4:
        failures.append(f"{label}: the pruned scene renders {robust:.2e} off "
                        "the reference render of the scene less the "
                        "reported Gaussians")
    print(f"{label}, against the reference render of the reported scene: "
          f"largest error {robust:.1e} ({int(fragile.sum())} pixels near a "
          "threshold)")


def as_int8(values, keep):
    """`values` ([N, ...]) of the kept Gaussians as int8 storage reads
    them: each column over all N Gaussians mapped to -127..127 around its
    range's midpoint, rounded to the nearest code (ties to even)."""
    rows = values.reshape(len(values), -1).astype(np.float64)
    low, high = rows.min(0), rows.max(0)
    scale = ((high - low) / 254).astype(np.float32).astype(np.float64)
    scale[scale == 0] = 1
    offset = ((high + low) / 2).astype(np.float32).astype(np.float64)
    codes = np.clip(np.rint((rows - offset) / scale), -127, 127)
    return (codes * scale + offset).reshape(values.shape)[keep]


def check_pruned(runtime, stem, full_so, cameras, label, failures):
    pruned_so = stem + ".so"
    with open(stem + ".json") as f:
        report = json.load(f)
    pruned, full = Session(runtime, pruned_so), Session(runtime, full_so)
    measured = []
    for i, camera in enumerate(cameras):
        inputs = [np.array(camera["view"], np.float32),
                  np.array(camera["intrinsics"], np.float32),
                  np.zeros(3, np.float32)]
        value = psnr(pruned.run("main", inputs)[0], full.run("main", inputs)[0])
        if i % 2 == 1:
            measured.append(value)
            if not value >= BUDGET:
                failures.append(f"{label}, held-out view {i}: {value:.2f} dB, under "
                                f"the {BUDGET} dB budget")
    pruned.close()
    full.close()
    least = min(measured)
    if report["pruned"] == 0 or report["pruned"] + report["kept"] != \
            PRUNE_GAUSSIANS:
        failures.append(f"{label} kept {report['kept']} and pruned "
                        f"{report['pruned']} of {PRUNE_GAUSSIANS} Gaussians")
    if report["psnr_min"] is None or \
            not abs(report["psnr_min"] - least) <= 1e-3:
        failures.append(f"{label}: the search reports {report['psnr_min']} dB, the "
                        f"pruned artifact renders {least:.4f} dB")
    tried = {t["pruned_percent"]: t["psnr_min"] for t in report["tried"]}
    step = report["pruned_percent"] + 1
    if step < 100 and not (step in tried and tried[step] is not None and
                           tried[step] < BUDGET):
        failures.append(f"{label}: the search stopped at {step - 1}% without "
                        f"measuring {step}% over the budget: {tried}")
    print(f"{label}: {report['pruned']} of {PRUNE_GAUSSIANS} Gaussians "
          f"({report['pruned_percent']}%) pruned, SH degree "
          f"{report['sh_degree']}, held-out PSNR {least:.2f} dB (budget "
          f"{BUDGET}), {report['unseen_in_ranking_views']} unseen in the "
          "ranking views")
    return report


def check_misuse(kiln_bin, work, ply, views, failures):
    one_view = os.path.join(work, "one-view")
    scenes.write_views(one_view, scenes.orbit_cameras(1, 64, 48))
    bad_views = os.path.join(work, "bad-views")
    cameras = scenes.orbit_cameras(2, 64, 48)
    for camera in cameras:
        camera["intrinsics"] = camera["intrinsics"][:3]
    scenes.write_views(bad_views, cameras)
    prune = ["--accelerate=splat-prune", "--quality-budget=psnr=35"]
    cases = {
        "run-time Gaussians": ([f"--calibration={views}", "--splat-inputs"]
                               + prune, "whose Gaussians are constants"),
        "one view": ([f"--calibration={one_view}"] + prune,
                     "1 camera view; it needs at least two"),
        "cosine budget": ([f"--calibration={views}",
                           "--accelerate=splat-prune",
                           "--quality-budget=cos=0.99"],
                          "a cosine quality budget applies to the token"),
        "budget without pruning": ([f"--calibration={views}",
                                    "--quality-budget=psnr=35"],
                                   "splat pruning (--accelerate=splat-prune)"),
        "SH without pruning": (["--splat-reduce-sh"],
                               "part of splat pruning"),
        "float16 without pruning": (["--splat-half-attributes"],
                                    "part of splat pruning"),
        "int8 without pruning": (["--splat-int8-attributes"],
                                 "part of splat pruning"),
        "wrong view shape": ([f"--calibration={bad_views}"] + prune,
                             "intrinsics"),
    }
    for name, (options, expected) in cases.items():
        output = os.path.join(work, "misuse.so")
        result = run_compile(kiln_bin, ply, "--splat-image=64x48", "-o",
                             output, *options)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 1 or len(lines) != 1 or \
                expected not in lines[0] or os.path.exists(output):
            failures.append(f"{name}: exit {result.returncode}, stderr "
                            f"{result.stderr!r}, expected one line with "
                            f"{expected!r} and no output")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln_bin, runtime_library, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(runtime_library)
    failures = []
    for name, edit in {"plain": None, "extreme opacities": extreme_opacities,
                       "screen edges": screen_edges}.items():
        check_contributions(kiln_bin, runtime, work, name, edit, failures)
    scene = check_pruning(kiln_bin, runtime, work, failures)
    if scene:
        check_sized_pruning(kiln_bin, runtime, work, scene[0], failures)
        check_misuse(kiln_bin, work, *scene, failures)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("contributions match the reference; pruning keeps its budget")


if __name__ == "__main__":
    main()
