#!/usr/bin/python3
"""Runs ONNX's own backend tests (libonnx-testdata) through Kiln.

Every test whose model uses only the ONNX ops and element types Kiln
supports is compiled with kiln-compile and run with kiln-run on each of its
test_data_set_N folders, comparing against the expected outputs shipped with
the test. Which tests are in scope is decided here, independently of Kiln,
by reading the models with the onnx Python package.

Prints one line per test and closes with
  "N passed, N failed" (plus unsupported and expected-failure counts).
Exits non-zero if an in-scope test fails unexpectedly, an expected failure
passes (so the list below stays honest), or fewer than --min-passed pass.
"""
import argparse
import concurrent.futures
import os
import pathlib
import subprocess
import sys
import tempfile

import onnx

SUPPORTED_OPS = {
    "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Exp", "Log", "Sqrt", "Pow",
    "Relu", "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "MatMul", "Gemm", "Softmax",
    "ReduceMean", "ReduceSum", "Reshape", "Transpose", "Unsqueeze", "Squeeze",
    "Concat", "Gather", "Constant", "Identity", "Cast", "Flatten",
    "Equal", "Where", "LayerNormalization", "InstanceNormalization", "GroupNormalization",
    "Resize", "Upsample", "Conv", "Expand", "Slice", "Split",
    "Shape", "ConstantOfShape", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul", "ConvInteger",
    "QLinearConv", "Floor", "Ceil", "Round", "Not", "And", "Or", "Xor",
    "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Min", "Max", "Sum",
    "Mean", "Reciprocal", "Sign", "LeakyRelu", "PRelu", "Elu", "Selu",
    "Celu", "ThresholdedRelu", "HardSigmoid", "HardSwish", "Softplus",
    "Softsign", "Mish", "Clip", "ReduceMin", "ReduceProd", "ReduceL1",
    "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
    "LogSoftmax",
}
SUPPORTED_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                   onnx.TensorProto.BFLOAT16, onnx.TensorProto.INT64,
                   onnx.TensorProto.INT32, onnx.TensorProto.INT8,
                   onnx.TensorProto.UINT8, onnx.TensorProto.BOOL}

# Ops that compute on their inputs' values take only these element types
# (the others are moved, cast or quantized, but not computed on).
ARITHMETIC_OPS = {"Add", "Sub", "Mul", "Div", "Neg", "Abs", "Pow", "Relu",
                  "MatMul", "Gemm", "ReduceMean", "ReduceSum", "Floor",
                  "Ceil", "Round", "Less", "LessOrEqual", "Greater",
                  "GreaterOrEqual", "Min", "Max", "Sum", "Mean", "Reciprocal",
                  "Sign", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu",
                  "ThresholdedRelu", "HardSigmoid", "HardSwish", "Softplus",
                  "Softsign", "Mish", "Clip", "ReduceMax", "ReduceMin",
                  "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                  "ReduceLogSum", "ReduceLogSumExp"}
ARITHMETIC_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64,
                    onnx.TensorProto.INT32}

# In-scope tests Kiln is known to get wrong, each with the reason. A test
# listed here that passes makes the run fail, so fixes get noticed.
CONV3D = "3-D convolution; Kiln supports 1-D and 2-D"
BF16_AS_UINT16 = "bfloat16 test data stored as UINT16"
EXPECTED_FAILURES = {
    "test_Conv3d": CONV3D,
    "test_Conv3d_dilated": CONV3D,
    "test_Conv3d_dilated_strided": CONV3D,
    "test_Conv3d_groups": CONV3D,
    "test_Conv3d_no_bias": CONV3D,
    "test_Conv3d_stride": CONV3D,
    "test_Conv3d_stride_padding": CONV3D,
    "test_slice_neg_steps": "Slice with negative steps",
    "test_resize_tf_crop_and_resize":
        "Resize's tf_crop_and_resize (a region of interest) is not supported",
    # The data files of these tests (written by an older onnx) hold their
    # bfloat16 tensors as UINT16, the same bits under another type, which
    # kiln-run compares by type.
    "test_cast_BFLOAT16_to_FLOAT": BF16_AS_UINT16,
    "test_cast_FLOAT_to_BFLOAT16": BF16_AS_UINT16,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": BF16_AS_UINT16,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": BF16_AS_UINT16,
}

