#!/usr/bin/python3
"""Checks self-speculative decoding (kiln_generate_options.draft_tokens) on a
decoder compiled with --max-context and --draft-skip-layers.

usage: check_speculative.py ARTIFACT PLAIN_ARTIFACT RUNTIME_LIB --max-context N
                           [--draft-report REPORT]

ARTIFACT has the draft entry; PLAIN_ARTIFACT is the same decoder without it.
With --draft-report (ARTIFACT compiled with --draft-quantize and
--quantize-report), the report's quantized products are all in the draft
entry: decode, which verifies, keeps the model's precision.
Plain greedy decoding (one decode call per token) is the reference:
- on 24 seeded prompts of 1 to 12 tokens, generating to the end of the
  context, speculative greedy decoding with 1 to 7 draft tokens gives the
  same tokens, token for token;
- one token past the context, both stop with the same overflow error after
  the same tokens;
- the counts add up (accepted <= drafted, one draft call per drafted token)
  and, over all prompts, verifying takes fewer decode calls than tokens;
- after a speculative generation the cache holds exactly the prompt and the
  tokens fed back, as if no rejected draft had run: decoding the last token
  gives the logits of decoding the whole sequence from an empty cache;
- sampling with a draft, and a draft on an artifact without one, are
  errors that say so.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import (GenerateStats, KilnError, Runtime, Session,  # noqa: E402
                          generate)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact")
    parser.add_argument("plain_artifact")
    parser.add_argument("runtime")
    parser.add_argument("--max-context", type=int, required=True)
    parser.add_argument("--draft-report")
    args = parser.parse_args()
    runtime = Runtime(args.runtime)
    session = Session(runtime, args.artifact, threads=2)
    problems = []

    def expect(condition, what):
        print(("ok: " if condition else "FAIL: ") + what)
        if not condition:
            problems.append(what)

    if args.draft_report:
        with open(args.draft_report) as f:
            layers = json.load(f)["layers"]
        quantized = [layer for layer in layers
                     if layer["precision"] in ("int8", "int4")]
        entries = sorted({layer["entry"] for layer in quantized})
        expect(len(quantized) > 0 and entries == ["draft"],
               f"{len(quantized)} quantized products, in entries {entries}: "
               f"the draft only")

    (logits,) = session.run("decode", [np.zeros((1, 1), dtype=np.int64)])
    vocab = logits.shape[-1]
    random = np.random.default_rng(7)
    context = args.max_context
    drafted = accepted = decode_calls = made = 0
    same = 0
    prompts = [random.integers(0, vocab, size=int(random.integers(1, 13))).tolist()
               for _ in range(24)]
    for index, prompt in enumerate(prompts):
        # The last token generated is not fed back: the context holds
        # len(prompt) + count - 1 positions.
        count = context - len(prompt) + 1
        plain = generate(session, prompt, count)
        stats = GenerateStats()
        draft = 1 + index % 7
        fast = generate(session, prompt, count, draft_tokens=draft, stats=stats)
        same += fast == plain
        if fast != plain:
            print(f"  prompt {index} (draft {draft}): {fast} != {plain}")
        expect(stats.accepted <= stats.drafted == stats.draft_calls,
               f"prompt {index}: {stats.accepted} of {stats.drafted} accepted, "
               f"{stats.draft_calls} draft calls")
        drafted += stats.drafted
        accepted += stats.accepted
        decode_calls += stats.decode_calls
        made += len(fast)
    expect(same == len(prompts), f"speculative greedy tokens equal plain greedy "
                                 f"ones on {same} of {len(prompts)} prompts")
    expect(drafted > 0 and decode_calls < made + len(prompts),
           f"{accepted} of {drafted} draft tokens accepted "
           f"({100 * accepted / max(drafted, 1):.1f}%); {decode_calls} decode "
           f"calls for {made} tokens")

    prompt = prompts[0]
    outcomes = []
    for draft in (0, 4):
        try:
            generate(session, prompt, context - len(prompt) + 2,
                     draft_tokens=draft)
            outcomes.append(("no error", None))
        except KilnError as error:
            outcomes.append((str(error), error.tokens))
    expect(outcomes[0] == outcomes[1] and "exceed" in outcomes[0][0],
           f"past the context both stop after the same tokens with "
           f"'{outcomes[1][0]}'")

    prompt = prompts[1]
    tokens = generate(session, prompt, 12, draft_tokens=3)
    (after,) = session.run("decode", [np.array([tokens[-1:]], dtype=np.int64)])
    session.reset()
    whole = prompt + tokens
    for start in range(0, len(whole), 8):  # calls take at most 8 tokens
        piece = np.array([whole[start:start + 8]], dtype=np.int64)
        (fresh,) = session.run("decode", [piece])
    scale = np.abs(fresh[0, -1]).max()
    error = np.abs(after[0, -1] - fresh[0, -1]).max() / scale
    expect(error <= 1e-4, f"after speculation the cache holds the sequence "
                          f"only (relative difference {error:.2e})")

    try:
        generate(session, prompt, 4, temperature=1.0, draft_tokens=2)
        expect(False, "sampling with a draft is an error")
    except KilnError as error:
        expect("greedy" in str(error), f"sampling with a draft: '{error}'")
    plain_session = Session(runtime, args.plain_artifact, threads=1)
    try:
        generate(plain_session, prompt, 4, draft_tokens=2)
        expect(False, "a draft without a draft entry is an error")
    except KilnError as error:
        expect("no 'draft' entry" in str(error),
               f"a draft without a draft entry: '{error}'")
    plain_session.close()
    session.close()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
