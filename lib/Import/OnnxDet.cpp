//===- OnnxDet.cpp - importer of ONNX Det ---------------------------------===//
//
// The determinant of small square matrices by cofactor expansion along the
// first row, elementwise over the batch: n! products of n entries, so only
// up to 4x4 (24 products), where it needs no pivoting and loses no
// accuracy to elimination.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/OnnxOpUtils.h"

#include "dialects/Kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

/// The largest matrix Det expands.
static constexpr int64_t kMaxDetSize = 4;

namespace {

/// Builds the expansion over the entries of one batch of matrices.
class Determinant {
public:
  Determinant(NodeImporter &node, Value x) : node(node) {
    auto type = cast<RankedTensorType>(x.getType());
    int64_t n = type.getShape().back();
    SmallVector<int64_t> batch(type.getShape().drop_back(2));
    for (int64_t i = 0; i < n; ++i) {
      Value row = createAxisSlice(node, x, type.getRank() - 2, i, i + 1);
      for (int64_t j = 0; j < n; ++j)
        entries.push_back(createReshape(
            node, createAxisSlice(node, row, type.getRank() - 1, j, j + 1),
            batch));
    }
    size = n;
  }

  /// The determinant of the submatrix of `rows` x `columns`.
  Value expand(ArrayRef<int64_t> rows, ArrayRef<int64_t> columns) {
    if (rows.size() == 1)
      return entry(rows[0], columns[0]);
    Value sum;
    for (size_t k = 0; k < columns.size(); ++k) {
      SmallVector<int64_t> rest(columns);
      rest.erase(rest.begin() + k);
      Value term = apply<MulOp>(entry(rows[0], columns[k]),
                                expand(rows.drop_front(), rest));
      if (!sum)
        sum = term;
      else
        sum = k % 2 ? apply<SubOp>(sum, term) : apply<AddOp>(sum, term);
    }
    return sum;
  }

  int64_t size;

private:
  Value entry(int64_t i, int64_t j) { return entries[i * size + j]; }
  template <typename OpTy> Value apply(Value lhs, Value rhs) {
    return createMatching<OpTy>(node, {lhs, rhs});
  }

  NodeImporter &node;
  SmallVector<Value> entries;
};

} // namespace

LogicalResult kiln::importDet(NodeImporter &node) {
  FailureOr<Value> x = node.getOperand(0);
  if (failed(x) || failed(requireReal(node, *x)))
    return failure();
  auto type = cast<RankedTensorType>(x->getType());
  if (!type.hasStaticShape() || type.getRank() < 2 ||
      type.getShape().back() != type.getShape()[type.getRank() - 2])
    return node.emitError() << "the input must be a static batch of square "
                               "matrices [..., M, M]; it is "
                            << type;
  int64_t n = type.getShape().back();
  if (n < 1 || n > kMaxDetSize)
    return node.emitError() << "determinants of " << n << "x" << n
                            << " matrices are not supported; Kiln expands "
                               "them up to "
                            << kMaxDetSize << "x" << kMaxDetSize;
  Determinant det(node, *x);
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, n));
  node.results.push_back(det.expand(all, all));
  return success();
}
