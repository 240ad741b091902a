#!/usr/bin/python3
"""Checks a --quantize-report's calibration errors against numpy.

usage: check_calibration_report.py MODEL_DIR REPORT int4|int8|int8-static BUDGET

MODEL_DIR is make_quantized_mlp.py's output. For each product of the MLP
(fc1 on the calibration inputs, fc2 on the float model's hidden layer),
the error the scheme makes on its output is computed here, independently
of Kiln: sqrt(sum (quantized - float)^2 / sum float^2) over every row of
every calibration set. The report must give the same (relative tolerance
1e-3: float32 sums in a different order), the products under BUDGET
quantized and the others kept in float with the error as reason.

For int8-static, every quantization Kiln may choose for a product is
computed here: SmoothQuant's smoothing with each alpha of ALPHAS (column
j of the input divided by max|x_j|^alpha / max|w_j|^(1 - alpha), row j of
the weights multiplied by it) or none, and the range of the smoothed
calibration input clipped to 1, 0.9, ..., 0.4 of itself. The report's
alpha, scale and zero point must be one of them, its error numpy's for
that one, and within 2% of the least of them all (Kiln measures only the
few its estimate ranks best). It then writes expected_int8_static.pb: the
model's output on input_0.pb with the chosen ones, and prints them.

For every scheme, the report's "model" entry (the compiled model run on
the calibration sets) must give the relative error and cosine of the
model's output against the float model's that numpy computes with the
report's choices (float products where the budget kept them).
"""
import glob
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_quantized_mlp import (int4_product, quantize_weights,  # noqa: E402
                                quantized_product)

