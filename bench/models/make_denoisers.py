#!/usr/bin/python3
"""Exports Kiln's diffusion denoiser benchmark models with PyTorch.

Written as their reference implementations spell them (random weights:
speed only), static shapes, opset 17:

  dit   DiT-S/2: latent 4x32x32, 2x2 patches (256 tokens), 12 blocks,
        width 384, 6 heads, MLP 1536 with tanh GELU, adaLN-Zero modulation
        from the sum of a sinusoidal timestep embedding (256 frequencies,
        MLP) and a class embedding (1000 classes + the null class for
        classifier-free guidance); predicts the noise (4 channels).
  unet  a small latent UNet: 4x32x32, channels 64 / 128 / 128 at 32, 16
        and 8 pixels, one ResBlock per level on the way down and two on
        the way up (GroupNorm(32) + SiLU + 3x3 convolutions, the timestep
        embedding added per channel), strided 3x3 convolutions down,
        nearest 2x upsampling + 3x3 convolution up, skip concatenations,
        self-attention at 8x8; predicts the noise.

For each model MODEL this writes OUT/MODEL/model.onnx, input_<i>.pb (a
batch of 2: the latent, timesteps, and for dit the class labels) and
output_0.pb computed by PyTorch itself (an independent reference).

--depth overrides DiT's number of blocks, for quick tests.

--sample SAMPLER,... also runs each sampler of samplers.py (--steps steps,
PyTorch calling the model, classifier-free guidance at --cfg-scale for dit)
from seeded noise and writes OUT/MODEL/sample-SAMPLER/input_0.pb (the
noise: one latent for dit, two for unet), input_1.pb (dit: the class label)
and output_0.pb (the final latent): the reference for the sampling loops
kiln-compile --pipeline=diffusion builds. With --cache-interval K, dit
also gets sample-SAMPLER-cacheK: its blocks computed every K-th step only,
what they add to the tokens reused in between (kiln-compile
--cache-interval K), and unet, for the first sampler named, the same
with its deeper levels computed every K-th step only, what they hand back
to the first level reused in between (DeepCache). With --cache-threshold
T, dit gets, for the first sampler named, sample-SAMPLER-thresholdT: the
blocks run when the change of their input says so (kiln-compile
--cache-threshold T). With --cache-forecast N as well, for the first
sampler named and each order 1..N, sample-SAMPLER-cacheK-forecastORDER at
--forecast-steps steps (default --steps): the steps between predict what
the blocks add (dit) or the deeper levels' features (unet) by the
polynomial through the last ORDER+1 computed ones (kiln-compile
--cache-forecast ORDER).

usage: /usr/bin/python3 make_denoisers.py OUT [--models dit,unet] [--seed S]
                                              [--depth N] [--sample ddim,...]
                                              [--steps N] [--cfg-scale S]
                                              [--cache-interval K]
                                              [--cache-threshold T]
                                              [--cache-forecast N]
                                              [--forecast-steps N]
(needs Debian's python3-torch, python3-onnx and python3-numpy)
"""
import argparse
import math
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn

import samplers


def timestep_embedding(t, dim):
    """[cos(t f), sin(t f)] with f_i = 10000^(-i / (dim / 2))."""
    half = dim // 2
    frequencies = torch.exp(-math.log(10000) *
                            torch.arange(half, dtype=torch.float32) / half)
    arguments = t[:, None].float() * frequencies[None]
    return torch.cat([torch.cos(arguments), torch.sin(arguments)], dim=-1)


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, tokens, width = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads,
                                  width // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, width))


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def plain_norm(width):
    """DiT's LayerNorm without a learned affine map. Written as one whose
    scale and shift stay 1 and 0: torch 1.13 exports the affine-free one at
    opset 17 with an empty scale input, which ONNX's checker rejects."""
    norm = nn.LayerNorm(width, eps=1e-6)
    norm.requires_grad_(False)
    return norm


class DiTBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = plain_norm(width)
        self.attn = Attention(width, heads)
        self.norm2 = plain_norm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width),
                                 nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * width, width))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(),
                                              nn.Linear(width, 6 * width))

    def forward(self, x, c):
        (shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp,
         gate_mlp) = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(
            modulate(self.norm1(x), shift_msa, scale_msa))
        return x + gate_mlp.unsqueeze(1) * self.mlp(
            modulate(self.norm2(x), shift_mlp, scale_mlp))


