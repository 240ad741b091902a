#!/usr/bin/python3
"""Fits the rational approximations of erf and tanh kiln-approximate-math
emits.

f(x) ~ x * P(x^2) / Q(x^2) with Q(0) = 1 on [0, LIMIT], beyond which f
rounds to 1 in float32 (the compiler clamps the input there):
  erf:  P of degree 5, Q of degree 5 in x^2, LIMIT 3.92;
  tanh: P of degree 4, Q of degree 4 in x^2, LIMIT 8.5.
The fit is linear least squares on the linearized residual x P - f(x) Q
(for tanh in x / LIMIT, whose powers up to 8.5^9 would make the system
ill-conditioned), reweighted toward the largest errors to
approach a minimax fit. Prints the float32 coefficients and the maximum
absolute error of a float32 evaluation with fused multiply-adds.

Usage: scripts/fit_rational.py erf|tanh
Development tooling only (numpy); Kiln never runs Python.
"""
import math
import sys

import numpy as np

FUNCTIONS = {
    # name: (f, LIMIT, terms of P, terms of Q after its leading 1, fitted
    # in x / LIMIT)
    "erf": (np.vectorize(math.erf), 3.92, 6, 5, False),
    "tanh": (np.tanh, 8.5, 5, 4, True),
}


def fit(xs, ys, num_terms, den_terms, iterations=40):
    t = xs * xs
    weights = np.ones_like(xs)
    best = None
    for _ in range(iterations):
        columns = [xs * t**i for i in range(num_terms)]
        columns += [-ys * t**j for j in range(1, den_terms + 1)]
        matrix = np.stack(columns, 1)
        solution, *_ = np.linalg.lstsq(matrix * weights[:, None],
                                       ys * weights, rcond=None)
        p = solution[:num_terms]
        q = np.concatenate([[1.0], solution[num_terms:]])
        den = sum(q[j] * t**j for j in range(den_terms + 1))
        err = xs * sum(p[i] * t**i for i in range(num_terms)) / den - ys
        worst = np.max(np.abs(err))
        if best is None or worst < best[0]:
            best = (worst, p, q)
        weights *= np.sqrt(np.abs(err) / worst + 0.05) / np.abs(den)
        weights /= weights.max()
    return best[1], best[2]


def evaluate_f32(x, p, q, limit):
    x = np.clip(x.astype(np.float32), np.float32(-limit), np.float32(limit))
    t = (x.astype(np.float64) ** 2).astype(np.float32)

    def horner(coefficients):
        result = np.full_like(t, np.float32(coefficients[-1]))
        for c in coefficients[-2::-1]:  # one rounding per step, as an FMA
            result = (result.astype(np.float64) * t
                      + np.float64(np.float32(c))).astype(np.float32)
        return result

    num = (x.astype(np.float64) * horner(p)).astype(np.float32)
    return (num.astype(np.float64) / horner(q)).astype(np.float32)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in FUNCTIONS:
        sys.exit("usage: fit_rational.py erf|tanh")
    f, limit, num_terms, den_terms, normalized = FUNCTIONS[sys.argv[1]]
    scale = limit if normalized else 1.0
    xs = np.concatenate([np.linspace(0, limit, 40000),
                         np.linspace(0, 0.01, 2000)])
    # Fitted in x / scale, then scaled back: P_i / scale^(2i+1).
    pn, qn = fit(xs / scale, f(xs), num_terms, den_terms)
    p = [pn[i] / scale**(2 * i + 1) for i in range(num_terms)]
    q = [qn[j] / scale**(2 * j) for j in range(den_terms + 1)]
    print("P:", ", ".join(f"{float(np.float32(c))!r}f" for c in p))
    print("Q:", ", ".join(f"{float(np.float32(c))!r}f" for c in q))
    grid = np.linspace(-12, 12, 200001)
    error = np.abs(evaluate_f32(grid, p, q, limit).astype(np.float64)
                   - f(grid))
    print(f"max abs error in float32: {error.max():.2e}")


if __name__ == "__main__":
    main()
