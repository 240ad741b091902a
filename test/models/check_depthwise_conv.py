#!/usr/bin/python3
"""Checks depthwise convolutions (one filter per channel) against PyTorch.

usage: check_depthwise_conv.py KILN_BIN_DIR WORK_DIR

Each case is a one-Conv ONNX model (seeded random weights, outputs of order
1) with groups equal to its channels, followed by a BatchNormalization
(whose scale kiln-fold-convolution-scales folds into the filter) and a
Relu, so that the epilogue fuses into the taps' loop: strides 1 and 2 (the latter reads the
input's even and odd columns separately, so odd widths matter), 5x5 and
dilated filters, asymmetric padding, rows of 7 (scalar) and 14 (one short
vector), a batch. IR dumped after convert-kiln-to-linalg must hold the
taps' kh*kw-1 fused multiply-adds (the depthwise lowering, not im2col); a
channel multiplier of 2 is not depthwise and must not. The output must
match PyTorch's conv2d(groups=C), batch_norm (eval) and relu to an
absolute tolerance of 1e-5.
"""

import numpy as np
import torch
from onnx import helper

from one_op_checks import check_cases, pad_like_onnx, write_case

# name: (batch, channels, multiplier, height, width, kernel, strides,
#        dilations, pads)
CASES = {
    "3x3-stride1": (1, 32, 1, 28, 28, 3, 1, 1, [1, 1, 1, 1]),
    "3x3-stride2": (1, 24, 1, 28, 28, 3, 2, 1, [1, 1, 1, 1]),
    "3x3-stride2-odd-width": (2, 16, 1, 15, 15, 3, 2, 1, [1, 1, 1, 1]),
    "5x5-stride2-asymmetric": (1, 16, 1, 20, 29, 5, 2, 1, [2, 1, 1, 2]),
    "3x3-dilated": (1, 8, 1, 16, 16, 3, 1, 2, [2, 2, 2, 2]),
    "3x3-dilated-stride2": (1, 8, 1, 17, 18, 3, 2, 2, [0, 1, 2, 0]),
    "7-wide-rows": (1, 40, 1, 7, 7, 3, 1, 1, [1, 1, 1, 1]),
    "14-wide-rows": (1, 40, 1, 14, 14, 3, 1, 1, [1, 1, 1, 1]),
    "multiplier-2": (1, 8, 2, 12, 12, 3, 1, 1, [1, 1, 1, 1]),
}


def make_case(folder, case, seed):
    (batch, channels, multiplier, height, width, kernel, stride, dilation,
     pads) = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
    filters = channels * multiplier
    w = (rng.standard_normal((filters, 1, kernel, kernel)) /
         kernel).astype(np.float32)
    gamma, beta = (rng.uniform(0.5, 1.5, filters).astype(np.float32),
                   rng.uniform(-0.5, 0.5, filters).astype(np.float32))
    mean, var = (rng.uniform(-0.5, 0.5, filters).astype(np.float32),
                 rng.uniform(0.5, 1.5, filters).astype(np.float32))
    reach = dilation * (kernel - 1) + 1
    out_h = (height + pads[0] + pads[2] - reach) // stride + 1
    out_w = (width + pads[1] + pads[3] - reach) // stride + 1
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"],
                         kernel_shape=[kernel, kernel], pads=pads,
                         strides=[stride, stride],
                         dilations=[dilation, dilation], group=channels),
        helper.make_node("BatchNormalization",
                         ["c", "gamma", "beta", "mean", "var"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"]),
    ]
    conv = torch.nn.functional.conv2d(
        pad_like_onnx(x, pads), torch.from_numpy(w), stride=stride,
        dilation=dilation, groups=channels)
    expected = torch.relu(torch.nn.functional.batch_norm(
        conv, torch.from_numpy(mean), torch.from_numpy(var),
        torch.from_numpy(gamma), torch.from_numpy(beta), training=False,
        eps=1e-5)).numpy()
    assert expected.shape == (batch, filters, out_h, out_w)
    write_case(folder, nodes, x, expected,
               {"w": w, "gamma": gamma, "beta": beta, "mean": mean,
                "var": var})


def main():
    # The taps after the first are fused multiply-adds; a multiplier of 2
    # is not depthwise.
    check_cases(CASES, make_case,
                lambda case: case[5] * case[5] - 1 if case[2] == 1 else 0,
                "ConvertKilnToLinalgPass", "math.fma", atol=1e-5)


if __name__ == "__main__":
    main()
