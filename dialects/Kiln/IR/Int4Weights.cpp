//===- Int4Weights.cpp - the constants of kiln.int4_matmul ----------------===//
#include "dialects/Kiln/IR/Int4Weights.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include <cassert>

using namespace mlir;
using namespace kiln;

Int4Weights kiln::createInt4Weights(
    OpBuilder &b, Location loc, int64_t k, int64_t n, int64_t blockSize,
    int64_t width, function_ref<int(int64_t row, int64_t col)> integer,
    function_ref<float(int64_t block, int64_t col)> scale,
    function_ref<int(int64_t block, int64_t col)> zeroPoint) {
  assert(blockSize % 8 == 0 && width > 0 && "blocks hold pairs of groups of 4");
  int64_t panels = llvm::divideCeil(n, width);
  int64_t blocks = llvm::divideCeil(k, blockSize);
  int64_t padded = panels * width, depth = blocks * blockSize;
  // Each block's zero point: 8 without them, and past N.
  auto zero = [&](int64_t block, int64_t col) {
    if (!zeroPoint || col >= n)
      return 8;
    int z = zeroPoint(block, col);
    assert(z >= 0 && z <= 15 && "4-bit zero points");
    return z;
  };
  // 0 past K and N.
  auto value = [&](int64_t row, int64_t col) {
    if (row >= k || col >= n)
      return 0;
    int q = integer(row, col);
    assert(q + zero(row / blockSize, col) >= 0 &&
           q + zero(row / blockSize, col) <= 15 && "4-bit integers");
    return q;
  };

  // Panels of [depth / 8] pairs of groups of 4 rows; in each byte, the low
  // 4 bits hold group 2g and the high 4 bits group 2g + 1, offset by their
  // block's zero point.
  auto panelType = RankedTensorType::get({panels, depth / 8, width, 4},
                                         b.getI8Type());
  ElementsAttr packed = createElements(panelType, [&](MutableArrayRef<char> out) {
    char *next = out.data();
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t pair = 0; pair < depth / 8; ++pair)
        for (int64_t j = 0; j < width; ++j)
          for (int64_t lane = 0; lane < 4; ++lane) {
            int64_t col = p * width + j, row = pair * 8 + lane;
            int z = zero(row / blockSize, col);
            unsigned low = value(row, col) + z;
            unsigned high = value(row + 4, col) + z;
            *next++ = static_cast<char>(low | (high << 4));
          }
  });
  // Scales (and zero points) panel by panel ([panels, blocks, width]), and
  // each column's sum of its scaled integers over the real rows.
  auto blockType = [&](Type element) {
    return RankedTensorType::get({panels, blocks, width}, element);
  };
  std::vector<float> scales(panels * blocks * width, 0.0f), sums(padded, 0.0f);
  std::vector<int8_t> zeros(panels * blocks * width, 8);
  for (int64_t col = 0; col < n; ++col)
    for (int64_t block = 0; block < blocks; ++block) {
      int64_t at = ((col / width) * blocks + block) * width + col % width;
      float s = scale(block, col);
      scales[at] = s;
      zeros[at] = static_cast<int8_t>(zero(block, col));
      int64_t blockSum = 0;
      for (int64_t row = block * blockSize;
           row < std::min(k, (block + 1) * blockSize); ++row)
        blockSum += value(row, col);
      sums[col] += s * static_cast<float>(blockSum);
    }
  auto sumType = RankedTensorType::get({padded}, b.getF32Type());
  Int4Weights weights;
  weights.panels = ConstantOp::create(b, loc, packed);
  weights.scales = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(blockType(b.getF32Type()), ArrayRef<float>(scales)));
  weights.columnSums = ConstantOp::create(
      b, loc, DenseElementsAttr::get(sumType, ArrayRef<float>(sums)));
  if (zeroPoint)
    weights.zeroPoints = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(blockType(b.getI8Type()), ArrayRef<int8_t>(zeros)));
  return weights;
}
