#!/usr/bin/python3
"""Fits the rational erf approximation kiln-approximate-math emits.

erf(x) ~ x * P(x^2) / Q(x^2) with Q(0) = 1, P of degree 5 and Q of degree 5
in x^2, on [0, 3.92] (beyond which erf rounds to 1 in float32; the
compiler clamps the input there). The fit is linear least squares on the
linearized residual x P - erf(x) Q, reweighted toward the largest errors to
approach a minimax fit. Prints the float32 coefficients and the maximum
absolute error of a float32 evaluation with fused multiply-adds.

Development tooling only (numpy); Kiln never runs Python.
"""
from math import erf

import numpy as np

LIMIT = 3.92
NUM_TERMS, DEN_TERMS = 6, 5  # P: x^0..x^10 in x^2; Q: 1 + x^2..x^10


def fit(xs, ys, iterations=30):
    t = xs * xs
    weights = np.ones_like(xs)
    best = None
    for _ in range(iterations):
        columns = [xs * t**i for i in range(NUM_TERMS)]
        columns += [-ys * t**j for j in range(1, DEN_TERMS + 1)]
        matrix = np.stack(columns, 1)
        solution, *_ = np.linalg.lstsq(matrix * weights[:, None],
                                       ys * weights, rcond=None)
        p = solution[:NUM_TERMS]
        q = np.concatenate([[1.0], solution[NUM_TERMS:]])
        den = sum(q[j] * t**j for j in range(DEN_TERMS + 1))
        err = xs * sum(p[i] * t**i for i in range(NUM_TERMS)) / den - ys
        worst = np.max(np.abs(err))
        if best is None or worst < best[0]:
            best = (worst, p, q)
        weights *= np.sqrt(np.abs(err) / worst + 0.05) / np.abs(den)
        weights /= weights.max()
    return best[1], best[2]


def evaluate_f32(x, p, q):
    x = np.clip(x.astype(np.float32), np.float32(-LIMIT), np.float32(LIMIT))
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
    xs = np.concatenate([np.linspace(0, LIMIT, 40000),
                         np.linspace(0, 0.01, 2000)])
    ys = np.array([erf(v) for v in xs])
    p, q = fit(xs, ys)
    print("P:", ", ".join(f"{float(np.float32(c))!r}f" for c in p))
    print("Q:", ", ".join(f"{float(np.float32(c))!r}f" for c in q))
    grid = np.linspace(-6, 6, 100001)
    error = np.abs(evaluate_f32(grid, p, q).astype(np.float64)
                   - np.array([erf(v) for v in grid]))
    print(f"max abs error in float32: {error.max():.2e}")


if __name__ == "__main__":
    main()
