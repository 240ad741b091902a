//===- PanelKernels.h - pieces of the integer panel kernels -----*- C++ -*-===//
//
// The int8 and int4 kernels share their frame: an scf.parallel over weight
// panels and blocks of rows, each row's 4 bytes of a group broadcast to a
// register, x86's byte multiply-add (no vector-dialect op expresses
// vpmaddubsw or vpmaddwd, so they are called by their LLVM intrinsic
// names), and stores that skip the rows past the end.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_LINALGTOCPU_PANELKERNELS_H
#define KILN_LIB_CONVERSION_LINALGTOCPU_PANELKERNELS_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// 32-bit lanes (columns) per AVX2 register.
inline constexpr int64_t kPanelLanes = 8;

/// The body of an scf.parallel over (panel, block of `blockRows` rows),
/// created at `b`'s insertion point, which moves into the body.
struct RowBlockLoop {
  mlir::Value panel, firstRow;
  /// The index of each row of the block, clamped to the last row: rows
  /// past the end read the last one (the loads stay in bounds) and are
  /// not stored.
  llvm::SmallVector<mlir::Value> rows;
};
RowBlockLoop createRowBlockLoop(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value rowCount, int64_t panels,
                                int64_t blockRows);

/// The 4 bytes `rows[row, group, 0..3]` repeated over a vector of
/// `4 * lanes` bytes.
mlir::Value broadcastRowGroup(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Value rows, mlir::Value row,
                              mlir::Value group, int64_t lanes = kPanelLanes);

/// `sums` plus the products of `rows` (uint8) and `weights` (int8) summed
/// over groups of four bytes, in `lanes` int32 lanes (8: AVX2, 16:
/// AVX-512BW): vpmaddubsw adds pairs into 16 bits, vpmaddwd with `ones`
/// adds those pairs; with `vnni` (AVX512-VNNI, 16 lanes), one vpdpbusd
/// does all three steps.
mlir::Value createByteDotProduct(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value sums, mlir::Value rows,
                                 mlir::Value weights, mlir::Value ones,
                                 int64_t lanes = kPanelLanes,
                                 bool vnni = false);

/// Stores `sums` (per row of the block, its panel's registers of `lanes`
/// columns in order) into `out[row, panel, columns]`, for the rows of the
/// block before `rowCount`.
void storeRowBlock(mlir::OpBuilder &b, mlir::Location loc,
                   const RowBlockLoop &loop, mlir::ValueRange sums,
                   mlir::Value out, mlir::Value rowCount,
                   int64_t lanes = kPanelLanes);

} // namespace kiln

#endif // KILN_LIB_CONVERSION_LINALGTOCPU_PANELKERNELS_H
