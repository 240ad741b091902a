//===- Panels.h - image rows in matmul column panels ------------*- C++ -*-===//
//
// Convolutions hand their pixels to the packed matmul kernel as column
// panels of `width` pixels. Copying whole rows, or equal parts of one, into
// a panel keeps every copy a contiguous read; this says how rows split.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_IR_PANELS_H
#define KILN_DIALECT_KILN_IR_PANELS_H

#include <cstdint>
#include <optional>

namespace kiln {

/// An image's rows x rowLength pixels as panels: with `rowParts`, each of
/// the `groups` = rows rows is `split` panels; otherwise each of the
/// `groups` panels holds `split` whole rows.
struct RowPanelSplit {
  bool rowParts;
  int64_t groups;
  int64_t split;
};

inline std::optional<RowPanelSplit> splitRowsIntoPanels(int64_t rows,
                                                        int64_t rowLength,
                                                        int64_t width) {
  if (rows <= 0 || rowLength <= 0 || width <= 0)
    return std::nullopt;
  if (rowLength % width == 0)
    return RowPanelSplit{true, rows, rowLength / width};
  if (width % rowLength == 0 && rows % (width / rowLength) == 0)
    return RowPanelSplit{false, rows / (width / rowLength), width / rowLength};
  return std::nullopt;
}

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_PANELS_H
