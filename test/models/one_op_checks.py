"""The one-operator model checks (check_winograd.py, check_depthwise_conv.py):
each case's model is compiled, an op counted in the IR after one pass, and
the artifact run against the reference output."""
import os
import re
import subprocess
import sys

import onnx
import torch
from onnx import TensorProto, helper, numpy_helper


def pad_like_onnx(x, pads):
    """x (numpy NCHW) zero-padded by ONNX pads [top, left, bottom, right],
    as a torch tensor (F.pad takes (left, right, top, bottom))."""
    return torch.nn.functional.pad(torch.from_numpy(x),
                                   (pads[1], pads[3], pads[0], pads[2]))


def write_case(folder, nodes, x, expected, initializers):
    """folder/model.onnx (input x, output y of expected's shape), and the
    input_0.pb and output_0.pb that kiln-run --input/--expect read."""
    graph = helper.make_graph(
        nodes, os.path.basename(folder),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       expected.shape)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for name, array in (("input_0.pb", x), ("output_0.pb", expected)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(numpy_helper.from_array(array).SerializeToString())


def compile_and_dump(kiln_bin, folder, pass_name):
    """Compiles folder/model.onnx to folder/model.so; the IR after pass_name."""
    result = subprocess.run(
        [os.path.join(kiln_bin, "kiln-compile"),
         os.path.join(folder, "model.onnx"), "-o",
         os.path.join(folder, "model.so"), "--mlir-print-ir-after-all",
         "--mlir-disable-threading"],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{folder}: kiln-compile failed:\n{result.stderr[-2000:]}")
    dumps = result.stderr.split("// -----// IR Dump After ")
    after = [d for d in dumps if d.startswith(pass_name)]
    if len(after) != 1:
        sys.exit(f"{folder}: no IR dump after {pass_name}")
    return after[0]


def run_expect(kiln_bin, folder, atol):
    """Runs folder/model.so on the input; the kiln-run process's result."""
    return subprocess.run(
        [os.path.join(kiln_bin, "kiln-run"),
         os.path.join(folder, "model.so"), "--input",
         os.path.join(folder, "input_0.pb"), "--expect",
         os.path.join(folder, "output_0.pb"), "--rtol", "0", "--atol",
         str(atol)], capture_output=True, text=True)


def check_cases(cases, make_case, expected_count, pass_name, op, atol):
    """Runs each of `cases` ({name: case}) in WORK_DIR/name, with
    KILN_BIN_DIR and WORK_DIR from the command line: make_case(folder, case,
    seed) writes its model and tensors, the IR after pass_name must hold
    expected_count(case) `op`s (an op name, or a function of the case giving
    a regular expression for its lines) and the output must match. Exits
    non-zero listing every case that doesn't."""
    kiln_bin, work = sys.argv[1], sys.argv[2]
    failures = []
    for seed, (name, case) in enumerate(cases.items()):
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        make_case(folder, case, seed)
        dump = compile_and_dump(kiln_bin, folder, pass_name)
        pattern = op(case) if callable(op) else re.escape(op)
        count = len(re.findall(pattern, dump))
        if count != expected_count(case):
            failures.append(f"{name}: {count} of {pattern} after {pass_name}, "
                            f"expected {expected_count(case)}")
        run = run_expect(kiln_bin, folder, atol)
        print(f"{name}: {pattern} x{count}; {run.stdout.strip()}")
        if run.returncode != 0:
            failures.append(f"{name}: {run.stdout.strip()} "
                            f"{run.stderr.strip()}")
    if failures:
        sys.exit("\n".join(failures))
