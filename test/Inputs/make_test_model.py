#!/usr/bin/python3
"""Writes small ONNX models for Kiln's importer and tool tests.

usage: make_test_model.py KIND OUTPUT_DIR

Each KIND writes OUTPUT_DIR/model.onnx (plus any external data files) built
with onnx.helper, so tests never depend on downloaded models.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out_dir, name="model.onnx"):
    os.makedirs(out_dir, exist_ok=True)
    onnx.save(model, os.path.join(out_dir, name))


def graph_model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "test", inputs, outputs,
                              initializer=list(initializers))
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])


def vinfo(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def external_weight_model(out_dir, location, data=None, offset=None,
                          length=None):
    """y = x + w, where w (4 floats) lives in an external file."""
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset),
                       ("length", length)):
        if value is not None:
            entry = weight.external_data.add()
            entry.key, entry.value = key, str(value)
    model = graph_model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add_weight")],
        [vinfo("x", TensorProto.FLOAT, [4])],
        [vinfo("y", TensorProto.FLOAT, [4])], [weight])
    save(model, out_dir)
    if data is not None:
        with open(os.path.join(out_dir, "weights.bin"), "wb") as f:
            f.write(data)


def write_test_data(out_dir, tensors):
    """Writes each (name, array) of `tensors` as out_dir/test_data_set_0/
    name.pb, ONNX's test-data layout."""
    folder = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(folder, exist_ok=True)
    for name, array in tensors:
        with open(os.path.join(folder, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())


# ONNX 1.16's 4-bit types, by number: older onnx packages lack the names.
UINT4, INT4 = 21, 22


def four_bit_tensor(name, values, data_type, as_int32_data=False):
    """A 4-bit initializer: values packed two per byte, low nibble first,
    in raw_data or one byte per int32_data entry."""
    nibbles = [int(v) & 0xF for v in values.flatten()] + [0]
    packed = [nibbles[i] | nibbles[i + 1] << 4
              for i in range(0, values.size, 2)]
    tensor = TensorProto(name=name, data_type=data_type, dims=values.shape)
    if as_int32_data:
        tensor.int32_data.extend(packed)
    else:
        tensor.raw_data = bytes(packed)
    return tensor


def opset21_quant_model(kind, out_dir):
    """y = x + DequantizeLinear(w) with opset 21's 4-bit weights in blocks
    of 2 rows of a [5, 2] matrix (the last block ragged), IR version 10;
    test_data_set_0 holds an input and the output numpy computes."""
    signed = kind != "dequantize-uint4-blocked"
    w = (np.arange(-5, 5) if signed else np.arange(3, 13)).reshape(5, 2)
    scale = np.array([[0.5, 0.25], [1.0, 2.0], [0.125, 4.0]], np.float32)
    zero_point = np.array([[0, 1], [-1, 2], [3, 0]]) if signed else \
        np.array([[8, 0], [15, 7], [1, 2]])
    data_type = INT4 if signed else UINT4
    weights = four_bit_tensor("w", w, data_type,
                              as_int32_data=not signed)
    if kind == "dequantize-int4-truncated":
        weights.raw_data = weights.raw_data[:2]
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(5, 2)
    block = np.arange(5) // 2
    y = x + (w - zero_point[block]) * scale[block]
    if kind == "dequantize-blocked-bad-scale":
        scale, zero_point = scale[:2], zero_point[:2]
    node = helper.make_node("DequantizeLinear", ["w", "scale", "zp"], ["wf"],
                            name="dequantize", axis=0, block_size=2)
    model = graph_model(
        [node, helper.make_node("Add", ["x", "wf"], ["y"], name="add")],
        [vinfo("x", TensorProto.FLOAT, [5, 2])],
        [vinfo("y", TensorProto.FLOAT, [5, 2])],
        [weights, numpy_helper.from_array(scale, "scale"),
         four_bit_tensor("zp", zero_point, data_type)], opset=21)
    model.ir_version = 10
    save(model, out_dir)
    write_test_data(out_dir, (("input_0", x),
                              ("output_0", y.astype(np.float32))))


def quantize_blocked_model(out_dir):
    """q = QuantizeLinear(x) to int8 with opset 21's blocks of 2 columns of
    a [3, 5] input (the last block ragged); test_data_set_0 holds numpy's
    q: round half to even, saturating to [-128, 127]."""
    scale = np.array([[0.5, 0.25, 4.0], [1.0, 0.1, 0.01], [2.0, 3.0, 0.5]],
                     np.float32)
    zero_point = np.array([[0, -3, 5], [1, 2, -128], [127, 0, -1]], np.int8)
    x = np.array([[0.25, 0.75, -1.0, 2.5, 1000.0],
                  [-2.5, 3.5, 0.35, -0.05, 1.005],
                  [1.0, -300.0, 4.5, 7.5, -0.25]], np.float32)
    block = np.arange(5) // 2
    q = np.clip(np.rint(x / scale[:, block]) + zero_point[:, block], -128, 127)
    model = graph_model(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"],
                          name="quantize", axis=1, block_size=2)],
        [vinfo("x", TensorProto.FLOAT, [3, 5])],
        [vinfo("q", TensorProto.INT8, [3, 5])],
        [numpy_helper.from_array(scale, "scale"),
         numpy_helper.from_array(zero_point, "zp")], opset=21)
    model.ir_version = 10
    save(model, out_dir)
    write_test_data(out_dir, (("input_0", x), ("output_0", q.astype(np.int8))))


def matmulnbits_one_row_model(out_dir):
    """y = MatMulNBits(x) for one row x [1, 64] (a decode step) by 4-bit
    weights [64, 40] in blocks of 32 with zero points, no accuracy_level
    (float activations); test_data_set_0 holds numpy's product with the
    weights dequantized as com.microsoft lays them out: column-major
    blocks, two values a byte, low nibble first."""
    rng = np.random.default_rng(5)
    k, n, block = 64, 40, 32
    blocks = k // block
    q = rng.integers(0, 16, (n, blocks, block))
    zero = rng.integers(0, 16, (n, blocks))
    scale = rng.uniform(0.01, 0.1, (n, blocks)).astype(np.float32)
    packed = (q[..., 0::2] | q[..., 1::2] << 4).astype(np.uint8)
    zero_packed = (zero[:, 0::2] | zero[:, 1::2] << 4).astype(np.uint8)
    weights = ((q - zero[..., None]) * scale[..., None].astype(np.float64))
    weights = weights.reshape(n, k).T
    x = rng.standard_normal((1, k)).astype(np.float32)
    y = (x.astype(np.float64) @ weights).astype(np.float32)
    model = graph_model(
        [helper.make_node("MatMulNBits", ["x", "w", "scales", "zeros"], ["y"],
                          name="int4", domain="com.microsoft", K=k, N=n,
                          bits=4, block_size=block)],
        [vinfo("x", TensorProto.FLOAT, [1, k])],
        [vinfo("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(packed, "w"),
         numpy_helper.from_array(scale.reshape(-1), "scales"),
         numpy_helper.from_array(zero_packed.reshape(-1), "zeros")])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    save(model, out_dir)
    write_test_data(out_dir, (("input_0", x), ("output_0", y)))


def sixteen_bit_quant_model(unsigned, out_dir):
    """Opset 21's 16-bit QDQ with 16-bit graph values: q = QuantizeLinear(x)
    per channel of axis 1 (saturating), and y = DequantizeLinear(r) of a
    16-bit input; test_data_set_0 holds the outputs numpy computes
    (rounding half to even)."""
    np_type, onnx_type = ((np.uint16, TensorProto.UINT16) if unsigned
                          else (np.int16, TensorProto.INT16))
    info = np.iinfo(np_type)
    scale = np.array([0.5, 0.001, 2.0], np.float32)
    zero_point = np.array([7, 300, -5 if not unsigned else 5], np_type)
    x = np.array([[1.25, 40.0, -1e6], [-3.75, -0.0015, 1e6],
                  [0.0, 12.3456, 3.0]], np.float32)
    r = np.array([[info.min, 0, info.max], [1, 2, 3], [1000, 301, 4]], np_type)
    q = np.clip(np.rint(x / scale) + zero_point.astype(np.float64),
                info.min, info.max).astype(np_type)
    y = ((r.astype(np.int64) - zero_point.astype(np.int64)) *
         scale).astype(np.float32)
    model = graph_model(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"],
                          name="quantize", axis=1),
         helper.make_node("DequantizeLinear", ["r", "scale", "zp"], ["y"],
                          name="dequantize", axis=1)],
        [vinfo("x", TensorProto.FLOAT, [3, 3]), vinfo("r", onnx_type, [3, 3])],
        [vinfo("q", onnx_type, [3, 3]), vinfo("y", TensorProto.FLOAT, [3, 3])],
        [numpy_helper.from_array(scale, "scale"),
         numpy_helper.from_array(zero_point, "zp")], opset=21)
    model.ir_version = 10
    save(model, out_dir)
    write_test_data(out_dir, (("input_0", x), ("input_1", r),
                              ("output_0", q), ("output_1", y)))


