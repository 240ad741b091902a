#!/usr/bin/python3
"""Writes a model of ONNX's recurrent layers with the options ONNX's own
node tests leave out, and the expected outputs from a numpy reference.

usage: make_recurrent_model.py OUTPUT_DIR

- LSTM, bidirectional, with per-batch sequence lengths (shorter than the
  sequence), initial states and peepholes;
- LSTM with coupled input/forget gates, clip and parameterized activations
  (HardSigmoid, LeakyRelu, Softsign);
- GRU, reverse, batch-first, linear_before_reset, with sequence lengths;
- RNN, bidirectional, Relu forward and ScaledTanh backward.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def activation(name, alpha=None, beta=None):
    """ONNX's recurrent activation `name` as a numpy function."""
    table = {
        "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "Tanh": np.tanh,
        "Relu": lambda x: np.maximum(x, 0),
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "LeakyRelu": lambda x: np.where(x < 0, alpha * x, x),
        "Softsign": lambda x: x / (1 + np.abs(x)),
        "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
    }
    return table[name]


def run_cell(kind, x, w, r, b, h, c, p, lengths, fns, clip, options):
    """One direction over x [seq, batch, input], forward in time; steps at
    or past a batch's length keep its state and give zeros."""
    hidden = r.shape[1]
    f, g = fns[0], fns[1] if len(fns) > 1 else None
    clipped = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    wb, rb = np.split(b, 2)
    ys = []
    for t, xt in enumerate(x):
        if kind == "RNN":
            new_h = f(clipped(xt @ w.T + h @ r.T + wb + rb))
            new_c = c
        elif kind == "GRU":
            wz, wr, wh = np.split(w, 3)
            rz, rr, rh = np.split(r, 3)
            bz, br, bh = np.split(wb, 3)
            cz, cr, ch = np.split(rb, 3)
            z = f(clipped(xt @ wz.T + h @ rz.T + bz + cz))
            reset = f(clipped(xt @ wr.T + h @ rr.T + br + cr))
            if options.get("linear_before_reset"):
                cand = g(clipped(xt @ wh.T + reset * (h @ rh.T + ch) + bh))
            else:
                cand = g(clipped(xt @ wh.T + (reset * h) @ rh.T + ch + bh))
            new_h = (1 - z) * cand + z * h
            new_c = c
        else:
            gates = xt @ w.T + h @ r.T + wb + rb
            gi, go, gf, gc = np.split(gates, 4, axis=-1)
            pi, po, pf = np.split(p, 3)
            i = f(clipped(gi + pi * c))
            forget = 1 - i if options.get("input_forget") else \
                f(clipped(gf + pf * c))
            new_c = forget * c + i * g(clipped(gc))
            o = f(clipped(go + po * new_c))
            new_h = o * fns[2](new_c)
        inside = (t < lengths)[:, None]
        h = np.where(inside, new_h, h)
        c = np.where(inside, new_c, c)
        ys.append(np.where(inside, new_h, 0))
    return np.stack(ys), h, c


def reverse_steps(x, lengths):
    out = x.copy()
    for batch, length in enumerate(lengths):
        out[:length, batch] = x[:length, batch][::-1]
    return out


def reference(kind, x, w, r, b, h0, c0, p, lengths, fns, clip=0.0,
              direction="forward", **options):
    """Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden]."""
    ys, hs, cs = [], [], []
    for d in range(w.shape[0]):
        backward = direction == "reverse" or d == 1
        xd = reverse_steps(x, lengths) if backward else x
        y, h, c = run_cell(kind, xd, w[d], r[d], b[d], h0[d], c0[d], p[d],
                           lengths, fns[d], clip, options)
        ys.append(reverse_steps(y, lengths) if backward else y)
        hs.append(h)
        cs.append(c)
    return np.stack(ys, axis=1), np.stack(hs), np.stack(cs)


def write_bad_activation(out_dir):
    """An LSTM naming Gelu, which is no recurrent activation."""
    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="bad_lstm",
                            hidden_size=2,
                            activations=["Sigmoid", "Gelu", "Tanh"])
    w = numpy_helper.from_array(np.ones((1, 8, 3), np.float32), "w")
    r = numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "r")
    graph = helper.make_graph(
        [node], "bad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1, 1, 2])],
        initializer=[w, r])
    os.makedirs(out_dir, exist_ok=True)
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 14)]),
        os.path.join(out_dir, "model.onnx"))


