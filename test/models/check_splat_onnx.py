#!/usr/bin/python3
"""Checks ONNX graphs with Kiln's SplatRender node (domain ai.kiln): a
network that predicts Gaussians and the renderer compile as one graph.

usage: check_splat_onnx.py KILN_BIN_DIR KILN_RUNTIME_LIBRARY WORK_DIR

1. A graph of ONNX ops (MatMul, Add, Tanh, Mul, Reshape,
   Unsqueeze, Concat) turns a latent input into the Gaussians of a
   procedural scene, SplatRender draws them, and a ReduceMean reads the
   image. Compiled by kiln-compile, it must match the float64 reference
   renderer (splat_reference.py) on the Gaussians the same heads compute
   in numpy to 1e-4 per channel (0.02 at pixels whose reference decisions
   lie within float32 rounding of a threshold), for two latents and three
   cameras; the mean colour must match the image's mean to 1e-5.

2. The image's size set at run time, within the width and height
   attributes as its bound: by SplatRender's optional ninth input
   `image_size`, a graph input (one artifact renders sizes from the bound
   to one pixel, each matching the reference at that size, and refuses a
   size outside the bound with an error naming the element and range),
   and computed from a graph input's named dimensions (Shape, Slice).

3. Malformed nodes: a missing attribute, an SH of 5 coefficients, 7
   inputs, opset 2 of ai.kiln, an unknown ai.kiln op, float16 positions,
   an int32 image_size, one computed from another input's values, and a
   constant one outside the bound:
   kiln-compile exits 1 with one error line naming the node and what is
   wrong, and leaves no output file.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import make_splat_scenes as scenes  # noqa: E402
import splat_reference as reference  # noqa: E402
from kiln_runtime import KilnError, Runtime, Session  # noqa: E402

COUNT, LATENT = 300, 8
WIDTH, HEIGHT = 72, 56
TOLERANCE, FRAGILE_TOLERANCE = 1e-4, 0.02
INPUTS = ["positions", "log_scales", "rotations", "opacity_logits", "sh",
          "view", "intrinsics", "background"]


def weights(seed):
    rng = np.random.default_rng(seed)
    base = scenes.make_scene(COUNT, seed, 1)
    return {
        "base": base["positions"],
        "w_pos": rng.normal(0, 0.3, (LATENT, 3)).astype(np.float32),
        "w_scale": rng.normal(0, 0.2, (LATENT, 3)).astype(np.float32),
        "base_scale": base["log_scales"],
        "rotations": base["rotations"],
        "w_opacity": rng.normal(0, 1.0, (LATENT, 1)).astype(np.float32),
        "w_colour": rng.normal(0, 0.5, (LATENT, 3)).astype(np.float32),
        "sh_rest": base["sh"][:, 1:],
    }


def heads(w, latent):
    """The Gaussians the graph computes, in float32 numpy."""
    f = np.float32
    return {
        "positions": w["base"] + f(0.1) * np.tanh(latent @ w["w_pos"]),
        "log_scales": w["base_scale"] + latent @ w["w_scale"],
        "rotations": w["rotations"],
        "opacity_logits": (latent @ w["w_opacity"]).reshape(COUNT),
        "sh": np.concatenate([(latent @ w["w_colour"])[:, None, :],
                              w["sh_rest"]], axis=1),
    }


def make_model(w, edit=None, extra_inputs=(), image_dims=(HEIGHT, WIDTH)):
    """The network and renderer as one ONNX graph; `edit` changes the
    SplatRender node, its inputs or the opsets before the model is made,
    `extra_inputs` are more graph inputs, `image_dims` the declared
    output's sides."""
    init = [numpy_helper.from_array(v, k) for k, v in w.items()]
    init += [numpy_helper.from_array(np.array([COUNT], np.int64), "count"),
             numpy_helper.from_array(np.array([1], np.int64), "axis_one"),
             numpy_helper.from_array(np.float32(0.1), "tenth")]
    nodes = [
        helper.make_node("MatMul", ["latent", "w_pos"], ["pos_head"]),
        helper.make_node("Tanh", ["pos_head"], ["pos_tanh"]),
        helper.make_node("Mul", ["pos_tanh", "tenth"], ["pos_offset"]),
        helper.make_node("Add", ["base", "pos_offset"], ["positions"]),
        helper.make_node("MatMul", ["latent", "w_scale"], ["scale_head"]),
        helper.make_node("Add", ["base_scale", "scale_head"], ["log_scales"]),
        helper.make_node("MatMul", ["latent", "w_opacity"], ["opacity_head"]),
        helper.make_node("Reshape", ["opacity_head", "count"],
                         ["opacity_logits"]),
        helper.make_node("MatMul", ["latent", "w_colour"], ["colour_head"]),
        helper.make_node("Unsqueeze", ["colour_head", "axis_one"],
                         ["sh_dc"]),
        helper.make_node("Concat", ["sh_dc", "sh_rest"], ["sh"], axis=1),
    ]
    render = helper.make_node("SplatRender", list(INPUTS), ["image"],
                              name="render", domain="ai.kiln", width=WIDTH,
                              height=HEIGHT)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.kiln", 1)]
    if edit:
        edit(render, nodes, opsets)
    nodes += [render,
              helper.make_node("ReduceMean", ["image"], ["mean_colour"],
                               axes=[0, 1], keepdims=0)]
    inputs = [helper.make_tensor_value_info("latent", TensorProto.FLOAT,
                                            [COUNT, LATENT]),
              helper.make_tensor_value_info("view", TensorProto.FLOAT, [4, 4]),
              helper.make_tensor_value_info("intrinsics", TensorProto.FLOAT,
                                            [4]),
              helper.make_tensor_value_info("background", TensorProto.FLOAT,
                                            [3])] + list(extra_inputs)
    outputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                             [*image_dims, 3]),
               helper.make_tensor_value_info("mean_colour", TensorProto.FLOAT,
                                             [3])]
    graph = helper.make_graph(nodes, "predicted_gaussians", inputs, outputs,
                              init)
    return helper.make_model(graph, opset_imports=opsets)