def sincos_positions(width, grid):
    """DiT's fixed 2-D sine-cosine position embedding [grid * grid, width]."""
    def one_axis(positions, dim):
        omega = 1.0 / 10000 ** (np.arange(dim // 2, dtype=np.float64) /
                                (dim / 2.0))
        out = np.einsum("m,d->md", positions.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)
    h, w = np.meshgrid(np.arange(grid, dtype=np.float32),
                       np.arange(grid, dtype=np.float32), indexing="ij")
    return np.concatenate([one_axis(h, width // 2), one_axis(w, width // 2)],
                          axis=1).astype(np.float32)


class DiT(nn.Module):
    def __init__(self, size=32, patch=2, channels=4, width=384, depth=12,
                 heads=6, classes=1000):
        super().__init__()
        self.patch, self.channels, self.grid = patch, channels, size // patch
        self.x_embedder = nn.Conv2d(channels, width, patch, stride=patch)
        self.t_embedder = nn.Sequential(nn.Linear(256, width), nn.SiLU(),
                                        nn.Linear(width, width))
        self.y_embedder = nn.Embedding(classes + 1, width)
        self.register_buffer("pos_embed", torch.from_numpy(
            sincos_positions(width, self.grid))[None])
        self.blocks = nn.ModuleList(DiTBlock(width, heads)
                                    for _ in range(depth))
        self.norm_final = plain_norm(width)
        self.adaLN_final = nn.Sequential(nn.SiLU(),
                                         nn.Linear(width, 2 * width))
        self.linear_final = nn.Linear(width, patch * patch * channels)

    def forward(self, x, t, y):
        h, c = self.embed(x, t, y)
        for block in self.blocks:
            h = block(h, c)
        return self.head(h, c)

    def embed(self, x, t, y):
        """The tokens entering the blocks and the conditioning vector."""
        h = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(timestep_embedding(t, 256)) + self.y_embedder(y)
        return h, c

    def head(self, h, c):
        """The predicted noise from the blocks' output tokens."""
        batch = h.shape[0]
        shift, scale = self.adaLN_final(c).chunk(2, dim=1)
        h = self.linear_final(modulate(self.norm_final(h), shift, scale))
        h = h.reshape(batch, self.grid, self.grid, self.patch, self.patch,
                      self.channels).permute(0, 5, 1, 3, 2, 4)
        return h.reshape(batch, self.channels, self.grid * self.patch,
                         self.grid * self.patch)


class ResBlock(nn.Module):
    def __init__(self, inputs, outputs, embedding):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, inputs)
        self.conv1 = nn.Conv2d(inputs, outputs, 3, padding=1)
        self.emb = nn.Linear(embedding, outputs)
        self.norm2 = nn.GroupNorm(32, outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1)
        self.skip = (nn.Conv2d(inputs, outputs, 1) if inputs != outputs
                     else nn.Identity())

    def forward(self, x, emb):
        h = self.conv1(nn.functional.silu(self.norm1(x)))
        h = h + self.emb(nn.functional.silu(emb))[:, :, None, None]
        h = self.conv2(nn.functional.silu(self.norm2(h)))
        return self.skip(x) + h


class SpatialAttention(nn.Module):
    def __init__(self, channels, heads=4):
        super().__init__()
        self.norm = nn.GroupNorm(32, channels)
        self.attn = Attention(channels, heads)

    def forward(self, x):
        batch, channels, height, width = x.shape
        tokens = self.norm(x).flatten(2).transpose(1, 2)
        out = self.attn(tokens).transpose(1, 2)
        return x + out.reshape(batch, channels, height, width)


class UNet(nn.Module):
    def __init__(self, channels=4, widths=(64, 128, 128), embedding=256):
        super().__init__()
        self.time = nn.Sequential(nn.Linear(widths[0], embedding), nn.SiLU(),
                                  nn.Linear(embedding, embedding))
        self.stem = nn.Conv2d(channels, widths[0], 3, padding=1)
        self.down = nn.ModuleList()
        self.downsample = nn.ModuleList()
        previous = widths[0]
        for level, width in enumerate(widths):
            self.down.append(ResBlock(previous, width, embedding))
            previous = width
            if level + 1 < len(widths):
                self.downsample.append(nn.Conv2d(width, width, 3, stride=2,
                                                 padding=1))
        self.middle = ResBlock(previous, previous, embedding)
        self.attention = SpatialAttention(previous)
        self.up = nn.ModuleList()
        self.upsample = nn.ModuleList()
        for level, width in reversed(list(enumerate(widths))):
            self.up.append(ResBlock(previous + width, width, embedding))
            self.up.append(ResBlock(width, width, embedding))
            previous = width
            if level > 0:
                self.upsample.append(nn.Sequential(
                    nn.Upsample(scale_factor=2, mode="nearest"),
                    nn.Conv2d(width, width, 3, padding=1)))
        self.out_norm = nn.GroupNorm(32, widths[0])
        self.out = nn.Conv2d(widths[0], channels, 3, padding=1)
        self.first_width = widths[0]

    def forward(self, x, t):
        emb, first = self.first_level(x, t)
        return self.last_level(self.deep(first, emb), first, emb)

    def first_level(self, x, t):
        """The timestep embedding and the first level's ResBlock output."""
        emb = self.time(timestep_embedding(t, self.first_width))
        return emb, self.down[0](self.stem(x), emb)

    def deep(self, first, emb):
        """What the deeper levels hand back to the first (DeepCache's
        cached features)."""
        skips = [first]
        h = self.downsample[0](first)
        for level in range(1, len(self.down)):
            h = self.down[level](h, emb)
            skips.append(h)
            if level < len(self.downsample):
                h = self.downsample[level](h)
        h = self.attention(self.middle(h, emb))
        for level in range(len(skips) - 1):
            h = torch.cat([h, skips.pop()], dim=1)
            h = self.up[2 * level](h, emb)
            h = self.up[2 * level + 1](h, emb)
            h = self.upsample[level](h)
        return h

    def last_level(self, deep, first, emb):
        h = torch.cat([deep, first], dim=1)
        h = self.up[-1](self.up[-2](h, emb), emb)
        return self.out(nn.functional.silu(self.out_norm(h)))


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export(model, inputs, folder):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    # torch 2's default exporter traces differently; the TorchScript one
    # writes what Debian's torch 1.13 writes.
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs.values()), path,
                          opset_version=17, do_constant_folding=True,
                          input_names=list(inputs), output_names=["noise"],
                          **extra)
        output = model(*inputs.values()).numpy()
    onnx.checker.check_model(path)
    for index, (name, value) in enumerate(inputs.items()):
        write_tensor(os.path.join(folder, f"input_{index}.pb"), value.numpy(),
                     name)
    write_tensor(os.path.join(folder, "output_0.pb"), output, "noise")


