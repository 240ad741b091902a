#!/usr/bin/python3
"""Checks convolutions with few output pixels, computed as transposed
products (kiln-few-pixel-convolutions), against PyTorch.

usage: check_few_pixel_conv.py KILN_BIN_DIR WORK_DIR

Each case is a one-Conv ONNX model (seeded random weights and bias, outputs
of order 1): a squeeze-excitation block's 1x1 map, a speech model's frames
read through padding at stride 1 and 2, a batch of two 2x2 maps from a
dilated 3x3 filter with asymmetric padding, and a 5x5 map (25 pixels, more
than half a register panel: 16 columns wide with AVX2, 32 with AVX-512)
that must stay a direct convolution. The IR
after kiln-few-pixel-convolutions must hold the patches' kiln.gather (or
not), and the output must match PyTorch's conv2d to an absolute tolerance
of 1e-5.
"""

import numpy as np
import torch
from onnx import helper

from one_op_checks import check_cases, pad_like_onnx, write_case

# name: (batch, channels, filters, height, width, kernel, strides,
#        dilations, pads, transposed)
CASES = {
    "squeeze-excite": (1, 96, 24, 1, 1, (1, 1), 1, 1, [0, 0, 0, 0], True),
    "frames": (1, 129, 128, 1, 4, (1, 3), 1, 1, [0, 1, 0, 1], True),
    "frames-stride2": (1, 128, 64, 1, 4, (1, 3), 2, 1, [0, 1, 0, 1], True),
    "batch-dilated": (2, 12, 20, 3, 3, (3, 3), 1, 2, [2, 1, 1, 2], True),
    "many-pixels": (1, 16, 24, 5, 5, (3, 3), 1, 1, [1, 1, 1, 1], False),
}


def make_case(folder, case, seed):
    (batch, channels, filters, height, width, kernel, stride, dilation,
     pads, _) = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
    w = (rng.standard_normal((filters, channels) + kernel) /
         np.sqrt(channels * kernel[0] * kernel[1])).astype(np.float32)
    b = rng.standard_normal(filters).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"],
                            kernel_shape=list(kernel), pads=pads,
                            strides=[stride, stride],
                            dilations=[dilation, dilation])
    expected = torch.nn.functional.conv2d(
        pad_like_onnx(x, pads), torch.from_numpy(w), torch.from_numpy(b),
        stride=stride, dilation=dilation).numpy()
    write_case(folder, [node], x, expected, {"w": w, "b": b})


def main():
    check_cases(CASES, make_case, lambda case: 1 if case[-1] else 0,
                "FewPixelConvolutionsPass", "kiln.gather", atol=1e-5)


if __name__ == "__main__":
    main()
