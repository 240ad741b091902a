//===- OnnxEinsum.cpp - ONNX Einsum ---------------------------------------===//
//
// Einsum of static shapes. Each operand's letters are first made distinct
// (a repeated letter takes the diagonal) and the letters no other operand
// and not the output names are summed away. Two operands then contract as
// one batched kiln.matmul: shared output letters are the batch, shared
// other letters the contraction, the rest the rows and columns. One or
// three and more operands multiply, broadcast over all letters, and sum
// the letters the output does not keep.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace kiln;

namespace {

/// An operand and the letter of each of its dimensions.
struct Term {
  Value value;
  std::string letters;
};

class EinsumBuilder {
public:
  explicit EinsumBuilder(NodeImporter &node) : node(node) {}
  LogicalResult build();

private:
  /// Parses the equation into `terms` and `output`, ellipses expanded to
  /// the digits '0', '1', ... (right-aligned across operands).
  LogicalResult parse();
  /// `term` with each repeated letter reduced to its diagonal.
  FailureOr<Term> takeDiagonals(Term term);
  /// `term` with the letters in `letters` summed away.
  FailureOr<Term> sum(Term term, StringRef letters);
  /// `term` transposed so that its letters follow `order` (a superset).
  FailureOr<Term> arrange(Term term, StringRef order);
  int64_t sizeOf(Term &term, char letter) {
    return cast<RankedTensorType>(term.value.getType())
        .getDimSize(term.letters.find(letter));
  }
  FailureOr<Value> contractPair(Term lhs, Term rhs);
  FailureOr<Value> multiplyAll(ArrayRef<Term> terms);

