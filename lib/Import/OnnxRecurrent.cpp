//===- OnnxRecurrent.cpp - ONNX RNN, GRU and LSTM -------------------------===//
//
// The recurrent layers import unrolled over their (static) sequence: the
// input projection of every step is one matmul up front, and each step adds
// its recurrent matmul and gate formulas. Both directions, the batch-first
// layout, initial states, per-batch sequence lengths (steps past a batch's
// length leave its state alone and give zeros), LSTM peepholes and coupled
// input/forget gates, GRU's linear_before_reset, clip and every activation
// ONNX names (with activation_alpha / activation_beta) are supported.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

enum class CellKind { Rnn, Gru, Lstm };

/// A longer sequence would make an unrolled graph too large to compile in
/// reasonable time.
constexpr int64_t kMaxUnrolledSteps = 4096;

/// One of ONNX's recurrent activation functions with its parameters.
struct Activation {
  std::string name; // lower case
  double alpha = 0, beta = 0;
};

class RecurrentBuilder {
public:
  RecurrentBuilder(NodeImporter &node, CellKind kind)
      : node(node), kind(kind), gates(kind == CellKind::Rnn   ? 1
                                      : kind == CellKind::Gru ? 3
                                                              : 4) {}

  LogicalResult build();

private:
  /// The activations of each direction (f, g, h in ONNX's names).
  LogicalResult parseActivations(int64_t directions);
  /// `x` reshaped to a static shape, or sliced along one axis.
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return createReshape(node, x, shape);
  }
  Value slice(Value x, int64_t axis, int64_t begin, int64_t end) {
    return createAxisSlice(node, x, axis, begin, end);
  }
  /// Slice `d` of the per-direction input `x` with that axis dropped.
  Value direction(Value x, int64_t d);
  Value concat(ArrayRef<Value> values, int64_t axis);
  Value constant(double value) {
    return createScalar(node, elementType, value);
  }
  template <typename OpTy> Value apply(Value lhs, Value rhs) {
    return *createInferred<OpTy>(node, {lhs, rhs});
  }
  template <typename OpTy> Value apply(Value x) {
    return OpTy::create(node.b, node.loc, x).getResult();
  }
  Value select(Value condition, Value yes, Value no) {
    return *createInferred<SelectOp>(node, {condition, yes, no});
  }
  Value matmul(Value lhs, Value rhs) {
    return *createInferred<MatMulOp>(node, {lhs, rhs});
  }
  /// `activation(clip(x))`; `clipped` is false for LSTM's h of the cell.
  Value activate(const Activation &activation, Value x, bool clipped = true);
  /// Reverses each batch's first `lengths[b]` steps of the [seq, batch, n]
  /// `x` (all of them without lengths).
  Value reverseSteps(Value x);
  /// Runs direction `d` over the projected inputs [seq, batch, G*H]; fills
  /// its outputs [seq, batch, H] and final states [batch, H].
  void runDirection(int64_t d, Value projected, bool reverse, Value &y,
                    Value &lastH, Value &lastC);
  /// One step of the cell from the projected input `x` [batch, G*H].
  void step(int64_t d, Value x, Value &h, Value &c);

  NodeImporter &node;
  CellKind kind;
  int64_t gates;
  Type elementType;
  int64_t steps = 0, batch = 0, hidden = 0;
  double clip = 0;
  SmallVector<SmallVector<Activation>> activations;
  // Per direction: transposed recurrent weights and the biases not folded
  // into the input projection (GRU's Rb of the hidden gate when
  // linear_before_reset).
  SmallVector<Value> recurrent, recurrentHidden, hiddenBias, peepholes;
  SmallVector<Value> initialH, initialC;
  Value lengths; // [batch, 1] i64, or null when every sequence is full
};

Value RecurrentBuilder::direction(Value x, int64_t d) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  return reshape(slice(x, 0, d, d + 1), shape.drop_front());
}

Value RecurrentBuilder::concat(ArrayRef<Value> values, int64_t axis) {
  if (values.size() == 1)
    return values.front();
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(axis);
  return *createInferred<ConcatOp>(node, values, props);
}

