#!/usr/bin/python3
"""Checks kiln.splat_project and kiln.splat_rasterize, compiled, against the
float64 numpy reference renderer of the same algorithm
(splat_reference.py).

usage: check_splatting.py KILN_BIN_DIR KILN_RUNTIME_LIBRARY WORK_DIR

1. The ops (a kiln-dialect module compiled by kiln-compile). Each case is a scene of a few hundred Gaussians from
scripts/make_splat_scenes.py, edited where the case says, rendered from
several cameras into an image whose sides are not whole tiles (one case
a wide one, 50 tiles across, where splats cover more than 32 tiles of a
row), with a coloured background. The compiled render (exact culling, -O2's default)
must match the reference to 1e-4 per channel, be the same at 1 and 2
threads, and be the same to the bit as the render binned to every tile of
the 3-sigma squares (--splat-square-culling). Pixels where a
decision of the reference (near plane, radius rounding, the 1/255 alpha
and 1e-4 transmittance thresholds) lies within float32 rounding of its
threshold may differ by a splat taken or skipped, and those where two
splats whose depths are within float32 rounding overlap may blend them in
the other order: they are held to FRAGILE_TOLERANCE instead, and must be
under MAX_FRAGILE of the pixels (one such pair of wide splats covers 14% of
the behind-the-camera case's third view).

2. Scenes as .ply files compiled by kiln-compile: the Gaussians as
constants, as inputs (--splat-inputs), and in the other valid encodings
(double, big-endian), against the same reference; and one renderer whose
image size is an input (--splat-size-input) at several sizes within its
bound, which refuses sizes outside it.

3. Malformed scenes and image sizes: kiln-compile must exit 1 with one
error line saying what is wrong, and leave no output file.
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import make_splat_scenes as scenes  # noqa: E402
import splat_reference as reference  # noqa: E402
from kiln_runtime import KilnError, Runtime, Session  # noqa: E402

TOLERANCE = 1e-4
# A splat of alpha near 1/255 or transmittance near 1e-4 taken or skipped,
# or a Gaussian at its 3-sigma edge (alpha below 0.011) binned to one more
# tile or one fewer.
FRAGILE_TOLERANCE = 0.02
MAX_FRAGILE = 0.2
WIDTH, HEIGHT = 72, 56
BACKGROUND = np.array([0.2, 0.1, 0.3], np.float32)


def behind_camera(scene, rng):
    """A third of the Gaussians moved behind the first camera or onto its
    near plane's neighbourhood."""
    view = np.array(scenes.orbit_cameras(3, WIDTH, HEIGHT)[0]["view"])
    n = len(scene["positions"])
    chosen = rng.choice(n, n // 3, replace=False)
    depth = rng.uniform(-3.0, 0.5, len(chosen))
    camera = np.stack([rng.uniform(-1, 1, len(chosen)) * depth,
                       rng.uniform(-1, 1, len(chosen)) * depth, depth], 1)
    rotation, translation = view[:3, :3], view[:3, 3]
    scene["positions"][chosen] = (camera - translation) @ rotation
    return scene


def degenerate_scales(scene, rng):
    """Gaussians of no extent (the low-pass filter alone), needle-thin ones
    and huge ones."""
    n = len(scene["positions"])
    kinds = rng.integers(0, 4, n)
    scene["log_scales"][kinds == 0] = -30.0
    scene["log_scales"][kinds == 1, :2] = -30.0
    scene["log_scales"][kinds == 2] += 1.5
    return scene


def extreme_opacities(scene, rng):
    """Gaussians that never reach 1/255, and opaque ones that end pixels."""
    n = len(scene["positions"])
    kinds = rng.integers(0, 3, n)
    scene["opacity_logits"][kinds == 0] = -40.0
    scene["opacity_logits"][kinds == 1] = 12.0
    return scene


def screen_edges(scene, rng):
    """Gaussians whose means lie on, near and beyond the image's edges."""
    camera = scenes.orbit_cameras(3, WIDTH, HEIGHT)[0]
    view = np.array(camera["view"])
    fx, fy, cx, cy = camera["intrinsics"]
    n = len(scene["positions"])
    depth = rng.uniform(2.0, 8.0, n)
    u = rng.choice([-20.0, -3.0, 0.0, WIDTH - 1.0, WIDTH + 5.0], n) + \
        rng.normal(0, 2, n)
    v = rng.uniform(-10, HEIGHT + 10, n)
    camera_points = np.stack([(u - cx) / fx * depth, (v - cy) / fy * depth,
                              depth], 1)
    rotation, translation = view[:3, :3], view[:3, 3]
    scene["positions"][:] = (camera_points - translation) @ rotation
    return scene


def wide_splats(scene, rng):
    """A third of the Gaussians opaque and wide enough that, on the wide
    image, they cover more than 32 tiles of a row: more than the count's
    pass keeps test results for, so the second pass tests them again."""
    n = len(scene["positions"])
    chosen = rng.choice(n, n // 3, replace=False)
    scene["log_scales"][chosen] += 2.5
    scene["opacity_logits"][chosen] = 4.0
    return scene


# A wide image of one row of tiles per band: 50 tiles across.
WIDE = (800, 40)
# Three chunks of the lowering's parallel loops over splats (4096 each:
# the records, the depth order's gather, the bands' lists), the last
# part-full.
MANY = (9000, 1, None, (160, 120))
# name: (Gaussians, SH degree, edit[, image (width, height)])
CASES = {
    "orbit": (400, 3, None),
    "sh degree 0": (300, 0, None),
    "sh degree 1": (300, 1, None),
    "sh degree 2": (300, 2, None),
    "behind the camera": (400, 3, behind_camera),
    "degenerate scales": (400, 3, degenerate_scales),
    "extreme opacities": (400, 3, extreme_opacities),
    "screen edges": (300, 3, screen_edges),
    "wide splats": (300, 3, wide_splats, WIDE),
    "many splats": MANY,
}


def tensor_type(*shape):
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def render_module(count, coefficients, width=WIDTH, height=HEIGHT):
    t = tensor_type
    inputs = [t(count, 3), t(count, 3), t(count, 4), t(count),
              t(count, coefficients, 3), t(4, 4), t(4)]
    return f"""
func.func @main(%p: {inputs[0]}, %s: {inputs[1]}, %r: {inputs[2]},
                %o: {inputs[3]}, %sh: {inputs[4]}, %view: {inputs[5]},
                %k: {inputs[6]}, %bg: {t(3)}) -> {t(height, width, 3)} {{
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = {width} height = {height} : {", ".join(inputs)} -> {t(11, count)}
  %image = kiln.splat_rasterize %splats, %bg : {t(11, count)}, {t(3)} -> {t(height, width, 3)}
  return %image : {t(height, width, 3)}
}}
"""


def compile_module(kiln_bin, source, artifact, *options):
    result = subprocess.run(
        [os.path.join(kiln_bin, "kiln-compile"), source, "-o", artifact,
         *options], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"kiln-compile {source} failed:\n{result.stderr[-3000:]}")
    return artifact


def check_case(kiln_bin, runtime, work, name, case, failures):
    count, degree, edit, (width, height) = (*case, (WIDTH, HEIGHT))[:4]
    cameras = scenes.orbit_cameras(3, width, height)
    seed = len(name)
    scene = scenes.make_scene(count, seed, degree)
    if edit:
        scene = edit(scene, np.random.default_rng(seed + 1000))
    renders = [reference.render(scene, np.array(camera["view"]),
                                camera["intrinsics"], width, height,
                                BACKGROUND) for camera in cameras]
    if edit is wide_splats:
        g = reference.project(scene, np.array(cameras[0]["view"]),
                              cameras[0]["intrinsics"], width, height)
        widest = int((g["rect"][:, 2] - g["rect"][:, 0]).max())
        if not widest > 40:
            failures.append(f"{name}: the widest splat covers {widest} "
                            "tiles of a row, the case tests nothing")
    stem = os.path.join(work, name.replace(" ", "-"))
    with open(stem + ".mlir", "w") as f:
        f.write(render_module(count, scene["sh"].shape[1], width, height))
    artifact = compile_module(kiln_bin, stem + ".mlir", stem + ".so")
    # The reference rasterizer's binning, every tile of the 3-sigma square:
    # the same image, to the bit.
    square = Session(runtime, compile_module(
        kiln_bin, stem + ".mlir", stem + "-square.so",
        "--splat-square-culling"), threads=2)
    sessions = [Session(runtime, artifact, threads=t) for t in (1, 2)]
    worst, pairs, fragile_pixels = 0.0, 0, 0
    for i, (camera, (expected, camera_pairs, fragile)) in enumerate(
            zip(cameras, renders)):
        inputs = [scene["positions"], scene["log_scales"],
                  scene["rotations"], scene["opacity_logits"], scene["sh"],
                  np.array(camera["view"], np.float32),
                  np.array(camera["intrinsics"], np.float32), BACKGROUND]
        one, two = (s.run("main", inputs)[0] for s in sessions)
        error = np.abs(one - expected).max(2)
        robust = float(np.where(fragile, 0, error).max())
        worst, pairs = max(worst, robust), pairs + camera_pairs
        fragile_pixels += int(fragile.sum())
        if not robust <= TOLERANCE:
            where = np.unravel_index(np.where(fragile, 0, error).argmax(),
                                     error.shape)
            failures.append(f"{name}, camera {i}: off by {robust:.2e} at "
                            f"pixel {where}")
        if not error.max() <= FRAGILE_TOLERANCE:
            failures.append(f"{name}, camera {i}: a pixel near a threshold "
                            f"off by {error.max():.2e}")
        if not fragile.mean() < MAX_FRAGILE:
            failures.append(f"{name}, camera {i}: {fragile.mean():.1%} of "
                            "the pixels near a threshold")
        if not np.array_equal(one, two):
            failures.append(f"{name}, camera {i}: 1 and 2 threads differ")
        if not np.array_equal(one, square.run("main", inputs)[0]):
            failures.append(f"{name}, camera {i}: exact culling changed "
                            "the image")
        if not expected.std() > 0.01:
            failures.append(f"{name}, camera {i}: the reference image is "
                            "flat, the case tests nothing")
    for session in sessions + [square]:
        session.close()
    print(f"{name}: {count} Gaussians, {pairs} Gaussian-tile pairs over "
          f"{len(cameras)} cameras, largest error {worst:.1e} "
          f"({fragile_pixels} pixels near a threshold left out)")


def run_compile(kiln_bin, *args):
    return subprocess.run([os.path.join(kiln_bin, "kiln-compile"), *args],
                          capture_output=True, text=True)


def compare(label, got, expected, fragile, failures):
    error = np.abs(got - expected).max(2)
    robust = float(np.where(fragile, 0, error).max())
    if not robust <= TOLERANCE or not error.max() <= FRAGILE_TOLERANCE:
        failures.append(f"{label}: off by {robust:.2e} "
                        f"({error.max():.2e} near thresholds)")
    return robust


# name: (SH degree, .ply element type, Gaussians as inputs)
PLY_CASES = {
    "ply constants": (3, "<f4", False),
    "ply inputs": (3, "<f4", True),
    "ply double degree 1": (1, "<f8", False),
    "ply big-endian degree 2": (2, ">f4", False),
}


def check_ply(kiln_bin, runtime, work, name, case, failures):
    degree, dtype, as_inputs = case
    scene = scenes.make_scene(500, 7, degree)
    path = os.path.join(work, name.replace(" ", "-") + ".ply")
    scenes.write_ply(path, scene, dtype)
    artifact = path[:-4] + ".so"
    result = run_compile(kiln_bin, path, f"--splat-image={WIDTH}x{HEIGHT}",
                         "-o", artifact,
                         *(["--splat-inputs"] if as_inputs else []))
    if result.returncode != 0:
        failures.append(f"{name}: kiln-compile failed: {result.stderr}")
        return
    session = Session(runtime, artifact, threads=2)
    worst = 0.0
    for i, camera in enumerate(scenes.orbit_cameras(3, WIDTH, HEIGHT)):
        expected, _, fragile = reference.render(
            scene, np.array(camera["view"]), camera["intrinsics"], WIDTH,
            HEIGHT, BACKGROUND)
        inputs = [np.array(camera["view"], np.float32),
                  np.array(camera["intrinsics"], np.float32), BACKGROUND]
        if as_inputs:
            inputs = [scene["positions"], scene["log_scales"],
                      scene["rotations"], scene["opacity_logits"],
                      scene["sh"]] + inputs
        got = session.run("main", inputs)[0]
        worst = max(worst, compare(f"{name}, camera {i}", got, expected,
                                   fragile, failures))
    session.close()
    print(f"{name}: 3 cameras, largest error {worst:.1e}")


# Image sizes (height, width) a renderer compiled for at most HEIGHT x
# WIDTH draws: the bound, sides that are not whole tiles, one pixel, one
# row and one column.
SIZES = [(HEIGHT, WIDTH), (40, 50), (17, 33), (16, 16), (1, 1), (HEIGHT, 1),
         (3, WIDTH)]


def check_sized(kiln_bin, runtime, work, failures):
    """--splat-size-input: one artifact renders each of SIZES against the
    reference at that size, and refuses sizes outside the bound."""
    scene = scenes.make_scene(500, 11, 3)
    path = os.path.join(work, "ply-sized.ply")
    scenes.write_ply(path, scene, "<f4")
    artifact = path[:-4] + ".so"
    result = run_compile(kiln_bin, path, f"--splat-image={WIDTH}x{HEIGHT}",
                         "--splat-size-input", "-o", artifact)
    if result.returncode != 0:
        failures.append(f"sized: kiln-compile failed: {result.stderr}")
        return
    sessions = [Session(runtime, artifact, threads=t) for t in (1, 2)]
    worst = 0.0
    for height, width in SIZES:
        camera = scenes.orbit_cameras(3, width, height)[1]
        expected, _, fragile = reference.render(
            scene, np.array(camera["view"]), camera["intrinsics"], width,
            height, BACKGROUND)
        inputs = [np.array(camera["view"], np.float32),
                  np.array(camera["intrinsics"], np.float32), BACKGROUND,
                  np.array([height, width], np.int64)]
        one, two = (s.run("main", inputs)[0] for s in sessions)
        label = f"sized {height}x{width}"
        if one.shape != (height, width, 3):
            failures.append(f"{label}: the image is {one.shape}")
            continue
        worst = max(worst, compare(label, one, expected, fragile, failures))
        if not np.array_equal(one, two):
            failures.append(f"{label}: 1 and 2 threads differ")
    for height, width, message in [
            (HEIGHT + 1, WIDTH, f"element 0 ('height') is {HEIGHT + 1}, "
             f"outside the range 1..{HEIGHT}"),
            (HEIGHT, 0, "element 1 ('width') is 0, outside the range "
             f"1..{WIDTH}")]:
        inputs[3] = np.array([height, width], np.int64)
        try:
            sessions[0].run("main", inputs)
            failures.append(f"sized {height}x{width}: no error")
        except KilnError as error:
            if message not in str(error):
                failures.append(f"sized {height}x{width}: error '{error}'")
    for session in sessions:
        session.close()
    print(f"sized: {len(SIZES)} sizes up to {WIDTH}x{HEIGHT}, largest "
          f"error {worst:.1e}")


def ply_bytes(scene, header_edit=None, body_edit=None):
    """A valid .ply of `scene`, its header lines and body edited."""
    header, body = scenes.ply_parts(scene)
    if header_edit:
        header = header_edit(header)
    if body_edit:
        body = body_edit(body)
    return scenes.ply_bytes(header, body)


def column(name, degree=3):
    return scenes.ply_properties(degree).index(name)


def set_value(row, name, value):
    def edit(body):
        body = body.copy()
        body[row, column(name)] = value
        return body
    return edit


def check_malformed(kiln_bin, work, failures):
    scene = scenes.make_scene(50, 3, 3)
    drop = lambda prop: lambda h: [l for l in h if l != f"property float {prop}"]
    zero_quaternion = lambda body: [body.__setitem__(
        (5, slice(column("rot_0"), column("rot_3") + 1)), 0.0), body][1]
    cases = {
        "missing rot_3": (ply_bytes(scene, drop("rot_3")), [],
                          "no vertex property 'rot_3'"),
        "f_rest count": (ply_bytes(scene, drop("f_rest_44")), [],
                         "44 f_rest_ properties"),
        "f_rest gap": (ply_bytes(scene, drop("f_rest_3")), [],
                       "not numbered 0 to 43"),
        "duplicate property": (ply_bytes(scene, lambda h: h[:4] + [h[3]] +
                                         h[4:]), [], "listed twice"),
        "list property": (ply_bytes(scene, lambda h: h[:3] + [
            "property list uchar int vertex_indices"] + h[3:]), [],
            "is not a scalar property"),
        "truncated body": (ply_bytes(scene)[:-100], [],
                           "truncated: its header lists 50 vertices of 248 "
                           "bytes, and the 12300 bytes after it hold 49"),
        "huge vertex count": (ply_bytes(scene, lambda h: h[:2] + [
            "element vertex 1000000000000000"] + h[3:]), [],
            "lists 1000000000000000 vertices"),
        "NaN position": (ply_bytes(scene, None,
                                   set_value(7, "y", np.nan)), [],
                         "Gaussian 7: its y is NaN"),
        "infinite scale": (ply_bytes(scene, None,
                                     set_value(3, "scale_1", np.inf)), [],
                           "Gaussian 3: its scale_1 is infinite"),
        "zero quaternion": (ply_bytes(scene, None, zero_quaternion), [],
                            "Gaussian 5: its rotation quaternion"),
        "ascii": (ply_bytes(scene, lambda h: [h[0], "format ascii 1.0"] +
                            h[2:]), [], "binary .ply"),
        "no end_header": (ply_bytes(scene).replace(b"end_header\n",
                                                   b"end_headers\n", 1),
                          [], "no 'end_header'"),
        "not a ply": (b"\x89PNG\r\n" + bytes(200), [], "not a .ply file"),
        "empty file": (b"", [], "not a .ply file"),
        "image of a million by a million": (
            ply_bytes(scene), ["--splat-image=1000000x1000000"],
            "sides must be 1 to 16384"),
        "image size syntax": (ply_bytes(scene), ["--splat-image=640"],
                              "--splat-image takes WIDTHxHEIGHT"),
    }
    for name, (data, options, message) in cases.items():
        path = os.path.join(work, "bad-" + name.replace(" ", "-") + ".ply")
        with open(path, "wb") as f:
            f.write(data)
        artifact = path[:-4] + ".so"
        if os.path.exists(artifact):
            os.remove(artifact)
        result = run_compile(kiln_bin, path, "-o", artifact, *options)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 1 or len(lines) != 1 or \
                message not in lines[0] or \
                not lines[0].startswith("kiln-compile: error:"):
            failures.append(f"malformed scene '{name}': exit "
                            f"{result.returncode}, stderr {result.stderr!r}, "
                            f"expected one error line with {message!r}")
        elif os.path.exists(artifact):
            failures.append(f"malformed scene '{name}': left {artifact}")
        else:
            print(f"malformed scene '{name}': {lines[0]}")
    missing = os.path.join(work, "no-such-scene.ply")
    result = run_compile(kiln_bin, missing, "-o", missing[:-4] + ".so")
    if result.returncode != 1 or "cannot read the scene" not in result.stderr:
        failures.append(f"a missing scene: exit {result.returncode}, "
                        f"stderr {result.stderr!r}")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln_bin, runtime_library, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(runtime_library)
    failures = []
    for name, case in CASES.items():
        check_case(kiln_bin, runtime, work, name, case, failures)
    for name, case in PLY_CASES.items():
        check_ply(kiln_bin, runtime, work, name, case, failures)
    check_sized(kiln_bin, runtime, work, failures)
    check_malformed(kiln_bin, work, failures)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("all splatting cases match the reference")


if __name__ == "__main__":
    main()
