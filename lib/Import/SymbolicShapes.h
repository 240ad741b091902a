//===- SymbolicShapes.h - shapes in terms of named dimensions ---*- C++ -*-===//
//
// While importing, every tensor's shape is known as affine expressions over
// the model's named dimensions (symbol k is the module's #kiln.dim k): a
// constant for a fixed size, `s0`, `s0 * 12`, `s0 + s1`... The same holds
// for the contents of the small int64 (or int32, as Paddle's exporter casts
// them) tensors exporters compute shapes with (Shape -> Gather -> Concat ->
// Reshape), so a reshape to [batch, seq, 12,
// 32] keeps 12 and 32 static and knows its two dynamic sizes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_IMPORT_SYMBOLICSHAPES_H
#define KILN_LIB_IMPORT_SYMBOLICSHAPES_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kiln {

/// A shape, or the elements of a shape-like int64 tensor, as expressions.
using SymbolicInts = llvm::SmallVector<mlir::AffineExpr>;

/// The static sizes of `shape`: constants, and ShapedType::kDynamic for
/// everything that depends on a named dimension.
llvm::SmallVector<int64_t> getStaticSizes(llvm::ArrayRef<mlir::AffineExpr> shape);

/// Constant expressions for `values`.
SymbolicInts getConstantInts(mlir::MLIRContext *context,
                             llvm::ArrayRef<int64_t> values);

/// The ONNX broadcast of two shapes: aligned to the right, a 1 takes the
/// other size, equal sizes stay, and a fixed size other than 1 wins over a
/// named one (which must then have that size at run time). Fails for two
/// different named sizes.
mlir::FailureOr<SymbolicInts> broadcastShapes(llvm::ArrayRef<mlir::AffineExpr> a,
                                              llvm::ArrayRef<mlir::AffineExpr> b);

/// `expr` in its simplest form, so that equal sizes compare equal
/// (`(s0 + s1) - s0` is `s1`).
mlir::AffineExpr simplify(mlir::AffineExpr expr);

/// The least and greatest value `expr` takes when symbol k ranges over
/// `ranges[k]` (inclusive); nullopt for expressions other than sums,
/// products (with constants, or of sizes), and divisions and remainders by
/// positive constants.
std::optional<std::pair<int64_t, int64_t>>
getBounds(mlir::AffineExpr expr,
          llvm::ArrayRef<std::pair<int64_t, int64_t>> ranges);

/// The product of `values` (1 for none).
mlir::AffineExpr getProduct(mlir::MLIRContext *context,
                            llvm::ArrayRef<mlir::AffineExpr> values);

/// `dividend / divisor` when it is exact as a product of a constant and
/// named dimensions (e.g. `s0 * s1 * 384 / (s0 * 12)` is `s1 * 32`).
std::optional<mlir::AffineExpr> divideExactly(mlir::AffineExpr dividend,
                                              mlir::AffineExpr divisor);

/// The shape of `op`'s only result, given its operands' shapes; fails for
/// ops whose result shape the importer sets itself (reshape, broadcast,
/// range) or that need static shapes.
mlir::FailureOr<SymbolicInts> inferSymbolicShape(
    mlir::Operation *op,
    llvm::function_ref<SymbolicInts(mlir::Value)> shapeOf);

/// Whether tensors of `type` can hold shape values: i64, or i32.
bool isShapeElementType(mlir::Type type);

/// `values` as the elements of `type` (i64 or i32; wrapped to 32 bits).
mlir::DenseElementsAttr getShapeElementsAttr(mlir::RankedTensorType type,
                                             llvm::ArrayRef<int64_t> values);

/// The elements of `op`'s result when it computes on shape values (gather
/// of an element, concat, reshape, cast, slice, integer arithmetic), given
/// its operands' elements where known.
std::optional<SymbolicInts> evaluateSymbolicInts(
    mlir::Operation *op,
    llvm::function_ref<std::optional<SymbolicInts>(mlir::Value)> contentsOf);

} // namespace kiln

#endif // KILN_LIB_IMPORT_SYMBOLICSHAPES_H
