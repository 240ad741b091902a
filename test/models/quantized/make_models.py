#!/usr/bin/env python3
"""Writes the ONNX Runtime-quantized test models in this folder.

usage: make_models.py [OUTPUT_DIR]   (needs onnx, onnxruntime and numpy)

A small float MLP, y = Relu(x W1 + b1) W2 + b2 on [1, 8, 32] inputs (seeded
weights), is quantized by ONNX Runtime's own tools, the way users quantize
their models:
  dynamic-qoperator      quantize_dynamic (DynamicQuantizeLinear, MatMulInteger)
  dynamic-per-channel    the same with per-channel weight scales
  static-qdq             quantize_static, QDQ format (Q/DQ around float ops)
  static-qdq-per-channel the same with per-channel weights (DequantizeLinear axis)
  static-qoperator       quantize_static, QOperator format (QLinearMatMul)
  nbits-block32          MatMulNBitsQuantizer: com.microsoft MatMulNBits,
                         int4 weights in blocks of 32, symmetric
  nbits-block16-zero-points  the same in blocks of 16, with zero points
  nbits-block64-ragged   blocks of 64 over 32 and 64 rows (a partial block)
  nbits-block32-int8-activations  nbits-block32 with accuracy_level 4: int8
                         activations allowed (Kiln's int4 kernel). Its
                         expected output is the exact one, nbits-block32's
                         (the same weights), and its tolerance twice what
                         quantizing the activations costs ONNX Runtime
  nbits-block16-zero-points-int8-activations  the same for
                         nbits-block16-zero-points (asymmetric weights)
  qdq-int4-block32       MatMulNBitsQuantizer in QDQ format: opset 21's
                         DequantizeLinear of INT4 weights in blocks of 32
                         (axis 0) feeding MatMul, symmetric
  qdq-uint4-block16-zero-points  the same with UINT4 weights and zero
                         points, in blocks of 16
  static-qdq-int16       quantize_static, QDQ format, INT16 activations
                         (opset 21's 16-bit QuantizeLinear) and int8 weights
  static-qdq-uint16      the same with UINT16 activations
Each folder gets model.onnx, input_0.pb and output_0.pb (ONNX Runtime's
output for that input, the graph evaluated op by op: graph optimizations
off), and atol.txt: the tolerance a test allows, one quantization step of a
quantized output, 1e-5 for a float one (the integers must agree exactly);
the QDQ models also atol-fused.txt, the tolerance of Kiln's fused int8
products (4 steps), or for the 4-bit QDQ ones of its int4 kernel, which
quantizes the activations as ONNX Runtime does when it fuses them into
MatMulNBits (twice what that costs ONNX Runtime).
Kiln's tests compile and run the models without ONNX Runtime; this script
is run by hand and its outputs committed (a few kilobytes each).

On a CPU without VNNI, ONNX Runtime's uint8 x int8 kernels add pairs of
products in saturating 16-bit arithmetic (vpmaddubsw), so with full-range
int8 weights its results are not the model's: the script prints how far
its optimized run is from the reference, and quantizes the per-channel
dynamic model with reduce_range (7-bit weights, ONNX Runtime's advice for
such CPUs), where its kernels are exact.
"""
import os
import pathlib
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Inputs"))
from mlp_model import mlp_model  # noqa: E402
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_dynamic,
                                      quantize_static)
from onnxruntime.quantization.matmul_nbits_quantizer import \
    MatMulNBitsQuantizer

SHAPE = [1, 8, 32]
HIDDEN = 64


