//===- OnnxAttention.cpp - ONNX Attention and RotaryEmbedding (opset 23) --===//
//
// Scaled dot-product attention with its options: 3-D inputs split into
// heads, grouped key/value heads, a past key/value cache concatenated in
// front (and returned as the present one), a boolean or additive mask
// shorter than the keys, causal and sliding-window masks aligned to the
// bottom right (after the cache, or after each batch's valid keys given by
// nonpad_kv_seqlen), softcap, and the qk_matmul_output modes. It imports as
// kiln's matmuls, softmax and elementwise ops, in f32 (float16 and bfloat16
// inputs are widened and the results rounded back). A query row whose
// every key is masked gives zeros, as ONNX defines. RotaryEmbedding turns
// pairs of each head's channels by the angles of their position.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// Builds the attention of one node; every value is f32 and, after
/// splitting heads, of rank 4: [batch, heads, sequence, head size].
class AttentionBuilder {
public:
  explicit AttentionBuilder(NodeImporter &node)
      : node(node), f32(node.b.getF32Type()) {}

  LogicalResult build();

private:
  /// Operand `i` in f32 (null if omitted); records its original type.
  FailureOr<Value> getFloatOperand(unsigned i);
  /// [B, S, H * D] split into [B, H, S, D].
  Value splitHeads(Value x, int64_t heads);
  /// [B, H, S, D] merged into [B, S, H * D].
  Value mergeHeads(Value x);
  /// `x` with each of its heads repeated `times` times in place.
  Value repeatHeads(Value x, int64_t times);
  /// The additive bias [.., q, kv] of the mask, causal and window options,
  /// and the key padding of nonpad_kv_seqlen.
  FailureOr<Value> createBias(int64_t queries, int64_t keys, int64_t past);
  /// 0 where `allowed`, -inf elsewhere.
  FailureOr<Value> toBias(FailureOr<Value> allowed);
  Value constant(double value) { return createScalar(node, f32, value); }
  template <typename OpTy>
  FailureOr<Value> apply(FailureOr<Value> lhs, FailureOr<Value> rhs) {
    if (failed(lhs) || failed(rhs))
      return failure();
    return createInferred<OpTy>(node, {*lhs, *rhs});
  }
  /// `value` in the element type the node's inputs had.
  Value narrow(Value value);

  NodeImporter &node;
  Type f32;
  Type inputElement;
  Value nonpadKeys; // [B, 1, 1, 1] i64, or null
};

FailureOr<Value> AttentionBuilder::getFloatOperand(unsigned i) {
  if (i >= node.operands.size() || !node.operands[i])
    return Value();
  Value value = node.operands[i];
  Type element = getElementTypeOrSelf(value.getType());
  if (element.isInteger(1))
    return value;
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return node.emitError() << "input " << i << " of type " << element
                            << " is not supported; Kiln computes Attention "
                               "in f32 from f32, f16 or bf16";
  if (!cast<RankedTensorType>(value.getType()).hasStaticShape())
    return node.emitError() << "input " << i << " must have a static shape";
  if (element.isF32())
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return CastOp::create(node.b, node.loc, type.clone(f32), value).getResult();
}

Value AttentionBuilder::splitHeads(Value x, int64_t heads) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  return createTranspose(
      node,
      createReshape(node, x, {shape[0], shape[1], heads, shape[2] / heads}),
      {0, 2, 1, 3});
}

Value AttentionBuilder::mergeHeads(Value x) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  return createReshape(node, createTranspose(node, x, {0, 2, 1, 3}),
                       {shape[0], shape[2], shape[1] * shape[3]});
}

Value AttentionBuilder::repeatHeads(Value x, int64_t times) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  Value spread =
      createReshape(node, x, {shape[0], shape[1], 1, shape[2], shape[3]});
  auto repeated = RankedTensorType::get(
      {shape[0], shape[1], times, shape[2], shape[3]}, f32);
  Value copies =
      BroadcastOp::create(node.b, node.loc, repeated, spread, ValueRange());
  return createReshape(node, copies,
                       {shape[0], shape[1] * times, shape[2], shape[3]});
}

