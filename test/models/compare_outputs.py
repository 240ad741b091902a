#!/usr/bin/python3
"""Compares two TensorProto files: max |a - b| / max |b| must not exceed a bound.

usage: compare_outputs.py ACTUAL.pb REFERENCE.pb BOUND
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)


def main():
    actual, reference, bound = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
    if actual.shape != reference.shape:
        sys.exit(f"shapes differ: {actual.shape} vs {reference.shape}")
    scale = max(np.abs(reference).max(), np.finfo(np.float32).tiny)
    error = np.abs(actual - reference).max() / scale
    print(f"max relative error {error:.3e} (bound {bound:.0e})")
    return 0 if error <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
