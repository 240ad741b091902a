//===- OnnxTfIdfVectorizer.cpp - importer of ONNX TfIdfVectorizer ---------===//
//
// TfIdfVectorizer counts, in each row of integer tokens, the occurrences
// of a constant pool of n-grams, whose tokens may lie `skip + 1` apart.
// Its output shape is static, so it is spelled in kiln ops: for every
// n-gram length n and token distance k the row's n-tuples are n shifted
// slices, compared with the pool's n-grams of that length at once
// ([B, positions, grams]), and-ed, and summed over the positions; a
// constant 0/1 matrix then adds each gram's count to its output column,
// and the weighting (TF, IDF, TFIDF) is elementwise.
//
// Which tuples count follows ONNX's reference: unigrams are counted once
// (at distance 1), longer grams at every distance from 1 to
// max_skip_count + 1, and only grams of min_gram_length to
// max_gram_length.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The pool's n-grams of one length that are counted.
struct GramSet {
  int64_t length;
  SmallVector<SmallVector<int64_t>> grams;
  SmallVector<int64_t> columns; // output column of each gram
};

/// `v` with its bools as 0.0 and 1.0.
Value toFloat(NodeImporter &node, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return CastOp::create(node.b, node.loc, type.clone(node.b.getF32Type()), v);
}

/// [B, grams] counts of `set`'s grams in the rows of `x` ([B, C] int64).
Value countGrams(NodeImporter &node, Value x, const GramSet &set,
                 int64_t maxDistance) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rows = type.getDimSize(0), columns = type.getDimSize(1);
  int64_t grams = static_cast<int64_t>(set.grams.size());
  Value total;
  // Unigrams are counted at distance 1 only.
  int64_t distances = set.length == 1 ? 1 : maxDistance;
  for (int64_t k = 1; k <= distances; ++k) {
    int64_t positions = columns - (set.length - 1) * k;
    if (positions <= 0)
      break;
    Value match;
    for (int64_t i = 0; i < set.length; ++i) {
      Value tokens = createAxisSlice(node, x, 1, i * k, i * k + positions);
      tokens =
          createReshape(node, tokens, ArrayRef<int64_t>{rows, positions, 1});
      SmallVector<int64_t> wanted;
      for (const SmallVector<int64_t> &gram : set.grams)
        wanted.push_back(gram[i]);
      Value pool = ConstantOp::create(
          node.b, node.loc,
          DenseElementsAttr::get(
              RankedTensorType::get({grams}, node.b.getI64Type()),
              ArrayRef<int64_t>(wanted)));
      Value equal = createMatching<EqualOp>(node, {tokens, pool});
      match = match ? createMatching<AndOp>(node, {match, equal}) : equal;
    }
    ReduceSumOp::Properties props;
    props.axes = node.b.getDenseI64ArrayAttr({1});
    Value counts =
        createMatching<ReduceSumOp>(node, toFloat(node, match), props);
    total = total ? createMatching<AddOp>(node, {total, counts}) : counts;
  }
  return total;
}

} // namespace