def main():
    if sys.argv[1] == "--bad-activation":
        write_bad_activation(sys.argv[2])
        return
    out_dir = sys.argv[1]
    rng = np.random.default_rng(7)

    def rand(*shape):
        return rng.uniform(-1, 1, shape).astype(np.float32)

    seq, batch, size, hidden = 5, 3, 4, 3
    zeros = np.zeros((2, batch, hidden), np.float32)
    x = rand(seq, batch, size)
    lengths = np.array([3, 5, 1], np.int32)
    sigmoid, tanh = activation("Sigmoid"), activation("Tanh")

    # Bidirectional LSTM with lengths, initial states and peepholes.
    lw, lr, lb = rand(2, 4 * hidden, size), rand(2, 4 * hidden, hidden), \
        rand(2, 8 * hidden)
    lh, lc, lp = rand(2, batch, hidden), rand(2, batch, hidden), \
        rand(2, 3 * hidden)
    lstm = reference("LSTM", x, lw, lr, lb, lh, lc, lp, lengths,
                     [[sigmoid, tanh, tanh]] * 2, direction="bidirectional")

    # LSTM with coupled gates, clip and parameterized activations.
    cw, cr = rand(1, 4 * hidden, size) * 3, rand(1, 4 * hidden, hidden) * 3
    full = np.full(batch, seq)
    coupled = reference(
        "LSTM", x, cw, cr, np.zeros((1, 8 * hidden), np.float32), zeros,
        zeros, np.zeros((1, 3 * hidden), np.float32), full,
        [[activation("HardSigmoid", 0.3, 0.4), activation("LeakyRelu", 0.05),
          activation("Softsign")]], clip=1.5, input_forget=1)

    # Reverse, batch-first GRU with linear_before_reset and lengths.
    gx = rand(batch, seq, size)
    gw, gr, gb = rand(1, 3 * hidden, size), rand(1, 3 * hidden, hidden), \
        rand(1, 6 * hidden)
    gru = reference("GRU", gx.transpose(1, 0, 2), gw, gr, gb, zeros, zeros,
                    zeros, lengths, [[sigmoid, tanh]], direction="reverse",
                    linear_before_reset=1)

    # Bidirectional RNN, one activation per direction.
    rw, rr = rand(2, hidden, size), rand(2, hidden, hidden)
    rb = rand(2, 2 * hidden)
    rnn = reference("RNN", x, rw, rr, rb, zeros, zeros, zeros, full,
                    [[activation("Relu")], [activation("ScaledTanh", 0.7,
                                                       1.3)]],
                    direction="bidirectional")

    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "lengths", "lh",
                                  "lc", "lp"], ["lstm_y", "lstm_h", "lstm_c"],
                         name="lstm", hidden_size=hidden,
                         direction="bidirectional"),
        helper.make_node("LSTM", ["x", "cw", "cr"], ["coupled_y", "", ""],
                         name="coupled", hidden_size=hidden, clip=1.5,
                         input_forget=1,
                         activations=["HardSigmoid", "LeakyRelu",
                                      "Softsign"],
                         activation_alpha=[0.3, 0.05],
                         activation_beta=[0.4]),
        helper.make_node("GRU", ["gx", "gw", "gr", "gb", "lengths"],
                         ["gru_y", "gru_h"], name="gru", hidden_size=hidden,
                         direction="reverse", layout=1,
                         linear_before_reset=1),
        helper.make_node("RNN", ["x", "rw", "rr", "rb"], ["rnn_y", "rnn_h"],
                         name="rnn", hidden_size=hidden,
                         direction="bidirectional",
                         activations=["Relu", "ScaledTanh"],
                         activation_alpha=[0.7], activation_beta=[1.3])]
    weights = [("lw", lw), ("lr", lr), ("lb", lb), ("lp", lp), ("cw", cw),
               ("cr", cr), ("gw", gw), ("gr", gr), ("gb", gb), ("rw", rw),
               ("rr", rr), ("rb", rb)]
    inputs = [("x", x), ("gx", gx), ("lengths", lengths), ("lh", lh),
              ("lc", lc)]
    outputs = [("lstm_y", lstm[0]), ("lstm_h", lstm[1]), ("lstm_c", lstm[2]),
               ("coupled_y", coupled[0]),
               ("gru_y", gru[0].transpose(2, 0, 1, 3)),
               ("gru_h", gru[1].transpose(1, 0, 2)),
               ("rnn_y", rnn[0]), ("rnn_h", rnn[1])]
    outputs = [(name, v.astype(np.float32)) for name, v in outputs]
    types = {np.dtype(np.float32): TensorProto.FLOAT,
             np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        nodes, "recurrent",
        [helper.make_tensor_value_info(n, types[v.dtype], list(v.shape))
         for n, v in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape))
         for n, v in outputs],
        initializer=[numpy_helper.from_array(v, n) for n, v in weights])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    folder = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(out_dir, "model.onnx"))
    for name, array in inputs + outputs:
        with open(os.path.join(folder, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, name).SerializeToString())


if __name__ == "__main__":
    main()
