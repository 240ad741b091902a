#!/usr/bin/python3
"""Checks kiln-compile --choose-cache on the test DiT (make_denoisers.py
--depth 2).

usage: check_cache_search.py BIN_DIR RUNTIME_LIBRARY MODEL_DIR WORK_DIR

Four calibration sets of noise and a label; 8 guided DDIM steps; budget
53 dB, which the mean PSNR less twice its standard error over the sets
must reach. The report must follow the search's rule (candidates by the share of
block work left, cheapest first, at one cost linear, quadratic and no
forecast in turn, each before the chosen one under the budget, the chosen
one over it; then adaptive thresholds from the largest down to the first
within the budget, which wins if it measured at least 10% faster), and its PSNR of the chosen candidate must
be what this script measures running the chosen artifact and the uncached
one on the calibration sets (0.01 dB; PSNR per sample against the uncached
sample, peak its range). Fresh noise (seeds 100-103) is reported and must
stay within 3 dB of the calibration figure. (Random weights: the blocks
are cheap to reuse; the budget here only places the choice within the
candidates. What budgets cost on a trained model is measured by
bench/run_diffusion_caching.py.)
"""
import json
import os
import subprocess
import sys

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import Runtime, Session  # noqa: E402

BUDGET = 53.0
ARGS = ["--pipeline=diffusion", "--steps=8", "--cfg-scale=4"]


def write(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def inputs(seed):
    noise = np.random.default_rng(seed).standard_normal(
        (1, 4, 32, 32)).astype(np.float32)
    return noise, np.array([seed * 37 % 1000], np.int64)


def psnr(sample, reference):
    mse = float(np.mean((sample.astype(np.float64) - reference) ** 2))
    peak = float(reference.max() - reference.min())
    return min(200.0, 10 * np.log10(peak * peak / mse)) if mse else 200.0


def psnrs(runtime, chosen, full, seeds):
    a, b = Session(runtime, chosen), Session(runtime, full)
    values = [psnr(a.run("sample", list(inputs(s)))[0],
                   b.run("sample", list(inputs(s)))[0]) for s in seeds]
    a.close()
    b.close()
    return np.array(values)


def main():
    bin_dir, library, model_dir, work = sys.argv[1:5]
    calibration = os.path.join(work, "calibration")
    for seed in range(4):
        folder = os.path.join(calibration, f"set_{seed}")
        os.makedirs(folder, exist_ok=True)
        noise, label = inputs(seed)
        write(os.path.join(folder, "input_0.pb"), noise, "noise")
        write(os.path.join(folder, "input_1.pb"), label, "labels")
    model = os.path.join(model_dir, "model.onnx")
    compiler = os.path.join(bin_dir, "kiln-compile")
    chosen = os.path.join(work, "chosen.so")
    full = os.path.join(work, "full.so")
    report_path = os.path.join(work, "report.json")
    subprocess.run([compiler, model] + ARGS +
                   ["--choose-cache", "--calibration", calibration,
                    f"--quality-budget=psnr={BUDGET}", "--cache-report",
                    report_path, "-o", chosen], check=True)
    subprocess.run([compiler, model] + ARGS + ["-o", full], check=True)
    with open(report_path) as f:
        report = json.load(f)
    tried = report["tried"]
    print(json.dumps(report, indent=1))
    costs = [t["block_work"] for t in tried]
    assert costs == sorted(costs), "candidates not cheapest first"
    assert tried[0]["forecast"] == 1, "the linear forecast not tried first"
    for before, after in zip(tried, tried[1:]):
        if (before["interval"], before["first_block"]) == \
                (after["interval"], after["first_block"]):
            assert (before["forecast"], after["forecast"]) in \
                ((1, 2), (2, 0)), "forecasts out of order"
        else:
            assert before["forecast"] == 0, "a forecast left untried"
    assert all(t["psnr_lower"] < BUDGET for t in tried[:-1]), \
        "a candidate within the budget was passed over"
    last = tried[-1]
    assert last["psnr_lower"] >= BUDGET, "no candidate met the budget"

    # Adaptive: thresholds from the largest down, until one meets the
    # budget; it replaces the interval choice only if it measured faster.
    adaptive = report["tried_adaptive"]
    thresholds = [t["threshold"] for t in adaptive]
    assert thresholds == sorted(thresholds, reverse=True) and adaptive, \
        "thresholds not largest first"
    assert all(t["psnr_lower"] < BUDGET for t in adaptive[:-1]), \
        "a threshold within the budget was passed over"
    chosen_report = report["chosen"]
    if chosen_report["threshold"] > 0:
        pick = adaptive[-1]
        assert pick["psnr_lower"] >= BUDGET and \
            pick["ms"] < 0.9 * last["ms"], \
            "an adaptive cache chosen that the rule does not pick"
        assert chosen_report["threshold"] == pick["threshold"]
        assert chosen_report["interval"] == 1
    else:
        pick = last
        assert adaptive[-1]["psnr_lower"] < BUDGET or \
            adaptive[-1]["ms"] >= 0.9 * last["ms"], \
            "a faster adaptive cache lost"
        key = ("interval", "first_block", "forecast")
        assert [chosen_report[k] for k in key] == [last[k] for k in key], \
            "chose another"
        assert chosen_report["interval"] > 1

    runtime = Runtime(library)
    values = psnrs(runtime, chosen, full, range(4))
    measured = float(np.mean(values))
    lower = measured - 2 * float(np.std(values, ddof=1)) / np.sqrt(4)
    assert abs(measured - pick["psnr"]) < 0.01, (measured, pick["psnr"])
    assert abs(lower - pick["psnr_lower"]) < 0.01, (lower, pick["psnr_lower"])
    fresh = float(np.mean(psnrs(runtime, chosen, full, range(100, 104))))
    print(f"chosen {chosen_report}: {measured:.2f} dB on the calibration "
          f"noise, {fresh:.2f} dB on fresh noise")
    assert abs(fresh - measured) < 3, (fresh, measured)


if __name__ == "__main__":
    main()