LogicalResult kiln::importTfIdfVectorizer(NodeImporter &node) {
  FailureOr<Value> input = node.getOperand(0);
  if (failed(input))
    return failure();
  auto type = cast<RankedTensorType>(input->getType());
  if (!type.hasStaticShape() || type.getRank() < 1 || type.getRank() > 2 ||
      (!type.getElementType().isInteger(64) &&
       !type.getElementType().isInteger(32)))
    return node.emitError() << "the input must be static [C] or [B, C] int32 "
                               "or int64 tokens; it is "
                            << type;
  std::string mode = node.getStringAttr("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return node.emitError()
           << "mode must be TF, IDF or TFIDF; it is '" << mode << "'";
  int64_t minLength = node.getIntAttr("min_gram_length", 0);
  int64_t maxLength = node.getIntAttr("max_gram_length", 0);
  int64_t maxSkip = node.getIntAttr("max_skip_count", 0);
  SmallVector<int64_t> counts =
      node.getIntsAttr("ngram_counts").value_or(SmallVector<int64_t>());
  SmallVector<int64_t> indexes =
      node.getIntsAttr("ngram_indexes").value_or(SmallVector<int64_t>());
  SmallVector<int64_t> pool =
      node.getIntsAttr("pool_int64s").value_or(SmallVector<int64_t>());
  if (node.getAttr("pool_strings"))
    return node.emitError() << "pool_strings is not supported; Kiln has no "
                               "string tensors";
  if (minLength < 1 || maxLength < minLength || maxSkip < 0 || counts.empty() ||
      indexes.empty())
    return node.emitError() << "needs 1 <= min_gram_length <= "
                               "max_gram_length, max_skip_count >= 0, "
                               "ngram_counts and ngram_indexes";
  int64_t outputs = *llvm::max_element(indexes) + 1;
  if (*llvm::min_element(indexes) < 0 || outputs > (int64_t(1) << 24))
    return node.emitError() << "ngram_indexes must lie in [0, 2^24)";

  // The pool's grams, in order: counts[n - 1] is where those of length n
  // start; every gram takes the next output index, counted or not.
  SmallVector<GramSet> sets;
  int64_t gram = 0;
  for (int64_t n = 1; n <= static_cast<int64_t>(counts.size()); ++n) {
    int64_t begin = counts[n - 1];
    int64_t end = n < static_cast<int64_t>(counts.size())
                      ? counts[n]
                      : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()))
      return node.emitError() << "ngram_counts do not fit pool_int64s";
    GramSet set{n, {}, {}};
    for (int64_t at = begin; at + n <= end; at += n, ++gram) {
      if (gram >= static_cast<int64_t>(indexes.size()))
        return node.emitError() << "ngram_indexes has fewer entries than "
                                   "the pool has n-grams";
      if (n < minLength || n > maxLength)
        continue;
      set.grams.emplace_back(pool.begin() + at, pool.begin() + at + n);
      set.columns.push_back(indexes[gram]);
    }
    if (!set.grams.empty())
      sets.push_back(std::move(set));
  }

  int64_t rows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  int64_t columns = type.getShape().back();
  Value x = *input;
  if (type.getElementType().isInteger(32))
    x = CastOp::create(node.b, node.loc, type.clone(node.b.getI64Type()), x);
  x = createReshape(node, x, ArrayRef<int64_t>{rows, columns});

  // [B, outputs] frequencies: each set's counts times its 0/1 columns.
  Value frequencies;
  for (const GramSet &set : sets) {
    Value found = countGrams(node, x, set, maxSkip + 1);
    if (!found)
      continue;
    int64_t grams = static_cast<int64_t>(set.grams.size());
    SmallVector<float> scatter(grams * outputs, 0.0f);
    for (auto [j, column] : llvm::enumerate(set.columns))
      scatter[j * outputs + column] = 1.0f;
    Value matrix = ConstantOp::create(
        node.b, node.loc,
        DenseElementsAttr::get(
            RankedTensorType::get({grams, outputs}, node.b.getF32Type()),
            ArrayRef<float>(scatter)));
    Value spread = createMatching<MatMulOp>(node, {found, matrix});
    frequencies = frequencies
                      ? createMatching<AddOp>(node, {frequencies, spread})
                      : spread;
  }
  auto outputType = RankedTensorType::get({rows, outputs}, node.b.getF32Type());
  Value zero = createScalar(node, node.b.getF32Type(), 0);
  if (!frequencies)
    frequencies =
        BroadcastOp::create(node.b, node.loc, outputType, zero, ValueRange());

  SmallVector<float> weights;
  if (const onnx::AttributeProto *attr = node.getAttr("weights"))
    weights.assign(attr->floats().begin(), attr->floats().end());
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != outputs)
    return node.emitError() << "weights has " << weights.size()
                            << " entries for " << outputs << " outputs";
  Value result = frequencies;
  if (mode == "IDF") {
    Value present = createMatching<LessOp>(node, {zero, frequencies});
    result = toFloat(node, present);
  }
  if (mode != "TF" && !weights.empty()) {
    Value weight = ConstantOp::create(
        node.b, node.loc,
        DenseElementsAttr::get(
            RankedTensorType::get({outputs}, node.b.getF32Type()),
            ArrayRef<float>(weights)));
    result = createMatching<MulOp>(node, {result, weight});
  }
  SmallVector<int64_t> shape;
  if (type.getRank() == 2)
    shape.push_back(rows);
  shape.push_back(outputs);
  node.results.push_back(createReshape(node, result, shape));
  return success();
}
