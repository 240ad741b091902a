#!/usr/bin/python3
"""Checks kiln_session_generate on a decoder compiled with --max-context
(make_models.py --models gpt2-past).

usage: check_generate.py ARTIFACT MODEL_DIR RUNTIME_LIB

- greedy generation from prompt.pb gives greedy.pb (PyTorch recomputing the
  whole sequence for every token), and the callback sees every token in
  order; returning non-zero from it stops generation after that token;
- a stop token ends generation and is returned;
- sampling is reproducible for a seed, top_k = 1 is greedy, and with
  top_k = 5 every token drawn is among the five most likely at its step
  (checked by decoding the drawn sequence again and ranking its logits);
- top_p = 0.5 at temperature 1 only draws from the smallest set of tokens
  holding half the probability; with top_k = 5 as well, half of the top
  five's renormalized probability.
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kiln_runtime import Runtime, Session, generate  # noqa: E402


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def main():
    artifact, model_dir, runtime = sys.argv[1:4]
    session = Session(Runtime(runtime), artifact, threads=2)
    prompt = load(os.path.join(model_dir, "prompt.pb"))[0].tolist()
    greedy = load(os.path.join(model_dir, "greedy.pb"))[0].tolist()
    problems = []

    def expect(condition, what):
        print(("ok: " if condition else "FAIL: ") + what)
        if not condition:
            problems.append(what)

    seen = []
    got = generate(session, prompt, len(greedy),
                   on_token=lambda t, i: seen.append((i, t)) and False)
    expect(got == greedy, f"greedy tokens {got} equal PyTorch's {greedy}")
    expect(seen == list(enumerate(got)), "the callback saw each token in order")
    got = generate(session, prompt, len(greedy), on_token=lambda t, i: i == 4)
    expect(got == greedy[:5], "a callback returning non-zero stops after its token")
    stop = greedy[6]
    first = greedy.index(stop)
    got = generate(session, prompt, len(greedy), stop_tokens=[stop])
    expect(got == greedy[:first + 1], f"stop token {stop} ends generation")

    drawn = generate(session, prompt, 12, temperature=1.0, top_k=5, seed=3)
    again = generate(session, prompt, 12, temperature=1.0, top_k=5, seed=3)
    expect(drawn == again, f"seed 3 draws the same tokens twice: {drawn}")
    other = generate(session, prompt, 12, temperature=1.0, top_k=5, seed=4)
    expect(other != drawn, "another seed draws other tokens")
    one = generate(session, prompt, len(greedy), temperature=1.0, top_k=1, seed=5)
    expect(one == greedy, "top_k = 1 is greedy")

    def logits_along(tokens):
        session.reset()
        sequence = np.array([prompt + tokens], dtype=np.int64)
        (logits,) = session.run("decode", [sequence])
        return logits[0, len(prompt) - 1:-1]

    ranks = [int((row > row[t]).sum()) for row, t in
             zip(logits_along(drawn), drawn)]
    expect(max(ranks) < 5, f"top_k = 5 draws rank below 5: {ranks}")
    def nucleus_holds(tokens, top_k):
        """Whether each token lies in the smallest set of the top_k most
        likely (all: 0) whose renormalized probability reaches 0.5."""
        inside = []
        for row, token in zip(logits_along(tokens), tokens):
            order = np.argsort(-row)[:top_k or len(row)]
            p = np.exp(row[order] - row[order].max())
            p /= p.sum()
            needed = int(np.searchsorted(np.cumsum(p), 0.5)) + 1
            inside.append(token in order[:needed].tolist())
        return all(inside)

    nucleus = generate(session, prompt, 12, temperature=1.0, top_p=0.5, seed=9)
    expect(nucleus_holds(nucleus, 0), "top_p = 0.5 draws from the smallest "
                                      "set holding half the probability")
    both = generate(session, prompt, 12, temperature=1.0, top_k=5, top_p=0.5,
                    seed=11)
    expect(nucleus_holds(both, 5), "top_k = 5 then top_p = 0.5 draws from the "
                                   "smallest set holding half of the top 5's")
    session.close()
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