class Forecast:
    """What a cache keeps of a value computed on some calls only: the last
    one, and with an order the value at another call predicted by the
    polynomial through the last order+1 computed ones (Newton's divided
    differences; orders not yet reachable count 0), float32 as Kiln
    computes it."""

    def __init__(self, order):
        self.differences = [0.0] * (order + 1)
        self.computed_at = [-1.0] * order  # -1: not yet

    def store(self, value, call):
        step, updated = float(call), [value]
        for difference, at in zip(self.differences, self.computed_at):
            factor = np.float32(1 / (step - at)) if at >= 0 else 0.0
            updated.append((updated[-1] - difference) * factor)
        self.differences = updated
        self.computed_at = ([step] + self.computed_at)[:len(self.computed_at)]

    def predict(self, call):
        step, product = float(call), np.float32(1.0)
        predicted = self.differences[0]
        for difference, at in zip(self.differences[1:], self.computed_at):
            product = np.float32(product * np.float32(step - at))
            predicted = predicted + difference * float(product)
        return predicted


class CachedBlocks:
    """model(x, t, y) computing DiT's blocks on every interval-th call only;
    the calls between add the blocks' last residual (output - input) to
    their own input tokens. With a threshold instead, the blocks run on the
    first and last of `steps` calls and whenever the relative L1 change of
    the first block's modulated input (mean |m - m'| / mean |m'|, m' the
    previous call's), summed since they last ran, reaches it. With a
    forecast order, the calls between add the residual Forecast predicts."""

    def __init__(self, model, interval=1, threshold=0.0, steps=0,
                 forecast=0):
        self.model, self.interval = model, interval
        self.threshold, self.steps = threshold, steps
        self.calls, self.residual = 0, Forecast(forecast)
        self.previous, self.distance, self.margin = None, 0.0, float("inf")

    def compute_now(self, h, c):
        if not self.threshold:
            return self.calls % self.interval == 0
        first = self.model.blocks[0]
        shift, scale = first.adaLN_modulation(c).chunk(6, dim=1)[:2]
        probe = modulate(first.norm1(h), shift, scale)
        if self.previous is not None:
            self.distance += float((probe - self.previous).abs().mean() /
                                   self.previous.abs().mean())
        self.previous = probe
        if self.calls in (0, self.steps - 1):
            compute = True
        else:
            # How close a decision came to going the other way.
            self.margin = min(self.margin,
                              abs(self.distance / self.threshold - 1))
            compute = self.distance >= self.threshold
        if compute:
            self.distance = 0.0
        return compute

    def __call__(self, x, t, y):
        h, c = self.model.embed(x, t, y)
        if self.compute_now(h, c):
            out = h
            for block in self.model.blocks:
                out = block(out, c)
            self.residual.store(out - h, self.calls)
        else:
            out = h + self.residual.predict(self.calls)
        self.calls += 1
        return self.model.head(out, c)


