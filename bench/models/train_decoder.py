#!/usr/bin/python3
"""Trains a small byte-level decoder on the license texts Debian ships, and
exports it for Kiln's decoder benchmarks and quality measurements.

The model is make_models.py's GPT-2 decoder at a small size (4 layers,
width 256, 4 heads, vocabulary 256: one token per byte, context 256),
trained with a fixed seed on /usr/share/common-licenses (base-files, on
every Debian system): the first 90% of each text trains, the last 10% is
the held-out split for perplexity. Training stops after --steps steps or
--minutes minutes, whichever comes first.

Writes, into OUT (kept between runs: an existing OUT/weights.pt with the
same settings is reused, not retrained):
  weights.pt            the trained weights and settings
  full/model.onnx       the plain full-sequence graph (input_ids -> logits)
  past/model.onnx       the Hugging Face with-past form (past_key_values.N.*
                        in, present.N.* out; symbolic batch, seq, past_seq)
  heldout.pb            the held-out bytes (int64 [1, N])
  prompts/prompt_<k>.pb calibration and test prompts from the held-out text
  calibration/set_<k>/input_0.pb
                        16 sequences of 256 training bytes (compile-time
                        calibration: kiln-compile --choose-skip-layers)
  report.json           steps, time, train loss, held-out perplexity

usage: python3 train_decoder.py OUT [--steps N] [--minutes M] [--seed S]
(needs torch, onnx and numpy. Debian's python3-torch works but computes on
the reference BLAS, ~20x slower: with it, training stops at --minutes
having taken few steps. PyTorch from PyPI trains the default 480 steps in
about 8 minutes on two cores.)
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models  # noqa: E402

LICENSES = "/usr/share/common-licenses"
SETTINGS = {"layers": 4, "width": 256, "heads": 4, "vocab": 256,
            "context": 256}


def read_corpus():
    """(train, heldout) byte arrays: each distinct license text split 90/10."""
    seen, train, heldout = set(), [], []
    for name in sorted(os.listdir(LICENSES)):
        path = os.path.realpath(os.path.join(LICENSES, name))
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        with open(path, "rb") as f:
            data = np.frombuffer(f.read(), dtype=np.uint8)
        cut = int(len(data) * 0.9)
        train.append(data[:cut])
        heldout.append(data[cut:])
    return np.concatenate(train), np.concatenate(heldout)


def make_model():
    model = make_models.PastGPT2(SETTINGS["layers"], SETTINGS["width"],
                                 SETTINGS["heads"], SETTINGS["vocab"])
    return model


def perplexity(model, data, context):
    """Byte-level perplexity of `data` in windows of `context` bytes."""
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(data) - 1, context):
            chunk = torch.from_numpy(data[start:start + context + 1].astype(np.int64))
            if len(chunk) < 2:
                break
            logits = model.full_sequence(chunk[:-1].unsqueeze(0))
            loss = torch.nn.functional.cross_entropy(logits[0], chunk[1:],
                                                     reduction="sum")
            total += float(loss)
            count += len(chunk) - 1
    return math.exp(total / count)


def train(args, out):
    torch.manual_seed(args.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    train_data, heldout = read_corpus()
    model = make_model()
    make_models.init_like_gpt2(model)
    context, batch = SETTINGS["context"], 16
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3,
                                  weight_decay=0.01)
    generator = np.random.default_rng(args.seed)
    start, losses, step = time.time(), [], 0
    while step < args.steps and time.time() - start < args.minutes * 60:
        lr = 2e-3 * min(1.0, (step + 1) / 50) * \
            0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in optimizer.param_groups:
            group["lr"] = lr
        offsets = generator.integers(0, len(train_data) - context - 1, batch)
        windows = np.stack([train_data[o:o + context + 1] for o in offsets])
        windows = torch.from_numpy(windows.astype(np.int64))
        model.train()
        logits = model.full_sequence(windows[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, SETTINGS["vocab"]), windows[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss))
        step += 1
        if step % 100 == 0:
            print(f"step {step}: loss {np.mean(losses[-100:]):.3f} "
                  f"({time.time() - start:.0f} s)", flush=True)
    report = {
        "settings": SETTINGS, "seed": args.seed, "steps": step,
        "seconds": round(time.time() - start, 1),
        "train_loss": round(float(np.mean(losses[-50:])), 4),
        "train_bytes": int(len(train_data)), "heldout_bytes": int(len(heldout)),
        "heldout_perplexity": round(perplexity(model, heldout, SETTINGS["context"]), 4),
    }
    torch.save({"state": model.state_dict(), "settings": SETTINGS,
                "seed": args.seed, "steps": args.steps,
                "minutes": args.minutes, "report": report},
               os.path.join(out, "weights.pt"))
    return model, report


def export(model, out, train_data, heldout, opset):
    model.eval()
    make_models.export_decoder(model, out, opset)
    make_models.write_tensor(os.path.join(out, "heldout.pb"),
                             heldout.astype(np.int64)[None, :], "heldout")
    prompts = os.path.join(out, "prompts")
    os.makedirs(prompts, exist_ok=True)
    # 24 prompts of 16-64 bytes from the held-out text, at fixed places.
    generator = np.random.default_rng(1)
    for k in range(24):
        length = int(generator.integers(16, 65))
        at = int(generator.integers(0, len(heldout) - length))
        make_models.write_tensor(os.path.join(prompts, f"prompt_{k}.pb"),
                                 heldout[at:at + length].astype(np.int64)[None, :],
                                 "input_ids")
    # 16 sequences of 256 bytes from the training text, at fixed places:
    # calibration for choices made at compile time (--choose-skip-layers).
    generator = np.random.default_rng(2)
    length = SETTINGS["context"]
    for k in range(16):
        at = int(generator.integers(0, len(train_data) - length))
        folder = os.path.join(out, "calibration", f"set_{k:02d}")
        os.makedirs(folder, exist_ok=True)
        make_models.write_tensor(os.path.join(folder, "input_0.pb"),
                                 train_data[at:at + length].astype(np.int64)[None, :],
                                 "input_ids")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=480)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opset", type=int, default=17)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cached = os.path.join(args.out, "weights.pt")
    model = make_model()
    saved = torch.load(cached) if os.path.exists(cached) else None
    if saved and (saved["settings"], saved["seed"], saved["steps"],
                  saved["minutes"]) == (SETTINGS, args.seed, args.steps,
                                        args.minutes):
        model.load_state_dict(saved["state"])
        report = saved["report"]
        print(f"reusing {cached}")
    else:
        model, report = train(args, args.out)
    train_data, heldout = read_corpus()
    export(model, args.out, train_data, heldout, args.opset)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
