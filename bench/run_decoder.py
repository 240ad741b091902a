#!/usr/bin/env python3
"""Token generation: Kiln with its KV cache vs recomputing vs ONNX Runtime.

One command (README, "Benchmarks"):

  build/bench-venv/bin/python bench/run_decoder.py --bin-dir build/bin --work build/bench

The model is the GPT-2-small-shaped decoder (12 layers, width 768, 12
heads, vocabulary 50257; GPT-2's initialization, random weights: speed
only), exported by bench/models/make_models.py --models gpt2-past (run by
Debian's /usr/bin/python3) as a plain full-sequence graph and in the Hugging
Face with-past form. Each system generates --new-tokens tokens greedily
after a prompt of --prompt-tokens random tokens, at 1 and 2 threads:
  - Kiln with cache: the with-past graph compiled with --max-context,
    driven by kiln_session_generate (the runtime's token loop); and the
    same with --kv-cache=int8 (its tokens may differ: the table gives how
    many of them match);
  - Kiln with cache from the plain full-sequence graph: full/model.onnx
    compiled with --max-context (kiln-expose-past-keys-values adds the
    past inputs);
  - Kiln self-speculative: the with-past graph compiled with
    --draft-quantize=int4-weight (every block, int4 weights), DRAFT_K draft
    tokens per round (random weights make near-ties common, so its
    acceptance is not a trained model's; the trained decoder's table
    measures the gain);
  - Kiln recomputing: the full-sequence graph compiled with a dynamic
    sequence, run on the whole sequence for every new token (one round:
    it is slow);
  - ONNX Runtime: the with-past graph in a loop, the previous step's
    present tensors bound as the next step's past inputs (IO binding, no
    copies through numpy);
  - onnxruntime-genai (if installed in the venv): its generator on the
    same with-past graph, described by a genai_config.json written here.
Reported per system: the time to the first token (the prompt), the rate of
the tokens after it, and the rate over all new tokens including the
prompt's time, medians over --rounds rounds that alternate the systems.
All float systems must generate the same tokens. Beside them: the fp32 FMA peak
(bench/fma_peak.c) and a streaming read of memory (bench/stream_read.c),
measured in the same run; a decode step reads every weight once, so the
read rate bounds its speed. Writes docs/benchmarks-decoder.md.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Draft tokens per round of the GPT-2-shaped model's speculative row.
DRAFT_K = 3
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
from kiln_runtime import (GenerateStats, Runtime, Session,  # noqa: E402
                          generate)
from run_benchmarks import cpu_model, measure_fma_peak  # noqa: E402
from machine_peaks import stream_bandwidth  # noqa: E402


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def kiln_cached(runtime, artifact, prompt, new_tokens, threads, draft=0,
                stats=None):
    session = Session(runtime, artifact, threads=threads)
    stamps = []
    start = time.perf_counter()
    tokens = generate(session, prompt, new_tokens, draft_tokens=draft,
                      stats=stats,
                      on_token=lambda t, i: stamps.append(time.perf_counter())
                      and False)
    session.close()
    return tokens, stamps[0] - start, stamps[-1] - start


def kiln_recompute(runtime, artifact, prompt, new_tokens, threads):
    session = Session(runtime, artifact, threads=threads)
    sequence, tokens, stamps = list(prompt), [], []
    start = time.perf_counter()
    for _ in range(new_tokens):
        (logits,) = session.run("main", [np.array([sequence], np.int64)])
        tokens.append(int(logits[0, -1].argmax()))
        sequence.append(tokens[-1])
        stamps.append(time.perf_counter())
    session.close()
    return tokens, stamps[0] - start, stamps[-1] - start


def ort_with_past(model, prompt, new_tokens, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options,
                                   providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    past_names = [i.name for i in inputs[1:]]
    heads, depth = inputs[1].shape[1], inputs[1].shape[3]
    outputs = [o.name for o in session.get_outputs()]
    empty = np.zeros((1, heads, 0, depth), np.float32)
    tokens, stamps = [], []
    start = time.perf_counter()
    past = None
    ids = np.array([prompt], np.int64)
    for _ in range(new_tokens):
        binding = session.io_binding()
        binding.bind_cpu_input("input_ids", ids)
        for k, name in enumerate(past_names):
            if past is None:
                binding.bind_cpu_input(name, empty)
            else:
                binding.bind_ortvalue_input(name, past[k])
        for name in outputs:
            binding.bind_output(name, "cpu")
        session.run_with_iobinding(binding)
        values = binding.get_outputs()
        logits = values[0].numpy()
        past = values[1:]
        tokens.append(int(logits[0, -1].argmax()))
        ids = np.array([[tokens[-1]]], np.int64)
        stamps.append(time.perf_counter())
    return tokens, stamps[0] - start, stamps[-1] - start


def write_genai_config(folder, model, context, threads):
    """A folder for onnxruntime-genai: the with-past graph (linked) and a
    genai_config.json describing it, for `threads` threads. The graph has
    no attention mask or position inputs; genai's generic decoder-only
    model ("llama" in its config) runs such a graph as it is."""
    config_folder = os.path.join(folder, f"genai-{threads}")
    os.makedirs(config_folder, exist_ok=True)
    link = os.path.join(config_folder, "model.onnx")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(model), link)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    heads, depth = inputs[1].shape[1], inputs[1].shape[3]
    layers = (len(inputs) - 1) // 2
    vocab = session.get_outputs()[0].shape[2]
    del session
    config = {
        "model": {
            "type": "llama", "context_length": context, "vocab_size": vocab,
            # GPT-2's end of text; the token check sees an early stop.
            "bos_token_id": vocab - 1, "eos_token_id": vocab - 1,
            "pad_token_id": vocab - 1,
            "decoder": {
                "filename": "model.onnx", "head_size": depth,
                "hidden_size": heads * depth, "num_attention_heads": heads,
                "num_key_value_heads": heads, "num_hidden_layers": layers,
                "session_options": {"intra_op_num_threads": threads,
                                    "inter_op_num_threads": 1,
                                    "provider_options": []},
                "inputs": {"input_ids": "input_ids",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits",
                            "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"}}},
        "search": {"do_sample": False, "max_length": context,
                   "min_length": 0, "num_beams": 1,
                   "num_return_sequences": 1,
                   "past_present_share_buffer": False}}
    with open(os.path.join(config_folder, "genai_config.json"), "w") as f:
        json.dump(config, f)
    return config_folder


def genai_loop(config_folder, prompt, new_tokens):
    """onnxruntime-genai's generator on the folder write_genai_config
    made."""
    import onnxruntime_genai as og
    generator_model = og.Model(config_folder)
    params = og.GeneratorParams(generator_model)
    params.set_search_options(max_length=len(prompt) + new_tokens,
                              do_sample=False)
    generator = og.Generator(generator_model, params)
    tokens, stamps = [], []
    start = time.perf_counter()
    generator.append_tokens(np.array(prompt, np.int32))
    while len(tokens) < new_tokens and not generator.is_done():
        generator.generate_next_token()
        tokens.append(int(generator.get_next_tokens()[0]))
        stamps.append(time.perf_counter())
    return tokens, stamps[0] - start, stamps[-1] - start


def genai_version():
    try:
        import onnxruntime_genai
        return f"onnxruntime-genai {onnxruntime_genai.__version__}"
    except ImportError:
        return "onnxruntime-genai not installed (no row)"


def have_genai():
    try:
        import onnxruntime_genai  # noqa: F401
        return True
    except ImportError:
        return False


def heldout_perplexity(runtime, artifact, heldout, window, threads=2):
    """Byte-level perplexity of the held-out text through the cached
    decoder: each window of `window` bytes is fed in halves (the second
    half attends to the first through the cache)."""
    session = Session(runtime, artifact, threads=threads)
    total, count = 0.0, 0
    for start in range(0, len(heldout) - 1, window):
        chunk = heldout[start:start + window + 1]
        if len(chunk) < 2:
            break
        inputs, targets = chunk[:-1], chunk[1:]
        session.reset()
        half = max(1, len(inputs) // 2)
        rows = [session.run("decode", [np.array([part], np.int64)])[0][0]
                for part in (inputs[:half], inputs[half:]) if len(part)]
        logits = np.concatenate(rows).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        total -= log_probs[np.arange(len(targets)), targets].sum()
        count += len(targets)
    session.close()
    return float(np.exp(total / count))


def skip_layer_table(args, compile_, runtime, heldout, window, layers,
                     baseline_ppl):
    """Held-out perplexity and generation speed of the trained decoder with
    each single layer and each pair of layers skipped (--skip-layers)."""
    import itertools
    prompt = heldout[:64]

    full = os.path.join(args.trained, "kv-f32.so")

    def rate(artifact):
        _, first, total = kiln_cached(runtime, artifact, prompt, 128, 1)
        return 127 / (total - first)

    def speed(artifact):
        """Tokens/s of `artifact` and its speed-up over all layers, the two
        measured alternately (medians of 5 each) so that drifts in the
        machine's speed fall on both."""
        mine, base = [], []
        for _ in range(5):
            mine.append(rate(artifact))
            base.append(rate(full))
        return float(np.median(mine)), float(np.median(mine) / np.median(base))

    base_rate = float(np.median([rate(full) for _ in range(5)]))
    rows, best, perplexities = [], None, {}
    for count in (1, 2):
        for skipped in itertools.combinations(range(layers), count):
            listed = ",".join(map(str, skipped))
            artifact = os.path.join(args.trained, f"kv-skip-{listed}.so")
            run([compile_, os.path.join(args.trained, "past", "model.onnx"),
                 "--dim", "batch=1", "--dim", f"seq=1..{window}",
                 "--dim", f"past_seq=0..{window}", "--max-context",
                 str(window), "--skip-layers", listed, "-o", artifact])
            ppl = heldout_perplexity(runtime, artifact, heldout, window)
            tokens, gain = speed(artifact)
            change = (ppl / baseline_ppl - 1) * 100
            rows.append(f"| {listed} | {ppl:.4f} | {change:+.1f}% | "
                        f"{tokens:.0f} | {gain:.2f}x |")
            perplexities[listed] = ppl
            if change <= 2 and (best is None or gain > best[1]):
                best = (listed, gain, change)
    verdict = (f"Within +2% perplexity the fastest is skipping layer(s) "
               f"{best[0]}: {best[1]:.2f}x at {best[2]:+.1f}%."
               if best else "No skipped layer keeps perplexity within +2%.")
    # The compiler's own choice: --choose-skip-layers measures perplexity
    # on the calibration sequences (training text), not the held-out split.
    chosen = []
    for budget in (0.02, 0.05, 0.15):
        artifact = os.path.join(args.trained, f"kv-budget-{budget}.so")
        report_path = os.path.join(args.trained, f"skip-{budget}.json")
        run([compile_, os.path.join(args.trained, "past", "model.onnx"),
             "--dim", "batch=1", "--dim", f"seq=1..{window}",
             "--dim", f"past_seq=0..{window}", "--max-context", str(window),
             "--choose-skip-layers", "--calibration",
             os.path.join(args.trained, "calibration"), "--quality-budget",
             str(budget), "--skip-layers-report", report_path,
             "-o", artifact])
        with open(report_path) as f:
            report = json.load(f)
        skipped = report["skipped"]
        calibrated = next(t["perplexity"] for t in report["tried"]
                          if t["skipped"] == skipped)
        ppl = heldout_perplexity(runtime, artifact, heldout, window)
        tokens, gain = speed(artifact)
        chosen.append(
            f"| +{budget * 100:.0f}% | {','.join(map(str, skipped)) or 'none'} "
            f"| {(calibrated / report['baseline_perplexity'] - 1) * 100:+.1f}% "
            f"| {(ppl / baseline_ppl - 1) * 100:+.1f}% | {tokens:.0f} | "
            f"{gain:.2f}x | {len(report['tried'])} |")
    return [
        "",
        "Static layer skipping (`--skip-layers`), each single layer and pair "
        "tried on the held-out text; tokens/s of the cached decoder "
        f"generating 128 tokens after 64 held-out bytes, 1 thread (all "
        f"layers: {base_rate:.0f} tokens/s; each speed-up against all "
        f"layers measured alternately with it, medians of 5). {verdict}",
        "",
        "| skipped | held-out perplexity | change | tokens/s | speed-up |",
        "|---|---|---|---|---|",
    ] + rows + [
        "",
        "The compiler's choice (`--choose-skip-layers --quality-budget B "
        "--calibration DIR`): it measures the perplexity of 16 sequences of "
        "256 training bytes (train_decoder.py's calibration/) with all "
        "blocks, then each block alone, and drops the cheapest blocks while "
        "the perplexity stays within the budget; then the held-out split "
        "measures what the choice costs.",
        "",
        "| budget | skipped | calibration perplexity | held-out perplexity "
        "| tokens/s | speed-up | compiles measured |",
        "|---|---|---|---|---|---|---|",
    ] + chosen, perplexities


