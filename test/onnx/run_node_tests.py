#!/usr/bin/python3
"""Runs ONNX's own backend tests through Kiln: every model of a folder.

Each test's model is compiled with kiln-compile and run with kiln-run on each
of its test_data_set_N folders, comparing against the expected outputs
shipped with the test. Nothing is filtered out by op or type: a model Kiln
cannot handle must be listed in expected-failures.txt (next to this script)
with the reason.

Prints one line per test and closes with
  "N passed, N failed" (plus expected-failure counts).
Exits non-zero if a test fails that is not listed, a listed test passes (so
the list stays honest), a test crashes or times out (never an expected
failure), or fewer than --min-passed pass.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile

import onnx

HERE = pathlib.Path(__file__).resolve().parent
EXPECTED_FAILURES_FILE = HERE / "expected-failures.txt"

# Tolerances: ONNX's backend tests compare with rtol=1e-3, atol=1e-7 by
# default; Kiln holds every floating-point type to rtol=1e-3, atol=1e-6,
# except bfloat16 outputs to rtol=8e-3, one unit in their last place (older
# onnx releases made bfloat16 test data by truncating, not rounding).
# kiln-run compares integer and boolean outputs exactly.
RTOL = "1e-3"
RTOL_BFLOAT16 = "8e-3"
ATOL = "1e-6"
BIN_DIR = None  # --bin-dir
DYNAMIC = False  # --dynamic
COMPILE_TIMEOUT_S = 300
RUN_TIMEOUT_S = 300


def read_expected_failures(path):
    """{'folder/test_name': reason} from `path`; lines starting with '#'
    are comments."""
    expected = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, reason = line.partition(":")
        if not sep or not reason.strip() or "/" not in key:
            raise SystemExit(f"{path}:{number}: expected "
                             "'folder/test_name: reason'")
        expected[key.strip()] = reason.strip()
    return expected


# Inputs that decide a result's shape (Compress's condition and TopK's k
# too; or, for CumSum's axis, which axis is computed); Kiln compiles static
# shapes, so these must be compile-time constants. Where a test feeds them as graph inputs,
# the runner folds each data set's values into the model as initializers
# (what a user compiling for Kiln does) and checks ONNX's expected outputs.
SHAPE_INPUTS = {"Reshape": 1, "Unsqueeze": 1, "Squeeze": 1, "Expand": 1,
                "Slice": 1, "Split": 1, "ConstantOfShape": 0, "Resize": 1,
                "Upsample": 1, "Tile": 1, "OneHot": 1, "Pad": 1, "Range": 0,
                "HannWindow": 0, "HammingWindow": 0, "BlackmanWindow": 0,
                "CumSum": 1, "CumProd": 1, "TopK": 1, "Compress": 1, "Loop": 0, "STFT": 1,
                "MaxUnpool": 2, "MelWeightMatrix": 0, "DFT": 1,
                "CenterCropPad": 1, "AffineGrid": 1, "SplitToSequence": 1,
                **{"Reduce" + kind: 1 for kind in (
                    "Sum", "Mean", "Max", "Min", "Prod", "L1", "L2",
                    "SumSquare", "LogSum", "LogSumExp")}}
# Ops all of whose inputs from SHAPE_INPUTS' index on decide the shape.
ALL_LATER_INPUTS = {"Slice", "Resize", "Pad", "Range", "MelWeightMatrix"}
# Ops whose first N inputs from SHAPE_INPUTS' index on decide the shape (a
# Loop's trip count and condition decide how many iterations it stacks; a
# DFT's length and axis).
LEADING_INPUTS = {"Loop": 2, "DFT": 2}
# Further shape-deciding inputs past those (STFT's frame_length).
LATER_SHAPE_INPUTS = {"STFT": [3]}
# Ops whose outputs depend on their input's shape only: a shape input
# computed through them does not make that input a shape input.
SHAPE_ONLY_OPS = {"Shape", "Size"}


def all_nodes(graph):
    """The nodes of `graph` and of its subgraphs (If branches, loop
    bodies), which may read the graph's values by name."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)