FailureOr<Value> AttentionBuilder::toBias(FailureOr<Value> allowed) {
  if (failed(allowed))
    return failure();
  return createInferred<SelectOp>(node,
                                  {*allowed, constant(0), constant(kNegInf)});
}

FailureOr<Value> AttentionBuilder::createBias(int64_t queries, int64_t keys,
                                              int64_t past) {
  FailureOr<Value> bias = constant(0);
  FailureOr<Value> mask = getFloatOperand(3);
  if (failed(mask))
    return failure();
  if (*mask) {
    auto type = cast<RankedTensorType>(mask->getType());
    int64_t missing = keys - type.getShape().back();
    if (missing < 0)
      return node.emitError()
             << "attn_mask covers " << type.getShape().back()
             << " keys, more than the " << keys << " there are";
    Value value = *mask;
    bool isBool = type.getElementType().isInteger(1);
    // Keys past the mask's end are masked.
    if (missing > 0) {
      SmallVector<int64_t> fill(type.getShape());
      fill.back() = missing;
      Value filler = BroadcastOp::create(
          node.b, node.loc, type.clone(fill),
          isBool
              ? ConstantOp::create(
                    node.b, node.loc,
                    DenseElementsAttr::get(
                        RankedTensorType::get({}, node.b.getI1Type()), false))
                    .getResult()
              : constant(kNegInf),
          ValueRange());
      ConcatOp::Properties concat;
      concat.axis = node.b.getI64IntegerAttr(type.getRank() - 1);
      FailureOr<Value> padded =
          createInferred<ConcatOp>(node, {value, filler}, concat);
      if (failed(padded))
        return failure();
      value = *padded;
    }
    bias = isBool ? toBias(value) : FailureOr<Value>(value);
  }
  Type i64 = node.b.getI64Type();
  MLIRContext *ctx = node.b.getContext();
  FailureOr<Value> rows =
      createIndexSequence(node, getAffineConstantExpr(queries, ctx), 2, 4);
  FailureOr<Value> columns =
      createIndexSequence(node, getAffineConstantExpr(keys, ctx), 3, 4);
  if (failed(rows) || failed(columns))
    return failure();
  // The position of each query among the keys: after the cache, or after
  // each batch's valid keys.
  FailureOr<Value> position =
      nonpadKeys
          ? apply<AddOp>(*rows, apply<SubOp>(nonpadKeys,
                                             createScalar(node, i64, queries)))
          : apply<AddOp>(*rows, createScalar(node, i64, past));
  if (node.getIntAttr("is_causal", 0))
    bias = apply<AddOp>(bias, toBias(apply<LessEqualOp>(*columns, position)));
  int64_t left = node.getIntAttr("left_window_size", -1);
  int64_t right = node.getIntAttr("right_window_size", -1);
  if (left >= 0)
    bias = apply<AddOp>(
        bias, toBias(apply<LessEqualOp>(apply<SubOp>(position, *columns),
                                        createScalar(node, i64, left))));
  if (right >= 0)
    bias = apply<AddOp>(
        bias, toBias(apply<LessEqualOp>(apply<SubOp>(*columns, position),
                                        createScalar(node, i64, right))));
  if (nonpadKeys)
    bias = apply<AddOp>(bias, toBias(apply<LessOp>(*columns, nonpadKeys)));
  return bias;
}

Value AttentionBuilder::narrow(Value value) {
  if (inputElement.isF32())
    return value;
  auto type = cast<RankedTensorType>(value.getType());
  return CastOp::create(node.b, node.loc, type.clone(inputElement), value);
}