def timestep_embedding_model(out_dir):
    """A diffusion model's sinusoidal timestep embedding: for timesteps t
    [4], [cos(t f), sin(t f)] with f_i = 10000^(-i/128), i < 128; t up to
    999, so sin and cos take arguments far outside [-pi, pi]. The expected
    output is computed in float64."""
    frequencies = np.exp(-np.log(10000.0) * np.arange(128) / 128)
    nodes = [
        helper.make_node("Unsqueeze", ["t", "axis1"], ["column"]),
        helper.make_node("Mul", ["column", "frequencies"], ["arguments"]),
        helper.make_node("Cos", ["arguments"], ["cosines"]),
        helper.make_node("Sin", ["arguments"], ["sines"]),
        helper.make_node("Concat", ["cosines", "sines"], ["embedding"],
                         axis=1),
    ]
    initializers = [
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(frequencies.astype(np.float32)[None, :],
                                "frequencies"),
    ]
    save(graph_model(nodes, [vinfo("t", TensorProto.FLOAT, [4])],
                     [vinfo("embedding", TensorProto.FLOAT, [4, 256])],
                     initializers), out_dir)
    t = np.array([0, 1, 500, 999], np.float32)
    arguments = (t.astype(np.float64)[:, None] *
                 frequencies.astype(np.float32).astype(np.float64)[None, :])
    expected = np.concatenate([np.cos(arguments), np.sin(arguments)], axis=1)
    write_test_data(out_dir, [("t", t),
                              ("embedding", expected.astype(np.float32))])


def group_norm_model(spelling, out_dir):
    """y = GroupNormalization(x) with 4 groups of 2 channels, x [2, 8, 5, 5],
    spelled as opset 18's op (scale and bias per group), opset 21's (per
    channel), or as PyTorch's TorchScript exporter writes it (Reshape to
    [N, G, -1], InstanceNormalization with unit scale, Reshape back, Mul and
    Add per channel). The expected output is computed in float64."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 5, 5)).astype(np.float32) * 3 + 1
    groups, epsilon = 4, 1e-5
    per_group = spelling == "18"
    scale = rng.standard_normal(groups if per_group else 8).astype(np.float32)
    bias = rng.standard_normal(groups if per_group else 8).astype(np.float32)
    grouped = x.astype(np.float64).reshape(2, groups, -1)
    normalized = ((grouped - grouped.mean(-1, keepdims=True)) /
                  np.sqrt(grouped.var(-1, keepdims=True) + epsilon))
    channel_scale = np.repeat(scale, 2) if per_group else scale
    channel_bias = np.repeat(bias, 2) if per_group else bias
    expected = (normalized.reshape(x.shape) *
                channel_scale.astype(np.float64)[:, None, None] +
                channel_bias.astype(np.float64)[:, None, None])
    initializers = [numpy_helper.from_array(scale, "scale"),
                    numpy_helper.from_array(bias, "bias")]
    if spelling == "decomposed":
        nodes = [
            helper.make_node("Reshape", ["x", "grouped_shape"], ["grouped"]),
            helper.make_node("InstanceNormalization",
                             ["grouped", "unit", "zero"], ["normalized"],
                             epsilon=epsilon),
            helper.make_node("Reshape", ["normalized", "x_shape"], ["back"]),
            helper.make_node("Unsqueeze", ["scale", "spatial_axes"],
                             ["scale_column"]),
            helper.make_node("Unsqueeze", ["bias", "spatial_axes"],
                             ["bias_column"]),
            helper.make_node("Mul", ["back", "scale_column"], ["scaled"]),
            helper.make_node("Add", ["scaled", "bias_column"], ["y"]),
        ]
        initializers += [
            numpy_helper.from_array(np.array([2, groups, -1], np.int64),
                                    "grouped_shape"),
            numpy_helper.from_array(np.array(x.shape, np.int64), "x_shape"),
            numpy_helper.from_array(np.ones(groups, np.float32), "unit"),
            numpy_helper.from_array(np.zeros(groups, np.float32), "zero"),
            numpy_helper.from_array(np.array([1, 2], np.int64),
                                    "spatial_axes"),
        ]
        opset = 17
    else:
        nodes = [helper.make_node("GroupNormalization", ["x", "scale", "bias"],
                                  ["y"], num_groups=groups, epsilon=epsilon)]
        opset = int(spelling)
    save(graph_model(nodes, [vinfo("x", TensorProto.FLOAT, list(x.shape))],
                     [vinfo("y", TensorProto.FLOAT, list(x.shape))],
                     initializers, opset=opset), out_dir)
    write_test_data(out_dir, [("x", x), ("y", expected.astype(np.float32))])


def inference_forms_model(out_dir, training=False):
    """Training-time ops in their inference form, on a batch of symbolic
    size n: BatchNormalization, Dropout with its mask, Size, and
    SoftmaxCrossEntropyLoss (class weights, ignore_index, its log-prob
    output) over x [n, 3, 4] with labels [n, 4]. numpy evaluates ONNX's
    definitions in float64 for the expected outputs (n = 2). With
    `training`, BatchNormalization asks for training mode."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    labels = np.array([[0, 2, 1, -1], [2, -1, 0, 1]], np.int64)
    scale, bias = (np.array([1.5, -0.5, 2.0], np.float32),
                   np.array([0.1, 0.2, -0.3], np.float32))
    mean, var = (np.array([0.2, -0.1, 0.0], np.float32),
                 np.array([0.5, 2.0, 1.0], np.float32))
    weights = np.array([0.2, 0.3, 0.5], np.float32)
    epsilon = 1e-3
    x64 = x.astype(np.float64)
    bn = ((x64 - mean[:, None]) / np.sqrt(var[:, None] + epsilon) *
          scale[:, None] + bias[:, None])
    shifted = x64 - x64.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    counted = labels != -1
    safe = np.where(counted, labels, 0)
    picked = np.take_along_axis(log_prob, safe[:, None, :], axis=1)[:, 0]
    w = np.where(counted, weights[safe], 0)
    loss = (-picked * w).sum() / w.sum()
    initializers = [numpy_helper.from_array(a, name) for a, name in
                    [(scale, "scale"), (bias, "bias"), (mean, "mean"),
                     (var, "var"), (weights, "weights")]]
    bn_attrs = {"training_mode": 1} if training else {}
    nodes = [
        helper.make_node("BatchNormalization",
                         ["x", "scale", "bias", "mean", "var"], ["bn"],
                         name="bn", epsilon=epsilon, **bn_attrs),
        helper.make_node("Dropout", ["bn"], ["dropped", "mask"], name="drop"),
        helper.make_node("Size", ["x"], ["size"], name="size"),
        helper.make_node("SoftmaxCrossEntropyLoss",
                         ["x", "labels", "weights"], ["loss", "log_prob"],
                         name="sce", ignore_index=-1)]
    save(graph_model(
        nodes,
        [vinfo("x", TensorProto.FLOAT, ["n", 3, 4]),
         vinfo("labels", TensorProto.INT64, ["n", 4])],
        [vinfo("dropped", TensorProto.FLOAT, ["n", 3, 4]),
         vinfo("mask", TensorProto.BOOL, ["n", 3, 4]),
         vinfo("size", TensorProto.INT64, []),
         vinfo("loss", TensorProto.FLOAT, []),
         vinfo("log_prob", TensorProto.FLOAT, ["n", 3, 4])],
        initializers, opset=15), out_dir)
    write_test_data(out_dir, [
        ("x", x), ("labels", labels), ("dropped", bn.astype(np.float32)),
        ("mask", np.ones(x.shape, bool)), ("size", np.array(x.size, np.int64)),
        ("loss", np.array(loss, np.float32)),
        ("log_prob", log_prob.astype(np.float32))])


def lp_pool_model(out_dir):
    """LpPool (p = 2, 3x3 windows, stride 2, pads 1) and GlobalLpPool
    (p = 3) of x [1, 2, 5, 5]; numpy evaluates ONNX's definitions in
    float64 (padding adds nothing to a sum of powers)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    lp = np.zeros((1, 2, 3, 3))
    for i in range(3):
        for j in range(3):
            window = padded[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            lp[:, :, i, j] = np.sqrt((window ** 2).sum(axis=(2, 3)))
    global_lp = np.cbrt((np.abs(x.astype(np.float64)) ** 3).sum(
        axis=(2, 3), keepdims=True))
    nodes = [
        helper.make_node("LpPool", ["x"], ["lp"], name="lp",
                         kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], p=2),
        helper.make_node("GlobalLpPool", ["x"], ["global_lp"],
                         name="global_lp", p=3)]
    save(graph_model(
        nodes, [vinfo("x", TensorProto.FLOAT, [1, 2, 5, 5])],
        [vinfo("lp", TensorProto.FLOAT, [1, 2, 3, 3]),
         vinfo("global_lp", TensorProto.FLOAT, [1, 2, 1, 1])]), out_dir)
    write_test_data(out_dir, [
        ("x", x), ("lp", lp.astype(np.float32)),
        ("global_lp", global_lp.astype(np.float32))])


def max_pool_indices_model(out_dir):
    """MaxPool's Indices output on x [2, 3, 5, 5] (3x3 windows, strides 2,
    pads 1), row-major and with storage_order 1 (column-major images),
    against a numpy loop over ONNX's definition: the flat index into x of
    the first maximum of each window."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    save(graph_model(
        [helper.make_node("MaxPool", ["x"], ["y", "indices"], name="pool",
                          **attrs),
         helper.make_node("MaxPool", ["x"], ["y_cols", "indices_cols"],
                          name="pool_cols", storage_order=1, **attrs)],
        [vinfo("x", f32, [2, 3, 5, 5])],
        [vinfo("y", f32, [2, 3, 3, 3]), vinfo("indices", i64, [2, 3, 3, 3]),
         vinfo("y_cols", f32, [2, 3, 3, 3]),
         vinfo("indices_cols", i64, [2, 3, 3, 3])]), out_dir)
    x = np.random.default_rng(7).uniform(-1, 1, (2, 3, 5, 5)).astype(
        np.float32)
    y = np.zeros((2, 3, 3, 3), np.float32)
    rows = np.zeros((2, 3, 3, 3), np.int64)
    cols = np.zeros((2, 3, 3, 3), np.int64)
    for n, c, oh, ow in np.ndindex(y.shape):
        best = None
        for kh in range(3):
            for kw in range(3):
                h, w = oh * 2 - 1 + kh, ow * 2 - 1 + kw
                if 0 <= h < 5 and 0 <= w < 5 and (
                        best is None or x[n, c, h, w] > best[0]):
                    best = (x[n, c, h, w], h, w)
        y[n, c, oh, ow] = best[0]
        image = (n * 3 + c) * 25
        rows[n, c, oh, ow] = image + best[1] * 5 + best[2]
        cols[n, c, oh, ow] = image + best[2] * 5 + best[1]
    write_test_data(out_dir, [("x", x), ("y", y), ("indices", rows),
                              ("indices_cols", cols)])