  NodeImporter &node;
  SmallVector<Term> terms;
  std::string output;
};

LogicalResult EinsumBuilder::parse() {
  std::string equation = node.getStringAttr("equation", "");
  llvm::erase(equation, ' ');
  size_t arrow = equation.find("->");
  std::string inputs = equation.substr(0, arrow);
  SmallVector<StringRef> parts;
  StringRef(inputs).split(parts, ',');
  if (parts.size() != node.operands.size())
    return node.emitError()
           << "the equation '" << equation << "' names " << parts.size()
           << " operands, the node has " << node.operands.size();
  int64_t ellipsisRank = 0;
  SmallVector<int64_t> ellipsisRanks;
  for (auto [i, part] : llvm::enumerate(parts)) {
    int64_t rank = node.getOperandType(i).getRank();
    size_t dots = part.find("...");
    int64_t named =
        static_cast<int64_t>(part.size()) - (dots == StringRef::npos ? 0 : 3);
    int64_t ellipsis = dots == StringRef::npos ? 0 : rank - named;
    if (ellipsis < 0 || (dots == StringRef::npos && named != rank))
      return node.emitError() << "'" << part << "' does not fit operand " << i
                              << " of rank " << rank;
    ellipsisRanks.push_back(ellipsis);
    ellipsisRank = std::max(ellipsisRank, ellipsis);
  }
  if (ellipsisRank > 10)
    return node.emitError() << "an ellipsis of more than 10 dimensions";
  auto expand = [&](StringRef part, int64_t ellipsis) -> std::string {
    size_t dots = part.find("...");
    if (dots == StringRef::npos)
      return part.str();
    std::string digits;
    for (int64_t d = ellipsisRank - ellipsis; d < ellipsisRank; ++d)
      digits.push_back(static_cast<char>('0' + d));
    return (part.substr(0, dots) + digits + part.substr(dots + 3)).str();
  };
  for (auto [i, part] : llvm::enumerate(parts)) {
    std::string letters = expand(part, ellipsisRanks[i]);
    for (char c : letters)
      if (!llvm::isAlpha(c) && !llvm::isDigit(c))
        return node.emitError() << "'" << part << "' is not a term of letters";
    terms.push_back({node.operands[i], letters});
  }
  if (arrow != std::string::npos) {
    output = expand(StringRef(equation).substr(arrow + 2), ellipsisRank);
    return success();
  }
  // Implicit output: the ellipsis, then the letters named once, sorted.
  std::string all;
  for (Term &term : terms)
    all += term.letters;
  for (int64_t d = 0; d < ellipsisRank; ++d)
    output.push_back(static_cast<char>('0' + d));
  std::string once;
  for (char c : all)
    if (llvm::isAlpha(c) && llvm::count(all, c) == 1)
      once.push_back(c);
  llvm::sort(once);
  output += once;
  return success();
}

FailureOr<Term> EinsumBuilder::takeDiagonals(Term term) {
  MLIRContext *ctx = node.b.getContext();
  for (size_t p = 0; p < term.letters.size(); ++p) {
    size_t q = term.letters.find(term.letters[p], p + 1);
    if (q == std::string::npos)
      continue;
    auto type = cast<RankedTensorType>(term.value.getType());
    int64_t rank = type.getRank();
    if (type.getDimSize(p) != type.getDimSize(q))
      return node.emitError() << "letter '" << term.letters[p]
                              << "' names dimensions of different sizes";
    AffineExpr size = getAffineConstantExpr(type.getDimSize(p), ctx);
    FailureOr<Value> rows = createIndexSequence(node, size, p, rank);
    FailureOr<Value> columns = createIndexSequence(node, size, q, rank);
    if (failed(rows) || failed(columns))
      return failure();
    Formula f(node, term.value);
    FailureOr<Value> onDiagonal =
        f.select(createInferred<EqualOp>(node, {*rows, *columns}), term.value,
                 f.constant(0));
    ReduceSumOp::Properties props;
    props.axes = node.b.getDenseI64ArrayAttr({static_cast<int64_t>(q)});
    FailureOr<Value> diagonal =
        failed(onDiagonal)
            ? onDiagonal
            : createInferred<ReduceSumOp>(node, *onDiagonal, props);
    if (failed(diagonal))
      return failure();
    term.value = *diagonal;
    term.letters.erase(q, 1);
    --p;
  }
  return term;
}

FailureOr<Term> EinsumBuilder::sum(Term term, StringRef letters) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (auto [d, c] : llvm::enumerate(term.letters)) {
    if (letters.contains(c))
      axes.push_back(d);
    else
      kept.push_back(c);
  }
  if (axes.empty())
    return term;
  ReduceSumOp::Properties props;
  props.axes = node.b.getDenseI64ArrayAttr(axes);
  FailureOr<Value> summed =
      createInferred<ReduceSumOp>(node, term.value, props);
  if (failed(summed))
    return failure();
  return Term{*summed, kept};
}

