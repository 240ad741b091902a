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

/// The values of f32 constant `elements`, or nullopt for a blob without
/// bytes.
inline std::optional<llvm::SmallVector<float>>
getFloats(mlir::ElementsAttr elements) {
  if (!elements.getElementType().isF32())
    return std::nullopt;
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(elements))
    return llvm::SmallVector<float>(dense.getValues<float>());
  std::optional<llvm::ArrayRef<char>> bytes = getRawBytes(elements);
  if (!bytes)
    return std::nullopt;
  llvm::SmallVector<float> values(bytes->size() / sizeof(float));
  std::memcpy(values.data(), bytes->data(), values.size() * sizeof(float));
  return values;
}

/// The one value of a 0-D constant `value`, as a double (8-bit integers
/// read as unsigned with `isUnsigned`).
inline std::optional<double> getScalar(mlir::Value value, bool isUnsigned) {
  mlir::DenseElementsAttr elements = getConstantElements(value);
  if (!elements || elements.getType().getRank() != 0)
    return std::nullopt;
  if (elements.getElementType().isF32())
    return *elements.getValues<float>().begin();
  std::optional<llvm::SmallVector<int64_t>> integers =
      getIntegers(elements, isUnsigned);
  if (!integers || integers->size() != 1)
    return std::nullopt;
  return double((*integers)[0]);
}

/// Whether `a` and `b` are the same value or equal 0-D constants.
inline bool sameScalar(mlir::Value a, mlir::Value b, bool isUnsigned) {
  if (a == b)
    return true;
  std::optional<double> x = getScalar(a, isUnsigned),
                        y = getScalar(b, isUnsigned);
  return x && y && *x == *y;
}

/// The kiln.quantize whose result `dequantize` reads back with the same
/// constant per-tensor scale and zero point (a QDQ model's quantized
/// activation), or null.
inline QuantizeOp matchActivationQdq(DequantizeOp dequantize) {
  auto quantize = dequantize.getInput().getDefiningOp<QuantizeOp>();
  if (!quantize || dequantize.getAxis() || quantize.getAxis() ||
      dequantize.getInputUnsigned() != quantize.getResultUnsigned())
    return nullptr;
  bool isUnsigned = quantize.getResultUnsigned();
  if (!getScalar(quantize.getZeroPoint(), isUnsigned) ||
      !getScalar(quantize.getScale(), false) ||
      !sameScalar(quantize.getScale(), dequantize.getScale(), false) ||
      !sameScalar(quantize.getZeroPoint(), dequantize.getZeroPoint(),
                  isUnsigned))
    return nullptr;
  return quantize;
}

/// The filter of `conv` when it is a constant whose bytes can be read and
/// the convolution is f32 with one group and static shapes (what the
/// passes that transform filters at compile time rewrite), otherwise null.
inline ConstantOp matchConstantFilter(Conv2DOp conv) {
  auto filter = conv.getFilter().getDefiningOp<ConstantOp>();
  auto inputType =
      llvm::cast<mlir::RankedTensorType>(conv.getInput().getType());
  if (!filter || conv.getGroups() != 1 || !inputType.hasStaticShape() ||
      !conv.getType().hasStaticShape() || !inputType.getElementType().isF32() ||
      !getRawBytes(filter.getValue()))
    return nullptr;
  return filter;
}

} // namespace kiln

#endif // KILN_PASSES_CONSTANTMATCH_H
