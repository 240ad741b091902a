//===- LoweringUtils.h - helpers shared by kiln lowerings -------*- C++ -*-===//
#ifndef KILN_LIB_CONVERSION_KILNTOLINALG_LOWERINGUTILS_H
#define KILN_LIB_CONVERSION_KILNTOLINALG_LOWERINGUTILS_H

#include "dialects/Kiln/IR/Panels.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace kiln {

/// An uninitialized tensor of `type` (a `tensor.empty`); `dynamicSizes`
/// gives the sizes of its dynamic dimensions, in order.
mlir::Value createEmptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::RankedTensorType type,
                              mlir::ValueRange dynamicSizes = {});

/// A tensor of `type` filled with the scalar `value`.
mlir::Value createFilledTensor(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::RankedTensorType type, mlir::Value value,
                               mlir::ValueRange dynamicSizes = {});

/// The sizes of `value`'s dynamic dimensions (`tensor.dim`s), in order.
llvm::SmallVector<mlir::Value> getDynamicSizes(mlir::OpBuilder &b,
                                               mlir::Location loc,
                                               mlir::Value value);

/// The sizes of the dynamic dimensions of `op`'s (only) result, computed
/// from its operands (kiln ops reify their result shapes).
llvm::SmallVector<mlir::Value> getDynamicResultSizes(mlir::OpBuilder &b,
                                                     mlir::Operation *op);

/// The indexing map that reads an operand of `operandShape` inside a loop
/// nest over `resultRank` dimensions under ONNX broadcasting: operand
/// dimensions align to the right, and a size-1 dimension that broadcasts
/// reads index 0.
mlir::AffineMap getBroadcastMap(mlir::MLIRContext *ctx,
                                llvm::ArrayRef<int64_t> operandShape,
                                llvm::ArrayRef<int64_t> resultShape,
                                unsigned numLoops);

/// Reshapes `value` to `type` (same element count) through a collapse to 1-D
/// and an expand, so any reshape is expressible without copies;
/// `dynamicSizes` are the sizes of `type`'s dynamic dimensions.
mlir::Value reshapeTensor(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::RankedTensorType type,
                          mlir::ValueRange dynamicSizes = {});

/// The size of `data`'s dimension `axis` as i64, read at run time if it is
/// dynamic.
mlir::Value getAxisSize(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value data, int64_t axis);
/// The i64 `index` into an axis of `size` elements as an index: wrapped
/// once if negative, then clamped so the access stays inside the axis.
mlir::Value getClampedIndex(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value index, mlir::Value size);
/// A scalar constant of `type` (f32 or i64) holding `value`.
mlir::Value createScalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Type type, double value);

/// Reduces `axes` of `input` with `combine(element, accumulator)`, starting
/// from `initValue`. The result has the reduced axes removed.
mlir::Value createReduction(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
    llvm::ArrayRef<int64_t> axes, mlir::Value initValue,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   mlir::Value, mlir::Value)>
        combine);

/// An elementwise generic over `full`'s shape computing
/// `combine(full, reduced)`, where `reduced` is `full` with `axes` removed,
/// read broadcast along them.
mlir::Value createBroadcastCombine(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value full,
    mlir::Value reduced, llvm::ArrayRef<int64_t> axes,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   mlir::Value, mlir::Value)>
        combine);

/// `value + accumulator` for float sum reductions, marked reassociable so
/// LLVM may vectorize the reduction (the order of a sum is not part of
/// ONNX's semantics).
mlir::Value createSumStep(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::Value accumulator);

/// ONNX MatMul (numpy semantics) of `lhs` and `rhs` into `resultType`:
/// linalg.matmul where codegen can tile and vectorize it, else a generic.
mlir::Value createMatMul(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value lhs, mlir::Value rhs,
                         mlir::RankedTensorType resultType,
                         mlir::ValueRange dynamicSizes = {});

/// Converts scalar `value` to `to` as ONNX Cast does: floats to integers
/// truncate toward zero, anything non-zero is true, integers extend by
/// their signedness (`fromUnsigned`), floats convert to an unsigned
/// integer with `toUnsigned`.
mlir::Value createCast(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value value, mlir::Type to,
                       bool fromUnsigned = false, bool toUnsigned = false);

/// `input` (NCHW) with `pads` ([top, left, bottom, right]) rows and
/// columns of zeros around its images; `input` itself without padding.
mlir::Value padImages(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value input, llvm::ArrayRef<int64_t> pads);

void populateQuantLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateQuantizedMatMulLoweringPatterns(mlir::RewritePatternSet &patterns);
/// With `patchColumns` > 0, convolutions gather their patches into column
/// panels that wide and multiply them as kiln.packed_matmul does.
void populateCompositeLoweringPatterns(mlir::RewritePatternSet &patterns,
                                       int64_t patchColumns);
/// Depthwise f32 convolutions with static shapes, as one elementwise
/// generic over the taps' shifted windows (before the general lowering).
void populateDepthwiseConvLoweringPatterns(mlir::RewritePatternSet &patterns);
/// kiln.layer_norm and kiln.group_norm.
void populateNormalizationLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateElementwiseLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateStructuredLoweringPatterns(mlir::RewritePatternSet &patterns);
void populatePackedMatMulLoweringPatterns(mlir::RewritePatternSet &patterns);
/// kiln.winograd_conv2d with its tiles in column panels `panelColumns`
/// wide, multiplied as kiln.packed_matmul does.
void populateWinogradLoweringPatterns(mlir::RewritePatternSet &patterns,
                                      int64_t panelColumns);
/// kiln.attention in blocks of `queryRows` query rows by `keyColumns` keys,
/// or by `maskedKeyColumns` keys, skipping those a mask removes, where the
/// mask removes keys (0: no skipping).
void populateAttentionLoweringPatterns(mlir::RewritePatternSet &patterns,
                                       int64_t queryRows, int64_t keyColumns,
                                       int64_t maskedKeyColumns);
void populateDataMovementLoweringPatterns(mlir::RewritePatternSet &patterns);
void populatePoolLoweringPatterns(mlir::RewritePatternSet &patterns);
/// kiln.scatter_elements, kiln.scatter_nd and kiln.gather_nd.
void populateIndexedLoweringPatterns(mlir::RewritePatternSet &patterns);
/// kiln.token_match, kiln.token_select, kiln.token_merge and
/// kiln.token_unmerge.
void populateTokenMergeLoweringPatterns(mlir::RewritePatternSet &patterns);
/// kiln.splat_project and kiln.splat_rasterize.
void populateSplatLoweringPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_LIB_CONVERSION_KILNTOLINALG_LOWERINGUTILS_H
