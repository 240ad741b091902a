#!/usr/bin/python3
"""Checks a decoder compiled with --max-context against the full-sequence
logits of the same model (make_models.py --models gpt2-past).

usage: check_kv_cache.py ARTIFACT MODEL_DIR RUNTIME_LIB --max-context N
                         [--rtol R] [--logits FILE]

The artifact's decode entry runs the reference tokens in steps of different
sizes (a prompt, single tokens, a chunk of several), its KV cache in the
session; after every call the logits of the positions it took must agree
with the reference's to R relative to the largest reference logit of that
position. A reset session must give the same results; after truncate
(rolling back positions) decoding continues as if they never ran; a call
that would pass the cache's length must fail with an error naming
--max-context, leaving the session usable after a reset.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import KilnError, Runtime, Session  # noqa: E402


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def decode_in_steps(session, tokens, steps):
    """Logits of every position, fed to decode in calls of `steps` tokens."""
    rows, start = [], 0
    for count in steps:
        (logits,) = session.run("decode", [tokens[:, start:start + count]])
        if logits.shape != (1, count, logits.shape[2]):
            raise SystemExit(f"decode of {count} tokens returned logits of "
                             f"shape {logits.shape}")
        rows.append(logits)
        start += count
    return np.concatenate(rows, axis=1)


def worst_error(got, expected):
    scale = np.abs(expected).max(axis=-1)
    return float((np.abs(got - expected).max(axis=-1) / scale).max())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact")
    parser.add_argument("model_dir")
    parser.add_argument("runtime")
    parser.add_argument("--max-context", type=int, required=True)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--logits", default="logits.pb",
                        help="the reference logits in MODEL_DIR")
    args = parser.parse_args()
    tokens = load(os.path.join(args.model_dir, "tokens.pb"))
    expected = load(os.path.join(args.model_dir, args.logits))
    length = tokens.shape[1]
    if length > args.max_context:
        raise SystemExit("the reference sequence is longer than the cache")

    session = Session(Runtime(args.runtime), args.artifact, threads=2)
    prompt = length // 3
    chunk = 3
    schedules = {
        "prompt, then single tokens and a chunk":
            [prompt] + [1] * (length - prompt - chunk - 1) + [chunk, 1],
        "one token at a time": [1] * length,
        "chunks of 5": [5] * (length // 5) + ([length % 5] if length % 5 else []),
    }
    failed = False
    for name, steps in schedules.items():
        session.reset()
        got = decode_in_steps(session, tokens, steps)
        error = worst_error(got, expected)
        ok = error <= args.rtol
        failed |= not ok
        print(f"{name}: {len(steps)} calls, worst relative error {error:.2e} "
              f"({'ok' if ok else 'FAIL'}, limit {args.rtol:g})")

    # Rolling back: after 10 positions, truncate to 6 and continue; the
    # logits must be those of the sequence that never had positions 6-9
    # decoded. truncate never grows the cache, nor goes below 0.
    session.reset()
    session.run("decode", [tokens[:, :10]])
    (kept,) = session.run("truncate", [np.array(6, np.int64)])
    (beyond,) = session.run("truncate", [np.array(100, np.int64)])
    rest = decode_in_steps(session, tokens[:, 6:], [2] + [1] * (length - 8))
    error = worst_error(rest, expected[:, 6:])
    ok = int(kept) == 6 and int(beyond) == 6 and error <= args.rtol
    failed |= not ok
    print(f"truncate to 6 after 10 (kept {int(kept)}, then {int(beyond)} for "
          f"100), then decode: worst relative error {error:.2e} "
          f"({'ok' if ok else 'FAIL'})")
    (kept,) = session.run("truncate", [np.array(-3, np.int64)])
    failed |= int(kept) != 0
    print(f"truncate to -3 keeps {int(kept)} ({'ok' if int(kept) == 0 else 'FAIL'})")

    # Filling the cache exactly is fine; one more position is an error.
    session.reset()
    filler = np.zeros((1, args.max_context), dtype=np.int64)
    session.run("decode", [filler])
    try:
        session.run("decode", [filler[:, :1]])
        print("overflow: a call past --max-context succeeded (FAIL)")
        failed = True
    except KilnError as error:
        ok = "--max-context" in str(error)
        failed |= not ok
        print(f"overflow: {error} ({'ok' if ok else 'FAIL: no --max-context'})")
    session.reset()
    got = decode_in_steps(session, tokens, [length])
    error = worst_error(got, expected)
    failed |= error > args.rtol
    print(f"after overflow and reset: worst relative error {error:.2e}")
    session.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
