"""Writes a denoiser that predicts zero noise (latent [2, 4, 8], timestep
[2], eps = 0 * latent) to argv[1]/zero.onnx, standard normal noise to
argv[1]/noise.pb (timesteps for the plain entry: timestep.pb), and the
samples DDIM and Euler must reach from it:
with eps = 0, DDIM's x0 estimate is x / sqrt(abar(999)) at the first step
and stays; Euler's sigma-space latent sigma(999) * noise stays, and the
last step (sigma 0) returns it. abar from DDPM's linear betas."""
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
zero = nh.from_array(np.zeros(1, np.float32), "zero")
graph = h.make_graph(
    [h.make_node("Mul", ["latent", "zero"], ["noise"])], "zero",
    [h.make_tensor_value_info("latent", T.FLOAT, [2, 4, 8]),
     h.make_tensor_value_info("timestep", T.FLOAT, [2])],
    [h.make_tensor_value_info("noise", T.FLOAT, [2, 4, 8])], [zero])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]),
          out + "/zero.onnx")
noise = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(np.float32)
onnx.save_tensor(nh.from_array(noise, "noise"), out + "/noise.pb")
onnx.save_tensor(nh.from_array(np.array([999, 0], np.float32), "timestep"),
                 out + "/timestep.pb")
abar = np.cumprod(1 - np.linspace(1e-4, 0.02, 1000))[-1]
for name, factor in (("ddim", 1 / np.sqrt(abar)),
                     ("euler", np.sqrt((1 - abar) / abar))):
    onnx.save_tensor(nh.from_array((noise * factor).astype(np.float32),
                                   "sample"), out + f"/{name}.pb")