LogicalResult RecurrentBuilder::parseActivations(int64_t directions) {
  static const char *const defaults[][3] = {
      {"tanh"}, {"sigmoid", "tanh"}, {"sigmoid", "tanh", "tanh"}};
  int64_t perDirection = kind == CellKind::Rnn ? 1 : gates - 1;
  SmallVector<std::string> names;
  if (const onnx::AttributeProto *attr = node.getAttr("activations")) {
    for (const std::string &name : attr->strings())
      names.push_back(llvm::StringRef(name).lower());
    if (static_cast<int64_t>(names.size()) != perDirection * directions)
      return node.emitError()
             << "activations lists " << names.size() << " functions; "
             << node.node.op_type() << " with " << directions
             << " direction(s) takes " << perDirection * directions;
  } else {
    for (int64_t d = 0; d < directions; ++d)
      for (int64_t i = 0; i < perDirection; ++i)
        names.push_back(defaults[static_cast<int>(kind)][i]);
  }
  SmallVector<float> alphas, betas;
  if (const onnx::AttributeProto *attr = node.getAttr("activation_alpha"))
    alphas.assign(attr->floats().begin(), attr->floats().end());
  if (const onnx::AttributeProto *attr = node.getAttr("activation_beta"))
    betas.assign(attr->floats().begin(), attr->floats().end());
  // The parameters are listed in order for the functions that take them.
  size_t nextAlpha = 0, nextBeta = 0;
  auto take = [](ArrayRef<float> list, size_t &next, double fallback) {
    return next < list.size() ? static_cast<double>(list[next++]) : fallback;
  };
  activations.resize(directions);
  for (auto [i, name] : llvm::enumerate(names)) {
    Activation a{name};
    if (name == "affine" || name == "scaledtanh") {
      a.alpha = take(alphas, nextAlpha, 1.0);
      a.beta = take(betas, nextBeta, name == "affine" ? 0.0 : 1.0);
    } else if (name == "hardsigmoid") {
      a.alpha = take(alphas, nextAlpha, 0.2);
      a.beta = take(betas, nextBeta, 0.5);
    } else if (name == "leakyrelu") {
      a.alpha = take(alphas, nextAlpha, 0.01);
    } else if (name == "thresholdedrelu" || name == "elu") {
      a.alpha = take(alphas, nextAlpha, 1.0);
    } else if (name != "relu" && name != "tanh" && name != "sigmoid" &&
               name != "softsign" && name != "softplus") {
      // Only a listed activation can be unknown: the defaults are valid.
      return node.emitError()
             << "activation '" << node.getAttr("activations")->strings(i)
             << "' is not one ONNX defines for recurrent layers";
    }
    activations[i / perDirection].push_back(a);
  }
  return success();
}

Value RecurrentBuilder::activate(const Activation &a, Value x, bool clipped) {
  if (clipped && clip > 0)
    x = apply<MinOp>(apply<MaxOp>(x, constant(-clip)), constant(clip));
  const std::string &name = a.name;
  Value zero = constant(0);
  if (name == "tanh")
    return apply<TanhOp>(x);
  if (name == "sigmoid")
    return apply<SigmoidOp>(x);
  if (name == "relu")
    return apply<ReluOp>(x);
  if (name == "affine")
    return apply<AddOp>(apply<MulOp>(x, constant(a.alpha)), constant(a.beta));
  if (name == "leakyrelu")
    return select(apply<LessOp>(x, zero), apply<MulOp>(x, constant(a.alpha)),
                  x);
  if (name == "thresholdedrelu")
    return select(apply<LessOp>(constant(a.alpha), x), x, zero);
  if (name == "scaledtanh")
    return apply<MulOp>(apply<TanhOp>(apply<MulOp>(x, constant(a.beta))),
                        constant(a.alpha));
  if (name == "hardsigmoid")
    return apply<MinOp>(
        apply<MaxOp>(
            apply<AddOp>(apply<MulOp>(x, constant(a.alpha)), constant(a.beta)),
            zero),
        constant(1));
  if (name == "elu")
    return select(apply<LessOp>(x, zero),
                  apply<MulOp>(apply<SubOp>(apply<ExpOp>(x), constant(1)),
                               constant(a.alpha)),
                  x);
  if (name == "softsign")
    return apply<DivOp>(x, apply<AddOp>(apply<AbsOp>(x), constant(1)));
  assert(name == "softplus" && "activation checked when parsed");
  // max(x, 0) + log(1 + exp(-|x|)): exp never overflows.
  return apply<AddOp>(
      apply<ReluOp>(x),
      apply<LogOp>(apply<AddOp>(apply<ExpOp>(apply<NegOp>(apply<AbsOp>(x))),
                                constant(1))));
}

