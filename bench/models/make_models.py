#!/usr/bin/python3
"""Exports Kiln's transformer benchmark models with PyTorch.

Three models, written as their reference implementations spell them, so the
ONNX files carry real exporter spellings (opset 17 unless --opset, static
shapes):

  minilm  BERT-style encoder with all-MiniLM-L6-v2's shape: 6 layers, width
          384, 12 heads, FFN 1536, sequence 128 (random weights).
  gpt2    GPT-2-small-style decoder: 12 layers, width 768, 12 heads,
          vocabulary 50257, prefill of 128 tokens, tied LM head.
  vit     ViT-S/16-style image encoder: 224x224 RGB, 16x16 patches, 12
          layers, width 384, 6 heads, 1000 classes.

--models gpt2-past (alone) exports the gpt2 decoder (GPT-2's
initialization) twice into OUT/gpt2-past: full/model.onnx, the plain
full-sequence graph, and past/model.onnx, the Hugging Face "with past"
form: inputs input_ids [batch, seq] and past_key_values.N.key/value
[batch, heads, past_seq, 64], outputs logits and present.N.key/value
[batch, heads, past_seq + seq, 64]. tokens.pb holds
--past-tokens random tokens and logits.pb the logits of every position of
them, computed by the plain full-sequence model (no cache): the reference
for decoding them step by step (logits-skip-1.pb: the same without block
1, for --skip-layers); greedy.pb holds the 16 tokens greedy
decoding adds to prompt.pb (the first 8), recomputing the sequence for
each.

For each model MODEL this writes OUT/MODEL/model.onnx, input_<i>.pb and
output_0.pb, the last computed by PyTorch itself (an independent
reference). --layers overrides the depth, for quick tests.

With --dynamic-lengths L1,L2,... (minilm and gpt2) the model is exported
with dynamic batch and sequence axes, as exporters write them for real use,
into OUT/MODEL-dynamic, with one set of inputs and PyTorch's output per
sequence length in test_data_set_<k>/ (ONNX's test-data layout).

usage: /usr/bin/python3 make_models.py OUT [--models minilm,gpt2,vit]
                                           [--layers N] [--seed S]
                                           [--dynamic-lengths L1,L2,...]
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


class BertLayer(nn.Module):
    def __init__(self, width, heads, ffn):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.output = nn.Linear(width, width)
        self.attention_norm = nn.LayerNorm(width, eps=1e-12)
        self.intermediate = nn.Linear(width, ffn)
        self.ffn_output = nn.Linear(ffn, width)
        self.output_norm = nn.LayerNorm(width, eps=1e-12)

    def split_heads(self, x):
        b, t, w = x.shape
        return x.view(b, t, self.heads, w // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(q.shape[-1]) + mask
        context = torch.matmul(scores.softmax(dim=-1), v)
        b, h, t, d = context.shape
        context = context.permute(0, 2, 1, 3).reshape(b, t, h * d)
        x = self.attention_norm(x + self.output(context))
        hidden = nn.functional.gelu(self.intermediate(x))
        return self.output_norm(x + self.ffn_output(hidden))


class MiniLM(nn.Module):
    def __init__(self, layers=6, width=384, heads=12, ffn=1536, vocab=30522):
        super().__init__()
        self.words = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(512, width)
        self.token_types = nn.Embedding(2, width)
        self.norm = nn.LayerNorm(width, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(width, heads, ffn)
                                    for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.words(input_ids) + self.positions(positions)
        x = self.norm(x + self.token_types(torch.zeros_like(input_ids)))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        return x


class GPT2Block(nn.Module):
    def __init__(self, width, heads, context=1024):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.c_fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)
        self.register_buffer("bias", torch.tril(torch.ones(context, context))
                             .view(1, 1, context, context))

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(w, dim=2)
        q, k, v = (y.view(b, t, self.heads, w // self.heads).transpose(1, 2)
                   for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, w)
        x = x + self.c_proj(y)
        hidden = nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(hidden)


class GPT2(nn.Module):
    def __init__(self, layers=12, width=768, heads=12, vocab=50257):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(1024, width)
        self.blocks = nn.ModuleList(GPT2Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


class PastGPT2Block(GPT2Block):
    """GPT2Block in the Hugging Face "with past" form: the keys and values
    of earlier positions come in, this step's are appended and returned."""

    def forward(self, x, past_key, past_value):
        b, t, w = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(w, dim=2)
        q, k, v = (y.view(b, t, self.heads, w // self.heads).transpose(1, 2)
                   for y in (q, k, v))
        k = torch.cat([past_key, k], dim=2)
        v = torch.cat([past_value, v], dim=2)
        p = past_key.shape[2]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, p:p + t, :p + t] == 0,
                              float("-inf"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, w)
        x = x + self.c_proj(y)
        hidden = nn.functional.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(hidden), k, v


