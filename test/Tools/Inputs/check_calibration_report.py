#!/usr/bin/python3
"""Checks a --quantize-report's calibration errors against numpy.

usage: check_calibration_report.py MODEL_DIR REPORT int4|int8 BUDGET

MODEL_DIR is make_quantized_mlp.py's output. For each product of the MLP
(fc1 on the calibration inputs, fc2 on the float model's hidden layer),
the error the scheme makes on its output is computed here, independently
of Kiln: sqrt(sum (quantized - float)^2 / sum float^2) over every row of
every calibration set. The report must give the same (relative tolerance
1e-3: float32 sums in a different order), the products under BUDGET
quantized and the others kept in float with the error as reason.
"""
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quantized_mlp import int4_product, quantized_product  # noqa: E402


def main():
    folder, report_path, scheme, budget = sys.argv[1:5]
    budget = float(budget)
    product = int4_product if scheme == "int4" else quantized_product
    weights = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(folder, "model.onnx")).graph.initializer}
    sums = {"fc1": [0.0, 0.0], "fc2": [0.0, 0.0]}
    for path in sorted(glob.glob(os.path.join(folder, "calibration", "*", "input_0.pb"))):
        x = numpy_helper.to_array(onnx.load_tensor(path))
        hidden = np.maximum(x @ weights["w1"] + weights["b1"], 0).astype(np.float32)
        for name, rows, w in (("fc1", x, weights["w1"]), ("fc2", hidden, weights["w2"])):
            exact = rows.astype(np.float64) @ w.astype(np.float64)
            error = product(rows, w).astype(np.float64) - exact
            sums[name][0] += float((error ** 2).sum())
            sums[name][1] += float((exact ** 2).sum())
    layers = {layer["node"]: layer for layer in json.load(open(report_path))["layers"]}
    for name, (error_squares, output_squares) in sums.items():
        expected = (error_squares / output_squares) ** 0.5
        layer = layers[name]
        if expected > budget > 0:
            reason = layer.get("reason", "")
            assert layer["precision"] == "float32", (name, layer)
            assert reason.startswith("calibration error "), (name, reason)
            measured = float(reason.split()[2])
            assert abs(measured - expected) <= 1e-3 * expected + 1e-4, (name, measured, expected)
        else:
            assert layer["precision"] == scheme, (name, layer)
            measured = layer["calibration_error"]
            assert abs(measured - expected) <= 1e-3 * expected, (name, measured, expected)
        print(f"{name}: calibration error {measured:.5f} (numpy {expected:.5f}), "
              f"{layer['precision']}")


if __name__ == "__main__":
    main()