Value RecurrentBuilder::reverseSteps(Value x) {
  if (!lengths) {
    SmallVector<int64_t> reversed;
    for (int64_t t = steps - 1; t >= 0; --t)
      reversed.push_back(t);
    return createAxisGather(node, x, 0, reversed);
  }
  // index[t, b] = lengths[b] - 1 - t inside the sequence, t past its end.
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  Value t = *createIndexSequence(
      node, getAffineConstantExpr(steps, node.b.getContext()), 0, 2);
  Type i64 = node.b.getI64Type();
  Value lens = reshape(lengths, {1, batch});
  Value reversed =
      apply<SubOp>(apply<SubOp>(lens, createScalar(node, i64, 1)), t);
  Value index = select(apply<LessOp>(t, lens), reversed, t);
  Value spread =
      BroadcastOp::create(node.b, node.loc, RankedTensorType::get(shape, i64),
                          reshape(index, {steps, batch, 1}), ValueRange());
  GatherElementsOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(0);
  return *createInferred<GatherElementsOp>(node, {x, spread}, props);
}

void RecurrentBuilder::step(int64_t d, Value x, Value &h, Value &c) {
  ArrayRef<Activation> fns = activations[d];
  int64_t n = hidden;
  if (kind == CellKind::Rnn) {
    h = activate(fns[0], apply<AddOp>(x, matmul(h, recurrent[d])));
    return;
  }
  if (kind == CellKind::Gru) {
    // Gates z, r, then the candidate state.
    Value zr = activate(
        fns[0], apply<AddOp>(slice(x, 1, 0, 2 * n), matmul(h, recurrent[d])));
    Value z = slice(zr, 1, 0, n), r = slice(zr, 1, n, 2 * n);
    Value candidate =
        hiddenBias[d]
            ? apply<MulOp>(
                  r, apply<AddOp>(matmul(h, recurrentHidden[d]), hiddenBias[d]))
            : matmul(apply<MulOp>(r, h), recurrentHidden[d]);
    Value hh =
        activate(fns[1], apply<AddOp>(slice(x, 1, 2 * n, 3 * n), candidate));
    // (1 - z) * hh + z * h
    h = apply<AddOp>(hh, apply<MulOp>(z, apply<SubOp>(h, hh)));
    return;
  }
  // LSTM gates in ONNX's order i, o, f, c.
  Value all = apply<AddOp>(x, matmul(h, recurrent[d]));
  Value pi, po, pf;
  if (peepholes[d]) {
    pi = slice(peepholes[d], 0, 0, n);
    po = slice(peepholes[d], 0, n, 2 * n);
    pf = slice(peepholes[d], 0, 2 * n, 3 * n);
  }
  auto peep = [&](Value gate, Value weight, Value cell) {
    return weight ? apply<AddOp>(gate, apply<MulOp>(weight, cell)) : gate;
  };
  Value i = activate(fns[0], peep(slice(all, 1, 0, n), pi, c));
  Value f = node.getIntAttr("input_forget", 0)
                ? apply<SubOp>(constant(1), i)
                : activate(fns[0], peep(slice(all, 1, 2 * n, 3 * n), pf, c));
  Value candidate = activate(fns[1], slice(all, 1, 3 * n, 4 * n));
  c = apply<AddOp>(apply<MulOp>(f, c), apply<MulOp>(i, candidate));
  Value o = activate(fns[0], peep(slice(all, 1, n, 2 * n), po, c));
  h = apply<MulOp>(o, activate(fns[2], c, /*clipped=*/false));
}