def index_ops_model(out_dir):
    """Ops over element positions and rearrangements on a batch of symbolic
    size n: ArgMax (last index of ties), Trilu (upper, k = 1), Hardmax and
    Tile of x [n, 4, 5]; numpy gives the expected outputs (n = 2)."""
    x = np.array([[[3, 1, 3, 0, 2], [1, 1, 0, 0, 1], [5, 4, 3, 2, 1],
                   [0, 2, 2, 1, 0]],
                  [[-1, -2, -3, -4, -5], [2, 2, 2, 2, 2], [0, 9, 1, 9, 1],
                   [7, 0, 0, 0, 7]]], np.float32)
    columns, rows = np.arange(5)[None, :], np.arange(4)[:, None]
    first = x.argmax(axis=-1)
    last = 4 - x[..., ::-1].argmax(axis=-1)
    nodes = [
        helper.make_node("ArgMax", ["x"], ["argmax"], name="argmax", axis=2,
                         keepdims=0, select_last_index=1),
        helper.make_node("Trilu", ["x", "k"], ["upper"], name="trilu"),
        helper.make_node("Hardmax", ["x"], ["hardmax"], name="hardmax"),
        helper.make_node("Tile", ["x", "repeats"], ["tiled"], name="tile")]
    initializers = [numpy_helper.from_array(np.array(1, np.int64), "k"),
                    numpy_helper.from_array(np.array([1, 2, 1], np.int64),
                                            "repeats")]
    save(graph_model(
        nodes, [vinfo("x", TensorProto.FLOAT, ["n", 4, 5])],
        [vinfo("argmax", TensorProto.INT64, ["n", 4]),
         vinfo("upper", TensorProto.FLOAT, ["n", 4, 5]),
         vinfo("hardmax", TensorProto.FLOAT, ["n", 4, 5]),
         vinfo("tiled", TensorProto.FLOAT, ["n", 8, 5])], initializers),
        out_dir)
    write_test_data(out_dir, [
        ("x", x), ("argmax", last.astype(np.int64)),
        ("upper", np.where(columns - rows >= 1, x, 0).astype(np.float32)),
        ("hardmax", (np.arange(5) == first[..., None]).astype(np.float32)),
        ("tiled", np.tile(x, (1, 2, 1)))])