def load_prompts(folder):
    import onnx
    from onnx import numpy_helper
    names = sorted(os.listdir(folder),
                   key=lambda n: int(n.split("_")[1].split(".")[0]))
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, n)))
            [0].tolist() for n in names]


def speculative_table(args, compile_, runtime, window):
    """Self-speculative decoding on the trained decoder, the draft chosen by
    the compiler: kiln-compile --choose-draft times candidate drafts (the
    cheapest block or two skipped, in float and with int4 weights, and
    every block with int4 weights) at K = 1..5 against plain decoding after
    the calibration sequences (training text), and records its choice in
    the artifact. Its report's table is printed here; then the artifact,
    left to its own K (KILN_DRAFT_TOKENS_AUTO), is measured on the 24
    held-out prompts against plain cached decoding. Plain and speculative
    generation alternate prompt by prompt (this machine's speed drifts by
    tens of percent over seconds); per prompt the median of 3 of each."""
    prompts = load_prompts(os.path.join(args.trained, "prompts"))
    new_tokens = 128
    chosen = os.path.join(args.trained, "draft-chosen.so")
    report_path = os.path.join(args.trained, "draft-report.json")
    start = time.perf_counter()
    run([compile_, os.path.join(args.trained, "past", "model.onnx"),
         "--dim", "batch=1", "--dim", f"seq=1..{window}",
         "--dim", f"past_seq=0..{window}", "--max-context", str(window),
         "--choose-draft", "--calibration",
         os.path.join(args.trained, "calibration"),
         "--draft-report", report_path, "-o", chosen])
    search_seconds = time.perf_counter() - start
    with open(report_path) as f:
        report = json.load(f)

    def compare(threads):
        """Plain and speculative tokens/s over the prompts (the sum of the
        per-prompt median times after the first token), the accepted
        fraction of draft tokens, and how many prompts gave equal tokens."""
        session = Session(runtime, chosen, threads=threads)
        totals, same, counts = [0.0, 0.0], 0, GenerateStats()
        for prompt in prompts:
            times, outputs = ([], []), [None, None]
            for _ in range(3):
                for which, k in enumerate((0, -1)):
                    stamps, stats = [], GenerateStats()
                    outputs[which] = generate(
                        session, prompt, new_tokens, draft_tokens=k,
                        stats=stats,
                        on_token=lambda t, i: stamps.append(
                            time.perf_counter()) and False)
                    times[which].append(stamps[-1] - stamps[0])
            counts.drafted += stats.drafted
            counts.accepted += stats.accepted
            same += outputs[0] == outputs[1]
            for which in (0, 1):
                totals[which] += float(np.median(times[which]))
        session.close()
        rates = [len(prompts) * (new_tokens - 1) / t for t in totals]
        return (rates[0], rates[1], counts.accepted / max(counts.drafted, 1),
                same)

    rows = [f"| {','.join(map(str, t['skipped'])) or 'none'} | "
            f"{t['quantization']} | {t['draft_tokens']} | "
            f"{100 * t['accepted']:.1f}% | "
            f"{t['plain_tokens_per_second']:.0f} | "
            f"{t['speculative_tokens_per_second']:.0f} | "
            f"{t['speed_up']:.2f}x | {t['same_tokens']} of "
            f"{report['prompts']} |" for t in report["tried"]]
    choice = report["chosen"]
    ranking = ", ".join(f"{p['skipped'][0]}: {p['perplexity']:.3f}"
                        for p in report["perplexity_without_block"])
    lines = [
        "",
        "Self-speculative decoding, the draft chosen by the compiler "
        "(`kiln-compile --choose-draft --calibration DIR`): the draft is "
        "the decoder without some blocks, or with its products' weights in "
        "int4, or both, sharing its cache; it proposes K tokens, one call "
        "each, and decode, in float, checks them in one call of K + 1 "
        "positions. The compiler ranks the blocks by the calibration "
        "sequences' perplexity without each "
        f"({ranking}), "
        "then times each candidate at each K against plain decoding, "
        f"generating up to 64 tokens after the first half of each of the "
        f"{report['prompts']} calibration sequences (training text), 1 "
        "thread, the fastest of 3 alternating runs; the search took "
        f"{search_seconds:.0f} s of the compile.",
        "",
        "| draft skips | draft weights | K | accepted | plain tokens/s | "
        "speculative tokens/s | speed-up | same tokens |",
        "|---|---|---|---|---|---|---|---|",
    ] + rows + [""]
    if not choice:
        lines.append("No draft was at least "
                     f"{report['least_speed_up']:.2f}x as fast as plain "
                     "decoding: the artifact has none.")
        return lines
    lines += [
        f"Chosen: skipping {','.join(map(str, choice['skipped'])) or 'none'}"
        f", {choice['quantization']} weights, K = {choice['draft_tokens']} "
        "(recorded in the artifact: generation that leaves K to it uses "
        f"this). On the {len(prompts)} held-out prompts (16-64 bytes), "
        f"{new_tokens} tokens each:",
        "",
        "| threads | plain tokens/s | speculative tokens/s | speed-up | "
        "accepted | same tokens |",
        "|---|---|---|---|---|---|",
    ]
    for threads in (1, 2):
        plain, fast, accepted, same = compare(threads)
        lines.append(f"| {threads} | {plain:.0f} | {fast:.0f} | "
                     f"{fast / plain:.2f}x | {100 * accepted:.1f}% | "
                     f"{same} of {len(prompts)} |")
    return lines