def compile_model(kiln_bin, model, path, flags=()):
    onnx.save(model, path)
    artifact = path.replace(".onnx", ".so")
    result = subprocess.run([os.path.join(kiln_bin, "kiln-compile"), path,
                             *flags, "-o", artifact], capture_output=True,
                            text=True)
    return result, artifact


def compare(label, image, mean, scene, camera, background, failures):
    """Checks a render and its mean colour against the reference at the
    image's size; returns the reference image and the error away from
    thresholds."""
    height, width = image.shape[:2]
    expected, _, fragile = reference.render(
        scene, np.array(camera["view"]), camera["intrinsics"], width, height,
        background)
    error = np.abs(image - expected).max(2)
    robust = float(np.where(fragile, 0, error).max())
    if not robust <= TOLERANCE or not error.max() <= FRAGILE_TOLERANCE:
        failures.append(f"{label}: off by {robust:.2e} ({error.max():.2e} "
                        "near thresholds)")
    if not np.abs(mean - image.mean((0, 1))).max() <= 1e-5:
        failures.append(f"{label}: the mean colour {mean} is not the "
                        f"image's {image.mean((0, 1))}")
    return expected, robust


def check_graph(kiln_bin, runtime, work, failures):
    w = weights(3)
    result, artifact = compile_model(kiln_bin, make_model(w),
                                     os.path.join(work, "render.onnx"))
    if result.returncode != 0:
        failures.append(f"the graph failed to compile: {result.stderr}")
        return
    session = Session(runtime, artifact, threads=2)
    background = np.array([0.1, 0.3, 0.2], np.float32)
    worst = 0.0
    for seed in (1, 2):
        latent = np.random.default_rng(seed).normal(
            0, 1, (COUNT, LATENT)).astype(np.float32)
        scene = heads(w, latent)
        for i, camera in enumerate(scenes.orbit_cameras(3, WIDTH, HEIGHT)):
            view = np.array(camera["view"], np.float32)
            intrinsics = np.array(camera["intrinsics"], np.float32)
            image, mean = session.run(
                "main", [latent, view, intrinsics, background], num_outputs=2)
            expected, robust = compare(
                f"latent {seed}, camera {i}", image, mean, scene, camera,
                background, failures)
            worst = max(worst, robust)
            if not expected.std() > 0.01:
                failures.append(f"latent {seed}, camera {i}: the reference "
                                "image is flat, the case tests nothing")
    session.close()
    print(f"network + SplatRender: {COUNT} Gaussians, 2 latents x 3 "
          f"cameras, largest error {worst:.1e}")


