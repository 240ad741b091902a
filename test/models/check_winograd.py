#!/usr/bin/python3
"""Checks 3x3 convolutions compiled by Winograd's F(4x4, 3x3) and
F(2x2, 3x3) against PyTorch's direct convolution.

usage: check_winograd.py KILN_BIN_DIR WORK_DIR

Each case is a one-Conv ONNX model (seeded random weights scaled so that
outputs are of order 1) whose tiles fill the matmul panels in a different
way: a whole row of tiles per panel, several rows per panel, two panels per
row, asymmetric padding, a batch of three with a bias, panels of half the
width for 8x8 maps (as AVX-512 panels fill). The -O2 artifact
must have rewritten the convolution into kiln.winograd_conv2d with the
expected tile (4x4 where its tiles fill the panels, else 2x2; a case whose
tiles can't fill panels must stay direct), and its output must match
PyTorch's to an absolute tolerance of 1e-4 (in f32, F(2x2, 3x3) adds errors
below 1e-5 at these magnitudes, F(4x4, 3x3) up to 3e-5).
"""

import os
import sys

import numpy as np
import torch
from onnx import helper

from one_op_checks import check_cases, pad_like_onnx, write_case

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
from machine_peaks import cpu_flags  # noqa: E402

# name: (batch, channels, filters, height, width, pads, bias, output tile
# at panels 32 tiles wide, at panels 16 or 8 wide; 0: direct). The names
# say how the tiles fill 32-wide panels (AVX-512); AVX2's 16-wide panels
# are filled by the 4x4 tiles of two of the maps.
CASES = {
    "row-per-panel": (1, 16, 24, 64, 64, [1, 1, 1, 1], False, (4, 4)),
    "rows-per-panel": (3, 20, 16, 16, 16, [1, 1, 1, 1], True, (2, 4)),
    "panels-per-row": (1, 16, 16, 130, 130, [0, 0, 0, 0], False, (4, 4)),
    "asymmetric-pads": (2, 32, 32, 32, 32, [2, 1, 0, 1], True, (4, 4)),
    "small-tiles-only": (1, 16, 16, 36, 64, [1, 1, 1, 1], True, (2, 4)),
    "half-panels": (2, 32, 32, 8, 8, [1, 1, 1, 1], True, (2, 2)),
    "odd-tiles": (2, 32, 32, 30, 30, [1, 1, 1, 1], False, (0, 0)),
}


def host_panel_width():
    """Tiles per panel of the host's artifacts: two vectors of f32 lanes of
    the widest vectors the host has (Kiln compiles for the host)."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return 32
    return 16 if "avx2" in flags and "fma" in flags else 8


def make_case(folder, case, seed):
    batch, channels, filters, height, width, pads, bias, _ = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
    w = (rng.standard_normal((filters, channels, 3, 3)) /
         np.sqrt(9 * channels)).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32)
    out_h = height + pads[0] + pads[2] - 2
    out_w = width + pads[1] + pads[3] - 2
    inputs = ["x", "w"] + (["b"] if bias else [])
    node = helper.make_node("Conv", inputs, ["y"], kernel_shape=[3, 3],
                            pads=pads)
    expected = torch.nn.functional.conv2d(
        pad_like_onnx(x, pads), torch.from_numpy(w),
        torch.from_numpy(b) if bias else None).numpy()
    assert expected.shape == (batch, filters, out_h, out_w)
    write_case(folder, [node], x, expected,
               {"w": w, "b": b} if bias else {"w": w})


def main():
    panel_width = host_panel_width()

    def expected_tile(case):
        wide, narrow = case[-1]
        return wide if panel_width == 32 else narrow

    check_cases(CASES, make_case,
                lambda case: 1 if expected_tile(case) else 0,
                "WinogradConvolutionsPass",
                lambda case: r"kiln\.winograd_conv2d .*, tensor<%dx" %
                ((expected_tile(case) or 2) + 2) ** 2, atol=1e-4)


if __name__ == "__main__":
    main()
