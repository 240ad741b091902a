#!/usr/bin/env python3
"""How kiln-compile's time grows with the size of a graph: long chains,
wide fan-ins and wide fan-outs, the shapes hostile or generated models
take.

One command (README, "Benchmarks"):

  build/bench-venv/bin/python bench/run_compile_scaling.py --bin-dir build/bin --work build/bench

- chain: x -> Relu -> Relu -> ... (n nodes) on a [64] tensor;
- fan-in: a Concat of n graph inputs of [1, 8];
- fan-out: a Split of a [n] input into n outputs of [1];
- products: x -> MatMul -> MatMul -> ... (n nodes), a [100, 128] input by
  [128, 128] weights: two or more weight panels, and 100 rows leave ragged
  register rows. Each product's loops are tiled, fused and peeled, so the
  series shows work that grows with the products before it (it once grew
  2x per product: 14 took 23 s);
- convolutions: n 3x3 Convs in a row, 32 channels of 30x30 maps, padded
  (40 once took 54 s, 41 of them in bufferization).

Each size is compiled --repeat times (-O2, one process each) and the
median wall time reported, with the growth exponent between consecutive
sizes (log(time ratio) / log(size ratio): 1 is linear, 2 quadratic). A
compile past --timeout seconds is reported as such and ends its series.

Then the compile's peak memory (resident set) on the benchmark models
that are there (--memory-model NAME=PATH, repeatable; by default the ones
the other benchmarks and the tests write under build/), against the
budget of four times the model's bytes (the .onnx file and its external
data) plus 1 GiB.
Writes docs/benchmarks-compile-scaling.md.
"""
import argparse
import math
import os
import platform
import subprocess
import sys
import time

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from run_benchmarks import cpu_model  # noqa: E402

SERIES = {
    "chain": [1000, 10000, 100000],
    "fan-in": [100, 200, 400, 1000, 2000],
    "fan-out": [100, 200, 500, 1000, 2000],
    "products": [25, 50, 100, 200],
    "convolutions": [10, 20, 40, 80],
}


def chain(n):
    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"])
             for k in range(n)]
    return helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [64])],
        [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [64])])


def fan_in(n):
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT,
                                            [1, 8]) for k in range(n)]
    return helper.make_graph(
        [helper.make_node("Concat", [f"x{k}" for k in range(n)], ["y"],
                          axis=0)], "fan-in", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, 8])])


def fan_out(n):
    outputs = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [1])
               for k in range(n)]
    return helper.make_graph(
        [helper.make_node("Split", ["x"], [f"y{k}" for k in range(n)],
                          axis=0, num_outputs=n)], "fan-out",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])], outputs)


def fixed_weights(n, shape, spread):
    """n weight tensors w0..w{n-1} of pseudo-random values in
    [-spread, spread): the compile, not the values, is measured."""
    size = math.prod(shape)
    return [helper.make_tensor(
        f"w{k}", TensorProto.FLOAT, shape,
        [(((k * size + i) * 2654435761 % 1000) / 500 - 1) * spread
         for i in range(size)]) for k in range(n)]


def products(n):
    weights = fixed_weights(n, [128, 128], 0.5)
    nodes = [helper.make_node("MatMul", [f"v{k}", f"w{k}"], [f"v{k + 1}"])
             for k in range(n)]
    return helper.make_graph(
        nodes, "products",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [100, 128])],
        [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT,
                                       [100, 128])],
        weights)


def convolutions(n):
    weights = fixed_weights(n, [32, 32, 3, 3], 0.025)
    nodes = [helper.make_node("Conv", [f"v{k}", f"w{k}"], [f"v{k + 1}"],
                              pads=[1, 1, 1, 1]) for k in range(n)]
    shape = [1, 32, 30, 30]
    return helper.make_graph(
        nodes, "convolutions",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, shape)],
        weights)


GRAPHS = {"chain": chain, "fan-in": fan_in, "fan-out": fan_out,
          "products": products, "convolutions": convolutions}


def write(folder, kind, n):
    path = os.path.join(folder, f"{kind}-{n}.onnx")
    if not os.path.exists(path):
        model = helper.make_model(GRAPHS[kind](n), opset_imports=[
            helper.make_opsetid("", 18)])
        onnx.save(model, path)
    return path


# The models whose compile memory is measured, where they are after the
# other benchmarks and the tests have run (paths under the build folder).
MEMORY_MODELS = {
    "MiniLM (trained)": "bench/minilm-real/model.onnx",
    "ViT-S/16": "bench/vit/model.onnx",
    "GPT-2 (test decoder)": "test/models/gpt2/model.onnx",
    "DiT-S/2": "bench/denoisers/dit/model.onnx",
    "UNet": "bench/denoisers/unet/model.onnx",
}


