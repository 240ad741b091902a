//===- ConstantMatch.h - reading kiln.constant operands in graph passes ---===//
#ifndef KILN_PASSES_CONSTANTMATCH_H
#define KILN_PASSES_CONSTANTMATCH_H

#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"

#include <cstring>

#include <optional>

namespace kiln {

/// The elements of `value` when a kiln.constant with dense elements defines
/// it, otherwise null.
inline mlir::DenseElementsAttr getConstantElements(mlir::Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  return constant ? llvm::dyn_cast<mlir::DenseElementsAttr>(constant.getValue())
                  : mlir::DenseElementsAttr();
}

/// The value of a splat f32 kiln.constant.
inline std::optional<float> getSplatF32(mlir::Value value) {
  mlir::DenseElementsAttr dense = getConstantElements(value);
  if (!dense || !dense.isSplat() || !dense.getElementType().isF32())
    return std::nullopt;
  return dense.getSplatValue<float>();
}

/// The integers of constant `elements` (8-bit ones read as unsigned with
/// `isUnsigned`), or nullopt for a blob without bytes.
inline std::optional<llvm::SmallVector<int64_t>>
getIntegers(mlir::ElementsAttr elements, bool isUnsigned) {
  auto extend = [&](const llvm::APInt &bits) {
    return isUnsigned ? static_cast<int64_t>(bits.getZExtValue())
                      : bits.getSExtValue();
  };
  llvm::SmallVector<int64_t> values;
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(elements)) {
    for (const llvm::APInt &bits : dense.getValues<llvm::APInt>())
      values.push_back(extend(bits));
    return values;
  }
  std::optional<llvm::ArrayRef<char>> bytes = getRawBytes(elements);
  if (!bytes)
    return std::nullopt;
  unsigned width = elements.getElementType().getIntOrFloatBitWidth();
  for (size_t i = 0; i < bytes->size(); i += width / 8) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes->data() + i, width / 8);
    values.push_back(extend(llvm::APInt(width, raw)));
  }
  return values;
}

} // namespace kiln

#endif // KILN_PASSES_CONSTANTMATCH_H
