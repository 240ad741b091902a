#!/usr/bin/env python3
"""Procedural 3D Gaussian splatting scenes, written as standard 3DGS .ply.

  scripts/make_splat_scenes.py --count 500000 --out scene.ply \
      --cameras cameras.json --width 1920 --height 1080 --views 8

A scene has the structure a trained one has, made without downloads: a
textured ground plane and a striped sphere of flat, oriented splats (mostly
opaque, their scales varied around the spacing of their neighbours) and a
cloud of small, faint, round ones; spherical harmonics up to degree 3 whose
DC term is the texture's colour. The .ply holds what the reference 3DGS
code saves: x y z nx ny nz f_dc_0-2 f_rest_0-44 (channel-major) opacity
(a logit) scale_0-2 (logs) rot_0-3 (w x y z, not normalized), binary little
endian. The cameras orbit the scene, looking at its centre: view matrices
(world to camera; x right, y down, z forward) and intrinsics fx fy cx cy
with pixel centres at integer coordinates.
"""
import argparse
import json
import os

import numpy as np

SH_C0 = 0.28209479177387814
REST = 15  # coefficients of degree 1-3 per channel


def _frames(normals, rng):
    """Rotation matrices [N, 3, 3] whose third column is the normal, spun
    at random about it."""
    helper = np.where(np.abs(normals[:, :1]) < 0.9, [[1.0, 0, 0]], [[0, 1.0, 0]])
    t1 = np.cross(normals, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(normals, t1)
    spin = rng.uniform(0, 2 * np.pi, len(normals))[:, None]
    u = np.cos(spin) * t1 + np.sin(spin) * t2
    v = np.cross(normals, u)
    return np.stack([u, v, normals], 2)


def _quaternions(m):
    """(w, x, y, z) of rotation matrices, w >= 0."""
    w = np.sqrt(np.maximum(0, 1 + m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2])) / 2
    x = np.sqrt(np.maximum(0, 1 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2])) / 2
    y = np.sqrt(np.maximum(0, 1 - m[:, 0, 0] + m[:, 1, 1] - m[:, 2, 2])) / 2
    z = np.sqrt(np.maximum(0, 1 - m[:, 0, 0] - m[:, 1, 1] + m[:, 2, 2])) / 2
    x = np.copysign(x, m[:, 2, 1] - m[:, 1, 2])
    y = np.copysign(y, m[:, 0, 2] - m[:, 2, 0])
    z = np.copysign(z, m[:, 1, 0] - m[:, 0, 1])
    return np.stack([w, x, y, z], 1)


def _logit(p):
    return np.log(p / (1 - p))