# (height, width) within the bound HEIGHT x WIDTH: the bound, sides that
# are not whole tiles, one pixel.
SIZES = [(HEIGHT, WIDTH), (40, 50), (17, 33), (1, 1)]


def size_input(render, nodes, opsets):
    render.input.append("image_size")


def size_from_shape(render, nodes, opsets):
    """image_size computed from the sides of the input `canvas`
    [height, width, 1]: its named dimensions."""
    nodes += [
        helper.make_node("Shape", ["canvas"], ["canvas_shape"]),
        helper.make_node("Slice", ["canvas_shape", "zero", "two"],
                         ["canvas_size"]),
    ]
    render.input.append("canvas_size")


def check_sized(kiln_bin, runtime, work, failures):
    """image_size given as a graph input, and computed from a graph input's
    named dimensions: each size matches the reference at that size, and
    one outside the bound is refused."""
    w = weights(5)
    sized_inputs = {
        "image_size input": (size_input, [helper.make_tensor_value_info(
            "image_size", TensorProto.INT64, [2])], ("height", "width")),
        "size from shape": (size_from_shape, [helper.make_tensor_value_info(
            "canvas", TensorProto.FLOAT, ["rows", "cols", 1])],
            ("rows", "cols")),
    }
    latent = np.random.default_rng(7).normal(
        0, 1, (COUNT, LATENT)).astype(np.float32)
    scene = heads(w, latent)
    background = np.array([0.2, 0.1, 0.3], np.float32)
    for label, (edit, extra, dims) in sized_inputs.items():
        model = make_model(w, edit, extra, dims)
        if label == "size from shape":
            model.graph.initializer.extend([
                numpy_helper.from_array(np.array([0], np.int64), "zero"),
                numpy_helper.from_array(np.array([2], np.int64), "two")])
        path = os.path.join(work, label.replace(" ", "-") + ".onnx")
        # Ranges past the bound: the node's own check refuses the rest.
        flags = ([f"--dim=rows=1..{2 * HEIGHT}", f"--dim=cols=1..{WIDTH}"]
                 if label == "size from shape" else [])
        result, artifact = compile_model(kiln_bin, model, path, flags)
        if result.returncode != 0:
            failures.append(f"{label}: the graph failed to compile: "
                            f"{result.stderr}")
            continue
        session = Session(runtime, artifact, threads=2)
        worst = 0.0

        def size_value(height, width):
            if label == "size from shape":
                return np.zeros((height, width, 1), np.float32)
            return np.array([height, width], np.int64)

        for height, width in SIZES:
            camera = scenes.orbit_cameras(3, width, height)[2]
            view = np.array(camera["view"], np.float32)
            intrinsics = np.array(camera["intrinsics"], np.float32)
            image, mean = session.run(
                "main", [latent, view, intrinsics, background,
                         size_value(height, width)], num_outputs=2)
            if image.shape != (height, width, 3):
                failures.append(f"{label} {height}x{width}: the image is "
                                f"{image.shape}")
                continue
            _, robust = compare(f"{label} {height}x{width}", image, mean,
                                scene, camera, background, failures)
            worst = max(worst, robust)
        camera = scenes.orbit_cameras(3, WIDTH, HEIGHT)[0]
        try:
            session.run("main", [latent, np.array(camera["view"], np.float32),
                                 np.array(camera["intrinsics"], np.float32),
                                 background, size_value(HEIGHT + 1, WIDTH)],
                        num_outputs=2)
            failures.append(f"{label}: no error for {HEIGHT + 1}x{WIDTH}")
        except KilnError as error:
            expected_error = (
                f"element 0 ('height') is {HEIGHT + 1}, outside the range "
                f"1..{HEIGHT}" if label == "image_size input" else
                f"dimension 'rows at node 'render'' {HEIGHT + 1}, outside "
                f"the range 1..{HEIGHT}")
            if expected_error not in str(error):
                failures.append(f"{label}: {HEIGHT + 1}x{WIDTH} gave the "
                                f"error '{error}'")
        session.close()
        print(f"{label}: {len(SIZES)} sizes up to {WIDTH}x{HEIGHT}, largest "
              f"error {worst:.1e}")