def wide_types_model(out_dir):
    """float64, uint32 and uint64 computed as such: CumSum of float64 values
    whose sum float32 would round, uint32 Sub that wraps, uint64 Max, Div
    and Less on values above 2^63 (where signed arithmetic would give other
    answers), and BitShift of uint8 both ways; numpy gives the expected
    outputs."""
    x = np.array([[1e8, 1.0, 1e-8], [0.1, 0.2, 0.3]], np.float64)
    a32 = np.array([5, 0, 4000000000], np.uint32)
    b32 = np.array([7, 1, 3], np.uint32)
    big = np.array([2 ** 63 + 5, 7, 2 ** 64 - 1], np.uint64)
    small = np.array([3, 2 ** 63, 2 ** 62], np.uint64)
    bits = np.array([1, 16, 255], np.uint8)
    shift = np.array([3, 1, 9], np.uint8)
    nodes = [
        helper.make_node("CumSum", ["x", "axis"], ["running"], name="cumsum",
                         exclusive=1),
        helper.make_node("Sub", ["a32", "b32"], ["wrapped"], name="sub32"),
        helper.make_node("Max", ["big", "small"], ["larger"], name="max64"),
        helper.make_node("Div", ["big", "small"], ["quotient"], name="div64"),
        helper.make_node("Less", ["big", "small"], ["less"], name="less64"),
        helper.make_node("BitShift", ["bits", "shift"], ["left"], name="shl",
                         direction="LEFT"),
        helper.make_node("BitShift", ["bits", "shift"], ["right"], name="shr",
                         direction="RIGHT")]
    inputs = [("x", x, TensorProto.DOUBLE), ("a32", a32, TensorProto.UINT32),
              ("b32", b32, TensorProto.UINT32),
              ("big", big, TensorProto.UINT64),
              ("small", small, TensorProto.UINT64),
              ("bits", bits, TensorProto.UINT8),
              ("shift", shift, TensorProto.UINT8)]
    running = np.cumsum(x, axis=1) - x
    with np.errstate(over="ignore"):
        wrapped = a32 - b32
    left = (bits.astype(np.uint32) << shift).astype(np.uint8)
    left[shift >= 8] = 0
    right = bits >> np.minimum(shift, 8)
    outputs = [("running", running, TensorProto.DOUBLE),
               ("wrapped", wrapped, TensorProto.UINT32),
               ("larger", np.maximum(big, small), TensorProto.UINT64),
               ("quotient", big // small, TensorProto.UINT64),
               ("less", big < small, TensorProto.BOOL),
               ("left", left, TensorProto.UINT8),
               ("right", right.astype(np.uint8), TensorProto.UINT8)]
    save(graph_model(
        nodes,
        [vinfo(name, dtype, list(value.shape)) for name, value, dtype in inputs],
        [vinfo(name, dtype, list(value.shape))
         for name, value, dtype in outputs],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")]), out_dir)
    write_test_data(out_dir, [(name, value) for name, value, _ in inputs] +
                    [(name, value) for name, value, _ in outputs])


def scatter_model(out_dir):
    """ScatterElements (add, with two updates landing on one element),
    ScatterND (whole rows, a negative index) and GatherND (batch_dims 1);
    numpy gives the expected outputs. A second data set has an index out
    of range."""
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    indices = np.array([[1, 1], [0, 3], [-1, 2]], np.int64)
    updates = np.array([[10, 20], [30, 40], [50, 60]], np.float32)
    rows = np.array([[2], [-3]], np.int64)
    row_updates = np.array([[-1, -2, -3, -4], [-5, -6, -7, -8]], np.float32)
    pick = np.array([[[1], [0]], [[3], [3]], [[2], [0]]], np.int64)
    added = data.copy()
    for i in range(3):
        for j in range(2):
            added[i, indices[i, j]] += updates[i, j]
    replaced = data.copy()
    replaced[2], replaced[0] = row_updates[0], row_updates[1]
    gathered = np.stack([data[b, pick[b, :, 0]] for b in range(3)])
    nodes = [
        helper.make_node("ScatterElements", ["data", "indices", "updates"],
                         ["added"], name="scatter_add", axis=1,
                         reduction="add"),
        helper.make_node("ScatterND", ["data", "rows", "row_updates"],
                         ["replaced"], name="scatter_rows"),
        helper.make_node("GatherND", ["data", "pick"], ["gathered"],
                         name="gather_nd", batch_dims=1)]
    save(graph_model(
        nodes,
        [vinfo("data", TensorProto.FLOAT, [3, 4]),
         vinfo("indices", TensorProto.INT64, [3, 2]),
         vinfo("rows", TensorProto.INT64, [2, 1]),
         vinfo("pick", TensorProto.INT64, [3, 2, 1])],
        [vinfo("added", TensorProto.FLOAT, [3, 4]),
         vinfo("replaced", TensorProto.FLOAT, [3, 4]),
         vinfo("gathered", TensorProto.FLOAT, [3, 2])],
        [numpy_helper.from_array(updates, "updates"),
         numpy_helper.from_array(row_updates, "row_updates")]),
        out_dir)
    write_test_data(out_dir, [
        ("data", data), ("indices", indices), ("rows", rows), ("pick", pick),
        ("added", added), ("replaced", replaced), ("gathered", gathered)])
    bad = indices.copy()
    bad[1, 0] = 4
    with open(os.path.join(out_dir, "bad_indices.pb"), "wb") as f:
        f.write(numpy_helper.from_array(bad, "indices").SerializeToString())


def attention_op_model(out_dir):
    """ONNX's Attention op (opset 23) with grouped key/value heads (4 query
    heads over 2), a past cache of 2 positions, a causal mask aligned after
    the cache, a boolean mask covering fewer keys than there are (the rest
    masked), and softcap; numpy evaluates ONNX's definition in float64."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 4, 3, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    past_k = rng.standard_normal((1, 2, 2, 8)).astype(np.float32)
    past_v = rng.standard_normal((1, 2, 2, 8)).astype(np.float32)
    mask = np.array([[True, False, True, True], [True, True, True, True],
                     [False, True, True, True]])
    present_k = np.concatenate([past_k, k], axis=2)
    present_v = np.concatenate([past_v, v], axis=2)
    keys = np.repeat(present_k, 2, axis=1).astype(np.float64)
    values = np.repeat(present_v, 2, axis=1).astype(np.float64)
    softcap = 2.0
    scores = q.astype(np.float64) @ keys.transpose(0, 1, 3, 2) / np.sqrt(8)
    scores = softcap * np.tanh(scores / softcap)
    allowed = np.pad(mask, ((0, 0), (0, 1)), constant_values=False)
    allowed &= np.arange(5)[None, :] <= np.arange(3)[:, None] + 2
    scores = np.where(allowed, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    y = (weights @ values).astype(np.float32)
    node = helper.make_node(
        "Attention", ["q", "k", "v", "mask", "past_k", "past_v"],
        ["y", "present_k", "present_v"], name="attention", is_causal=1,
        softcap=softcap)
    save(graph_model(
        [node],
        [vinfo("q", TensorProto.FLOAT, [1, 4, 3, 8]),
         vinfo("k", TensorProto.FLOAT, [1, 2, 3, 8]),
         vinfo("v", TensorProto.FLOAT, [1, 2, 3, 8]),
         vinfo("mask", TensorProto.BOOL, [3, 4]),
         vinfo("past_k", TensorProto.FLOAT, [1, 2, 2, 8]),
         vinfo("past_v", TensorProto.FLOAT, [1, 2, 2, 8])],
        [vinfo("y", TensorProto.FLOAT, [1, 4, 3, 8]),
         vinfo("present_k", TensorProto.FLOAT, [1, 2, 5, 8]),
         vinfo("present_v", TensorProto.FLOAT, [1, 2, 5, 8])], opset=23),
        out_dir)
    write_test_data(out_dir, [
        ("q", q), ("k", k), ("v", v), ("mask", mask), ("past_k", past_k),
        ("past_v", past_v), ("y", y), ("present_k", present_k),
        ("present_v", present_v)])


def rotary_model(out_dir):
    """RotaryEmbedding (opset 23) on [batch, heads, sequence, head] input:
    interleaved pairs, 6 of 8 channels turned, angles gathered at position
    ids; numpy turns each pair (x[2i], x[2i+1]) by its angle."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    angles = rng.uniform(0, np.pi, (10, 3))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    positions = np.array([[4, 0, 9]], np.int64)
    y = x.astype(np.float64).copy()
    for s_ in range(3):
        for i in range(3):
            c = np.float64(cos[positions[0, s_], i])
            n = np.float64(sin[positions[0, s_], i])
            a, b = x[0, :, s_, 2 * i].astype(np.float64), x[0, :, s_, 2 * i + 1]
            y[0, :, s_, 2 * i] = c * a - n * b
            y[0, :, s_, 2 * i + 1] = n * a + c * b
    save(graph_model(
        [helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "positions"],
                          ["y"], name="rotary", interleaved=1,
                          rotary_embedding_dim=6)],
        [vinfo("x", TensorProto.FLOAT, [1, 2, 3, 8]),
         vinfo("positions", TensorProto.INT64, [1, 3])],
        [vinfo("y", TensorProto.FLOAT, [1, 2, 3, 8])],
        [numpy_helper.from_array(cos, "cos"),
         numpy_helper.from_array(sin, "sin")], opset=23), out_dir)
    write_test_data(out_dir, [("x", x), ("positions", positions),
                              ("y", y.astype(np.float32))])


def more_ops_model(out_dir):
    """Einsum (a batched contraction, and a diagonal summed), TopK (ties
    keep the lower position first), Compress along an axis, LRN over 3
    channels, ReverseSequence, BitwiseAnd of int32 and signed BitShift
    right, and Gelu's tanh form, at opset 20; numpy gives the expected
    outputs."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    square = rng.standard_normal((3, 3)).astype(np.float32)
    scores = np.array([[1, 5, 3, 5], [2, 2, 0, 7]], np.float32)
    images = rng.standard_normal((1, 4, 2, 2)).astype(np.float32)
    sequences = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    lengths = np.array([2, 3], np.int64)
    bits = np.array([12, -7, 255], np.int32)
    mask = np.array([10, 6, -1], np.int32)
    top_index = np.array([[1, 3], [3, 0]], np.int64)
    padded = np.pad(images ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    window = sum(padded[:, o:o + 4] for o in range(3))
    lrn = images / (1.0 + 1e-4 / 3 * window) ** 0.75
    reversed_ = sequences.copy()
    for batch, length in enumerate(lengths):
        reversed_[:length, batch] = sequences[:length, batch][::-1]
    inner = np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)
    nodes = [
        helper.make_node("Einsum", ["a", "b"], ["contracted"], name="bmm",
                         equation="bij,bjk->bik"),
        helper.make_node("Einsum", ["square"], ["trace"], name="trace",
                         equation="ii"),
        helper.make_node("TopK", ["scores", "k"], ["top", "top_index"],
                         name="topk"),
        helper.make_node("Compress", ["scores", "keep"], ["kept"],
                         name="compress", axis=1),
        helper.make_node("LRN", ["images"], ["lrn"], name="lrn", size=3),
        helper.make_node("ReverseSequence", ["sequences", "lengths"],
                         ["reversed"], name="reverse", batch_axis=1,
                         time_axis=0),
        helper.make_node("BitwiseAnd", ["bits", "mask"], ["anded"],
                         name="and"),
        helper.make_node("BitShift", ["bits", "two"], ["shifted"],
                         name="shift", direction="RIGHT"),
        helper.make_node("Gelu", ["a"], ["gelu"], name="gelu",
                         approximate="tanh")]
    inputs = [("a", a), ("b", b), ("square", square), ("scores", scores),
              ("images", images), ("sequences", sequences),
              ("lengths", lengths), ("bits", bits), ("mask", mask)]
    outputs = [("contracted", (a.astype(np.float64) @ b).astype(np.float32)),
               ("trace", np.float32(np.trace(square.astype(np.float64)))),
               ("top", np.take_along_axis(scores, top_index, axis=1)),
               ("top_index", top_index),
               ("kept", scores[:, [0, 2]]),
               ("lrn", lrn.astype(np.float32)), ("reversed", reversed_),
               ("anded", bits & mask), ("shifted", bits >> 2),
               ("gelu", (0.5 * a * (1 + np.tanh(inner))).astype(np.float32))]
    types = {np.dtype(np.float32): TensorProto.FLOAT,
             np.dtype(np.int64): TensorProto.INT64,
             np.dtype(np.int32): TensorProto.INT32}
    save(graph_model(
        nodes,
        [vinfo(name, types[v.dtype], list(v.shape)) for name, v in inputs],
        [vinfo(name, types[np.asarray(v).dtype], list(np.shape(v)))
         for name, v in outputs],
        [numpy_helper.from_array(np.array([2], np.int64), "k"),
         numpy_helper.from_array(np.array([True, False, True]), "keep"),
         numpy_helper.from_array(np.array(2, np.int32), "two")], opset=20),
        out_dir)
    write_test_data(out_dir, inputs + [(name, np.asarray(v))
                                       for name, v in outputs])


def splat_size_input_model(out_dir):
    """SplatRender (domain ai.kiln) of 2 Gaussians given as graph inputs,
    its image at most 32x48 and sized by the graph input image_size, then
    scaled by 2."""
    f32 = TensorProto.FLOAT
    render = helper.make_node(
        "SplatRender", ["positions", "log_scales", "rotations",
                        "opacity_logits", "sh", "view", "intrinsics",
                        "background", "image_size"], ["image"],
        name="render", domain="ai.kiln", width=48, height=32)
    graph = helper.make_graph(
        [render, helper.make_node("Mul", ["image", "two"], ["scaled"])],
        "test",
        [vinfo("positions", f32, [2, 3]), vinfo("log_scales", f32, [2, 3]),
         vinfo("rotations", f32, [2, 4]), vinfo("opacity_logits", f32, [2]),
         vinfo("sh", f32, [2, 1, 3]), vinfo("view", f32, [4, 4]),
         vinfo("intrinsics", f32, [4]), vinfo("background", f32, [3]),
         vinfo("image_size", TensorProto.INT64, [2])],
        [vinfo("scaled", f32, ["height", "width", 3])],
        initializer=[numpy_helper.from_array(np.float32(2), "two")])
    save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("ai.kiln", 1)]),
        out_dir)


def newer_ops_model(out_dir):
    """Ops newer than Debian's onnx package knows, at opset 24:
    RMSNormalization over the last axis, Swish (alpha 0.5), and Mod in both
    of its forms on int64 (Python's sign of the divisor, and C's fmod),
    including a remainder by zero (0, as numpy gives). numpy evaluates the
    definitions in float64."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    scale = rng.standard_normal(6).astype(np.float32)
    a = np.array([7, -7, 7, -7, 5, 0], np.int64)
    b = np.array([3, 3, -3, -3, 0, 4], np.int64)
    x64 = x.astype(np.float64)
    rms = np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-5)
    with np.errstate(divide="ignore"):
        python_mod = np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b)))
        c_fmod = np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b)))
    nodes = [
        helper.make_node("RMSNormalization", ["x", "scale"], ["rms_norm"],
                         name="rms"),
        helper.make_node("Swish", ["x"], ["swish"], name="swish", alpha=0.5),
        helper.make_node("Mod", ["a", "b"], ["mod"], name="mod"),
        helper.make_node("Mod", ["a", "b"], ["fmod"], name="fmod", fmod=1)]
    save(graph_model(
        nodes,
        [vinfo("x", TensorProto.FLOAT, [2, 6]),
         vinfo("a", TensorProto.INT64, [6]), vinfo("b", TensorProto.INT64, [6])],
        [vinfo("rms_norm", TensorProto.FLOAT, [2, 6]),
         vinfo("swish", TensorProto.FLOAT, [2, 6]),
         vinfo("mod", TensorProto.INT64, [6]),
         vinfo("fmod", TensorProto.INT64, [6])],
        [numpy_helper.from_array(scale, "scale")], opset=24), out_dir)
    write_test_data(out_dir, [
        ("x", x), ("a", a), ("b", b),
        ("rms_norm", (x64 / rms * scale).astype(np.float32)),
        ("swish", (x64 / (1 + np.exp(-0.5 * x64))).astype(np.float32)),
        ("mod", python_mod.astype(np.int64)), ("fmod", c_fmod.astype(np.int64))])


