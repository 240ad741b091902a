#!/usr/bin/python3
"""Writes a model folder that runs a folder's model on its input's first row.

usage: first_row.py MODEL_DIR OUTPUT_DIR

MODEL_DIR holds model.onnx, whose input and output are [1, rows, columns],
and input_0.pb. OUTPUT_DIR gets the model with rows fixed to 1 and the
input's first row as input_0.pb, for a kernel's single-row path.
"""
import os
import sys

import onnx
from onnx import numpy_helper


def main():
    source, target = sys.argv[1], sys.argv[2]
    os.makedirs(target, exist_ok=True)
    model = onnx.load(os.path.join(source, "model.onnx"))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.shape.dim[1].dim_value = 1
    del model.graph.value_info[:]
    onnx.save(model, os.path.join(target, "model.onnx"))
    rows = numpy_helper.to_array(
        onnx.load_tensor(os.path.join(source, "input_0.pb")))
    onnx.save_tensor(numpy_helper.from_array(rows[:, :1], "x"),
                     os.path.join(target, "input_0.pb"))


if __name__ == "__main__":
    main()
