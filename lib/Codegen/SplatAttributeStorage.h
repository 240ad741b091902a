//===- SplatAttributeStorage.h - stored splat attributes ------*- C++ -*-===//
//
// Splat pruning can store a scene's attributes (all but the positions) at
// fewer bits where the quality budget allows: float16, or int8 with an
// affine map per column. The search renders candidates whose float inputs
// are rounded exactly as the stored scene will read them, so these are the
// one definition of that rounding.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_SPLATATTRIBUTESTORAGE_H
#define KILN_LIB_CODEGEN_SPLATATTRIBUTESTORAGE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <vector>

namespace kiln {

enum class SplatStorage { Float32, Float16, Int8 };

llvm::StringRef getSplatStorageName(SplatStorage storage);

/// An attribute's int8 map: column c (of each Gaussian's row of `columns`
/// values) reads as fma(q, scales[c], offsets[c]). The map spreads the
/// column's range over q in [-127, 127] around its midpoint.
struct SplatInt8Map {
  std::vector<float> scales, offsets;

  /// The map of `values`, rows of `columns` values each.
  static SplatInt8Map fit(llvm::ArrayRef<float> values, int64_t columns);
  /// x's code in column c.
  int8_t quantize(float x, int64_t column) const;
  /// What code q of column c reads as.
  float dequantize(int8_t q, int64_t column) const;
};

/// x as an attribute stored as `storage` reads it back (column c of its
/// row, for int8's map).
float roundAsStored(float x, SplatStorage storage, const SplatInt8Map &map,
                    int64_t column);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_SPLATATTRIBUTESTORAGE_H