def make_scene(count, seed=0, sh_degree=3):
    """Arrays of a scene of `count` Gaussians: positions [N, 3], log_scales
    [N, 3], rotations [N, 4], opacity_logits [N], sh [N, (degree+1)^2, 3],
    normals [N, 3]; float32."""
    rng = np.random.default_rng(seed)
    n_plane = int(count * 0.45)
    n_sphere = int(count * 0.35)
    n_cloud = count - n_plane - n_sphere

    # Ground plane y = 0 over [-4, 4]^2: a checkerboard with noise.
    xz = rng.uniform(-4, 4, (n_plane, 2))
    plane = np.stack([xz[:, 0], np.zeros(n_plane), xz[:, 1]], 1)
    plane_normals = np.tile([0.0, -1.0, 0.0], (n_plane, 1))
    checker = (np.floor(xz[:, 0]) + np.floor(xz[:, 1])) % 2
    plane_colour = np.where(checker[:, None] > 0, [0.75, 0.7, 0.6],
                            [0.25, 0.3, 0.35])
    plane_colour += rng.normal(0, 0.05, (n_plane, 3))
    plane_spacing = np.sqrt(64.0 / max(n_plane, 1))

    # A sphere of radius 1 resting on the plane (y down is up here: the
    # camera's y axis points down, the scene's up is -y).
    d = rng.normal(size=(n_sphere, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    sphere = d + [0.0, -1.0, 0.0]
    stripes = 0.5 + 0.5 * np.sin(10 * np.arctan2(d[:, 2], d[:, 0]))
    sphere_colour = np.stack([0.9 * stripes, 0.3 + 0.2 * d[:, 1],
                              0.8 * (1 - stripes)], 1)
    sphere_spacing = np.sqrt(4 * np.pi / max(n_sphere, 1))

    # A cloud of small, faint, round Gaussians above the plane.
    cloud = rng.normal([1.5, -1.5, -1.0], [1.0, 0.6, 1.0], (n_cloud, 3))
    cloud_normals = rng.normal(size=(n_cloud, 3))
    cloud_normals /= np.linalg.norm(cloud_normals, axis=1, keepdims=True)
    cloud_colour = rng.uniform(0.2, 1.0, (n_cloud, 3))

    positions = np.concatenate([plane, sphere, cloud])
    normals = np.concatenate([plane_normals, d, cloud_normals])
    colour = np.clip(np.concatenate([plane_colour, sphere_colour,
                                     cloud_colour]), 0.02, 0.98)
    tangent = np.concatenate([
        np.full(n_plane, plane_spacing), np.full(n_sphere, sphere_spacing),
        np.full(n_cloud, 0.4 * sphere_spacing)])
    tangent *= rng.lognormal(0.0, 0.35, count)
    flat = np.concatenate([np.full(n_plane + n_sphere, 0.08),
                           np.full(n_cloud, 1.0)])
    scales = np.stack([tangent * rng.lognormal(0, 0.3, count),
                       tangent * rng.lognormal(0, 0.3, count),
                       tangent * flat], 1)
    opacity = np.concatenate([rng.beta(5, 1.5, n_plane + n_sphere),
                              rng.beta(1.5, 4, n_cloud)])
    opacity = np.clip(opacity, 0.005, 0.995)
    # Quaternions as training leaves them: any positive length.
    rotations = _quaternions(_frames(normals, rng))
    rotations *= rng.uniform(0.5, 2.0, (count, 1))

    coefficients = (sh_degree + 1) ** 2
    sh = np.zeros((count, coefficients, 3))
    sh[:, 0] = (colour - 0.5) / SH_C0
    if coefficients > 1:
        falloff = np.repeat([0.0, 1.0, 0.6, 0.35], [1, 3, 5, 7])[:coefficients]
        sh[:, 1:] = rng.normal(0, 0.12, (count, coefficients - 1, 3)) \
            * falloff[1:, None]

    order = rng.permutation(count)  # no spatial order in the file
    f32 = lambda a: np.ascontiguousarray(a[order], np.float32)
    return dict(positions=f32(positions), log_scales=f32(np.log(scales)),
                rotations=f32(rotations), opacity_logits=f32(_logit(opacity)),
                sh=f32(sh), normals=f32(normals))


def ply_properties(sh_degree):
    rest = 3 * ((sh_degree + 1) ** 2 - 1)
    return (["x", "y", "z", "nx", "ny", "nz", "f_dc_0", "f_dc_1", "f_dc_2"] +
            [f"f_rest_{i}" for i in range(rest)] +
            ["opacity", "scale_0", "scale_1", "scale_2",
             "rot_0", "rot_1", "rot_2", "rot_3"])


def ply_parts(scene, dtype="<f4"):
    """The header lines (without end_header) and the body [N, properties]
    of the scene as a binary .ply of `dtype` properties."""
    n, coefficients, _ = scene["sh"].shape
    degree = int(round(np.sqrt(coefficients))) - 1
    rest = scene["sh"][:, 1:].transpose(0, 2, 1).reshape(n, -1)
    dtype = np.dtype(dtype)
    body = np.concatenate([
        scene["positions"], scene["normals"], scene["sh"][:, 0], rest,
        scene["opacity_logits"][:, None], scene["log_scales"],
        scene["rotations"]], 1).astype(dtype)
    order = "big" if dtype.byteorder == ">" else "little"
    kind = "double" if dtype.itemsize == 8 else "float"
    header = ["ply", f"format binary_{order}_endian 1.0",
              f"element vertex {n}"]
    header += [f"property {kind} {name}" for name in ply_properties(degree)]
    return header, body


def ply_bytes(header, body):
    return ("\n".join(header + ["end_header"]) + "\n").encode() + \
        (body.tobytes() if isinstance(body, np.ndarray) else body)


def write_ply(path, scene, dtype="<f4"):
    """The scene as a binary .ply of `dtype` properties (what 3DGS writes:
    little-endian float; "<f8" or ">f4" for other valid files)."""
    with open(path, "wb") as f:
        f.write(ply_bytes(*ply_parts(scene, dtype)))


def look_at(eye, target, up=(0.0, -1.0, 0.0)):
    """World-to-camera [4, 4]: z towards the target, y down, x right."""
    eye, target = np.asarray(eye, np.float64), np.asarray(target, np.float64)
    forward = target - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, up)
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    rotation = np.stack([right, down, forward])
    view = np.eye(4)
    view[:3, :3] = rotation
    view[:3, 3] = -rotation @ eye
    return view


def orbit_cameras(views, width, height, radius=6.0, height_above=2.5,
                  fov_degrees=60.0, target=(0.0, -0.8, 0.0), phase=0.0):
    """`views` cameras on a circle around the scene, the first `phase` of
    a step past angle 0."""
    fx = 0.5 * width / np.tan(np.radians(fov_degrees) / 2)
    intrinsics = [fx, fx, width / 2 - 0.5, height / 2 - 0.5]
    cameras = []
    for i in range(views):
        angle = 2 * np.pi * (i + phase) / views
        eye = [radius * np.cos(angle), -height_above, radius * np.sin(angle)]
        cameras.append(dict(view=look_at(eye, target).tolist(),
                            intrinsics=intrinsics, width=width,
                            height=height))
    return cameras


def write_views(folder, cameras, background=(0.0, 0.0, 0.0),
                image_size=None):
    """Each camera as a folder of the renderer's inputs (view_00/input_0.pb
    the view matrix, input_1.pb the intrinsics, input_2.pb the background,
    and with `image_size` (height, width) input_3.pb, for a renderer
    compiled with --splat-size-input), the layout kiln-compile's
    --calibration reads."""
    from onnx import numpy_helper
    for i, camera in enumerate(cameras):
        view_dir = os.path.join(folder, f"view_{i:02d}")
        os.makedirs(view_dir, exist_ok=True)
        inputs = [("view", np.array(camera["view"], np.float32)),
                  ("intrinsics", np.array(camera["intrinsics"], np.float32)),
                  ("background", np.array(background, np.float32))]
        if image_size is not None:
            inputs.append(("image_size", np.array(image_size, np.int64)))
        for k, (name, value) in enumerate(inputs):
            tensor = numpy_helper.from_array(value, name)
            with open(os.path.join(view_dir, f"input_{k}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sh-degree", type=int, default=3,
                        choices=[0, 1, 2, 3])
    parser.add_argument("--out", required=True, help="the .ply to write")
    parser.add_argument("--cameras", help="a JSON camera path to write")
    parser.add_argument("--views", type=int, default=8)
    parser.add_argument("--views-dir",
                        help="a folder to write the cameras to as inputs "
                             "(view_NN/input_0-2.pb), for --calibration")
    parser.add_argument("--views-image-size", action="store_true",
                        help="also write the image size (input_3.pb), for "
                             "a renderer compiled with --splat-size-input")
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1080)
    args = parser.parse_args()
    write_ply(args.out, make_scene(args.count, args.seed, args.sh_degree))
    cameras = orbit_cameras(args.views, args.width, args.height)
    if args.cameras:
        with open(args.cameras, "w") as f:
            json.dump(cameras, f, indent=1)
    if args.views_dir:
        write_views(args.views_dir, cameras,
                    image_size=((args.height, args.width)
                                if args.views_image_size else None))


if __name__ == "__main__":
    main()