def conv_transpose_model(out_dir):
    """ConvTranspose with 2 groups, stride 2, pads 3 (more than the kernel's
    margin of 2, so the result is cropped), output_padding 1 and a bias, of
    x [1, 4, 5, 5] by w [4, 3, 3, 3]; PyTorch's conv_transpose2d gives the
    expected output."""
    import torch
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    y = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x).double(), torch.from_numpy(w).double(),
        torch.from_numpy(bias).double(), stride=2, padding=3,
        output_padding=1, groups=2).numpy().astype(np.float32)
    save(graph_model(
        [helper.make_node("ConvTranspose", ["x", "w", "bias"], ["y"],
                          name="up", group=2, strides=[2, 2],
                          pads=[3, 3, 3, 3], output_padding=[1, 1])],
        [vinfo("x", TensorProto.FLOAT, list(x.shape))],
        [vinfo("y", TensorProto.FLOAT, list(y.shape))],
        [numpy_helper.from_array(w, "w"),
         numpy_helper.from_array(bias, "bias")]), out_dir)
    write_test_data(out_dir, [("x", x), ("y", y)])


def pad_model(out_dir):
    """Pad of x [2, 3] in three modes, with pads numpy's np.pad checks:
    reflect by more than the axis holds (3 > 1, so the reflection repeats)
    after cropping one column (a negative pad; ONNX Runtime crops first,
    and np.pad takes no negative pads), wrap along both axes (by less than
    each holds, where np.pad's wrap is periodic), and
    constant padding with a fill value given as an input."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    nodes = [
        helper.make_node("Pad", ["x", "crop_pads"], ["reflected"],
                         name="reflect", mode="reflect"),
        helper.make_node("Pad", ["x", "wrap_pads"], ["wrapped"], name="wrap",
                         mode="wrap"),
        helper.make_node("Pad", ["x", "wrap_pads", "fill"], ["filled"],
                         name="constant")]
    initializers = [
        numpy_helper.from_array(np.array([0, 3, 0, -1], np.int64), "crop_pads"),
        numpy_helper.from_array(np.array([1, 2, 1, 1], np.int64), "wrap_pads")]
    save(graph_model(
        nodes, [vinfo("x", TensorProto.FLOAT, [2, 3]),
                vinfo("fill", TensorProto.FLOAT, [])],
        [vinfo("reflected", TensorProto.FLOAT, [2, 5]),
         vinfo("wrapped", TensorProto.FLOAT, [4, 6]),
         vinfo("filled", TensorProto.FLOAT, [4, 6])], initializers, opset=19),
        out_dir)
    write_test_data(out_dir, [
        ("x", x), ("fill", np.array(-1, np.float32)),
        ("reflected", np.pad(x[:, :-1], ((0, 0), (3, 0)), mode="reflect")),
        ("wrapped", np.pad(x, ((1, 1), (2, 1)), mode="wrap")),
        ("filled", np.pad(x, ((1, 1), (2, 1)), constant_values=-1))])


def narrow_types_model(out_dir):
    """Elementwise ops on types Kiln computes in wider ones: uint8 Add that
    wraps, with a constant uint8 operand above 127 (read unsigned, not
    folded as signed), uint16 Max above 32767, int8 Div, float16 Exp;
    numpy computes in the narrow types."""
    a = np.array([200, 100, 3, 255], np.uint8)
    u = np.array([40000, 2, 65535, 7], np.uint16)
    v = np.array([1, 50000, 3, 8], np.uint16)
    i = np.array([-128, 100, -7, 9], np.int8)
    j = np.array([3, -7, 2, -2], np.int8)
    h = np.array([0.5, -1.25, 2.0, 0.0], np.float16)
    c = np.array([100, 200, 255, 1], np.uint8)
    nodes = [helper.make_node("Add", ["a", "c"], ["sum"], name="add"),
             helper.make_node("Max", ["u", "v"], ["max"], name="max"),
             helper.make_node("Div", ["i", "j"], ["quotient"], name="div"),
             helper.make_node("Exp", ["h"], ["exp"], name="exp")]
    save(graph_model(
        nodes,
        [vinfo("a", TensorProto.UINT8, [4]), vinfo("u", TensorProto.UINT16, [4]),
         vinfo("v", TensorProto.UINT16, [4]), vinfo("i", TensorProto.INT8, [4]),
         vinfo("j", TensorProto.INT8, [4]), vinfo("h", TensorProto.FLOAT16, [4])],
        [vinfo("sum", TensorProto.UINT8, [4]), vinfo("max", TensorProto.UINT16, [4]),
         vinfo("quotient", TensorProto.INT8, [4]),
         vinfo("exp", TensorProto.FLOAT16, [4])],
        [numpy_helper.from_array(c, "c")]), out_dir)
    # C's integer division truncates toward zero, as ONNX's Div does.
    quotient = (np.trunc(i.astype(np.float64) / j)).astype(np.int64)
    write_test_data(out_dir, [
        ("a", a), ("u", u), ("v", v), ("i", i), ("j", j), ("h", h),
        ("sum", a + c), ("max", np.maximum(u, v)),
        ("quotient", quotient.astype(np.int8)),
        ("exp", np.exp(h.astype(np.float32)).astype(np.float16))])


def exporter_idioms_model(out_dir):
    """Idioms of real exporters, on x [-1, 3, 4] (Paddle writes an unknown
    size as -1):
    - Paddle's shape math in int32: Shape -> Cast(int32) -> Slice ->
      Cast(int64) -> Concat -> Reshape to [N, 12];
    - PyTorch's pad idiom: pads [1, 2] for the last axis turned into ONNX's
      order by a Slice with step -1 over constants, then Pad;
    - a Slice with step -2 over data, backwards from the end."""
    i64 = TensorProto.INT64

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, np.int64), name)

    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Cast", ["shape"], ["shape32"], to=TensorProto.INT32),
        helper.make_node("Slice", ["shape32", "zero", "one"], ["batch32"]),
        helper.make_node("Cast", ["batch32"], ["batch"], to=i64),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"],
                         axis=0),
        helper.make_node("Reshape", ["x", "flat_shape"], ["flat"]),
        helper.make_node("ConstantOfShape", ["two"], ["zeros"],
                         value=ints("v", [0])),
        helper.make_node("Concat", ["torch_pads", "zeros"], ["pads4"],
                         axis=0),
        helper.make_node("Reshape", ["pads4", "pairs"], ["pad_pairs"]),
        helper.make_node("Slice", ["pad_pairs", "minus_one", "far_below",
                                   "zero", "minus_one"], ["flipped"]),
        helper.make_node("Transpose", ["flipped"], ["turned"], perm=[1, 0]),
        helper.make_node("Reshape", ["turned", "minus_one"], ["pads"]),
        helper.make_node("Pad", ["flat", "pads"], ["padded"],
                         name="torch_pad"),
        helper.make_node("Slice", ["flat", "minus_one", "far_below", "one",
                                   "minus_two"], ["backwards"],
                         name="backwards"),
    ]
    initializers = [
        ints("zero", [0]), ints("one", [1]), ints("two", [2]),
        ints("minus_one", [-1]), ints("minus_two", [-2]),
        ints("far_below", [-(2**63) + 1]), ints("torch_pads", [1, 2]),
        ints("pairs", [-1, 2])]
    save(graph_model(
        nodes, [vinfo("x", TensorProto.FLOAT, [-1, 3, 4])],
        [vinfo("padded", TensorProto.FLOAT, [-1, 15]),
         vinfo("backwards", TensorProto.FLOAT, [-1, 6])], initializers),
        out_dir)
    x = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    flat = x.reshape(2, 12)
    write_test_data(out_dir, [
        ("x", x), ("padded", np.pad(flat, ((0, 0), (1, 2)))),
        ("backwards", flat[:, ::-2].copy())])


def control_flow_model(out_dir, runtime_trip_count=False):
    """If, Loop and Scan on x [3, 4] and a boolean input `flag`:
    - y = If(flag) then x * 2 else x - 1, both branches reading x from the
      enclosing graph (the condition is known only at run time);
    - a Loop of 3 iterations carrying v = v * 0.5 + x[i] and stacking each
      i * v (with runtime_trip_count, the trip count is an input instead);
    - a reverse Scan over x's rows carrying a running sum and stacking the
      sums along axis 1."""
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["doubled"])], "then", [],
        [vinfo("doubled", f32, [3, 4])])
    else_branch = helper.make_graph(
        [helper.make_node("Sub", ["x", "one"], ["lowered"])], "else", [],
        [vinfo("lowered", f32, [3, 4])])
    loop_body = helper.make_graph([
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Unsqueeze", ["i", "axis0"], ["i1"]),
        helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
        helper.make_node("Mul", ["v_in", "half"], ["halved"]),
        helper.make_node("Add", ["halved", "row"], ["v_out"]),
        helper.make_node("Cast", ["i", ], ["i_float"], to=f32),
        helper.make_node("Mul", ["v_out", "i_float"], ["scaled"]),
    ], "loop_body", [vinfo("i", i64, []), vinfo("cond_in", TensorProto.BOOL, []),
                     vinfo("v_in", f32, [4])],
        [vinfo("cond_out", TensorProto.BOOL, []), vinfo("v_out", f32, [4]),
         vinfo("scaled", f32, [4])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "x_row"], ["sum_out"]),
         helper.make_node("Identity", ["sum_out"], ["sum_copy"])],
        "scan_body", [vinfo("sum_in", f32, [4]), vinfo("x_row", f32, [4])],
        [vinfo("sum_out", f32, [4]), vinfo("sum_copy", f32, [4])])
    nodes = [
        helper.make_node("If", ["flag"], ["y"], name="choose",
                         then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Loop", ["trips", "yes", "v0"], ["v", "steps"],
                         name="accumulate", body=loop_body),
        helper.make_node("Scan", ["v0", "x"], ["total", "sums"],
                         name="running_sum", body=scan_body,
                         num_scan_inputs=1, scan_input_directions=[1],
                         scan_output_axes=[1]),
    ]
    initializers = [
        numpy_helper.from_array(np.array(2, np.float32), "two"),
        numpy_helper.from_array(np.array(1, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array(True), "yes"),
        numpy_helper.from_array(np.zeros(4, np.float32), "v0")]
    inputs = [vinfo("x", f32, [3, 4]), vinfo("flag", TensorProto.BOOL, [])]
    if runtime_trip_count:
        inputs.append(vinfo("trips", i64, []))
    else:
        initializers.append(
            numpy_helper.from_array(np.array(3, np.int64), "trips"))
    save(graph_model(
        nodes, inputs,
        [vinfo("y", f32, [3, 4]), vinfo("v", f32, [4]),
         vinfo("steps", f32, [3, 4]), vinfo("total", f32, [4]),
         vinfo("sums", f32, [4, 3])], initializers), out_dir)
    x = np.random.default_rng(5).uniform(-1, 1, (3, 4)).astype(np.float32)
    v, steps = np.zeros(4, np.float32), []
    for i in range(3):
        v = v * np.float32(0.5) + x[i]
        steps.append(v * np.float32(i))
    sums, total = [], np.zeros(4, np.float32)
    for row in x[::-1]:
        total = total + row
        sums.append(total)
    write_test_data(out_dir, [
        ("x", x), ("flag_true", np.array(True)),
        ("flag_false", np.array(False)), ("y_true", x * 2),
        ("y_false", x - 1), ("v", v), ("steps", np.stack(steps)),
        ("total", total), ("sums", np.stack(sums, axis=1))])


def tfidf_model(out_dir):
    """TfIdfVectorizer in IDF and TFIDF modes with weights (ONNX's test data
    covers TF only) on int32 tokens [2, 7], unigrams and bigrams up to
    two tokens apart, against a direct count of the definition: unigrams
    at each position, bigrams (x[s], x[s + k]) for k = 1..3."""
    unigrams, bigrams = [2, 3, 5], [(5, 6), (7, 8), (6, 7)]
    pool = unigrams + [t for pair in bigrams for t in pair]
    indexes = [4, 0, 2, 1, 3, 5]
    weights = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0]
    common = dict(min_gram_length=1, max_gram_length=2, max_skip_count=2,
                  ngram_counts=[0, 3], ngram_indexes=indexes,
                  pool_int64s=pool, weights=weights)
    nodes = [helper.make_node("TfIdfVectorizer", ["x"], [mode.lower()],
                              name=mode.lower(), mode=mode, **common)
             for mode in ("IDF", "TFIDF")]
    save(graph_model(nodes, [vinfo("x", TensorProto.INT32, [2, 7])],
                     [vinfo("idf", TensorProto.FLOAT, [2, 6]),
                      vinfo("tfidf", TensorProto.FLOAT, [2, 6])]), out_dir)
    x = np.array([[2, 5, 6, 7, 8, 5, 2], [3, 3, 9, 5, 1, 6, 6]], np.int32)
    counts = np.zeros((2, 6), np.float32)
    for b, row in enumerate(x.tolist()):
        for g, token in enumerate(unigrams):
            counts[b, indexes[g]] += row.count(token)
        for g, pair in enumerate(bigrams, len(unigrams)):
            for k in (1, 2, 3):
                counts[b, indexes[g]] += sum(
                    (row[s], row[s + k]) == pair for s in range(7 - k))
    w = np.array(weights, np.float32)
    write_test_data(out_dir, [("x", x), ("idf", (counts > 0) * w),
                              ("tfidf", counts * w)])


def main():
    kind, out_dir = sys.argv[1], sys.argv[2]
    weights = np.arange(1, 5, dtype=np.float32).tobytes()
    if kind == "external-ok":
        # 8 bytes of padding, then the 16 bytes of w.
        external_weight_model(out_dir, "weights.bin", b"\0" * 8 + weights,
                              offset=8, length=16)
    elif kind == "external-escape":
        external_weight_model(out_dir, "../outside.bin")
        with open(os.path.join(os.path.dirname(os.path.abspath(out_dir)),
                               "outside.bin"), "wb") as f:
            f.write(weights)
    elif kind == "external-absolute":
        external_weight_model(out_dir, "/etc/passwd")
    elif kind == "external-symlink":
        external_weight_model(out_dir, "link.bin", weights)
        os.symlink("weights.bin", os.path.join(out_dir, "link.bin"))
    elif kind == "external-hardlink":
        external_weight_model(out_dir, "hard.bin", weights)
        os.link(os.path.join(out_dir, "weights.bin"),
                os.path.join(out_dir, "hard.bin"))
    elif kind == "external-out-of-range":
        external_weight_model(out_dir, "weights.bin", weights, offset=8,
                              length=16)
    elif kind == "external-missing":
        external_weight_model(out_dir, "absent.bin")
    elif kind.startswith("group-norm-"):
        group_norm_model(kind[len("group-norm-"):], out_dir)
    elif kind == "exporter-idioms":
        exporter_idioms_model(out_dir)
    elif kind == "tfidf":
        tfidf_model(out_dir)
    elif kind == "control-flow":
        control_flow_model(out_dir)
    elif kind == "control-flow-runtime-trips":
        control_flow_model(out_dir, runtime_trip_count=True)
    elif kind == "timestep-embedding":
        timestep_embedding_model(out_dir)
    elif kind == "dynamic-input":
        save(graph_model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                         [vinfo("x", TensorProto.FLOAT, ["batch", 4])],
                         [vinfo("y", TensorProto.FLOAT, ["batch", 4])]), out_dir)
    elif kind == "complex-input":
        save(graph_model([helper.make_node("Neg", ["x"], ["y"], name="neg")],
                         [vinfo("x", TensorProto.COMPLEX64, [4])],
                         [vinfo("y", TensorProto.COMPLEX64, [4])]), out_dir)
    elif kind == "custom-domain":
        model = graph_model(
            [helper.make_node("FusedGelu", ["x"], ["y"], name="gelu_1",
                              domain="com.example")],
            [vinfo("x", TensorProto.FLOAT, [4])],
            [vinfo("y", TensorProto.FLOAT, [4])])
        model.opset_import.append(helper.make_opsetid("com.example", 1))
        save(model, out_dir)
    elif kind == "runtime-shape":
        save(graph_model(
            [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_1")],
            [vinfo("x", TensorProto.FLOAT, [2, 3]),
             vinfo("shape", TensorProto.INT64, [2])],
            [vinfo("y", TensorProto.FLOAT, [3, 2])]), out_dir)
    elif kind == "overflowing-reshape":
        # [2^63-1, 2^63-1] multiplies to 1 in wrapping int64: one element,
        # as many as x has.
        big = numpy_helper.from_array(
            np.array([2**63 - 1, 2**63 - 1], dtype=np.int64), "big")
        one = numpy_helper.from_array(np.array([1], dtype=np.int64), "one")
        save(graph_model(
            [helper.make_node("Reshape", ["x", "big"], ["r"], name="widen"),
             helper.make_node("Relu", ["r"], ["s"]),
             helper.make_node("Reshape", ["s", "one"], ["y"])],
            [vinfo("x", TensorProto.FLOAT, [1])],
            [vinfo("y", TensorProto.FLOAT, [1])], [big, one]), out_dir)
    elif kind == "bad-reshape":
        shape = numpy_helper.from_array(np.array([4, 2], dtype=np.int64), "shape")
        save(graph_model(
            [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_1")],
            [vinfo("x", TensorProto.FLOAT, [2, 3])],
            [vinfo("y", TensorProto.FLOAT, [4, 2])], [shape]), out_dir)
    elif kind in ("undefined-input", "undefined-input-ir10"):
        model = graph_model(
            [helper.make_node("Relu", ["nowhere"], ["y"], name="relu")],
            [vinfo("x", TensorProto.FLOAT, [4])],
            [vinfo("y", TensorProto.FLOAT, [4])])
        if kind.endswith("ir10"):
            model.ir_version = 10
        save(model, out_dir)
    elif kind == "quantize-int32-zero-point":
        zero_point = numpy_helper.from_array(np.array(0, np.int32), "zp")
        save(graph_model(
            [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["y"],
                              name="quantize")],
            [vinfo("x", TensorProto.FLOAT, [4]),
             vinfo("scale", TensorProto.FLOAT, [])],
            [vinfo("y", TensorProto.INT32, [4])], [zero_point]), out_dir)
    elif kind == "quantize-per-axis-matrix-scale":
        save(graph_model(
            [helper.make_node("QuantizeLinear", ["x", "scale"], ["y"],
                              name="quantize")],
            [vinfo("x", TensorProto.FLOAT, [2, 3]),
             vinfo("scale", TensorProto.FLOAT, [2, 3])],
            [vinfo("y", TensorProto.UINT8, [2, 3])]), out_dir)
    elif kind == "matmulnbits-runtime-weights":
        # MatMulNBits whose packed weights are a graph input.
        model = graph_model(
            [helper.make_node("MatMulNBits", ["x", "w", "scales"], ["y"],
                              name="int4", domain="com.microsoft", K=32, N=4,
                              bits=4, block_size=32)],
            [vinfo("x", TensorProto.FLOAT, [1, 32]),
             vinfo("w", TensorProto.UINT8, [4, 1, 16])],
            [vinfo("y", TensorProto.FLOAT, [1, 4])],
            [numpy_helper.from_array(np.ones(4, np.float32), "scales")])
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
        save(model, out_dir)
    elif kind == "deep-and-shallow-products":
        # y = (x W1) W2: W1 is 64 deep (quantized), W2 only 8 (stays float).
        rng = np.random.default_rng(3)
        save(graph_model(
            [helper.make_node("MatMul", ["x", "w1"], ["h"], name="deep"),
             helper.make_node("MatMul", ["h", "w2"], ["y"], name="shallow")],
            [vinfo("x", TensorProto.FLOAT, [2, 64])],
            [vinfo("y", TensorProto.FLOAT, [2, 4])],
            [numpy_helper.from_array(rng.standard_normal((64, 8)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "w2")]),
            out_dir)
    elif kind == "softmax-opset11":
        save(graph_model(
            [helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)],
            [vinfo("x", TensorProto.FLOAT, [3, 4, 5])],
            [vinfo("y", TensorProto.FLOAT, [3, 4, 5])], opset=11), out_dir)
    elif kind == "gather":
        # y = table[ids] with run-time ids; writes in-range and out-of-range
        # ids, and the expected output for the in-range ones.
        save(graph_model(
            [helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup", axis=0)],
            [vinfo("table", TensorProto.FLOAT, [5, 3]),
             vinfo("ids", TensorProto.INT64, [4])],
            [vinfo("y", TensorProto.FLOAT, [4, 3])]), out_dir)
        table = np.arange(15, dtype=np.float32).reshape(5, 3)
        good = np.array([4, 0, -1, -5], dtype=np.int64)
        tensors = {"table.pb": (table, "table"), "good_ids.pb": (good, "ids"),
                   "high_ids.pb": (np.array([0, 5, 1, 2], np.int64), "ids"),
                   "low_ids.pb": (np.array([0, 1, -6, 2], np.int64), "ids"),
                   "expected.pb": (table[good], "y")}
        for name, (array, tensor_name) in tensors.items():
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(numpy_helper.from_array(array, tensor_name).SerializeToString())
    elif kind == "slice-split":
        # Slice with constant bounds (negative, clamped, strided), Split,
        # Expand and Where on a computed mask; numpy gives the expected
        # outputs.
        ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
        inits = [ints("starts", [1, -4]), ints("ends", [100, -1]),
                 ints("axes", [0, 1]), ints("steps", [2, 1]),
                 ints("split", [2, 4]), ints("shape", [3, 1, 6])]
        nodes = [
            helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"],
                             ["sliced"], name="slice"),
            helper.make_node("Split", ["x", "split"], ["left", "right"],
                             name="split", axis=1),
            helper.make_node("Expand", ["row", "shape"], ["expanded"],
                             name="expand"),
            helper.make_node("Equal", ["expanded", "expanded"], ["same"],
                             name="equal"),
            helper.make_node("Where", ["same", "expanded", "expanded"],
                             ["chosen"], name="where"),
        ]
        save(graph_model(
            nodes,
            [vinfo("x", TensorProto.FLOAT, [5, 6]),
             vinfo("row", TensorProto.FLOAT, [1, 6])],
            [vinfo("sliced", TensorProto.FLOAT, [2, 3]),
             vinfo("left", TensorProto.FLOAT, [5, 2]),
             vinfo("right", TensorProto.FLOAT, [5, 4]),
             vinfo("chosen", TensorProto.FLOAT, [3, 1, 6])], inits), out_dir)
        x = np.arange(30, dtype=np.float32).reshape(5, 6)
        row = np.arange(6, dtype=np.float32).reshape(1, 6) * 0.5
        tensors = {"x.pb": (x, "x"), "row.pb": (row, "row"),
                   "sliced.pb": (x[1:100:2, -4:-1], "sliced"),
                   "left.pb": (x[:, :2], "left"), "right.pb": (x[:, 2:], "right"),
                   "chosen.pb": (np.broadcast_to(row, (3, 1, 6)).copy(), "chosen")}
        for name, (array, tensor_name) in tensors.items():
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(numpy_helper.from_array(array, tensor_name).SerializeToString())
    elif kind == "vector-products":
        # MatMul with 1-D operands (numpy's matmul rules, which ONNX
        # follows): vector . vector is a scalar, vector . matrix and
        # batch of matrices . vector drop the vector's axis.
        nodes = [helper.make_node("MatMul", ["u", "v"], ["dot"], name="dot"),
                 helper.make_node("MatMul", ["u", "m"], ["row"], name="row"),
                 helper.make_node("MatMul", ["b", "u"], ["cols"], name="cols")]
        save(graph_model(
            nodes,
            [vinfo("u", TensorProto.FLOAT, [4]),
             vinfo("v", TensorProto.FLOAT, [4]),
             vinfo("m", TensorProto.FLOAT, [4, 3]),
             vinfo("b", TensorProto.FLOAT, [2, 3, 4])],
            [vinfo("dot", TensorProto.FLOAT, []),
             vinfo("row", TensorProto.FLOAT, [3]),
             vinfo("cols", TensorProto.FLOAT, [2, 3])]), out_dir)
        rng = np.random.default_rng(0)
        u, v = (rng.standard_normal(4).astype(np.float32) for _ in range(2))
        m = rng.standard_normal((4, 3)).astype(np.float32)
        b = rng.standard_normal((2, 3, 4)).astype(np.float32)
        write_test_data(out_dir, [
            ("u", u), ("v", v), ("m", m), ("b", b),
            ("dot", np.asarray(np.matmul(u, v), np.float32)),
            ("row", np.matmul(u, m)), ("cols", np.matmul(b, u))])
    elif kind == "activations":
        # Ops imported as formulas over kiln ops: Greater (Less with the
        # operands swapped), HardSwish, Clip with only a lower bound (an
        # optional input left out), LeakyRelu, at opset 14; numpy gives the
        # expected outputs from ONNX's definitions.
        low = numpy_helper.from_array(np.array(-0.5, np.float32), "low")
        nodes = [
            helper.make_node("Greater", ["x", "y"], ["greater"], name="gt"),
            helper.make_node("HardSwish", ["x"], ["hard_swish"], name="hs"),
            helper.make_node("Clip", ["x", "low", ""], ["clipped"],
                             name="clip"),
            helper.make_node("LeakyRelu", ["x"], ["leaky"], name="leaky",
                             alpha=0.25)]
        save(graph_model(
            nodes,
            [vinfo("x", TensorProto.FLOAT, [2, 5]),
             vinfo("y", TensorProto.FLOAT, [5])],
            [vinfo("greater", TensorProto.BOOL, [2, 5]),
             vinfo("hard_swish", TensorProto.FLOAT, [2, 5]),
             vinfo("clipped", TensorProto.FLOAT, [2, 5]),
             vinfo("leaky", TensorProto.FLOAT, [2, 5])], [low], opset=14),
             out_dir)
        x = np.linspace(-4, 4, 10, dtype=np.float32).reshape(2, 5)
        y = np.array([-3, -1, 0, 1, 3], np.float32)
        write_test_data(out_dir, [
            ("x", x), ("y", y), ("greater", x > y),
            ("hard_swish", x * np.clip(x / 6 + 0.5, 0, 1)),
            ("clipped", np.maximum(x, np.float32(-0.5))),
            ("leaky", np.where(x < 0, np.float32(0.25) * x, x))])
    elif kind == "narrow-types":
        narrow_types_model(out_dir)
    elif kind == "pad":
        pad_model(out_dir)
    elif kind == "conv-transpose":
        conv_transpose_model(out_dir)
    elif kind == "newer-ops":
        newer_ops_model(out_dir)
    elif kind == "index-ops":
        index_ops_model(out_dir)
    elif kind == "wide-types":
        wide_types_model(out_dir)
    elif kind == "scatter":
        scatter_model(out_dir)
    elif kind == "attention-op":
        attention_op_model(out_dir)
    elif kind == "more-ops":
        more_ops_model(out_dir)
    elif kind == "rotary":
        rotary_model(out_dir)
    elif kind == "lp-pool":
        lp_pool_model(out_dir)
    elif kind == "max-pool-indices":
        max_pool_indices_model(out_dir)
    elif kind == "inference-forms":
        inference_forms_model(out_dir)
    elif kind == "batchnorm-training":
        inference_forms_model(out_dir, training=True)
    elif kind == "not-on-floats":
        save(graph_model(
            [helper.make_node("Not", ["x"], ["y"], name="negate")],
            [vinfo("x", TensorProto.FLOAT, [3])],
            [vinfo("y", TensorProto.BOOL, [3])]), out_dir)
    elif kind == "mlp":
        # Gemm + Relu + MatMul + Softmax with constant weights.
        rng = np.random.default_rng(0)
        w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
        b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1")
        w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
        save(graph_model(
            [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="act"),
             helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2"),
             helper.make_node("Softmax", ["logits"], ["y"], name="probs", axis=-1)],
            [vinfo("x", TensorProto.FLOAT, [2, 8])],
            [vinfo("y", TensorProto.FLOAT, [2, 4])], [w1, b1, w2]), out_dir)
    elif kind == "shape-chain":
        # The spellings exporters write for dynamic axes: a reshape whose
        # target comes from Shape -> Gather -> Unsqueeze -> Concat, Range
        # over a sequence length, ConstantOfShape of a shape. With
        # test_data_set_<k> for batch 2 and sequence lengths 1, 5 and 9,
        # the expected outputs computed with numpy.
        def ints(name, values):
            return helper.make_node(
                "Constant", [], [name], name=name,
                value=numpy_helper.from_array(np.array(values, np.int64), name))
        nodes = [
            helper.make_node("Shape", ["x"], ["shape"], name="shape"),
            ints("zero", 0), ints("one", 1), ints("axes", [0]),
            ints("two_four", [2, 4]),
            helper.make_node("Gather", ["shape", "zero"], ["batch"], name="batch"),
            helper.make_node("Gather", ["shape", "one"], ["seq"], name="seq"),
            helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"], name="batch1"),
            helper.make_node("Unsqueeze", ["seq", "axes"], ["seq1"], name="seq1"),
            helper.make_node("Concat", ["batch1", "seq1", "two_four"], ["target"],
                             name="target", axis=0),
            helper.make_node("Reshape", ["x", "target"], ["heads"], name="heads"),
            helper.make_node("Range", ["zero", "seq", "one"], ["positions"],
                             name="positions"),
            helper.make_node("Concat", ["batch1", "seq1"], ["mask_shape"],
                             name="mask_shape", axis=0),
            helper.make_node("ConstantOfShape", ["mask_shape"], ["ones"], name="ones",
                             value=numpy_helper.from_array(np.array([1], np.int64), "v")),
        ]
        save(graph_model(nodes, [vinfo("x", TensorProto.FLOAT, ["batch", "seq", 8])],
                         [vinfo("heads", TensorProto.FLOAT, ["batch", "seq", 2, 4]),
                          vinfo("positions", TensorProto.INT64, ["seq"]),
                          vinfo("ones", TensorProto.INT64, ["batch", "seq"])]),
             out_dir)
        for k, seq in enumerate((1, 5, 9)):
            folder = os.path.join(out_dir, f"test_data_set_{k}")
            os.makedirs(folder, exist_ok=True)
            x = np.arange(2 * seq * 8, dtype=np.float32).reshape(2, seq, 8)
            for name, array in (("input_0", x),
                                ("output_0", x.reshape(2, seq, 2, 4)),
                                ("output_1", np.arange(seq, dtype=np.int64)),
                                ("output_2", np.ones((2, seq), np.int64))):
                with open(os.path.join(folder, name + ".pb"), "wb") as f:
                    f.write(numpy_helper.from_array(array, name).SerializeToString())
    elif kind == "with-past":
        # The Hugging Face with-past form at its smallest: one layer's keys,
        # the new ones (x reshaped to [batch, 2 heads, seq, 2]) appended
        # to past_key_values.0.key as present.0.key; y = 2 x.
        shape = helper.make_node(
            "Constant", [], ["heads_shape"], name="heads_shape",
            value=numpy_helper.from_array(np.array([0, 0, 2, 2], np.int64),
                                          "heads_shape"))
        two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
        nodes = [
            shape,
            helper.make_node("Reshape", ["x", "heads_shape"], ["split"],
                             name="split"),
            helper.make_node("Transpose", ["split"], ["keys"], name="keys",
                             perm=[0, 2, 1, 3]),
            helper.make_node("Concat", ["past_key_values.0.key", "keys"],
                             ["present.0.key"], name="append", axis=2),
            helper.make_node("Mul", ["x", "two"], ["y"], name="double"),
        ]
        save(graph_model(
            nodes,
            [vinfo("x", TensorProto.FLOAT, ["batch", "seq", 4]),
             vinfo("past_key_values.0.key", TensorProto.FLOAT,
                   ["batch", 2, "past_seq", 2])],
            [vinfo("y", TensorProto.FLOAT, ["batch", "seq", 4]),
             vinfo("present.0.key", TensorProto.FLOAT,
                   ["batch", 2, "total_seq", 2])],
            [two]), out_dir)
    elif kind == "window-slice":
        # A decoder mask's slice: rows past .. past + seq of a constant
        # table, with starts and ends computed from the inputs' shapes, and
        # columns 1..3 (a constant axis beside the run-time one). Test data
        # for (past, seq) = (0, 1), (3, 5) and (8, 8), computed with numpy.
        def ints(name, values):
            return helper.make_node(
                "Constant", [], [name], name=name,
                value=numpy_helper.from_array(np.array(values, np.int64), name))
        table = np.arange(256, dtype=np.float32).reshape(16, 16)
        nodes = [
            ints("zero", [0]), ints("one", [1]), ints("three", [3]),
            ints("axes", [0, 1]),
            helper.make_node("Shape", ["past"], ["past_shape"], name="past_shape"),
            helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
            helper.make_node("Gather", ["past_shape", "zero"], ["p"], name="p"),
            helper.make_node("Gather", ["x_shape", "zero"], ["t"], name="t"),
            helper.make_node("Add", ["p", "t"], ["end"], name="end"),
            helper.make_node("Concat", ["p", "one"], ["starts"], name="starts",
                             axis=0),
            helper.make_node("Concat", ["end", "three"], ["ends"], name="ends",
                             axis=0),
            helper.make_node("Slice", ["table", "starts", "ends", "axes"],
                             ["window"], name="window"),
        ]
        save(graph_model(nodes, [vinfo("x", TensorProto.FLOAT, ["seq", 4]),
                                 vinfo("past", TensorProto.FLOAT, ["past_seq", 4])],
                         [vinfo("window", TensorProto.FLOAT, ["seq", 2])],
                         [numpy_helper.from_array(table, "table")]),
             out_dir)
        for k, (past, seq) in enumerate(((0, 1), (3, 5), (8, 8))):
            folder = os.path.join(out_dir, f"test_data_set_{k}")
            os.makedirs(folder, exist_ok=True)
            for name, array in (("input_0", np.zeros((seq, 4), np.float32)),
                                ("input_1", np.zeros((past, 4), np.float32)),
                                ("output_0", table[past:past + seq, 1:3])):
                with open(os.path.join(folder, name + ".pb"), "wb") as f:
                    f.write(numpy_helper.from_array(array, name).SerializeToString())
    elif kind in ("dequantize-int4-blocked", "dequantize-uint4-blocked",
                  "dequantize-int4-truncated", "dequantize-blocked-bad-scale"):
        opset21_quant_model(kind, out_dir)
    elif kind == "quantize-blocked":
        quantize_blocked_model(out_dir)
    elif kind == "matmulnbits-one-row":
        matmulnbits_one_row_model(out_dir)
    elif kind == "splat-size-input":
        splat_size_input_model(out_dir)
    elif kind in ("quantize-int16", "quantize-uint16"):
        sixteen_bit_quant_model(kind.endswith("uint16"), out_dir)
    else:
        sys.exit(f"unknown model kind '{kind}'")


if __name__ == "__main__":
    main()
