//===- ConstantMatch.h - reading kiln.constant operands in graph passes ---===//
#ifndef KILN_PASSES_CONSTANTMATCH_H
#define KILN_PASSES_CONSTANTMATCH_H

#include "dialects/Kiln/IR/KilnOps.h"

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

} // namespace kiln

#endif // KILN_PASSES_CONSTANTMATCH_H