LogicalResult AttentionBuilder::build() {
  for (unsigned i = 0; i < 3; ++i)
    if (failed(node.getOperand(i)))
      return failure();
  inputElement = node.getOperandType(0).getElementType();
  FailureOr<Value> query = getFloatOperand(0), key = getFloatOperand(1),
                   value = getFloatOperand(2), pastKey = getFloatOperand(4),
                   pastValue = getFloatOperand(5);
  if (failed(query) || failed(key) || failed(value) || failed(pastKey) ||
      failed(pastValue))
    return failure();
  if (!*pastKey != !*pastValue)
    return node.emitError() << "past_key and past_value come together";
  int64_t rank = node.getOperandType(0).getRank();
  if (rank != 3 && rank != 4)
    return node.emitError() << "Q must have rank 3 or 4, not " << rank;
  if (node.getOperandType(1).getRank() != rank ||
      node.getOperandType(2).getRank() != rank)
    return node.emitError() << "Q, K and V must have one rank";
  if (rank == 3) {
    int64_t queryHeads = node.getIntAttr("q_num_heads", 0);
    int64_t keyHeads = node.getIntAttr("kv_num_heads", 0);
    if (queryHeads <= 0 || keyHeads <= 0 ||
        node.getOperandType(0).getDimSize(2) % queryHeads ||
        node.getOperandType(1).getDimSize(2) % keyHeads ||
        node.getOperandType(2).getDimSize(2) % keyHeads)
      return node.emitError() << "3-D inputs need q_num_heads and "
                                 "kv_num_heads dividing their hidden sizes";
    *query = splitHeads(*query, queryHeads);
    *key = splitHeads(*key, keyHeads);
    *value = splitHeads(*value, keyHeads);
  }
  if (node.operands.size() > 6 && node.operands[6]) {
    if (*pastKey)
      return node.emitError()
             << "nonpad_kv_seqlen cannot come with past_key and past_value";
    FailureOr<Value> lengths = getIndicesOperand(node, 6);
    if (failed(lengths))
      return failure();
    int64_t batch = cast<RankedTensorType>(query->getType()).getDimSize(0);
    nonpadKeys = createReshape(node, *lengths, {batch, 1, 1, 1});
  }
  int64_t past = 0;
  if (*pastKey) {
    past = cast<RankedTensorType>(pastKey->getType()).getDimSize(2);
    ConcatOp::Properties concat;
    concat.axis = node.b.getI64IntegerAttr(2);
    key = createInferred<ConcatOp>(node, {*pastKey, *key}, concat);
    value = createInferred<ConcatOp>(node, {*pastValue, *value}, concat);
    if (failed(key) || failed(value))
      return failure();
  }
  Value presentKey = *key, presentValue = *value;
  ArrayRef<int64_t> queryShape =
      cast<RankedTensorType>(query->getType()).getShape();
  ArrayRef<int64_t> keyShape =
      cast<RankedTensorType>(key->getType()).getShape();
  if (queryShape[1] != keyShape[1]) {
    if (keyShape[1] == 0 || queryShape[1] % keyShape[1])
      return node.emitError() << queryShape[1] << " query heads cannot share "
                              << keyShape[1] << " key/value heads";
    *key = repeatHeads(*key, queryShape[1] / keyShape[1]);
    *value = repeatHeads(*value, queryShape[1] / keyShape[1]);
  }
  // Both sides scaled by sqrt(scale), as ONNX's definition does.
  float scale = node.getFloatAttr("scale", 1 / std::sqrt(float(queryShape[3])));
  Value rootScale = constant(std::sqrt(scale));
  FailureOr<Value> scaledQuery = apply<MulOp>(*query, rootScale);
  FailureOr<Value> scaledKey = apply<MulOp>(*key, rootScale);
  if (failed(scaledQuery) || failed(scaledKey))
    return failure();
  FailureOr<Value> scores = createInferred<MatMulOp>(
      node, {*scaledQuery, createTranspose(node, *scaledKey, {0, 1, 3, 2})});
  float softcap = node.getFloatAttr("softcap", 0);
  if (softcap > 0) {
    FailureOr<Value> scaled = apply<DivOp>(scores, constant(softcap));
    if (failed(scaled))
      return failure();
    scores = apply<MulOp>(TanhOp::create(node.b, node.loc, *scaled).getResult(),
                          constant(softcap));
  }
  FailureOr<Value> bias = createBias(queryShape[2], keyShape[2], past);
  FailureOr<Value> logits = apply<AddOp>(scores, bias);
  if (failed(logits))
    return failure();
  Value probabilities = SoftmaxOp::create(node.b, node.loc, logits->getType(),
                                          *logits, node.b.getI64IntegerAttr(3));
  // A row whose every key is masked has no probabilities: zeros, not the
  // NaNs of exp(-inf - -inf).
  ReduceMaxOp::Properties reduce;
  reduce.axes = node.b.getDenseI64ArrayAttr({3});
  reduce.keep_dims = node.b.getUnitAttr();
  auto biasType = cast<RankedTensorType>(bias->getType());
  if (biasType.getRank() > 0) {
    SmallVector<int64_t> shape(4 - biasType.getRank(), 1);
    llvm::append_range(shape, biasType.getShape());
    FailureOr<Value> rowMax = createInferred<ReduceMaxOp>(
        node, createReshape(node, *bias, shape), reduce);
    FailureOr<Value> masked = apply<EqualOp>(rowMax, constant(kNegInf));
    if (failed(masked))
      return failure();
    FailureOr<Value> guarded =
        createInferred<SelectOp>(node, {*masked, constant(0), probabilities});
    if (failed(guarded))
      return failure();
    probabilities = *guarded;
  }
  FailureOr<Value> output =
      createInferred<MatMulOp>(node, {probabilities, *value});
  if (failed(output))
    return failure();
  node.results.push_back(narrow(rank == 3 ? mergeHeads(*output) : *output));
  node.results.push_back(narrow(presentKey));
  node.results.push_back(narrow(presentValue));
  switch (node.getIntAttr("qk_matmul_output_mode", 0)) {
  case 0:
  case 1:
    node.results.push_back(narrow(*scores));
    break;
  case 2:
    node.results.push_back(narrow(*logits));
    break;
  case 3:
    node.results.push_back(narrow(probabilities));
    break;
  default:
    return node.emitError() << "qk_matmul_output_mode must be 0 to 3";
  }
  // Only the outputs the node names.
  node.results.truncate(
      std::min<size_t>(node.results.size(), node.node.output_size()));
  return success();
}

} // namespace

