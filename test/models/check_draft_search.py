#!/usr/bin/python3
"""Checks kiln-compile --choose-draft on the test decoder
(make_models.py --models gpt2-past --layers 2).

usage: check_draft_search.py KILN_COMPILE MODEL_DIR WORK_DIR RUNTIME_LIBRARY

The calibration sequence is tokens.pb. What the search measures is checked
against independent figures where there are any: the perplexity without
block 1 against PyTorch's logits without it (logits-skip-1.pb, relative
1e-4). The rest is checked for consistency: every candidate (int4 weights
with every block; the cheaper block skipped, in float and in int4) at every
K from 1 to 5, each giving plain greedy decoding's tokens; the choice is
the fastest candidate if it is fast enough, and the artifact holds it: its
draft entry and its K (kiln_artifact_draft_tokens), which generation uses
when left to it, with plain greedy decoding's tokens. With decode calls of
at most 3 tokens, K runs to 2 only. Which draft wins is a timing, not
asserted: random weights make any draft's acceptance low.
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_skip_search import load, perplexity  # noqa: E402
from kiln_runtime import Runtime, Session, generate  # noqa: E402


def main():
    compiler, model_dir, work, library = sys.argv[1:5]
    calibration = os.path.join(work, "calibration")
    os.makedirs(calibration, exist_ok=True)
    shutil.copy(os.path.join(model_dir, "tokens.pb"),
                os.path.join(calibration, "input_0.pb"))
    tokens = load(os.path.join(model_dir, "tokens.pb"))
    without_1 = perplexity(load(os.path.join(model_dir, "logits-skip-1.pb")),
                           tokens)
    problems = []

    def expect(condition, what):
        print(("ok: " if condition else "FAIL: ") + what)
        if not condition:
            problems.append(what)

    artifact = os.path.join(work, "chosen.so")
    report_path = os.path.join(work, "draft.json")
    subprocess.run([compiler, os.path.join(model_dir, "past", "model.onnx"),
                    "--dim", "batch=1", "--dim", "seq=1..32",
                    "--dim", "past_seq=0..32", "--max-context", "32",
                    "--choose-draft", "--calibration", calibration,
                    "--draft-report", report_path, "-o", artifact],
                   check=True)
    with open(report_path) as f:
        report = json.load(f)

    alone = {p["skipped"][0]: p["perplexity"]
             for p in report["perplexity_without_block"]}
    expect(report["blocks"] == 2 and sorted(alone) == [0, 1],
           f"perplexity measured without each of the 2 blocks: {alone}")
    expect(abs(alone[1] / without_1 - 1) < 1e-4,
           f"perplexity without block 1 {alone[1]:.6f} is PyTorch's "
           f"{without_1:.6f}")

    cheaper = min(alone, key=alone.get)
    expected = {((), "int4-weight"), ((cheaper,), "f32"),
                ((cheaper,), "int4-weight")}
    tried = {}
    for t in report["tried"]:
        tried.setdefault((tuple(t["skipped"]), t["quantization"]),
                         []).append(t["draft_tokens"])
    expect(set(tried) == expected and
           all(sorted(ks) == [1, 2, 3, 4, 5] for ks in tried.values()),
           f"candidates {sorted(tried)} are {sorted(expected)}, each at "
           f"K = 1..5")
    expect(all(t["same_tokens"] == report["prompts"] for t in report["tried"]),
           "every candidate at every K gave plain greedy decoding's tokens")
    expect(all(0 <= t["accepted"] <= 1 and t["speed_up"] > 0 and
               abs(t["speed_up"] - t["speculative_tokens_per_second"] /
                   t["plain_tokens_per_second"]) < 1e-6 * t["speed_up"]
               for t in report["tried"]),
           "acceptance within [0, 1], speed-ups the ratio of the rates")

    fastest = max(report["tried"], key=lambda t: t["speed_up"])
    chosen = report["chosen"]
    runtime = Runtime(library)
    runtime.lib.kiln_artifact_draft_tokens.argtypes = [ctypes.c_void_p]
    runtime.lib.kiln_artifact_draft_tokens.restype = ctypes.c_int32
    session = Session(runtime, artifact, threads=1)
    recorded = runtime.lib.kiln_artifact_draft_tokens(session.artifact)
    index = ctypes.c_int32()
    has_draft = runtime.lib.kiln_artifact_find_entry(
        session.artifact, b"draft", ctypes.byref(index)) == 0
    if fastest["speed_up"] >= report["least_speed_up"]:
        expect(chosen is not None and
               (chosen["skipped"], chosen["quantization"],
                chosen["draft_tokens"]) ==
               (fastest["skipped"], fastest["quantization"],
                fastest["draft_tokens"]),
               f"the fastest candidate ({fastest['speed_up']:.2f}x) is "
               f"chosen: {chosen}")
        expect(has_draft and recorded == fastest["draft_tokens"],
               f"the artifact has a draft and K = {recorded}")
    else:
        expect(chosen is None and not has_draft and recorded == 0,
               f"no candidate is {report['least_speed_up']}x as fast "
               f"(best {fastest['speed_up']:.2f}x): no draft, K = "
               f"{recorded}")

    prompt = tokens[0, :8].tolist()
    plain = generate(session, prompt, 20, draft_tokens=0)
    automatic = generate(session, prompt, 20, draft_tokens=-1)
    expect(automatic == plain,
           "generation left to the artifact's K gives plain greedy tokens")
    session.close()

    # Decode calls of at most 3 tokens check at most 2 drafted ones: the
    # search times no larger K (generation would run it as 2).
    narrow_report = os.path.join(work, "narrow.json")
    subprocess.run([compiler, os.path.join(model_dir, "past", "model.onnx"),
                    "--dim", "batch=1", "--dim", "seq=1..3",
                    "--dim", "past_seq=0..32", "--max-context", "32",
                    "--choose-draft", "--calibration", calibration,
                    "--draft-report", narrow_report,
                    "-o", os.path.join(work, "narrow.so")], check=True)
    with open(narrow_report) as f:
        narrow = {t["draft_tokens"] for t in json.load(f)["tried"]}
    expect(narrow == {1, 2},
           f"with calls of at most 3 tokens, K tried is {sorted(narrow)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
