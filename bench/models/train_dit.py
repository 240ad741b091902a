#!/usr/bin/python3
"""Trains a small class-conditional DiT (or, with --model unet, an
unconditional UNet) on scikit-learn's digits, for the quality figures of
Kiln's diffusion caching.

The images are the 1797 8x8 handwritten digits scikit-learn bundles
(Debian's python3-sklearn installs them as
sklearn/datasets/data/digits.csv.gz; read here as plain CSV, no sklearn
import), scaled to [-1, 1]. The model is make_denoisers.py's DiT at a small
size (one channel, 8x8, patch 2: 16 tokens, 6 blocks, width 128, 4 heads,
10 classes + the null class), adaLN-Zero initialized, trained with a fixed
seed on DDPM's noise-prediction loss (linear betas, 1000 steps, as
samplers.py samples), labels dropped to the null class 10% of the time so
classifier-free guidance works. --model unet trains make_denoisers.py's
UNet instead (one channel, 8x8, widths 32 / 64 / 64 at 8, 4 and 2 pixels,
attention at 2x2, timestep embedding 128), unconditional, on the same
loss. The exported weights are an exponential
moving average of the trained ones (decay min(0.999, (1 + n) / (10 + n))
after step n). Training stops after --steps
steps or --minutes minutes, whichever comes first.

Writes, into OUT (an existing OUT/weights.pt with the same settings is
reused, not retrained):
  weights.pt     the averaged weights and settings
  model.onnx     the denoiser on a batch of 2 (latent [2, 1, 8, 8],
                 timestep [2], and for the DiT label [2]: one guided
                 step)
  input_*.pb, output_0.pb   one call's inputs and PyTorch's output
  report.json    steps, minutes, final training loss

usage: python3 train_dit.py OUT [--model dit|unet] [--steps N]
                                [--minutes M] [--seed S] [--digits PATH]
(needs torch, onnx and numpy; PyTorch from PyPI trains the default 3000
steps in about 8 minutes on two cores; Debian's python3-torch is far slower.)
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import samplers  # noqa: E402
from make_denoisers import DiT, UNet, export  # noqa: E402

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
SETTINGS = {"size": 8, "patch": 2, "channels": 1, "width": 128, "depth": 6,
            "heads": 4, "classes": 10}
UNET_SETTINGS = {"channels": 1, "widths": (32, 64, 64), "embedding": 128}


def load_digits(path):
    if not os.path.exists(path):
        raise SystemExit(f"no digits at {path}: install Debian's "
                         "python3-sklearn, or give --digits")
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    images = table[:, :-1].reshape(-1, 1, 8, 8) / 8.0 - 1.0
    return torch.from_numpy(images), torch.from_numpy(
        table[:, -1].astype(np.int64))


def make_model(kind="dit"):
    if kind == "unet":
        return UNet(**UNET_SETTINGS)
    model = DiT(**SETTINGS)
    # adaLN-Zero: every block starts as the identity, the output at zero.
    for block in model.blocks:
        nn.init.zeros_(block.adaLN_modulation[-1].weight)
        nn.init.zeros_(block.adaLN_modulation[-1].bias)
    nn.init.zeros_(model.adaLN_final[-1].weight)
    nn.init.zeros_(model.adaLN_final[-1].bias)
    nn.init.zeros_(model.linear_final.weight)
    nn.init.zeros_(model.linear_final.bias)
    return model


def train(args):
    torch.manual_seed(args.seed)
    images, labels = load_digits(args.digits)
    model = make_model(args.model)
    average = make_model(args.model)
    average.load_state_dict(model.state_dict())
    average.requires_grad_(False)
    abar = torch.from_numpy(samplers.alphas_cumprod()).float()
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=1e-3,
        weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 200))
    started = time.perf_counter()
    losses = []
    step = 0
    while step < args.steps and time.perf_counter() - started < \
            60 * args.minutes:
        index = torch.randint(0, len(images), (args.batch,))
        x0, y = images[index], labels[index].clone()
        y[torch.rand(args.batch) < 0.1] = SETTINGS["classes"]
        t = torch.randint(0, samplers.TRAIN_STEPS, (args.batch,))
        noise = torch.randn_like(x0)
        a = abar[t].view(-1, 1, 1, 1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        prediction = (model(xt, t.float()) if args.model == "unet" else
                      model(xt, t.float(), y))
        loss = ((prediction - noise) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        # The average warms up: a fixed 0.999 would keep a share of the
        # untrained initial weights after a few thousand steps.
        decay = min(0.999, (1 + step) / (10 + step))
        with torch.no_grad():
            for p, q in zip(average.parameters(), model.parameters()):
                p.mul_(decay).add_(q.detach(), alpha=1 - decay)
        losses.append(loss.item())
        step += 1
        if step % 200 == 0:
            print(f"step {step}: loss {np.mean(losses[-200:]):.4f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    return average, {"steps": step,
                     "minutes": (time.perf_counter() - started) / 60,
                     "final_loss": float(np.mean(losses[-200:]))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--model", choices=("dit", "unet"), default="dit")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--digits", default=DIGITS)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    weights = os.path.join(args.out, "weights.pt")
    settings = dict(SETTINGS if args.model == "dit" else
                    dict(UNET_SETTINGS, widths=list(UNET_SETTINGS["widths"]),
                         model="unet"),
                    seed=args.seed, steps=args.steps, minutes=args.minutes,
                    batch=args.batch, ema="warmup")
    model = make_model(args.model)
    if os.path.exists(weights) and \
            torch.load(weights)["settings"] == settings:
        model.load_state_dict(torch.load(weights)["model"])
        print(f"reusing {weights}")
    else:
        model, report = train(args)
        torch.save({"settings": settings, "model": model.state_dict()},
                   weights)
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(report, f, indent=2)
        print(f"trained {report['steps']} steps in "
              f"{report['minutes']:.1f} min, loss {report['final_loss']:.4f}")
    torch.manual_seed(args.seed)
    inputs = {"latent": torch.randn(2, 1, 8, 8),
              "timestep": torch.tensor([999.0, 500.0])}
    if args.model == "dit":
        inputs["label"] = torch.tensor([3, SETTINGS["classes"]])
    export(model, inputs, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