def float_model():
    rng = np.random.default_rng(7)
    def weight(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
    w1 = weight(SHAPE[-1], HIDDEN)
    b1 = rng.standard_normal(HIDDEN).astype(np.float32) * 0.1
    w2 = weight(HIDDEN, SHAPE[-1])
    b2 = rng.standard_normal(SHAPE[-1]).astype(np.float32) * 0.1
    return mlp_model(SHAPE, w1, b1, w2, b2)


class Calibration(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(11)
        self.batches = iter([{"x": rng.standard_normal(SHAPE).astype(np.float32)}
                             for _ in range(32)])

    def get_next(self):
        return next(self.batches, None)


def output_step(model):
    """One quantization step of the graph output: the scale of the
    DequantizeLinear producing it (static), else None."""
    producers = {out: node for node in model.graph.node for out in node.output}
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    node = producers[model.graph.output[0].name]
    if node.op_type == "DequantizeLinear":
        return float(np.max(inits[node.input[1]]))
    return None


def quantize_nbits(source, dst, block_size, symmetric, accuracy_level=None,
                   quant_format=QuantFormat.QOperator):
    quantizer = MatMulNBitsQuantizer(onnx.load(source), block_size=block_size,
                                     is_symmetric=symmetric,
                                     accuracy_level=accuracy_level,
                                     quant_format=quant_format)
    quantizer.process()
    onnx.save(quantizer.model.model, dst)


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    rng = np.random.default_rng(23)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "float.onnx")
        onnx.save(float_model(), source)
        variants = {
            "dynamic-qoperator": lambda dst: quantize_dynamic(
                source, dst, weight_type=QuantType.QInt8),
            "dynamic-per-channel": lambda dst: quantize_dynamic(
                source, dst, weight_type=QuantType.QInt8, per_channel=True,
                reduce_range=True),
            "static-qdq": lambda dst: quantize_static(
                source, dst, Calibration(), quant_format=QuantFormat.QDQ),
            "static-qdq-per-channel": lambda dst: quantize_static(
                source, dst, Calibration(), quant_format=QuantFormat.QDQ,
                per_channel=True),
            "static-qoperator": lambda dst: quantize_static(
                source, dst, Calibration(), quant_format=QuantFormat.QOperator,
                op_types_to_quantize=["MatMul"]),
            "nbits-block32": lambda dst: quantize_nbits(source, dst, 32, True),
            "nbits-block16-zero-points": lambda dst: quantize_nbits(
                source, dst, 16, False),
            "nbits-block64-ragged": lambda dst: quantize_nbits(
                source, dst, 64, False),
            "nbits-block32-int8-activations": lambda dst: quantize_nbits(
                source, dst, 32, True, accuracy_level=4),
            "nbits-block16-zero-points-int8-activations": lambda dst: quantize_nbits(
                source, dst, 16, False, accuracy_level=4),
            "static-qdq-int16": lambda dst: quantize_static(
                source, dst, Calibration(), quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QInt16),
            "static-qdq-uint16": lambda dst: quantize_static(
                source, dst, Calibration(), quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt16),
            "qdq-int4-block32": lambda dst: quantize_nbits(
                source, dst, 32, True, quant_format=QuantFormat.QDQ),
            "qdq-uint4-block16-zero-points": lambda dst: quantize_nbits(
                source, dst, 16, False, quant_format=QuantFormat.QDQ),
        }
        outputs = {}
        for name, quantize in variants.items():
            folder = out / name
            folder.mkdir(parents=True, exist_ok=True)
            path = str(folder / "model.onnx")
            quantize(path)
            model = onnx.load(path)
            literal = ort.SessionOptions()
            literal.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            y = ort.InferenceSession(path, literal, providers=[
                "CPUExecutionProvider"]).run(None, {"x": x})[0]
            optimized = ort.InferenceSession(path, providers=[
                "CPUExecutionProvider"]).run(None, {"x": x})[0]
            (folder / "input_0.pb").write_bytes(
                numpy_helper.from_array(x, "x").SerializeToString())
            outputs[name] = y
            step = output_step(model)
            atol = step if step is not None else 1e-5
            if name.endswith("-int8-activations"):
                exact = outputs[name.removesuffix("-int8-activations")]
                atol = 2 * float(np.abs(y - exact).max())
                y = exact
            (folder / "output_0.pb").write_bytes(
                numpy_helper.from_array(y, "y").SerializeToString())
            (folder / "atol.txt").write_text(f"{atol:.9g}\n")
            if name.startswith("static-qdq"):
                # Kiln fuses QDQ products onto its int8 kernel with the
                # weights re-quantized to 7 bits (docs/design.md): each
                # hidden value moves by part of a step, and may cross into
                # the next step of the quantized output, allowed 4 steps.
                (folder / "atol-fused.txt").write_text(f"{4 * atol:.9g}\n")
            if name.startswith("qdq-"):
                # ONNX Runtime's optimized run fuses the chain into
                # MatMulNBits and quantizes the activations, as Kiln does.
                fused = 2 * float(np.abs(optimized - y).max())
                (folder / "atol-fused.txt").write_text(f"{fused:.9g}\n")
            ops = sorted({node.op_type for node in model.graph.node})
            gap = float(np.abs(optimized - y).max())
            print(f"{name}: {os.path.getsize(path)} bytes, atol {atol:.3g}, "
                  f"ORT optimized vs op by op {gap:.3g}"
                  + (f" ({gap / step:.1f} steps)" if step else "")
                  + f", ops {ops}")


if __name__ == "__main__":
    main()