def runtime_shape_inputs(model):
    """Names of the graph inputs that decide a result's shape, directly or
    through the nodes that compute a shape input (a window's size cast and
    divided before a Range, a Loop's trip count)."""
    graph_inputs = {value.name for value in model.graph.input}
    initializers = {tensor.name for tensor in model.graph.initializer}
    nodes = list(all_nodes(model.graph))
    producers = {output: node for node in nodes for output in node.output}
    pending = []
    for node in nodes:
        index = SHAPE_INPUTS.get(node.op_type)
        if index is None:
            continue
        last = len(node.input) if node.op_type in ALL_LATER_INPUTS \
            else index + LEADING_INPUTS.get(node.op_type, 1)
        pending += node.input[index:last]
        pending += [node.input[i] for i in LATER_SHAPE_INPUTS.get(
            node.op_type, []) if i < len(node.input)]
    names = set()
    seen = set()
    while pending:
        name = pending.pop()
        if not name or name in seen:
            continue
        seen.add(name)
        if name in graph_inputs and name not in initializers:
            names.add(name)
        producer = producers.get(name)
        if producer is not None and producer.op_type not in SHAPE_ONLY_OPS:
            pending += producer.input
            # An If's or a loop's outputs come from its subgraphs'.
            pending += [output.name for attr in producer.attribute
                        if attr.type == onnx.AttributeProto.GRAPH
                        for output in attr.g.output]
    return names


class Crash(Exception):
    """A tool died from a signal or ran past its time limit."""


def run_tool(cmd, timeout):
    """(returncode, the first error line of stderr, or its last line)."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Crash(f"{os.path.basename(cmd[0])} ran past {timeout} s")
    if result.returncode < 0:
        raise Crash(f"{os.path.basename(cmd[0])} died from signal "
                    f"{-result.returncode}")
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if ": error: " in line]
    message = (errors or lines or [f"exit {result.returncode}"])[0]
    # The model's path (a temporary one where inputs were folded) says
    # nothing about the failure.
    if ".onnx: " in message:
        message = message.split(".onnx: ", 1)[1]
    elif ": error: " in message:
        message = message.split(": error: ", 1)[1]
    return result.returncode, message


def named_dim_flags(model, data_set):
    """--dim flags fixing the graph inputs' named dimensions to their sizes
    in `data_set`, as a user compiling for those inputs gives them."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    values = [value for value in model.graph.input
              if value.name not in initializers]
    files = sorted(data_set.glob("input_*.pb"),
                   key=lambda p: int(p.stem.split("_")[1]))
    sizes = {}
    for value, file in zip(values, files):
        dims = value.type.tensor_type.shape.dim
        named = [(d, dim.dim_param) for d, dim in enumerate(dims)
                 if dim.dim_param]
        if named:
            shape = onnx.load_tensor(str(file)).dims
            for d, name in named:
                if d < len(shape):
                    sizes[name] = shape[d]
    return [f"--dim={name}={size}" for name, size in sorted(sizes.items())]


def compile_model(model_path, artifact, flags=()):
    """None if kiln-compile succeeds, else its error. With --dynamic, the
    model is compiled with its inputs' dimensions made dynamic first."""
    flags = list(flags)
    if DYNAMIC:
        model = onnx.load(str(model_path), load_external_data=False)
        model_path = artifact[:-len(".so")] + "-dynamic.onnx"
        flags += make_dims_dynamic(model, model_path)
    returncode, message = run_tool(
        [os.path.join(BIN_DIR, "kiln-compile"), str(model_path), "-o",
         artifact] + flags, COMPILE_TIMEOUT_S)
    return None if returncode == 0 else "compile: " + message