LogicalResult kiln::importAttention(NodeImporter &node) {
  return AttentionBuilder(node).build();
}

namespace {

Value concatLast(NodeImporter &node, ValueRange parts) {
  ConcatOp::Properties props;
  props.axis = node.b.getI64IntegerAttr(
      cast<RankedTensorType>(parts[0].getType()).getRank() - 1);
  return *createInferred<ConcatOp>(node, parts, props);
}

} // namespace

/// RotaryEmbedding (opset 23): the first rotary_embedding_dim channels of
/// each head turned by the angles of its position, as ONNX defines it:
/// (x1, x2) -> (cos x1 - sin x2, sin x1 + cos x2), with x1 and x2 the two
/// halves of those channels, or their even and odd ones when interleaved.
LogicalResult kiln::importRotaryEmbedding(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0), cosCache = node.getOperand(1),
                   sinCache = node.getOperand(2);
  if (failed(input) || failed(cosCache) || failed(sinCache) ||
      failed(requireFloat(node, *input)) ||
      failed(requireSameElementType(node, *input, *cosCache)) ||
      failed(requireSameElementType(node, *input, *sinCache)))
    return failure();
  RankedTensorType type = node.getOperandType(0);
  if (!type.hasStaticShape() || (type.getRank() != 3 && type.getRank() != 4))
    return node.emitError() << "the input must have a static shape of rank 3 "
                               "or 4";
  ArrayRef<int64_t> shape = type.getShape();
  int64_t batch = shape[0], heads, sequence, headSize;
  Value x;
  if (type.getRank() == 4) {
    heads = shape[1], sequence = shape[2], headSize = shape[3];
    x = createTranspose(node, *input, {0, 2, 1, 3});
  } else {
    heads = node.getIntAttr("num_heads", 0);
    sequence = shape[1];
    if (heads <= 0 || shape[2] % heads)
      return node.emitError() << "a 3-D input needs num_heads dividing its "
                                 "hidden size";
    headSize = shape[2] / heads;
    x = createReshape(node, *input, {batch, sequence, heads, headSize});
  }
  int64_t rotated = node.getIntAttr("rotary_embedding_dim", 0);
  if (rotated == 0)
    rotated = headSize;
  if (rotated < 2 || rotated > headSize || rotated % 2)
    return node.emitError()
           << "rotary_embedding_dim " << rotated
           << " must be even and at most the head size " << headSize;
  int64_t half = rotated / 2;
  Value cos = *cosCache, sin = *sinCache;
  if (node.operands.size() > 3 && node.operands[3]) {
    FailureOr<Value> positions = getIndicesOperand(node, 3);
    if (failed(positions))
      return failure();
    GatherOp::Properties props;
    props.axis = node.b.getI64IntegerAttr(0);
    FailureOr<Value> cosAt =
        createInferred<GatherOp>(node, {cos, *positions}, props);
    FailureOr<Value> sinAt =
        createInferred<GatherOp>(node, {sin, *positions}, props);
    if (failed(cosAt) || failed(sinAt))
      return failure();
    cos = *cosAt, sin = *sinAt;
  }
  SmallVector<int64_t> cacheShape = {batch, sequence, half};
  for (Value cache : {cos, sin})
    if (cast<RankedTensorType>(cache.getType()).getShape() !=
        ArrayRef<int64_t>(cacheShape))
      return node.emitError() << "the cos and sin caches (at the positions) "
                                 "must have shape [batch, sequence, "
                              << half << "]";
  cos = createReshape(node, cos, {batch, sequence, 1, half});
  sin = createReshape(node, sin, {batch, sequence, 1, half});
  Value turned = createAxisSlice(node, x, 3, 0, rotated);
  bool interleaved = node.getIntAttr("interleaved", 0) != 0;
  Value first, second;
  if (interleaved) {
    Value pairs =
        createReshape(node, turned, {batch, sequence, heads, half, 2});
    first = createReshape(node, createAxisSlice(node, pairs, 4, 0, 1),
                          {batch, sequence, heads, half});
    second = createReshape(node, createAxisSlice(node, pairs, 4, 1, 2),
                           {batch, sequence, heads, half});
  } else {
    first = createAxisSlice(node, turned, 3, 0, half);
    second = createAxisSlice(node, turned, 3, half, rotated);
  }
  Formula f(node, x);
  FailureOr<Value> real =
      f.apply<SubOp>(f.apply<MulOp>(cos, first), f.apply<MulOp>(sin, second));
  FailureOr<Value> imaginary =
      f.apply<AddOp>(f.apply<MulOp>(sin, first), f.apply<MulOp>(cos, second));
  if (failed(real) || failed(imaginary))
    return failure();
  Value result;
  if (interleaved) {
    SmallVector<int64_t> column = {batch, sequence, heads, half, 1};
    result = createReshape(
        node,
        concatLast(node, {createReshape(node, *real, column),
                          createReshape(node, *imaginary, column)}),
        {batch, sequence, heads, rotated});
  } else {
    result = concatLast(node, {*real, *imaginary});
  }
  if (rotated < headSize)
    result = concatLast(
        node, {result, createAxisSlice(node, x, 3, rotated, headSize)});
  if (type.getRank() == 3) {
    node.results.push_back(createReshape(node, result, shape));
    return success();
  }
  node.results.push_back(createTranspose(node, result, {0, 2, 1, 3}));
  return success();
}