class PastGPT2(GPT2):
    """GPT2 with inputs past_key_values.N.key/value and outputs
    present.N.key/value, as Hugging Face exports decoders for generation."""

    def __init__(self, layers=12, width=768, heads=12, vocab=50257):
        super().__init__(layers, width, heads, vocab)
        self.blocks = nn.ModuleList(PastGPT2Block(width, heads)
                                    for _ in range(layers))

    def forward(self, input_ids, *past):
        p = past[0].shape[2]
        positions = torch.arange(p, p + input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        presents = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (self.ln_f(x) @ self.wte.weight.t(), *presents)

    def full_sequence(self, input_ids, skip=()):
        """The logits of every position, computed without any cache (the
        plain GPT2 forward on the same weights): the reference. Blocks in
        `skip` are left out."""
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for k, block in enumerate(self.blocks):
            if k not in skip:
                x = GPT2Block.forward(block, x)
        return self.ln_f(x) @ self.wte.weight.t()


class FullSequence(nn.Module):
    """A PastGPT2's plain full-sequence graph (input_ids -> logits), for
    export beside its with-past form."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids):
        return self.decoder.full_sequence(input_ids)


def export_decoder(model, folder, opset):
    """Exports `model` (a PastGPT2) twice: folder/full/model.onnx, the plain
    full-sequence graph, and folder/past/model.onnx, the with-past form;
    both with symbolic batch and sequence axes."""
    layers, heads = len(model.blocks), model.blocks[0].heads
    depth = model.wte.weight.shape[1] // heads
    full = os.path.join(folder, "full")
    os.makedirs(full, exist_ok=True)
    sample = {"input_ids": torch.zeros(1, 8, dtype=torch.int64)}
    export_onnx(FullSequence(model), sample, ["logits"], full, opset,
                {"input_ids": {0: "batch", 1: "seq"},
                 "logits": {0: "batch", 1: "seq"}})
    past = os.path.join(folder, "past")
    os.makedirs(past, exist_ok=True)
    past_names = [f"past_key_values.{i}.{kv}" for i in range(layers)
                  for kv in ("key", "value")]
    present_names = [n.replace("past_key_values", "present") for n in past_names]
    sample = {"input_ids": torch.zeros(1, 3, dtype=torch.int64)}
    for name in past_names:
        sample[name] = torch.zeros(1, heads, 5, depth)
    axes = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past_seq"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_seq"} for n in present_names})
    export_onnx(model, sample, ["logits"] + present_names, past, opset, axes)


def init_like_gpt2(model):
    """GPT-2's initialization (normal, std 0.02; zero biases): with the
    tied embedding at PyTorch's default scale, a token's own embedding
    dominates its logits and greedy decoding repeats it."""
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)


class ViTBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, eps=1e-6)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width, eps=1e-6)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        y = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self, layers=12, width=384, heads=6, patch=16, image=224,
                 classes=1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, width, patch, patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, width) * 0.02)
        tokens = (image // patch) ** 2 + 1
        self.pos_embed = nn.Parameter(torch.randn(1, tokens, width) * 0.02)
        self.blocks = nn.ModuleList(ViTBlock(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width, eps=1e-6)
        self.head = nn.Linear(width, classes)

    def forward(self, pixel_values):
        x = self.patch_embed(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def make_inputs(name, length, generator):
    """Example inputs (name -> tensor) of `name` for `length` tokens."""
    if name == "minilm":
        ids = torch.randint(0, 30522, (1, length), generator=generator)
        mask = torch.ones(1, length, dtype=torch.int64)
        mask[0, max(1, length * 25 // 32):] = 0  # padding, for the mask path
        return {"input_ids": ids, "attention_mask": mask}
    ids = torch.randint(0, 50257, (1, length), generator=generator)
    return {"input_ids": ids}


def build(name, layers, generator):
    """The model and example inputs (name -> tensor) for `name`."""
    if name == "minilm":
        model = MiniLM(**({"layers": layers} if layers else {}))
        return model, make_inputs(name, 128, generator), ["last_hidden_state"]
    if name == "gpt2":
        model = GPT2(**({"layers": layers} if layers else {}))
        return model, make_inputs(name, 128, generator), ["logits"]
    if name == "vit":
        model = ViT(**({"layers": layers} if layers else {}))
        pixels = torch.randn(1, 3, 224, 224, generator=generator)
        return model, {"pixel_values": pixels}, ["logits"]
    raise SystemExit(f"unknown model '{name}'")


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def export_onnx(model, inputs, output_names, folder, opset, axes=None):
    """Exports `model` on `inputs` to folder/model.onnx and checks it."""
    path = os.path.join(folder, "model.onnx")
    # torch 2's default exporter traces differently; the TorchScript one
    # writes what Debian's torch 1.13 writes.
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs.values()), path,
                          opset_version=opset, do_constant_folding=True,
                          input_names=list(inputs), output_names=output_names,
                          dynamic_axes=axes, **extra)
    onnx.checker.check_model(path)

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--models", default="minilm,gpt2,vit")
    parser.add_argument("--layers", type=int, default=0,
                        help="override each model's depth (0: full depth)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opset", type=int, default=17,
                        help="ONNX opset; below 17 LayerNorm is exported as "
                             "its decomposition (folders get an -opsetN "
                             "suffix)")
    parser.add_argument("--dynamic-lengths", default="",
                        help="export with dynamic batch and sequence axes and "
                             "write a test data set per sequence length")
    parser.add_argument("--past-tokens", type=int, default=24,
                        help="gpt2-past: length of the reference sequence")
    args = parser.parse_args()
    if args.models == "gpt2-past":
        export_with_past(args)
        return
    if args.dynamic_lengths:
        export_dynamic(args)
        return
    torch.manual_seed(args.seed)
    for name in args.models.split(","):
        generator = torch.Generator().manual_seed(args.seed)
        model, inputs, output_names = build(name, args.layers, generator)
        model.eval()
        suffix = "" if args.opset == 17 else f"-opset{args.opset}"
        folder = os.path.join(args.out, name + suffix)
        os.makedirs(folder, exist_ok=True)
        export_onnx(model, inputs, output_names, folder, args.opset)
        with torch.no_grad():
            expected = model(*inputs.values())
        for i, (input_name, tensor) in enumerate(inputs.items()):
            write_tensor(os.path.join(folder, f"input_{i}.pb"), tensor.numpy(),
                         input_name)
        write_tensor(os.path.join(folder, "output_0.pb"),
                     expected.numpy().astype(np.float32), output_names[0])
        print(f"{name}: {folder}/model.onnx")


def export_with_past(args):
    """OUT/gpt2-past: the decoder in the with-past form (symbolic batch,
    seq and past_seq), with a token sequence and the full-sequence logits
    of every position as the reference for cached decoding."""
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    model = PastGPT2(**({"layers": args.layers} if args.layers else {})).eval()
    init_like_gpt2(model)
    vocab = model.wte.weight.shape[0]
    folder = os.path.join(args.out, "gpt2-past")
    export_decoder(model, folder, args.opset)
    tokens = torch.randint(0, vocab, (1, args.past_tokens), generator=generator)
    with torch.no_grad():
        logits = model.full_sequence(tokens)
    write_tensor(os.path.join(folder, "tokens.pb"), tokens.numpy(), "tokens")
    write_tensor(os.path.join(folder, "logits.pb"),
                 logits.numpy().astype(np.float32), "logits")
    if len(model.blocks) > 1:
        with torch.no_grad():
            skipped = model.full_sequence(tokens, skip=(1,))
        write_tensor(os.path.join(folder, "logits-skip-1.pb"),
                     skipped.numpy().astype(np.float32), "logits")
    # Greedy generation from the first 8 tokens, recomputing the whole
    # sequence for every new token.
    prompt = tokens[:, :8]
    sequence = prompt
    with torch.no_grad():
        for _ in range(16):
            following = model.full_sequence(sequence)[:, -1].argmax(-1)
            sequence = torch.cat([sequence, following[:, None]], dim=1)
    write_tensor(os.path.join(folder, "prompt.pb"), prompt.numpy(), "input_ids")
    write_tensor(os.path.join(folder, "greedy.pb"),
                 sequence[:, 8:].numpy(), "tokens")
    print(f"gpt2-past: {folder}/past/model.onnx and full/model.onnx, "
          f"{args.past_tokens} reference tokens")


def export_dynamic(args):
    lengths = [int(n) for n in args.dynamic_lengths.split(",")]
    torch.manual_seed(args.seed)
    for name in args.models.split(","):
        if name not in ("minilm", "gpt2"):
            raise SystemExit(f"{name} has no sequence axis to make dynamic")
        generator = torch.Generator().manual_seed(args.seed)
        model, inputs, output_names = build(name, args.layers, generator)
        model.eval()
        folder = os.path.join(args.out, name + "-dynamic")
        os.makedirs(folder, exist_ok=True)
        axes = {input_name: {0: "batch", 1: "seq"} for input_name in inputs}
        axes[output_names[0]] = {0: "batch", 1: "seq"}
        export_onnx(model, inputs, output_names, folder, args.opset, axes)
        for k, length in enumerate(lengths):
            data = os.path.join(folder, f"test_data_set_{k}")
            os.makedirs(data, exist_ok=True)
            sample = make_inputs(name, length, generator)
            with torch.no_grad():
                expected = model(*sample.values())
            for i, (input_name, tensor) in enumerate(sample.items()):
                write_tensor(os.path.join(data, f"input_{i}.pb"),
                             tensor.numpy(), input_name)
            write_tensor(os.path.join(data, "output_0.pb"),
                         expected.numpy().astype(np.float32), output_names[0])
        print(f"{name}: {folder}/model.onnx, lengths {lengths}")


if __name__ == "__main__":
    main()
