#!/usr/bin/python3
"""Checks kiln-compile --choose-skip-layers on the test decoder
(make_models.py --models gpt2-past --layers 2).

usage: check_skip_search.py KILN_COMPILE MODEL_DIR WORK_DIR

The calibration sequence is tokens.pb; PyTorch's logits of it with every
block (logits.pb) and without block 1 (logits-skip-1.pb) give the
perplexities the search must measure (relative 1e-4). With a budget every
block meets (1e6) it skips exactly one block, the one whose perplexity
alone is least: a 2-block model keeps one. (Which sets a budget rejects is
measured on the trained decoder by bench/run_decoder.py: random weights
make skipping a block as likely to lower perplexity as to raise it.)
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def perplexity(logits, tokens):
    logits = logits[0, :-1].astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    targets = tokens[0, 1:]
    return float(np.exp(-log_probs[np.arange(len(targets)), targets].mean()))


def main():
    compiler, model_dir, work = sys.argv[1:4]
    calibration = os.path.join(work, "calibration")
    os.makedirs(calibration, exist_ok=True)
    shutil.copy(os.path.join(model_dir, "tokens.pb"),
                os.path.join(calibration, "input_0.pb"))
    tokens = load(os.path.join(model_dir, "tokens.pb"))
    full = perplexity(load(os.path.join(model_dir, "logits.pb")), tokens)
    without_1 = perplexity(load(os.path.join(model_dir, "logits-skip-1.pb")),
                           tokens)
    problems = []

    def expect(condition, what):
        print(("ok: " if condition else "FAIL: ") + what)
        if not condition:
            problems.append(what)

    def search(budget):
        report = os.path.join(work, f"skip-{budget}.json")
        subprocess.run([compiler, os.path.join(model_dir, "past", "model.onnx"),
                        "--dim", "batch=1", "--dim", "seq=1..32",
                        "--dim", "past_seq=0..32", "--max-context", "32",
                        "--choose-skip-layers", "--calibration", calibration,
                        "--quality-budget", str(budget),
                        "--skip-layers-report", report, "--emit=mlir",
                        "-o", os.path.join(work, f"skip-{budget}.mlir")],
                       check=True)
        with open(report) as f:
            return json.load(f)

    def measured(report, skipped):
        return next(t["perplexity"] for t in report["tried"]
                    if t["skipped"] == skipped)

    for budget in (1e6,):
        report = search(budget)
        expect(abs(report["baseline_perplexity"] / full - 1) < 1e-4,
               f"budget {budget}: full perplexity "
               f"{report['baseline_perplexity']:.6f} is PyTorch's {full:.6f}")
        expect(abs(measured(report, [1]) / without_1 - 1) < 1e-4,
               f"budget {budget}: perplexity without block 1 "
               f"{measured(report, [1]):.6f} is PyTorch's {without_1:.6f}")
        # Two blocks: at most one goes, the cheaper, if within the budget.
        singles = {k: measured(report, [k]) for k in range(report["blocks"])}
        cheapest = min(singles, key=singles.get)
        limit = full * (1 + budget)
        expected = [cheapest] if singles[cheapest] <= limit else []
        expect(report["blocks"] == 2 and report["skipped"] == expected,
               f"budget {budget} (perplexity limit {limit:.6f}; alone "
               f"{singles}): skips {report['skipped']}, expected {expected}")
    expect(report["skipped"] != [], "a budget every block meets skips one")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
