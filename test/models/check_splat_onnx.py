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

2. Malformed nodes: a missing attribute, an SH of 5 coefficients, 7
   inputs, opset 2 of ai.kiln, an unknown ai.kiln op, float16 positions:
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
from kiln_runtime import Runtime, Session  # noqa: E402

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


def make_model(w, edit=None):
    """The network and renderer as one ONNX graph; `edit` changes the
    SplatRender node, its inputs or the opsets before the model is made."""
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
                                            [3])]
    outputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                             [HEIGHT, WIDTH, 3]),
               helper.make_tensor_value_info("mean_colour", TensorProto.FLOAT,
                                             [3])]
    graph = helper.make_graph(nodes, "predicted_gaussians", inputs, outputs,
                              init)
    return helper.make_model(graph, opset_imports=opsets)


def compile_model(kiln_bin, model, path):
    onnx.save(model, path)
    artifact = path.replace(".onnx", ".so")
    result = subprocess.run([os.path.join(kiln_bin, "kiln-compile"), path,
                             "-o", artifact], capture_output=True, text=True)
    return result, artifact


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
            expected, _, fragile = reference.render(
                scene, np.array(camera["view"]), camera["intrinsics"], WIDTH,
                HEIGHT, background)
            error = np.abs(image - expected).max(2)
            robust = float(np.where(fragile, 0, error).max())
            worst = max(worst, robust)
            if not robust <= TOLERANCE or not error.max() <= FRAGILE_TOLERANCE:
                failures.append(f"latent {seed}, camera {i}: off by "
                                f"{robust:.2e} ({error.max():.2e} near "
                                "thresholds)")
            if not np.abs(mean - image.mean((0, 1))).max() <= 1e-5:
                failures.append(f"latent {seed}, camera {i}: the mean colour "
                                f"{mean} is not the image's "
                                f"{image.mean((0, 1))}")
            if not expected.std() > 0.01:
                failures.append(f"latent {seed}, camera {i}: the reference "
                                "image is flat, the case tests nothing")
    session.close()
    print(f"network + SplatRender: {COUNT} Gaussians, 2 latents x 3 "
          f"cameras, largest error {worst:.1e}")


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
    check_malformed(kiln_bin, work, failures)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print("ONNX graphs with SplatRender match the reference")


if __name__ == "__main__":
    main()