# Tolerances: ONNX's backend tests compare with rtol=1e-3, atol=1e-7 by
# default; Kiln's float32 code is held to the same.
RTOL = "1e-3"
BIN_DIR = None  # --bin-dir
ATOL = "1e-6"


def tensor_types(model):
    graph = model.graph
    for value in list(graph.input) + list(graph.output):
        if not value.type.HasField("tensor_type"):
            yield None
        else:
            yield value.type.tensor_type.elem_type
    for tensor in graph.initializer:
        yield tensor.data_type
    for node in graph.node:
        if node.op_type == "Cast":
            for attr in node.attribute:
                if attr.name == "to":
                    yield attr.i
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t.data_type


def has_arithmetic_on_other_types(model):
    graph = model.graph
    types = {value.name: value.type.tensor_type.elem_type
             for value in list(graph.input) + list(graph.value_info)}
    types.update({tensor.name: tensor.data_type
                  for tensor in graph.initializer})
    return any(types.get(name, onnx.TensorProto.FLOAT) not in ARITHMETIC_TYPES
               for node in graph.node if node.op_type in ARITHMETIC_OPS
               for name in node.input if name)


def has_static_inputs(model):
    for value in list(model.graph.input) + list(model.graph.output):
        if not value.type.tensor_type.HasField("shape"):
            return False
        for dim in value.type.tensor_type.shape.dim:
            if not dim.HasField("dim_value"):
                return False
    return True


# Inputs that decide a result's shape; Kiln compiles static shapes, so these
# must be compile-time constants. Where a test feeds them as graph inputs,
# the runner folds each data set's values into the model as initializers
# (what a user compiling for Kiln does) and checks ONNX's expected outputs.
SHAPE_INPUTS = {"Reshape": 1, "Unsqueeze": 1, "Squeeze": 1, "ReduceSum": 1,
                "Expand": 1, "Slice": 1, "Split": 1, "ConstantOfShape": 0,
                "Resize": 1, "Upsample": 1}
# Ops all of whose inputs from SHAPE_INPUTS' index on decide the shape.
ALL_LATER_INPUTS = {"Slice", "Resize"}


def runtime_shape_inputs(model):
    """Names of the graph inputs that decide a result's shape."""
    graph_inputs = {value.name for value in model.graph.input}
    initializers = {tensor.name for tensor in model.graph.initializer}
    names = set()
    for node in model.graph.node:
        index = SHAPE_INPUTS.get(node.op_type)
        if index is None:
            continue
        last = len(node.input) if node.op_type in ALL_LATER_INPUTS \
            else index + 1
        for name in node.input[index:last]:
            if name in graph_inputs and name not in initializers:
                names.add(name)
    return names


def classify(model_path):
    """Returns None if Kiln should handle the model, else why not."""
    model = onnx.load(str(model_path))
    ops = {node.op_type for node in model.graph.node
           if node.domain in ("", "ai.onnx")}
    foreign = {node.domain for node in model.graph.node
               if node.domain not in ("", "ai.onnx")}
    if foreign:
        return "domain " + ",".join(sorted(foreign))
    missing = ops - SUPPORTED_OPS
    if missing:
        return "ops " + ",".join(sorted(missing))
    types = set(tensor_types(model))
    if not types <= SUPPORTED_TYPES:
        names = sorted(onnx.TensorProto.DataType.Name(t) if t else "non-tensor"
                       for t in types - SUPPORTED_TYPES)
        return "types " + ",".join(names)
    if has_arithmetic_on_other_types(model):
        return "arithmetic on types other than FLOAT and INT64"
    if not has_static_inputs(model):
        return "dynamic shapes"
    return None