def make_dims_dynamic(model, path):
    """Writes `model` with every input dimension larger than 1 made a named
    dimension, and returns the kiln-compile flags that keep each within
    1..its size. Dimensions of one size share a name, as onnx-mlir's
    dimParams tie the dimensions that broadcast together; size-1
    dimensions stay fixed, as they are what broadcasting stretches. The
    outputs' and intermediate values' declared sizes are dropped: they
    follow from the inputs'."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    sizes = set()
    for value in model.graph.input:
        if value.name in initializers or \
                not value.type.HasField("tensor_type"):
            continue
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value > 1:
                sizes.add(dim.dim_value)
                dim.dim_param = f"d{dim.dim_value}"
    for value in model.graph.output:
        if value.type.HasField("tensor_type"):
            for dim in value.type.tensor_type.shape.dim:
                dim.ClearField("dim_value")
    del model.graph.value_info[:]
    onnx.save(model, path)
    return [f"--dim=d{size}=1..{size}" for size in sorted(sizes)]


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


def retype_bfloat16(files, values, work_dir, prefix):
    """Older onnx releases wrote bfloat16 test tensors as UINT16 (the same
    bits); returns `files` with those rewritten as the BFLOAT16 that their
    graph values (`values`, in the same order) declare."""
    retyped = []
    for file, value in zip(files, values):
        if value.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            tensor = onnx.load_tensor(str(file))
            if tensor.data_type == onnx.TensorProto.UINT16:
                tensor.data_type = onnx.TensorProto.BFLOAT16
                file = os.path.join(work_dir, f"{prefix}-{file.name}")
                onnx.save_tensor(tensor, file)
        retyped.append(file)
    return retyped


def run_test(test_dir, work_dir):
    """Returns (status, detail) with status 'pass', 'fail' or 'crash'."""
    try:
        return check_test(test_dir, work_dir)
    except Crash as crash:
        return "crash", str(crash)


def check_test(test_dir, work_dir):
    model = onnx.load(str(test_dir / "model.onnx"), load_external_data=False)
    folded = runtime_shape_inputs(model)
    artifact = os.path.join(work_dir, test_dir.name + ".so")
    data_sets = sorted(test_dir.glob("test_data_set_*"))
    if not data_sets:
        return "fail", "no test data"
    dims = named_dim_flags(model, data_sets[0])
    if not folded:
        error = compile_model(test_dir / "model.onnx", artifact, dims)
        if error:
            return "fail", error
    for data_set in data_sets:
        inputs = sorted(data_set.glob("input_*.pb"),
                        key=lambda p: int(p.stem.split("_")[1]))
        if folded:
            path = os.path.join(work_dir, f"{test_dir.name}-{data_set.name}"
                                ".onnx")
            inputs = fold_inputs(model, data_set, folded, path)
            error = compile_model(path, artifact, dims)
            if error:
                return "fail", f"{data_set.name}: {error}"
        has_bfloat16 = any(
            value.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
            for value in model.graph.output)
        run_cmd = [os.path.join(BIN_DIR, "kiln-run"), artifact, "--repeat", "1",
                   "--rtol", RTOL_BFLOAT16 if has_bfloat16 else RTOL,
                   "--atol", ATOL]
        initializers = {t.name for t in model.graph.initializer}
        input_values = [value for value in model.graph.input
                        if value.name not in initializers
                        and value.name not in folded]
        prefix = f"{test_dir.name}-{data_set.name}"
        for path in retype_bfloat16(inputs, input_values, work_dir, prefix):
            run_cmd += ["--input", str(path)]
        outputs = sorted(data_set.glob("output_*.pb"),
                         key=lambda p: int(p.stem.split("_")[1]))
        for path in retype_bfloat16(outputs, model.graph.output, work_dir,
                                    prefix):
            run_cmd += ["--expect", str(path)]
        returncode, message = run_tool(run_cmd, RUN_TIMEOUT_S)
        if returncode != 0:
            return "fail", f"{data_set.name}: run: {message}"
    suffix = f", {len(folded)} shape input(s) folded" if folded else ""
    return "pass", f"{len(data_sets)} data set(s){suffix}"


def is_tool_error(reason):
    """Whether `reason` is a failure message of kiln-compile or kiln-run
    (which --update-expected refreshes) rather than a reason written by
    hand (which it keeps)."""
    return reason.startswith(("compile: ", "test_data_set_"))


def update_expected_failures(path, folder, failures):
    """Replaces `folder`'s entries in `path` by `failures`, keeping the
    header comment and the other folders' entries."""
    lines = path.read_text().splitlines()
    header = []
    for line in lines:
        if line.strip() and not line.startswith("#"):
            break
        header.append(line)
    entries = {key: reason for key, reason
               in read_expected_failures(path).items()
               if not key.startswith(folder + "/")}
    entries.update(failures)
    body = [f"{key}: {entries[key]}" for key in sorted(entries)]
    path.write_text("\n".join(header + body) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--data-dir",
                        default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--min-passed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--filter", default="", help="run tests containing this")
    parser.add_argument("--every", type=int, default=1,
                        help="run every Nth test only (a sample, for slow "
                        "sanitizer builds)")
    parser.add_argument("--results", help="write each test's status to this "
                        "JSON file (for the conformance report)")
    parser.add_argument("--update-expected", action="store_true",
                        help="rewrite this folder's entries of "
                        "expected-failures.txt: drop tests that pass, give "
                        "failures Kiln's error as the reason unless a reason "
                        "was written by hand")
    parser.add_argument("--dynamic", action="store_true",
                        help="compile every model with its inputs' "
                        "dimensions dynamic (see make_dims_dynamic); "
                        "results are listed as FOLDER-dynamic")
    parser.add_argument("--memory-cap-mb", type=int, default=4096,
                        help="the address space each compile and run may "
                        "take, the hostile-model suite's cap (0: none, as "
                        "AddressSanitizer reserves terabytes)")
    args = parser.parse_args()
    # Set on this process, whose tools inherit it: no test model needs
    # more, and one that took more would be a blow-up to find.
    if args.memory_cap_mb:
        cap = args.memory_cap_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    global BIN_DIR, DYNAMIC
    BIN_DIR = args.bin_dir
    DYNAMIC = args.dynamic

    data_dir = pathlib.Path(args.data_dir)
    folder = data_dir.name + ("-dynamic" if args.dynamic else "")
    tests = sorted(p for p in data_dir.iterdir()
                   if (p / "model.onnx").exists() and args.filter in p.name)
    tests = tests[::args.every]
    if not tests:
        print(f"no ONNX tests found under {args.data_dir}")
        return 1
    expected_failures = read_expected_failures(EXPECTED_FAILURES_FILE)

    counts = {"passed": 0, "failed": 0, "xfailed": 0, "xpassed": 0,
              "crashed": 0}
    results, failures = {}, {}
    with tempfile.TemporaryDirectory(prefix="kiln-onnx-tests-") as work_dir, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {test: pool.submit(run_test, test, work_dir)
                   for test in tests}
        for test in tests:
            status, detail = futures[test].result()
            key = f"{folder}/{test.name}"
            expected = expected_failures.get(key)
            results[test.name] = status
            if status == "crash":
                counts["crashed"] += 1
                label = "CRASH"
            elif status == "pass" and expected:
                counts["xpassed"] += 1
                label = "XPASS"
            elif status == "pass":
                counts["passed"] += 1
                label = "PASS"
            elif expected:
                counts["xfailed"] += 1
                label = "XFAIL"
            else:
                counts["failed"] += 1
                label = "FAIL"
            if status == "fail":
                failures[key] = (expected if expected and
                                 not is_tool_error(expected) else detail)
            if expected and status != "pass":
                detail += f" [listed: {expected}]"
            print(f"{label:5} {test.name}: {detail}")

    print(f"{len(tests)} tests in {args.data_dir}: "
          f"{counts['xfailed']} expected failures, "
          f"{counts['xpassed']} unexpected passes, "
          f"{counts['crashed']} crashes")
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    if args.results:
        pathlib.Path(args.results).write_text(
            json.dumps({"folder": folder, "data_dir": str(data_dir.resolve()),
                        "results": results}, indent=1))
    if args.update_expected:
        update_expected_failures(EXPECTED_FAILURES_FILE, folder, failures)
    ok = counts["failed"] == 0 and counts["xpassed"] == 0 and \
        counts["crashed"] == 0
    if counts["passed"] < args.min_passed:
        print(f"error: fewer than {args.min_passed} tests passed")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
