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
    function_ref<float(int64_t block, int64_t col)> scale) {
  assert(blockSize % 8 == 0 && width > 0 && "blocks hold pairs of groups of 4");
  int64_t panels = llvm::divideCeil(n, width);
  int64_t blocks = llvm::divideCeil(k, blockSize);
  int64_t padded = panels * width, depth = blocks * blockSize;
  // 0 past K and N.
  auto value = [&](int64_t row, int64_t col) {
    if (row >= k || col >= n)
      return 0;
    int q = integer(row, col);
    assert(q >= -8 && q <= 7 && "4-bit integers");
    return q;
  };

  // Panels of [depth / 8] pairs of groups of 4 rows; in each byte, the low
  // 4 bits hold group 2g and the high 4 bits group 2g + 1, offset by 8.
  auto panelType = RankedTensorType::get({panels, depth / 8, width, 4},
                                         b.getI8Type());
  ElementsAttr packed = createElements(panelType, [&](MutableArrayRef<char> out) {
    char *next = out.data();
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t pair = 0; pair < depth / 8; ++pair)
        for (int64_t j = 0; j < width; ++j)
          for (int64_t lane = 0; lane < 4; ++lane) {
            int64_t col = p * width + j, row = pair * 8 + lane;
            unsigned low = value(row, col) + 8;
            unsigned high = value(row + 4, col) + 8;
            *next++ = static_cast<char>(low | (high << 4));
          }
  });
  // Scales panel by panel ([panels, blocks, width]), and each column's sum
  // of its scaled integers over the real rows.
  auto scaleType = RankedTensorType::get({panels, blocks, width}, b.getF32Type());
  std::vector<float> scales(panels * blocks * width, 0.0f), sums(padded, 0.0f);
  for (int64_t col = 0; col < n; ++col)
    for (int64_t block = 0; block < blocks; ++block) {
      float s = scale(block, col);
      scales[((col / width) * blocks + block) * width + col % width] = s;
      int64_t blockSum = 0;
      for (int64_t row = block * blockSize;
           row < std::min(k, (block + 1) * blockSize); ++row)
        blockSum += value(row, col);
      sums[col] += s * static_cast<float>(blockSum);
    }
  auto sumType = RankedTensorType::get({padded}, b.getF32Type());
  return {ConstantOp::create(b, loc, packed),
          ConstantOp::create(
              b, loc, DenseElementsAttr::get(scaleType, ArrayRef<float>(scales))),
          ConstantOp::create(
              b, loc, DenseElementsAttr::get(sumType, ArrayRef<float>(sums)))};
}