CLIPS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4)
ALPHAS = (None, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def range_quantization(low, high):
    low, high = np.float32(min(low, 0)), np.float32(max(high, 0))
    scale = np.float32((high - low) / np.float32(255))
    zero = np.float32(np.clip(np.rint(-low / scale), 0, 255)) if scale > 0 else np.float32(0)
    return scale, zero


def smoothing(rows, w, alpha):
    """SmoothQuant's factor per input column, in float32 as Kiln computes it."""
    if alpha is None:
        return np.ones(w.shape[0], np.float32)
    low = np.minimum(np.min([r.reshape(-1, w.shape[0]).min(axis=0) for r in rows], axis=0), 0)
    high = np.maximum(np.max([r.reshape(-1, w.shape[0]).max(axis=0) for r in rows], axis=0), 0)
    x_max = np.maximum(-low, high).astype(np.float32)
    w_max = np.abs(w).max(axis=1).astype(np.float32)
    alpha = np.float32(alpha)
    factors = (np.power(x_max, alpha) / np.power(w_max, np.float32(1) - alpha)).astype(np.float32)
    return np.where((x_max > 0) & (w_max > 0), factors, np.float32(1))


def static_product(x, w, scale, zero, factors):
    """kiln.quantized_matmul with a static input quantization: column j
    divided by scale * factors[j], the weights' rows multiplied by them."""
    q_w, w_scale = quantize_weights((w * factors[:, None]).astype(np.float32))
    rows = x.reshape(-1, x.shape[-1]).astype(np.float32)
    q = np.clip(np.rint(rows / (scale * factors)) + zero, 0, 255).astype(np.int64)
    acc = q @ q_w - int(zero) * q_w.sum(axis=0)
    real = acc.astype(np.float32) * (scale * w_scale)
    return real.reshape(x.shape[:-1] + (w.shape[1],)).astype(np.float32)


def relative_error(pairs):
    error = sum(float(((a.astype(np.float64) - b) ** 2).sum()) for a, b in pairs)
    total = sum(float((b ** 2).sum()) for _, b in pairs)
    return (error / total) ** 0.5


def check_static(folder, layers, weights, inputs):
    """int8-static: the chosen quantizations and errors, and the expected
    output; returns each product as quantized."""
    chosen = {}
    for name, w in (("fc1", weights["w1"]), ("fc2", weights["w2"])):
        rows = inputs[name]
        candidates = []
        for alpha in ALPHAS:
            factors = smoothing(rows, w, alpha)
            smoothed = [(r / factors).astype(np.float32) for r in rows]
            low = min(float(r.min()) for r in smoothed)
            high = max(float(r.max()) for r in smoothed)
            for clip in CLIPS:
                scale, zero = range_quantization(np.float32(clip) * np.float32(low),
                                                 np.float32(clip) * np.float32(high))
                error = relative_error(
                    [(static_product(r, w, scale, zero, factors),
                      r.astype(np.float64) @ w.astype(np.float64)) for r in rows])
                candidates.append((alpha, scale, zero, factors, error))
        layer = layers[name]
        assert layer["precision"] == "int8", (name, layer)
        alpha = layer.get("smoothing_alpha")
        match = [c for c in candidates
                 if (c[0] is None) == (alpha is None)
                 and (alpha is None or abs(c[0] - alpha) < 1e-6)
                 and abs(layer["input_scale"] - c[1]) <= 1e-6 * c[1]
                 and layer["input_zero_point"] == int(c[2])]
        assert match, (name, layer)
        alpha, scale, zero, factors, error = match[0]
        if alpha is not None:
            assert abs(layer["smoothing_min"] - factors.min()) <= 1e-5 * factors.min(), (name, layer)
            assert abs(layer["smoothing_max"] - factors.max()) <= 1e-5 * factors.max(), (name, layer)
        assert abs(layer["calibration_error"] - error) <= 1e-3 * error, (name, layer, error)
        least = min(c[4] for c in candidates)
        unsmoothed = min(c[4] for c in candidates if c[0] is None)
        assert error <= 1.02 * least, (name, error, least)
        chosen[name] = (scale, zero, factors)
        print(f"{name}: smoothing alpha {alpha}, input scale {scale:.6g}, zero point "
              f"{int(zero)}, calibration error {layer['calibration_error']:.5f} "
              f"(numpy {error:.5f}; least {least:.5f}, unsmoothed {unsmoothed:.5f})")
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "input_0.pb")))
    hidden = np.maximum(static_product(x, weights["w1"], *chosen["fc1"])
                        + weights["b1"], 0).astype(np.float32)
    y = (static_product(hidden, weights["w2"], *chosen["fc2"])
         + weights["b2"]).astype(np.float32)
    with open(os.path.join(folder, "expected_int8_static.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())
    return {name: (lambda x, w, c=chosen[name]: static_product(x, w, *c))
            for name in chosen}


def check_model(report, weights, products, sets):
    """The report's "model": the compiled model's output on each
    calibration set against the float model's, as numpy computes both."""
    errors, cosines = [], []
    for x in sets:
        exact = (np.maximum(x.astype(np.float64) @ weights["w1"] + weights["b1"], 0)
                 @ weights["w2"] + weights["b2"])
        hidden = np.maximum(products["fc1"](x, weights["w1"]) + weights["b1"],
                            0).astype(np.float32)
        y = (products["fc2"](hidden, weights["w2"]) + weights["b2"]).astype(np.float64)
        errors.append(float(np.sqrt(((y - exact) ** 2).sum() / (exact ** 2).sum())))
        cosines.append(float((y * exact).sum() / np.sqrt((y ** 2).sum() * (exact ** 2).sum())))
    model = report["model"]
    assert model["calibration_sets"] == len(sets), model
    (output,) = model["outputs"]
    assert output["name"] == "y", output
    for key, value in (("relative_error_mean", np.mean(errors)),
                       ("relative_error_max", max(errors))):
        assert abs(output[key] - value) <= 1e-3 * value + 1e-6, (key, output, value)
    for key, value in (("cosine_mean", np.mean(cosines)), ("cosine_min", min(cosines))):
        assert abs(output[key] - value) <= 1e-3 * (1 - value) + 1e-6, (key, output, value)
    print(f"model: relative error {output['relative_error_mean']:.5f} mean, "
          f"{output['relative_error_max']:.5f} max (numpy {np.mean(errors):.5f}, "
          f"{max(errors):.5f}); cosine {output['cosine_min']:.6f} min")


def main():
    folder, report_path, scheme, budget = sys.argv[1:5]
    budget = float(budget)
    product = int4_product if scheme == "int4" else quantized_product
    weights = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(folder, "model.onnx")).graph.initializer}
    sums = {"fc1": [0.0, 0.0], "fc2": [0.0, 0.0]}
    inputs = {"fc1": [], "fc2": []}
    for path in sorted(glob.glob(os.path.join(folder, "calibration", "*", "input_0.pb"))):
        x = numpy_helper.to_array(onnx.load_tensor(path))
        hidden = np.maximum(x @ weights["w1"] + weights["b1"], 0).astype(np.float32)
        inputs["fc1"].append(x)
        inputs["fc2"].append(hidden)
        for name, rows, w in (("fc1", x, weights["w1"]), ("fc2", hidden, weights["w2"])):
            exact = rows.astype(np.float64) @ w.astype(np.float64)
            error = product(rows, w).astype(np.float64) - exact
            sums[name][0] += float((error ** 2).sum())
            sums[name][1] += float((exact ** 2).sum())
    report = json.load(open(report_path))
    layers = {layer["node"]: layer for layer in report["layers"]}
    if scheme == "int8-static":
        check_model(report, weights, check_static(folder, layers, weights, inputs),
                    inputs["fc1"])
        return
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

    def float_product(x, w):
        return (x.astype(np.float64) @ w).astype(np.float32)
    check_model(report, weights,
                {name: product if layers[name]["precision"] == scheme else float_product
                 for name in ("fc1", "fc2")},
                inputs["fc1"])


if __name__ == "__main__":
    main()
