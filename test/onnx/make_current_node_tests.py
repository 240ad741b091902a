#!/usr/bin/python3
"""Writes the node tests of the installed onnx package (PyPI's, newer than
Debian's libonnx-testdata) in ONNX's test-data layout:
  OUT/current-node/test_NAME/model.onnx
  OUT/current-node/test_NAME/test_data_set_N/{input,output}_J.pb

The onnx wheel ships its backend test cases as Python code that builds each
model and computes its expected outputs with ONNX's reference evaluator;
this runs them. Usage (from a virtual environment with `pip install onnx`):
  python make_current_node_tests.py OUT
then run_node_tests.py --data-dir OUT/current-node.
"""
import os
import shutil
import sys

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases


def serialize(value, value_info):
    """`value` (an array, TensorProto, list, optional or dict) as the
    protobuf ONNX's test data uses for the graph value `value_info`."""
    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name)
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name)
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(value, value_info.name)


def main():
    out = os.path.join(sys.argv[1], "current-node")
    if os.path.exists(out):
        shutil.rmtree(out)
    cases = node_cases.collect_testcases(None)
    for case in cases:
        folder = os.path.join(out, case.name)
        os.makedirs(folder)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_set = os.path.join(folder, f"test_data_set_{i}")
            os.makedirs(data_set)
            for prefix, values, infos in (("input", inputs, graph.input),
                                          ("output", outputs, graph.output)):
                for j, (value, info) in enumerate(zip(values, infos)):
                    path = os.path.join(data_set, f"{prefix}_{j}.pb")
                    with open(path, "wb") as f:
                        f.write(serialize(value, info).SerializeToString())
    print(f"{len(cases)} node tests of onnx {onnx.__version__} in {out}")


if __name__ == "__main__":
    main()