void RecurrentBuilder::runDirection(int64_t d, Value projected, bool reverse,
                                    Value &y, Value &lastH, Value &lastC) {
  // Reversed in place, a backward pass runs forward with the same masks.
  if (reverse)
    projected = reverseSteps(projected);
  Value h = initialH[d], c = initialC[d];
  Value zero = constant(0);
  SmallVector<Value> outputs;
  for (int64_t t = 0; t < steps; ++t) {
    Value x = reshape(slice(projected, 0, t, t + 1), {batch, gates * hidden});
    Value newH = h, newC = c;
    step(d, x, newH, newC);
    if (lengths) {
      Value inside =
          apply<LessOp>(createScalar(node, node.b.getI64Type(), t), lengths);
      h = select(inside, newH, h);
      if (c)
        c = select(inside, newC, c);
      outputs.push_back(
          reshape(select(inside, newH, zero), {1, batch, hidden}));
    } else {
      h = newH;
      c = newC;
      outputs.push_back(reshape(h, {1, batch, hidden}));
    }
  }
  y = concat(outputs, 0);
  if (reverse)
    y = reverseSteps(y);
  lastH = h;
  lastC = c;
}

LogicalResult RecurrentBuilder::build() {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < 3; ++i) {
    FailureOr<Value> input = node.getOperand(i);
    if (failed(input) || failed(requireReal(node, *input)))
      return failure();
    inputs.push_back(*input);
  }
  elementType = getElementTypeOrSelf(inputs[0].getType());
  for (unsigned i = 0; i < node.operands.size(); ++i) {
    if (!node.operands[i])
      continue;
    auto type = cast<RankedTensorType>(node.operands[i].getType());
    if (!type.hasStaticShape())
      return node.emitError() << "input " << i << " must have a static shape";
    if (i != 4 && type.getElementType() != elementType)
      return node.emitError()
             << "input " << i << " has element type " << type.getElementType()
             << ", X has " << elementType;
  }
  std::string dir = node.getStringAttr("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return node.emitError() << "direction '" << dir
                            << "' is not forward, reverse or bidirectional";
  int64_t directions = dir == "bidirectional" ? 2 : 1;
  bool batchFirst = node.getIntAttr("layout", 0) == 1;
  clip = node.getFloatAttr("clip", 0);
  if (failed(parseActivations(directions)))
    return failure();

  Value x = inputs[0];
  if (node.getOperandType(0).getRank() != 3)
    return node.emitError() << "X must have rank 3";
  if (batchFirst)
    x = createTranspose(node, x, {1, 0, 2});
  ArrayRef<int64_t> xShape = cast<RankedTensorType>(x.getType()).getShape();
  steps = xShape[0];
  batch = xShape[1];
  int64_t inputSize = xShape[2];
  hidden = node.getIntAttr("hidden_size", 0);
  ArrayRef<int64_t> wShape = node.getOperandType(1).getShape();
  if (hidden <= 0 && wShape.size() == 3)
    hidden = wShape[1] / gates;
  auto expectShape = [&](unsigned i, ArrayRef<int64_t> expected,
                         StringRef name) -> LogicalResult {
    if (i >= node.operands.size() || !node.operands[i] ||
        node.getOperandType(i).getShape() == expected)
      return success();
    auto diag = node.emitError() << name << " must have shape [";
    llvm::interleave(expected, diag, ", ");
    return diag << "]";
  };
  int64_t width = gates * hidden;
  SmallVector<int64_t> stateShape =
      batchFirst ? SmallVector<int64_t>{batch, directions, hidden}
                 : SmallVector<int64_t>{directions, batch, hidden};
  if (hidden <= 0 ||
      failed(expectShape(1, {directions, width, inputSize}, "W")) ||
      failed(expectShape(2, {directions, width, hidden}, "R")) ||
      failed(expectShape(3, {directions, 2 * width}, "B")) ||
      failed(expectShape(4, {batch}, "sequence_lens")) ||
      failed(expectShape(5, stateShape, "initial_h")) ||
      failed(expectShape(6, stateShape, "initial_c")) ||
      failed(expectShape(7, {directions, 3 * hidden}, "P")))
    return hidden <= 0 ? node.emitError() << "hidden_size must be positive"
                       : failure();
  if (steps == 0 || batch == 0)
    return node.emitError() << "empty sequences are not supported";
  if (steps > kMaxUnrolledSteps)
    return node.emitError() << "the sequence has " << steps
                            << " steps; Kiln unrolls recurrent layers and "
                               "takes at most "
                            << kMaxUnrolledSteps;

  auto operand = [&](unsigned i) {
    return i < node.operands.size() ? node.operands[i] : Value();
  };
  if (operand(4)) {
    FailureOr<Value> lens = getIndicesOperand(node, 4);
    if (failed(lens))
      return failure();
    std::optional<SmallVector<int64_t>> known =
        node.graph.getConstantInts(node.node.input(4));
    if (!known || llvm::any_of(*known, [&](int64_t n) { return n != steps; }))
      lengths = reshape(*lens, {batch, 1});
  }
  bool linearBeforeReset =
      kind == CellKind::Gru && node.getIntAttr("linear_before_reset", 0);
  auto state = [&](Value given, int64_t d) {
    if (!given)
      return Value(BroadcastOp::create(
          node.b, node.loc, RankedTensorType::get({batch, hidden}, elementType),
          constant(0), ValueRange()));
    return direction(
        batchFirst ? createTranspose(node, given, {1, 0, 2}) : given, d);
  };

  Value flatX = reshape(x, {steps * batch, inputSize});
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    Value w = direction(inputs[1], d), r = direction(inputs[2], d);
    Value projected = matmul(flatX, createTranspose(node, w, {1, 0}));
    // The input and recurrent biases add up, except GRU's recurrent bias
    // of the candidate when linear_before_reset applies the reset to it.
    hiddenBias.push_back(Value());
    if (Value bias = operand(3)) {
      Value both = direction(bias, d);
      Value sum = apply<AddOp>(slice(both, 0, 0, width),
                               slice(both, 0, width, 2 * width));
      if (linearBeforeReset) {
        Value wb = slice(both, 0, 2 * hidden, 3 * hidden);
        sum = concat({slice(sum, 0, 0, 2 * hidden), wb}, 0);
        hiddenBias.back() = slice(both, 0, width + 2 * hidden, 2 * width);
      }
      projected = apply<AddOp>(projected, sum);
    } else if (linearBeforeReset) {
      hiddenBias.back() = constant(0);
    }
    projected = reshape(projected, {steps, batch, width});
    if (kind == CellKind::Gru) {
      recurrent.push_back(
          createTranspose(node, slice(r, 0, 0, 2 * hidden), {1, 0}));
      recurrentHidden.push_back(
          createTranspose(node, slice(r, 0, 2 * hidden, width), {1, 0}));
    } else {
      recurrent.push_back(createTranspose(node, r, {1, 0}));
      recurrentHidden.push_back(Value());
    }
    peepholes.push_back(operand(7) ? direction(operand(7), d) : Value());
    initialH.push_back(state(operand(5), d));
    initialC.push_back(kind == CellKind::Lstm ? state(operand(6), d) : Value());
    Value y, lastH, lastC;
    runDirection(d, projected, dir == "reverse" || d == 1, y, lastH, lastC);
    ys.push_back(reshape(y, {steps, 1, batch, hidden}));
    hs.push_back(reshape(lastH, {1, batch, hidden}));
    if (lastC)
      cs.push_back(reshape(lastC, {1, batch, hidden}));
  }
  Value y = concat(ys, 1), yh = concat(hs, 0);
  if (batchFirst) {
    y = createTranspose(node, y, {2, 0, 1, 3});
    yh = createTranspose(node, yh, {1, 0, 2});
  }
  node.results.push_back(y);
  node.results.push_back(yh);
  if (kind == CellKind::Lstm) {
    Value yc = concat(cs, 0);
    node.results.push_back(batchFirst ? createTranspose(node, yc, {1, 0, 2})
                                      : yc);
  }
  return success();
}

} // namespace

LogicalResult kiln::importRNN(NodeImporter &node) {
  return RecurrentBuilder(node, CellKind::Rnn).build();
}

LogicalResult kiln::importGRU(NodeImporter &node) {
  return RecurrentBuilder(node, CellKind::Gru).build();
}

LogicalResult kiln::importLSTM(NodeImporter &node) {
  return RecurrentBuilder(node, CellKind::Lstm).build();
}