def set_attribute(name, value):
    def edit(render, nodes, opsets):
        del render.attribute[:]
        if value is not None:
            render.attribute.append(helper.make_attribute(name, value))
    return edit


def check_malformed(kiln_bin, work, failures):
    w = weights(4)
    five = dict(w, sh_rest=np.zeros((COUNT, 4, 3), np.float32))

    def drop_input(render, nodes, opsets):
        del render.input[-1]

    def opset_two(render, nodes, opsets):
        opsets[1] = helper.make_opsetid("ai.kiln", 2)

    def unknown_op(render, nodes, opsets):
        render.op_type = "SplatBlend"

    def half_positions(render, nodes, opsets):
        nodes.append(helper.make_node("Cast", ["positions"],
                                      ["positions_half"],
                                      to=TensorProto.FLOAT16))
        render.input[0] = "positions_half"

    def int32_size(render, nodes, opsets):
        nodes.append(helper.make_node("Cast", ["background"], ["size32"],
                                      to=TensorProto.INT32))
        render.input.append("size32")

    def size_from_values(render, nodes, opsets):
        nodes += [helper.make_node("Cast", ["intrinsics"], ["size64"],
                                   to=TensorProto.INT64),
                  helper.make_node("Slice", ["size64", "zero", "two"],
                                   ["size_values"])]
        render.input.append("size_values")

    def constant_size(height, width):
        def edit(render, nodes, opsets):
            nodes.append(helper.make_node(
                "Constant", [], ["fixed_size"],
                value=numpy_helper.from_array(
                    np.array([height, width], np.int64))))
            render.input.append("fixed_size")
        return edit

    slices = dict(w, zero=np.array([0], np.int64),
                  two=np.array([2], np.int64))
    cases = {
        "missing height": (w, lambda r, n, o: [
            r.attribute.remove(a) for a in list(r.attribute)
            if a.name == "height"],
            "attributes width and height must be 1 to 16384, not 72 and 0"),
        "five SH coefficients": (five, None,
                                 "input 'sh' must be [300, K, 3] with K = "
                                 "1, 4, 9 or 16 (SH degree 0-3), not "
                                 "[300, 5, 3]"),
        "seven inputs": (w, drop_input, "takes 8 inputs"),
        "opset 2": (w, opset_two, "is defined in opset 1 of domain ai.kiln"),
        "unknown op": (w, unknown_op,
                       "unsupported ONNX op 'SplatBlend' (domain 'ai.kiln'"),
        "float16 positions": (w, half_positions,
                              "input 'positions' must be float32"),
        "int32 image_size": (w, int32_size, "input 'image_size' must be "
                             "int64 [2] (height, width), not 'i32' [3]"),
        "image_size from values": (slices, size_from_values,
                                   "input 'image_size' must be a graph "
                                   "input, a constant or computed from "
                                   "shapes"),
        "constant image_size too wide": (
            w, constant_size(HEIGHT, WIDTH + 1),
            f"image_size's width is {WIDTH + 1}, outside 1..{WIDTH}"),
    }
    for name, (model_weights, edit, expected) in cases.items():
        path = os.path.join(work, "malformed.onnx")
        result, artifact = compile_model(
            kiln_bin, make_model(model_weights, edit), path)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 1 or len(lines) != 1 or \
                expected not in lines[0] or "render" not in lines[0] or \
                os.path.exists(artifact):
            failures.append(f"{name}: exit {result.returncode}, stderr "
                            f"{result.stderr!r}, expected one line naming "
                            f"the node with {expected!r} and no output")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln_bin, runtime_library, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    runtime = Runtime(runtime_library)
    failures = []
    check_graph(kiln_bin, runtime, work, failures)
    check_sized(kiln_bin, runtime, work, failures)
    check_malformed(kiln_bin, work, failures)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("ONNX graphs with SplatRender match the reference")


if __name__ == "__main__":
    main()