class DeepCached:
    """UNet model(x, t) computing its deeper levels on every interval-th
    call only (DeepCache); the calls between reuse what they handed to the
    first level, or with a forecast order what Forecast predicts."""

    def __init__(self, model, interval, forecast=0):
        self.model, self.interval = model, interval
        self.calls, self.features = 0, Forecast(forecast)

    def __call__(self, x, t):
        emb, first = self.model.first_level(x, t)
        if self.calls % self.interval == 0:
            deep = self.model.deep(first, emb)
            self.features.store(deep, self.calls)
        else:
            deep = self.features.predict(self.calls)
        self.calls += 1
        return self.model.last_level(deep, first, emb)


def write_samples(model, folder, names, steps, cfg_scale, seed,
                  cache_interval=1, cache_threshold=0.0, cache_forecast=0,
                  forecast_steps=0):
    """The sampling references: see the module's docstring."""
    rng = np.random.default_rng(seed)
    conditional = isinstance(model, DiT)
    noise = rng.standard_normal((1 if conditional else 2, 4, 32, 32)).astype(
        np.float32)
    labels = np.array([207])

    def caller(function):
        def call(x, t, y=None):
            args = [torch.from_numpy(x.astype(np.float32)),
                    torch.from_numpy(np.asarray(t, np.float32))]
            if y is not None:
                args.append(torch.from_numpy(y))
            with torch.no_grad():
                return function(*args).numpy().astype(np.float64)
        return call

    def cached(interval, forecast=0):
        if conditional:
            return CachedBlocks(model, interval=interval, forecast=forecast)
        return DeepCached(model, interval, forecast)

    runs = [(name, "", lambda: model, steps) for name in names]
    if cache_interval > 1:
        runs += [(name, f"-cache{cache_interval}",
                  lambda: cached(cache_interval), steps)
                 for name in (names if conditional else names[:1])]
    if conditional and cache_threshold > 0:
        runs.append((names[0], f"-threshold{cache_threshold:g}",
                     lambda: CachedBlocks(model, threshold=cache_threshold,
                                          steps=steps), steps))
    runs += [(names[0], f"-cache{cache_interval}-forecast{order}",
              lambda order=order: cached(cache_interval, order),
              forecast_steps or steps)
             for order in range(1, cache_forecast + 1)]
    for name, suffix, make, steps in runs:
        function = make()
        call = caller(function)
        if conditional:
            denoise = samplers.guided(call, labels, 1000, cfg_scale)
        else:
            def denoise(x, t):
                return call(x, np.full(len(x), t))
        sample = samplers.SAMPLERS[name](denoise, noise, steps)
        if isinstance(function, CachedBlocks) and function.threshold:
            # float32 sums in Kiln: a decision this close could go the
            # other way there.
            assert function.margin > 0.01, \
                f"threshold {cache_threshold} too close to a decision"
        out = os.path.join(folder, f"sample-{name}{suffix}")
        os.makedirs(out, exist_ok=True)
        write_tensor(os.path.join(out, "input_0.pb"), noise, "noise")
        if conditional:
            write_tensor(os.path.join(out, "input_1.pb"), labels, "labels")
        write_tensor(os.path.join(out, "output_0.pb"),
                     sample.astype(np.float32), "sample")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--models", default="dit,unet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--sample", default="")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--cfg-scale", type=float, default=4.0)
    parser.add_argument("--cache-interval", type=int, default=1)
    parser.add_argument("--cache-threshold", type=float, default=0.0)
    parser.add_argument("--cache-forecast", type=int, default=0)
    parser.add_argument("--forecast-steps", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    for name in args.models.split(","):
        latent = torch.randn(2, 4, 32, 32)
        timesteps = torch.tensor([999.0, 500.0])
        if name == "dit":
            inputs = {"latent": latent, "timestep": timesteps,
                      "label": torch.tensor([207, 1000])}
            model = DiT(depth=args.depth)
        elif name == "unet":
            inputs = {"latent": latent, "timestep": timesteps}
            model = UNet()
        else:
            raise SystemExit(f"unknown model {name}")
        export(model, inputs, os.path.join(args.out, name))
        if args.sample:
            write_samples(model, os.path.join(args.out, name),
                          args.sample.split(","), args.steps, args.cfg_scale,
                          args.seed, args.cache_interval,
                          args.cache_threshold, args.cache_forecast,
                          args.forecast_steps)
        print(f"wrote {os.path.join(args.out, name)}")


if __name__ == "__main__":
    main()