def compile_model(model_path, artifact):
    """None if kiln-compile succeeds, else its last error line."""
    result = subprocess.run([os.path.join(BIN_DIR, "kiln-compile"),
                             str(model_path), "-o", artifact],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return "compile: " + (lines[-1] if lines else "failed")


def fold_inputs(model, data_set, names, path):
    """Writes `model` with the graph inputs `names` made initializers holding
    `data_set`'s values; returns the data set's other input files."""
    inputs = [value for value in model.graph.input
              if value.name not in {t.name for t in model.graph.initializer}]
    files = sorted(data_set.glob("input_*.pb"),
                   key=lambda p: int(p.stem.split("_")[1]))
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    del folded.graph.input[:]
    kept = []
    for value, file in zip(inputs, files):
        if value.name in names:
            tensor = onnx.load_tensor(str(file))
            tensor.name = value.name
            folded.graph.initializer.append(tensor)
        else:
            folded.graph.input.append(value)
            kept.append(file)
    onnx.save(folded, path)
    return kept


def run_test(test_dir, work_dir):
    """Returns (status, detail) with status 'pass' or 'fail'."""
    model = onnx.load(str(test_dir / "model.onnx"))
    folded = runtime_shape_inputs(model)
    artifact = os.path.join(work_dir, test_dir.name + ".so")
    if not folded:
        error = compile_model(test_dir / "model.onnx", artifact)
        if error:
            return "fail", error
    data_sets = sorted(test_dir.glob("test_data_set_*"))
    if not data_sets:
        return "fail", "no test data"
    for data_set in data_sets:
        inputs = sorted(data_set.glob("input_*.pb"),
                        key=lambda p: int(p.stem.split("_")[1]))
        if folded:
            path = os.path.join(work_dir, f"{test_dir.name}-{data_set.name}"
                                ".onnx")
            inputs = fold_inputs(model, data_set, folded, path)
            error = compile_model(path, artifact)
            if error:
                return "fail", f"{data_set.name}: {error}"
        run_cmd = [os.path.join(BIN_DIR, "kiln-run"), artifact, "--repeat", "1",
                   "--rtol", RTOL, "--atol", ATOL]
        for path in inputs:
            run_cmd += ["--input", str(path)]
        for path in sorted(data_set.glob("output_*.pb"),
                           key=lambda p: int(p.stem.split("_")[1])):
            run_cmd += ["--expect", str(path)]
        result = subprocess.run(run_cmd, capture_output=True, text=True,
                                timeout=300)
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            return "fail", f"{data_set.name}: " + (lines[-1] if lines else
                                                   f"exit {result.returncode}")
    suffix = f", {len(folded)} shape input(s) folded" if folded else ""
    return "pass", f"{len(data_sets)} data set(s){suffix}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--data-dir",
                        default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--min-passed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--filter", default="", help="run tests containing this")
    args = parser.parse_args()
    global BIN_DIR
    BIN_DIR = args.bin_dir

    tests = sorted(p for p in pathlib.Path(args.data_dir).iterdir()
                   if (p / "model.onnx").exists() and args.filter in p.name)
    if not tests:
        print(f"no ONNX node tests found under {args.data_dir}")
        return 1
    in_scope, unsupported = [], 0
    for test in tests:
        reason = classify(test / "model.onnx")
        if reason is None:
            in_scope.append(test)
        else:
            unsupported += 1

    counts = {"passed": 0, "failed": 0, "xfailed": 0, "xpassed": 0}
    with tempfile.TemporaryDirectory(prefix="kiln-node-tests-") as work_dir, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {test: pool.submit(run_test, test, work_dir)
                   for test in in_scope}
        for test in in_scope:
            status, detail = futures[test].result()
            expected = EXPECTED_FAILURES.get(test.name)
            if status == "pass" and expected:
                counts["xpassed"] += 1
                label = "XPASS"
            elif status == "pass":
                counts["passed"] += 1
                label = "PASS"
            elif expected:
                counts["xfailed"] += 1
                label = "XFAIL"
                detail += f" [known: {expected}]"
            else:
                counts["failed"] += 1
                label = "FAIL"
            print(f"{label:5} {test.name}: {detail}")

    print(f"{len(tests)} tests in {args.data_dir}: {len(in_scope)} in scope, "
          f"{unsupported} unsupported (ops or types outside Kiln's set), "
          f"{counts['xfailed']} expected failures, "
          f"{counts['xpassed']} unexpected passes")
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    ok = counts["failed"] == 0 and counts["xpassed"] == 0
    if counts["passed"] < args.min_passed:
        print(f"error: fewer than {args.min_passed} tests passed")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