FailureOr<Term> EinsumBuilder::arrange(Term term, StringRef order) {
  SmallVector<int64_t> perm;
  std::string letters;
  for (char c : order) {
    size_t d = term.letters.find(c);
    if (d != std::string::npos) {
      perm.push_back(d);
      letters.push_back(c);
    }
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return term;
  return Term{createTranspose(node, term.value, perm), letters};
}

FailureOr<Value> EinsumBuilder::contractPair(Term lhs, Term rhs) {
  std::string batch, rows, contracted, columns;
  for (char c : lhs.letters) {
    bool shared = rhs.letters.find(c) != std::string::npos;
    bool kept = output.find(c) != std::string::npos;
    (shared ? (kept ? batch : contracted) : rows).push_back(c);
  }
  for (char c : rhs.letters)
    if (lhs.letters.find(c) == std::string::npos)
      columns.push_back(c);
  FailureOr<Term> left = arrange(lhs, batch + rows + contracted);
  FailureOr<Term> right = arrange(rhs, batch + contracted + columns);
  if (failed(left) || failed(right))
    return failure();
  // [batch..., rows, contracted] x [batch..., contracted, columns]; a batch
  // letter of size 1 on one side broadcasts, as matmul's batch does.
  auto product = [&](Term &term, StringRef letters) {
    int64_t size = 1;
    for (char c : letters)
      size *= sizeOf(term, c);
    return size;
  };
  SmallVector<int64_t> lhsShape, rhsShape, resultShape;
  for (char c : batch) {
    lhsShape.push_back(sizeOf(*left, c));
    rhsShape.push_back(sizeOf(*right, c));
    resultShape.push_back(std::max(sizeOf(*left, c), sizeOf(*right, c)));
  }
  lhsShape.append({product(*left, rows), product(*left, contracted)});
  rhsShape.append({product(*right, contracted), product(*right, columns)});
  for (char c : rows)
    resultShape.push_back(sizeOf(*left, c));
  for (char c : columns)
    resultShape.push_back(sizeOf(*right, c));
  FailureOr<Value> matmul = createInferred<MatMulOp>(
      node, {createReshape(node, left->value, lhsShape),
             createReshape(node, right->value, rhsShape)});
  if (failed(matmul))
    return failure();
  FailureOr<Term> result = arrange(
      {createReshape(node, *matmul, resultShape), batch + rows + columns},
      output);
  if (failed(result))
    return failure();
  return result->value;
}

FailureOr<Value> EinsumBuilder::multiplyAll(ArrayRef<Term> operands) {
  // Every letter, the output's first, each operand laid along them.
  std::string order = output;
  for (const Term &term : operands)
    for (char c : term.letters)
      if (order.find(c) == std::string::npos)
        order.push_back(c);
  Value product;
  for (const Term &term : operands) {
    FailureOr<Term> arranged = arrange(term, order);
    if (failed(arranged))
      return failure();
    SmallVector<int64_t> shape;
    for (char c : order)
      shape.push_back(arranged->letters.find(c) == std::string::npos
                          ? 1
                          : sizeOf(*arranged, c));
    Value spread = createReshape(node, arranged->value, shape);
    if (!product) {
      product = spread;
      continue;
    }
    FailureOr<Value> multiplied =
        createInferred<MulOp>(node, {product, spread});
    if (failed(multiplied))
      return failure();
    product = *multiplied;
  }
  FailureOr<Term> summed =
      sum({product, order}, StringRef(order).drop_front(output.size()));
  if (failed(summed))
    return failure();
  return summed->value;
}

LogicalResult EinsumBuilder::build() {
  for (unsigned i = 0; i < node.operands.size(); ++i) {
    if (failed(node.getOperand(i)) ||
        failed(requireNumeric(node, node.operands[i])) ||
        failed(
            requireSameElementType(node, node.operands[0], node.operands[i])))
      return failure();
    if (!node.getOperandType(i).hasStaticShape())
      return node.emitError() << "operand " << i << " must have a static shape";
  }
  if (node.operands.empty())
    return node.emitError() << "Einsum needs an operand";
  if (failed(parse()))
    return failure();
  for (char c : output)
    if (llvm::count(output, c) != 1 || llvm::none_of(terms, [&](Term &term) {
          return term.letters.find(c) != std::string::npos;
        }))
      return node.emitError() << "output letter '" << c
                              << "' is repeated or names no input dimension";
  // Distinct letters per term, and the ones only it names summed away.
  for (size_t i = 0; i < terms.size(); ++i) {
    FailureOr<Term> term = takeDiagonals(terms[i]);
    if (failed(term))
      return failure();
    std::string alone;
    for (char c : term->letters) {
      bool elsewhere = output.find(c) != std::string::npos;
      for (size_t j = 0; j < terms.size(); ++j)
        elsewhere |= j != i && terms[j].letters.find(c) != std::string::npos;
      if (!elsewhere)
        alone.push_back(c);
    }
    term = sum(*term, alone);
    if (failed(term))
      return failure();
    terms[i] = *term;
  }
  FailureOr<Value> result =
      terms.size() == 2 ? contractPair(terms[0], terms[1]) : multiplyAll(terms);
  if (failed(result))
    return failure();
  node.results.push_back(*result);
  return success();
}

} // namespace

LogicalResult kiln::importEinsum(NodeImporter &node) {
  return EinsumBuilder(node).build();
}
