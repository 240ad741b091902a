#!/usr/bin/python3
"""The malicious-model regression suite: small hostile or malformed models,
each made here by onnx.helper (or by writing the bytes that no helper
writes), each compiled by kiln-compile under a memory and a time cap.

A few must compile within the caps (a blow-up the compiler must contain).
Every other case must end the way a user can rely on:
- exit status 1 (not a signal, not a hang past the time cap),
- exactly one line on stderr, `kiln-compile: error: ...`, matching the
  case's expected message, with no control characters in it,
- no artifact and no temporary file left in the output folder.

usage: check_hostile_models.py BIN_DIR WORK_DIR [CASE...]
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The caps every compile runs under: what a hostile model may cost at most.
MEMORY_CAP = 4 << 30
TIME_CAP = 60
# A model that compiles must not make an artifact far beyond its own size.
ARTIFACT_CAP = 64 << 20
INT64_MAX = 2**63 - 1


def vinfo(name, shape, elem_type=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def result(name, rank):
    """An output whose sizes the model leaves to inference."""
    return helper.make_tensor_value_info(
        name, TensorProto.FLOAT, [f"{name}_{k}" for k in range(rank)])


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, initializers=(), opset=17, check=False):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs,
                              initializer=list(initializers))
    made = helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", opset)])
    made.ir_version = 8
    if check:
        onnx.checker.check_model(made)
    return made


def duplicate_output():
    # The same value listed twice among the graph's outputs.
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vinfo("x", [4])], [vinfo("y", [4]), vinfo("y", [4])],
                 check=False)


def conv_zero_strides():
    w = numpy_helper.from_array(np.ones([1, 1, 3, 3], np.float32), "w")
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                                   strides=[0, 0])],
                 [vinfo("x", [1, 1, 8, 8])], [result("y", 4)], [w])


def maxpool_zero_strides():
    return model([helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                                   kernel_shape=[2, 2], strides=[0, 0])],
                 [vinfo("x", [1, 1, 8, 8])], [result("y", 4)])


def conv_negative_pads():
    w = numpy_helper.from_array(np.ones([1, 1, 3, 3], np.float32), "w")
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                                   pads=[-5, -5, -5, -5])],
                 [vinfo("x", [1, 1, 8, 8])], [result("y", 4)], [w])


def conv_transpose_weights_rank():
    # Found by fuzz-import: libonnx's ConvTranspose shape inference reads
    # the weights' dims by the input's rank.
    return model([helper.make_node("ConvTranspose", ["x", "w"], ["y"],
                                   name="deconv")],
                 [vinfo("x", [1, 1, 3]), vinfo("w", [2, 3])],
                 [result("y", 3)])


def conv_integer_weights_rank():
    # Found by fuzz-import (a mutated ConvInteger node test): the same read
    # in libonnx's shape inference, shared by all convolutions.
    return model([helper.make_node("ConvInteger", ["x", "w"], ["y"],
                                   name="conv")],
                 [vinfo("x", [1, 1, 3], TensorProto.UINT8),
                  vinfo("w", [1, 1, 2, 2], TensorProto.UINT8)],
                 [helper.make_tensor_value_info("y", TensorProto.INT32,
                                                ["a", "b", "c"])], opset=10)


def conv_kernel_larger_than_input():
    w = numpy_helper.from_array(np.ones([1, 1, 9, 9], np.float32), "w")
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [vinfo("x", [1, 1, 4, 4])], [result("y", 4)], [w])


def layernorm_huge_axis():
    scale = numpy_helper.from_array(np.ones([4], np.float32), "scale")
    return model([helper.make_node("LayerNormalization", ["x", "scale"],
                                   ["y"], name="norm", axis=INT64_MAX)],
                 [vinfo("x", [2, 4])], [result("y", 2)], [scale])


def layernorm_huge_axis_statistics():
    # Found by fuzz-import-model: with its Mean and InvStdDev outputs,
    # libonnx's shape inference reads dimensions up to the axis.
    scale = numpy_helper.from_array(np.ones([4], np.float32), "scale")
    return model([helper.make_node("LayerNormalization", ["x", "scale"],
                                   ["y", "mean", "inv"], name="norm",
                                   axis=6583377908120946873)],
                 [vinfo("x", [2, 4])],
                 [result("y", 2), result("mean", 2), result("inv", 2)],
                 [scale])


def softmax_huge_axis():
    return model([helper.make_node("Softmax", ["x"], ["y"], name="softmax",
                                   axis=-INT64_MAX)],
                 [vinfo("x", [2, 4])], [result("y", 2)])


def constant_of_shape_overflow():
    return model([helper.make_node("ConstantOfShape", ["shape"], ["c"],
                                   name="fill"),
                  helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                 [vinfo("x", [1])], [result("y", 2)],
                 [ints("shape", [2**32, 2**32])])


def constant_of_shape_huge():
    # 2^31 floats (8 GiB) that fit int64 easily: folding must refuse.
    return model([helper.make_node("ConstantOfShape", ["shape"], ["y"],
                                   name="fill")],
                 [], [result("y", 1)], [ints("shape", [2**31])])


def expand_huge():
    return model([helper.make_node("Expand", ["x", "shape"], ["y"],
                                   name="expand")],
                 [vinfo("x", [1])], [result("y", 2)],
                 [ints("shape", [1 << 20, 1 << 20])])


def tile_huge():
    one = numpy_helper.from_array(np.ones([1], np.float32), "one")
    return model([helper.make_node("Tile", ["one", "repeats"], ["t"],
                                   name="tile"),
                  helper.make_node("Add", ["x", "t"], ["y"], name="add")],
                 [vinfo("x", [1])], [result("y", 1)],
                 [one, ints("repeats", [3 << 30])])


def negative_dims():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-4],
                    raw_data=np.ones([4], np.float32).tobytes())
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)


def raw_data_short():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                    raw_data=np.ones([3], np.float32).tobytes())
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)


def raw_data_long():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4],
                    raw_data=np.ones([5], np.float32).tobytes())
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)


def huge_initializer_dims():
    # Dims claiming 2^62 elements over a 16-byte payload.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**31, 2**31],
                    raw_data=np.ones([4], np.float32).tobytes())
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)


def gather_index_out_of_range():
    data = numpy_helper.from_array(np.ones([4, 2], np.float32), "data")
    return model([helper.make_node("Gather", ["data", "indices"], ["g"],
                                   name="gather"),
                  helper.make_node("Add", ["x", "g"], ["y"], name="add")],
                 [vinfo("x", [2])], [result("y", 2)],
                 [data, ints("indices", [1000])])


def cycle():
    return model([helper.make_node("Relu", ["b"], ["a"], name="first"),
                  helper.make_node("Add", ["x", "a"], ["b"], name="second")],
                 [vinfo("x", [4])], [vinfo("b", [4])], check=False)


def cycle_ir10():
    # Newer than the ONNX library Kiln links: its checker is skipped, and
    # Kiln's importer finds the cycle itself.
    made = cycle()
    made.ir_version = 10
    return made


def unknown_opset():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vinfo("x", [4])], [vinfo("y", [4])], opset=99,
                 check=False)


def control_characters():
    # A node name made to rewrite the terminal and forge a line if echoed
    # raw; the op is valid, and one Kiln does not have.
    return model([helper.make_node("NonMaxSuppression", ["boxes", "scores"],
                                   ["y"], name="nms\x1b[2J\r\nforged: line")],
                 [vinfo("boxes", [1, 1, 4]), vinfo("scores", [1, 1, 1])],
                 [helper.make_tensor_value_info("y", TensorProto.INT64,
                                                ["n", 3])])


def negative_input_dim():
    # -1 is MLIR's marker of a dynamic size, and old exporters' unknown one.
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vinfo("x", [-1])], [vinfo("y", [4])])


def huge_input():
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vinfo("x", [1 << 20, 1 << 20])], [result("y", 2)])


def conv_transpose_computed_weights():
    # The weights' rank only shows after an Identity, where no check before
    # libonnx's shape inference sees it: libonnx crashes (SIGSEGV) in its
    # child process, and Kiln's importer refuses the node.
    w = numpy_helper.from_array(np.ones([2, 3], np.float32), "w")
    return model([helper.make_node("Identity", ["w"], ["w2"], name="copy"),
                  helper.make_node("ConvTranspose", ["x", "w2"], ["y"],
                                   name="deconv")],
                 [vinfo("x", [1, 1, 3])], [result("y", 3)], [w])


def mean_shapes_do_not_broadcast():
    # Found by fuzz-import: after the first pair failed to broadcast, the
    # importer read the missing sum (a stack-use-after-return).
    return model([helper.make_node("Mean", ["a", "b", "c"], ["y"],
                                   name="mean")],
                 [vinfo("a", [35]), vinfo("b", [3]), vinfo("c", [3])],
                 [result("y", 1)], opset=13)


def undefined_name():
    return model([helper.make_node("Add", ["x", "nowhere"], ["y"],
                                   name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])])


def unknown_domain():
    made = model([helper.make_node("Steal", ["x"], ["y"], name="steal",
                                   domain="com.example.evil")],
                 [vinfo("x", [4])], [vinfo("y", [4])])
    made.opset_import.append(helper.make_opsetid("com.example.evil", 1))
    return made


def nested_ifs(depth):
    """An If whose then-branch holds an If, `depth` levels deep."""
    out = vinfo("y", [1])
    leaf = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="leaf")], "leaf",
        [], [out])
    body = leaf
    for level in range(depth):
        node = helper.make_node("If", ["c"], ["y"], name=f"if{level}",
                                then_branch=body, else_branch=leaf)
        body = helper.make_graph([node], f"level{level}", [], [out])
    return model(list(body.node),
                 [vinfo("c", [], TensorProto.BOOL), vinfo("x", [1])], [out])


def relu_chain(length):
    names = ["x"] + [f"v{k}" for k in range(1, length)] + ["y"]
    return model([helper.make_node("Relu", [names[k]], [names[k + 1]],
                                   name=f"relu{k}") for k in range(length)],
                 [vinfo("x", [4])], [vinfo("y", [4])])


def folding_blowup():
    # Constants of 16 KiB broadcast to 64 MiB, 150 times over: 9.4 GiB to
    # compute at compile time if folding had no bounds (kiln-fold-constants
    # alone took 73 s on it), and, with only the 1 GiB budget, an artifact
    # of 1 GiB. Broadcasts past max-elements stay at run time, so the
    # artifact is small.
    one = numpy_helper.from_array(np.ones([1], np.float32), "one")
    column = numpy_helper.from_array(np.ones([4096, 1], np.float32), "a0")
    row = numpy_helper.from_array(np.ones([1, 4096], np.float32), "row")
    nodes, total = [], "x"
    for k in range(1, 151):
        nodes += [helper.make_node("Add", [f"a{k - 1}", "one"], [f"a{k}"],
                                   name=f"column{k}"),
                  helper.make_node("Add", [f"a{k}", "row"], [f"b{k}"],
                                   name=f"square{k}"),
                  helper.make_node("ReduceSum", [f"b{k}"], [f"r{k}"],
                                   name=f"sum{k}", keepdims=0),
                  helper.make_node("Add", [total, f"r{k}"],
                                   ["y" if k == 150 else f"t{k}"],
                                   name=f"total{k}")]
        total = f"t{k}"
    return model(nodes, [vinfo("x", [])], [vinfo("y", [])],
                 [one, column, row])


def fifo_model(folder):
    path = os.path.join(folder, "model.onnx")
    os.mkfifo(path)
    return path


def fifo_external_data(folder):
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    os.mkfifo(os.path.join(folder, "weights.bin"))
    made = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)
    return save(made, folder)


def external_data_nul(folder):
    # The system would open "weights.bin", not the file the model names.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", "weights.bin\0.other"
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.write(bytes(16))
    made = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                 [vinfo("x", [4])], [vinfo("y", [4])], [w], check=False)
    return save(made, folder)


def sparse_external_data(folder):
    # A sparse 8 GiB file the tensor takes with no length: 2^31 floats.
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**31])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.truncate(8 << 30)
    made = model([helper.make_node("ReduceSum", ["w"], ["y"], name="sum")],
                 [], [result("y", 1)], [w], check=False)
    return save(made, folder)


def save(made, folder):
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(made.SerializeToString())
    return path


def saved(build):
    return lambda folder: save(build(), folder)


# name: (writes the model into a folder and returns its path, the expected
# error after "kiln-compile: error: " or None where the model must compile,
# kiln-compile's flags beyond the output)
CASES = {
    "duplicate-output": (saved(duplicate_output),
                         r"graph output 'y' is listed twice"),
    "conv-zero-strides": (saved(conv_zero_strides),
                          r"node 'conv': Conv: attribute 'strides' holds 0; "
                          r"it must be positive"),
    "maxpool-zero-strides": (saved(maxpool_zero_strides),
                             r"node 'pool': MaxPool: attribute 'strides' "
                             r"holds 0"),
    "conv-negative-pads": (saved(conv_negative_pads),
                           r"node 'conv': .*pads non-negative"),
    "conv-transpose-weights-rank": (saved(conv_transpose_weights_rank),
                                    r"node 'deconv': ConvTranspose: the "
                                    r"weights have rank 2 and the input "
                                    r"rank 3"),
    "conv-integer-weights-rank": (saved(conv_integer_weights_rank),
                                  r"node 'conv': ConvInteger: the weights "
                                  r"have rank 4 and the input rank 3"),
    "conv-kernel-larger-than-input": (saved(conv_kernel_larger_than_input),
                                      r"node 'conv': .*filter is larger"),
    "layernorm-huge-axis": (saved(layernorm_huge_axis),
                            r"node 'norm': LayerNormalization: .*axis"),
    "layernorm-huge-axis-statistics": (
        saved(layernorm_huge_axis_statistics),
        r"node 'norm': LayerNormalization: attribute 'axis' holds "
        r"6583377908120946873, beyond the 64 dimensions"),
    "softmax-huge-axis": (saved(softmax_huge_axis),
                          r"node 'softmax': Softmax: .*axis"),
    "constant-of-shape-overflow": (saved(constant_of_shape_overflow),
                                   r"node 'fill': .*int64"),
    "constant-of-shape-huge": (saved(constant_of_shape_huge),
                               r"node 'fill': .*bytes a tensor may take"),
    "expand-huge": (saved(expand_huge),
                    r"node 'expand': .*bytes a tensor may take"),
    "tile-huge": (saved(tile_huge), r"node 'tile': .*bytes a tensor may take"),
    "negative-dims": (saved(negative_dims),
                      r"tensor 'w' has the negative dimension -4"),
    "negative-input-dim": (saved(negative_input_dim),
                           r"graph input 'x' dimension 0 has no size"),
    "huge-input": (saved(huge_input),
                   r"graph input 'x' .*bytes a tensor may take"),
    "raw-data-short": (saved(raw_data_short), r"tensor 'w' holds 12 bytes"),
    "raw-data-long": (saved(raw_data_long), r"tensor 'w' holds 20 bytes"),
    "huge-initializer-dims": (saved(huge_initializer_dims),
                              r"tensor 'w' has an invalid or oversized shape"),
    "gather-index-out-of-range": (saved(gather_index_out_of_range),
                                  r"node 'gather': Gather: .*1000"),
    "cycle": (saved(cycle), r"must be topologically sorted"),
    "cycle-ir10": (saved(cycle_ir10),
                   r"node 'first': value 'b' is not defined"),
    "unknown-opset": (saved(unknown_opset),
                      r"imports opset 99 of the ONNX operators"),
    "control-characters": (saved(control_characters),
                           r"node 'nms\\x1b\[2J\\r\\nforged: line': "
                           r"unsupported ONNX op 'NonMaxSuppression'"),
    "conv-transpose-computed-weights": (
        saved(conv_transpose_computed_weights),
        r"node 'deconv': ConvTranspose: the weights have rank 2 and the "
        r"input rank 3"),
    "mean-shapes-do-not-broadcast": (saved(mean_shapes_do_not_broadcast),
                                     r"node 'mean': operand shapes .* are not "
                                     r"broadcast-compatible"),
    "undefined-name": (saved(undefined_name), r"'nowhere'"),
    "unknown-domain": (saved(unknown_domain),
                       r"node 'steal': unsupported .*com.example.evil"),
    "deep-nesting": (saved(lambda: nested_ifs(40)),
                     r"nested 33 deep, past the limit of 32 "
                     r"\(--max-graph-depth\)"),
    "too-many-nodes": (saved(lambda: relu_chain(1001)),
                       r"more than 1000 nodes.*--max-graph-nodes",
                       ["--max-graph-nodes=1000"]),
    "compile-time-limit": (saved(lambda: relu_chain(30000)),
                           r"took longer than the 1 s "
                           r"--max-compile-seconds allows",
                           ["--max-compile-seconds=1"]),
    "folding-blowup": (saved(folding_blowup), None),
    "fifo-model": (fifo_model, r"model.onnx: .*not a regular file"),
    "fifo-external-data": (fifo_external_data,
                           r"weights.bin.*not a regular file"),
    "external-data-nul": (external_data_nul,
                          r"weights.bin\\x00.other' holds a NUL byte"),
    "sparse-external-data": (sparse_external_data,
                             r"initializer 'w': its shape needs more than "
                             r"the 4294967296 bytes"),
}


# Under AddressSanitizer (KILN_HOSTILE_SANITIZED set by the sanitizer
# build's ctest), which reserves terabytes of address space for its shadow
# memory, the cap is on the resident set instead, and the tools run slower.
SANITIZED = bool(os.environ.get("KILN_HOSTILE_SANITIZED"))
if SANITIZED:
    TIME_CAP *= 3
    os.environ["ASAN_OPTIONS"] = (f"hard_rss_limit_mb={MEMORY_CAP >> 20}:"
                                  + os.environ.get("ASAN_OPTIONS", ""))


def limit():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def check(bin_dir, work, name):
    make, expected, *flags = CASES[name]
    flags = flags[0] if flags else []
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    model_path = make(folder)
    out_dir = os.path.join(folder, "out")
    os.makedirs(out_dir)
    artifact = os.path.join(out_dir, "model.so")
    start = time.monotonic()
    try:
        run = subprocess.run(
            [os.path.join(bin_dir, "kiln-compile"), model_path, "-o",
             artifact] + flags, capture_output=True, timeout=TIME_CAP,
            preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return f"no answer within {TIME_CAP} s"
    seconds = time.monotonic() - start
    stderr = run.stderr.decode("utf-8", "replace")
    problems = []
    print(f"{name}: {seconds:.1f} s: {stderr.strip()[:300]!r}")
    if expected is None:
        if run.returncode != 0:
            problems.append(f"exit status {run.returncode}: {stderr[:300]}")
        if sorted(os.listdir(out_dir)) != ["model.so"]:
            problems.append("the output folder holds "
                            f"{sorted(os.listdir(out_dir))}")
        elif os.path.getsize(artifact) > ARTIFACT_CAP:
            problems.append(f"the artifact takes {os.path.getsize(artifact)} "
                            f"bytes, more than {ARTIFACT_CAP}")
        return "; ".join(problems)
    if run.returncode != 1:
        problems.append(f"exit status {run.returncode}")
    lines = stderr.splitlines()
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr")
    if any(ord(c) < 32 and c != "\n" or ord(c) == 127 for c in stderr):
        problems.append("control characters on stderr")
    prefix = "kiln-compile: error: "
    if not (lines and lines[0].startswith(prefix)
            and re.search(expected, lines[0])):
        problems.append(f"the error does not match /{expected}/")
    left = os.listdir(out_dir)
    if left:
        problems.append("left behind: " + ", ".join(sorted(left)))
    return "; ".join(problems)


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(CASES)
    os.makedirs(work, exist_ok=True)
    failures = {}
    for name in names:
        problem = check(bin_dir, work, name)
        if problem:
            failures[name] = problem
        else:
            shutil.rmtree(os.path.join(work, name), ignore_errors=True)
    for name, problem in failures.items():
        print(f"FAIL {name}: {problem}")
    print(f"{len(names) - len(failures)} of {len(names)} hostile models "
          "refused cleanly")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