def model_bytes(path):
    """The .onnx file and every external data file it names."""
    total = os.path.getsize(path)
    model = onnx.load(path, load_external_data=False)
    folder = os.path.dirname(path)
    locations = set()
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                locations.add(entry.value)
    return total + sum(os.path.getsize(os.path.join(folder, location))
                       for location in locations)


# Runs a command and prints its peak resident set (getrusage's maxrss, in
# KiB) from a fresh interpreter: a forked child starts from its parent's
# high-water mark and keeps it across exec, so measured from this process
# (which has loaded the models) the figure would be this process's.
MAXRSS_HELPER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_memory(bin_dir, model, output):
    """(seconds, peak resident bytes) of one kiln-compile -O2."""
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", MAXRSS_HELPER,
                          os.path.join(bin_dir, "kiln-compile"), model, "-o",
                          output], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"kiln-compile {model}: {run.stderr}")
    return time.perf_counter() - started, int(run.stdout.split()[-1]) * 1024


def time_compile(bin_dir, model, repeat, timeout):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        try:
            subprocess.run([os.path.join(bin_dir, "kiln-compile"), model,
                            "-o", model[:-len(".onnx")] + ".so"], check=True,
                           timeout=timeout, capture_output=True)
        except subprocess.TimeoutExpired:
            return None
        times.append(time.perf_counter() - started)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--memory-model", action="append", default=[],
                        metavar="NAME=PATH",
                        help="a model whose compile memory to measure "
                        "(default: the benchmark models found under "
                        "--build-dir)")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(
        ROOT, "docs", "benchmarks-compile-scaling.md"))
    args = parser.parse_args()
    folder = os.path.join(args.work, "compile-scaling")
    os.makedirs(folder, exist_ok=True)
    rows = []
    for kind, sizes in SERIES.items():
        previous = None
        for n in sizes:
            seconds = time_compile(args.bin_dir, write(folder, kind, n),
                                   args.repeat, args.timeout)
            if seconds is None:
                print(f"{kind} {n}: over {args.timeout:.0f} s", flush=True)
                rows.append(f"| {kind} | {n} | > {args.timeout:.0f} | | |")
                break
            growth = bound = ""
            if previous:
                size_ratio = math.log(n / previous[0])
                exponent = math.log(seconds / previous[1]) / size_ratio
                growth = f"{exponent:.2f}"
                bound = (math.log(n * math.log(n) /
                                  (previous[0] * math.log(previous[0]))) /
                         size_ratio)
                bound = f"{bound:.2f}"
            print(f"{kind} {n}: {seconds:.2f} s {growth} (n log n: {bound})",
                  flush=True)
            rows.append(f"| {kind} | {n} | {seconds:.2f} | {growth} | "
                        f"{bound} |")
            previous = (n, seconds)
    memory_models = dict(m.split("=", 1) for m in args.memory_model) or {
        name: os.path.join(args.build_dir, path)
        for name, path in MEMORY_MODELS.items()
        if os.path.exists(os.path.join(args.build_dir, path))}
    memory_rows = []
    for name, path in memory_models.items():
        size = model_bytes(path)
        seconds, peak = peak_memory(args.bin_dir, path,
                                    os.path.join(folder, "memory.so"))
        budget = 4 * size + (1 << 30)
        print(f"{name}: {size / 2**20:.0f} MiB, peak {peak / 2**20:.0f} MiB "
              f"({peak / budget:.2f} of the budget), {seconds:.1f} s",
              flush=True)
        memory_rows.append(
            f"| {name} | {size / 2**20:.0f} | {peak / 2**20:.0f} | "
            f"{budget / 2**20:.0f} | {peak / budget:.2f} | {seconds:.1f} |")
    lines = [
        "# Compile time against graph size",
        "",
        f"Generated by `bench/run_compile_scaling.py` on {cpu_model()} "
        f"({platform.machine()}). kiln-compile -O2, one process per "
        f"compile, median of {args.repeat}; *growth*: log(time ratio) / "
        "log(size ratio) against the row above (1 linear, 2 quadratic); "
        "*n log n*: the growth n log n would show between the same sizes. "
        "*chain*: n Relus in a row on [64]; *fan-in*: a Concat of n graph "
        "inputs of [1, 8]; *fan-out*: a Split of [n] into n outputs; "
        "*products*: n MatMuls in a row, [100, 128] by [128, 128] weights; "
        "*convolutions*: n padded 3x3 Convs in a row, 32 channels of 30x30.",
        "",
        "| graph | n | seconds | growth | n log n |",
        "|---|---|---|---|---|",
        *rows, "",
        "## Compile memory",
        "",
        "Peak resident set of one kiln-compile -O2 of each benchmark model, "
        "against the budget of 4x the model's bytes (file and external "
        "data) + 1 GiB.",
        "",
        "| model | MiB | peak MiB | budget MiB | of budget | seconds |",
        "|---|---|---|---|---|---|",
        *memory_rows, ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