def product_weight_bytes(model_path):
    """Bytes of the constant operands of MatMul and Gemm: what every decode
    step reads (embedding tables are gathered a row at a time)."""
    import onnx
    model = onnx.load(model_path)
    sizes = {t.name: len(t.raw_data) or 4 * len(t.float_data)
             for t in model.graph.initializer}
    used = {name for node in model.graph.node
            if node.op_type in ("MatMul", "Gemm") for name in node.input}
    return sum(size for name, size in sizes.items() if name in used)


def summarize(samples, new_tokens):
    """Medians of (first-token ms, later tokens/s, overall tokens/s)."""
    first = np.median([s[1] for s in samples]) * 1e3
    later = np.median([(new_tokens - 1) / (s[2] - s[1]) for s in samples])
    overall = np.median([new_tokens / s[2] for s in samples])
    return first, later, overall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--runtime", default=None,
                        help="libkiln_runtime.so (default: next to bin-dir)")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trained", default=None,
                        help="folder written by bench/models/train_decoder.py: "
                             "adds its held-out perplexity through Kiln's "
                             "cache beside PyTorch's")
    parser.add_argument("--reuse", action="store_true",
                        help="keep exported models and artifacts from an "
                             "earlier run")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs",
                                                      "benchmarks-decoder.md"))
    args = parser.parse_args()
    runtime_path = args.runtime or os.path.join(
        os.path.dirname(os.path.abspath(args.bin_dir)), "lib",
        "libkiln_runtime.so")
    folder = os.path.join(args.work, "gpt2-past")
    if not (args.reuse and os.path.exists(os.path.join(folder, "past",
                                                       "model.onnx"))):
        run(["/usr/bin/python3", os.path.join(HERE, "models", "make_models.py"),
             args.work, "--models", "gpt2-past"])
    context = args.prompt_tokens + args.new_tokens
    compile_ = os.path.join(args.bin_dir, "kiln-compile")
    cached = os.path.join(folder, "kv.so")
    cached_int8 = os.path.join(folder, "kv-int8.so")
    drafted = os.path.join(folder, "draft-int4.so")
    from_plain = os.path.join(folder, "kv-from-full.so")
    full = os.path.join(folder, "full.so")
    dims = ["--dim", "batch=1", "--dim", f"seq=1..{context}"]
    # The draft is every block with int4 weights: an eighth of the bytes a
    # step reads.
    if not (args.reuse and os.path.exists(drafted)):
        run([compile_, os.path.join(folder, "past", "model.onnx"), *dims,
             "--dim", f"past_seq=0..{context}", "--max-context", str(context),
             "--draft-quantize", "int4-weight", "-o", drafted])
    if not (args.reuse and os.path.exists(cached)):
        run([compile_, os.path.join(folder, "past", "model.onnx"), *dims,
             "--dim", f"past_seq=0..{context}", "--max-context", str(context),
             "-o", cached])
    # The same cache built from the plain full-sequence export.
    if not (args.reuse and os.path.exists(from_plain)):
        run([compile_, os.path.join(folder, "full", "model.onnx"), *dims,
             "--max-context", str(context), "-o", from_plain])
    if not (args.reuse and os.path.exists(cached_int8)):
        run([compile_, os.path.join(folder, "past", "model.onnx"), *dims,
             "--dim", f"past_seq=0..{context}", "--max-context", str(context),
             "--kv-cache=int8", "-o", cached_int8])
    if not (args.reuse and os.path.exists(full)):
        run([compile_, os.path.join(folder, "full", "model.onnx"), *dims,
             "-o", full])

    peak = measure_fma_peak()
    bandwidth = {t: stream_bandwidth(t) for t in (1, 2)}
    runtime = Runtime(runtime_path)
    prompt = np.random.default_rng(0).integers(
        0, 50257, args.prompt_tokens).tolist()
    past_model = os.path.join(folder, "past", "model.onnx")
    results, reference, matching, acceptance = {}, None, {}, {}
    genai = have_genai()
    for threads in (1, 2):
        speculative = f"Kiln, self-speculative (int4 draft, K = {DRAFT_K})"
        plain_graph = "Kiln, KV cache from the plain graph"
        samples = {"Kiln, KV cache": [], plain_graph: [],
                   "Kiln, int8 KV cache": [], speculative: [],
                   "ONNX Runtime, with-past loop": []}
        if genai:
            samples["onnxruntime-genai, generator"] = []
            genai_folder = write_genai_config(folder, past_model, context,
                                              threads)
        stats = GenerateStats()
        for _ in range(args.rounds):
            for name, measure in (
                    ("Kiln, KV cache",
                     lambda: kiln_cached(runtime, cached, prompt,
                                         args.new_tokens, threads)),
                    (plain_graph,
                     lambda: kiln_cached(runtime, from_plain, prompt,
                                         args.new_tokens, threads)),
                    ("Kiln, int8 KV cache",
                     lambda: kiln_cached(runtime, cached_int8, prompt,
                                         args.new_tokens, threads)),
                    (speculative,
                     lambda: kiln_cached(runtime, drafted, prompt,
                                         args.new_tokens, threads,
                                         draft=DRAFT_K, stats=stats)),
                    ("ONNX Runtime, with-past loop",
                     lambda: ort_with_past(past_model, prompt,
                                           args.new_tokens, threads)),
                    *((("onnxruntime-genai, generator",
                        lambda: genai_loop(genai_folder, prompt,
                                           args.new_tokens)),)
                      if genai else ())):
                tokens, first, total = measure()
                reference = reference or tokens
                if tokens != reference and "int8" not in name:
                    raise SystemExit(f"{name} generated other tokens")
                samples[name].append((tokens, first, total))
                print(f"{threads} thr {name}: {total:.2f} s", flush=True)
        tokens, first, total = kiln_recompute(runtime, full, prompt,
                                              args.new_tokens, threads)
        if tokens != reference:
            raise SystemExit("Kiln recomputing generated other tokens")
        samples["Kiln, recomputing the sequence"] = [(tokens, first, total)]
        print(f"{threads} thr recompute: {total:.2f} s", flush=True)
        results[threads] = {name: summarize(s, args.new_tokens)
                            for name, s in samples.items()}
        acceptance[threads] = stats.accepted / max(stats.drafted, 1)
        matching[threads] = sum(
            a == b for a, b in zip(samples["Kiln, int8 KV cache"][0][0],
                                   reference))

    weight_bytes = product_weight_bytes(past_model)
    cached_rate = {t: results[t]["Kiln, KV cache"][1] for t in (1, 2)}
    lines = [
        "# Decoder generation",
        "",
        f"Generated by `bench/run_decoder.py` on {cpu_model()} "
        f"({platform.machine()}), ONNX Runtime {ort.__version__}, "
        f"{genai_version()}. "
        f"GPT-2-small-shaped decoder (random weights, speed only): "
        f"{args.new_tokens} tokens generated greedily after a prompt of "
        f"{args.prompt_tokens}; all systems generated the same tokens. "
        f"Medians over {args.rounds} rounds (recomputing: one round). "
        f"fp32 FMA peak: {peak:.1f} GFLOP/s per core (bench/fma_peak.c); "
        f"streaming read: {bandwidth[1]:.1f} GB/s on 1 thread, "
        f"{bandwidth[2]:.1f} on 2 (bench/stream_read.c); same run. A decode "
        f"step reads the {weight_bytes / 1e9:.3f} GB of the products' "
        f"weights once: Kiln's cached steps (later tokens) read them at "
        f"{cached_rate[1] * weight_bytes / 1e9:.1f} GB/s on 1 thread and "
        f"{cached_rate[2] * weight_bytes / 1e9:.1f} on 2, "
        f"{cached_rate[1] * weight_bytes / 1e9 / bandwidth[1] * 100:.0f}% "
        f"and {cached_rate[2] * weight_bytes / 1e9 / bandwidth[2] * 100:.0f}% "
        f"of the streaming read.",
        "",
        "| threads | system | first token (ms) | later tokens/s | "
        "tokens/s overall | vs recomputing | vs ONNX Runtime |",
        "|---|---|---|---|---|---|---|",
    ]
    int8_note = (f"The int8 cache's greedy tokens matched the float ones at "
                 f"{matching[1]} of {args.new_tokens} positions (1 thread) "
                 f"and {matching[2]} (2 threads); random weights make "
                 f"near-ties common, the trained model's perplexity below "
                 f"measures its quality.")
    for threads, rows in results.items():
        base = rows["Kiln, recomputing the sequence"][2]
        ort_rate = rows["ONNX Runtime, with-past loop"][2]
        for name, (first, later, overall) in rows.items():
            lines.append(f"| {threads} | {name} | {first:.1f} | {later:.2f} | "
                         f"{overall:.2f} | {overall / base:.2f}x | "
                         f"{overall / ort_rate:.2f}x |")
    speculative_note = (
        f"The self-speculative draft is every block with int4 weights "
        f"(`--draft-quantize=int4-weight`) and proposes {DRAFT_K} tokens per "
        f"round; with random weights it agrees with the float model on "
        f"{100 * acceptance[1]:.0f}% (1 thread) and "
        f"{100 * acceptance[2]:.0f}% (2 threads) of its tokens (near-ties "
        f"are common, so this is not a trained model's rate: see the "
        f"trained decoder below); its tokens equal plain greedy decoding's. "
        f"The KV cache built from the plain full-sequence graph "
        f"(`full/model.onnx --max-context`) generated the same tokens as "
        f"the one from the with-past graph.")
    lines += ["", int8_note, "", speculative_note]
    if args.trained:
        import onnx
        from onnx import numpy_helper
        with open(os.path.join(args.trained, "report.json")) as f:
            report = json.load(f)
        window = report["settings"]["context"]
        depth = report["settings"]["width"] // report["settings"]["heads"]
        heldout = numpy_helper.to_array(onnx.load_tensor(
            os.path.join(args.trained, "heldout.pb")))[0].tolist()
        perplexities = {}
        for kind in ("f32", "int8"):
            trained = os.path.join(args.trained, f"kv-{kind}.so")
            run([compile_, os.path.join(args.trained, "past", "model.onnx"),
                 "--dim", "batch=1", "--dim", f"seq=1..{window}",
                 "--dim", f"past_seq=0..{window}", "--max-context", str(window),
                 f"--kv-cache={kind}", "-o", trained])
            perplexities[kind] = heldout_perplexity(runtime, trained, heldout,
                                                    window)
        lines += [
            "",
            "## Trained byte-level decoder",
            "",
            f"bench/models/train_decoder.py: {report['settings']['layers']} "
            f"layers, width {report['settings']['width']}, trained "
            f"{report['steps']} steps ({report['seconds']:.0f} s) on "
            f"{report['train_bytes']} bytes of Debian's license texts. "
            f"Held-out perplexity ({report['heldout_bytes']} bytes, windows "
            f"of {window}): PyTorch {report['heldout_perplexity']:.4f}; Kiln "
            f"through its KV cache (each window fed in two calls) "
            f"{perplexities['f32']:.4f}, with the int8 cache "
            f"{perplexities['int8']:.4f} "
            f"({(perplexities['int8'] / perplexities['f32'] - 1) * 100:+.2f}%;"
            f" its cache takes {(1 + 4 / depth) / 4 * 100:.0f}% of the float "
            f"one's bytes: int8 values plus a 4-byte scale per {depth}).",
        ]
    if args.trained:
        skip_lines, _ = skip_layer_table(
            args, compile_, runtime, heldout, window,
            report["settings"]["layers"], perplexities["f32"])
        lines += skip_lines
        lines += speculative_table(args, compile_, runtime, window)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
