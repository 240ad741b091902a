//===- OnnxOpUtils.h - helpers shared by the ONNX op importers --*- C++ -*-===//
#ifndef KILN_LIB_IMPORT_ONNXOPUTILS_H
#define KILN_LIB_IMPORT_ONNXOPUTILS_H

#include "lib/Import/GraphImporter.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/TypeUtilities.h"

namespace kiln {

/// Creates `OpTy` with its result type inferred; a shape error becomes a
/// diagnostic at the node instead of a failed assertion in the builder.
template <typename OpTy>
mlir::FailureOr<mlir::Value>
createInferred(NodeImporter &node, mlir::ValueRange operands,
               typename OpTy::Properties props = {}) {
  llvm::SmallVector<mlir::Type> types;
  typename OpTy::Adaptor adaptor(operands, nullptr, props);
  if (mlir::failed(OpTy::inferReturnTypes(node.b.getContext(), node.loc,
                                          adaptor, types)))
    return mlir::failure();
  mlir::OperationState state(node.loc, OpTy::getOperationName());
  state.addOperands(operands);
  state.addTypes(types);
  state.useProperties(props);
  return node.b.create(state)->getResult(0);
}

/// Creates `OpTy` on operands whose shapes the importer built to match
/// (a decomposition's intermediate values), so a failed shape inference is
/// a compiler bug, not a user's error.
template <typename OpTy>
mlir::Value createMatching(NodeImporter &node, mlir::ValueRange operands,
                           typename OpTy::Properties props = {}) {
  mlir::FailureOr<mlir::Value> result =
      createInferred<OpTy>(node, operands, props);
  assert(mlir::succeeded(result) && "operand shapes are built to match");
  return *result;
}

/// Creates `OpTy` with an inferred result type as the node's result.
template <typename OpTy>
llvm::LogicalResult addInferredResult(NodeImporter &node,
                                      mlir::ValueRange operands,
                                      typename OpTy::Properties props = {}) {
  mlir::FailureOr<mlir::Value> result =
      createInferred<OpTy>(node, operands, props);
  if (mlir::failed(result))
    return mlir::failure();
  node.results.push_back(*result);
  return mlir::success();
}

/// Adds `result` as the node's next result, if it was built.
inline llvm::LogicalResult addResult(NodeImporter &node,
                                     mlir::FailureOr<mlir::Value> result) {
  if (mlir::failed(result))
    return mlir::failure();
  node.results.push_back(*result);
  return mlir::success();
}

/// `input` reshaped to `shape` (itself if the shape is unchanged), the
/// sizes of its dynamic dimensions computed where the node is.
mlir::FailureOr<mlir::Value> createReshape(NodeImporter &node,
                                           mlir::Value input,
                                           llvm::ArrayRef<mlir::AffineExpr> shape);
/// The same for a static shape.
mlir::Value createReshape(NodeImporter &node, mlir::Value input,
                          llvm::ArrayRef<int64_t> shape);

/// `x` with its dimensions permuted by `perm`, which the caller has checked.
mlir::Value createTranspose(NodeImporter &node, mlir::Value x,
                            llvm::ArrayRef<int64_t> perm);

/// The elements of `x` at `indices` along `axis` (a constant kiln.gather).
mlir::Value createAxisGather(NodeImporter &node, mlir::Value x, int64_t axis,
                             llvm::ArrayRef<int64_t> indices);

/// `x[..., begin:end, ...]` along `axis` of a static shape.
mlir::Value createAxisSlice(NodeImporter &node, mlir::Value x, int64_t axis,
                            int64_t begin, int64_t end);

/// `x` with `before` and `after` elements of `fill` around its static
/// dimension `axis` (itself if both are 0).
mlir::Value createAxisPad(NodeImporter &node, mlir::Value x, int64_t axis,
                          int64_t before, int64_t after, double fill);

/// `input` broadcast to `shape` (itself if that changes nothing).
mlir::FailureOr<mlir::Value>
createBroadcast(NodeImporter &node, mlir::Value input,
                llvm::ArrayRef<mlir::AffineExpr> shape);

/// The int64 sequence 0, 1, ..., length - 1 laid along axis `axis` of a
/// tensor of rank `rank` (every other dimension 1).
mlir::FailureOr<mlir::Value> createIndexSequence(NodeImporter &node,
                                                 mlir::AffineExpr length,
                                                 int64_t axis, int64_t rank);

/// A rank-0 kiln.constant of `elementType` holding `value`.
mlir::Value createScalar(NodeImporter &node, mlir::Type elementType,
                         double value);

/// The 2-D shape [prod(shape[:axis]), prod(shape[axis:])] that Flatten and
/// pre-13 Softmax work on.
SymbolicInts getFlattenedShape(mlir::MLIRContext *context,
                               llvm::ArrayRef<mlir::AffineExpr> shape,
                               int64_t axis);

/// Normalizes possibly negative `axes` against `rank`; an error if one is
/// out of range or repeated. The result is in the given order.
mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(NodeImporter &node, llvm::ArrayRef<int64_t> axes, int64_t rank);

/// An error at the node unless `value` holds f32.
llvm::LogicalResult requireFloat(NodeImporter &node, mlir::Value value);
/// An error at the node unless `value` holds f32 or f64 (what elementwise
/// float math computes on).
llvm::LogicalResult requireReal(NodeImporter &node, mlir::Value value);
/// An error at the node unless `value` holds a type kiln computes on: f32,
/// f64, i64 or i32.
llvm::LogicalResult requireNumeric(NodeImporter &node, mlir::Value value);
/// An error at the node unless `lhs` and `rhs` have one element type.
llvm::LogicalResult requireSameElementType(NodeImporter &node, mlir::Value lhs,
                                           mlir::Value rhs);

/// Builds elementwise formulas at one node, in the element type of its first
/// input; each step is shape-checked, and the first failure (with its error)
/// makes every later step fail too.
class Formula {
public:
  Formula(NodeImporter &node, mlir::Value x)
      : node(node), elementType(mlir::getElementTypeOrSelf(x.getType())) {}

  mlir::FailureOr<mlir::Value> constant(double value) {
    return createScalar(node, elementType, value);
  }
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> apply(mlir::FailureOr<mlir::Value> lhs,
                                     mlir::FailureOr<mlir::Value> rhs) {
    if (failed(lhs) || failed(rhs))
      return mlir::failure();
    return createInferred<OpTy>(node, {*lhs, *rhs});
  }
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> apply(mlir::FailureOr<mlir::Value> input) {
    if (failed(input))
      return mlir::failure();
    return OpTy::create(node.b, node.loc, *input).getResult();
  }
  mlir::FailureOr<mlir::Value> select(mlir::FailureOr<mlir::Value> condition,
                                      mlir::FailureOr<mlir::Value> yes,
                                      mlir::FailureOr<mlir::Value> no) {
    if (failed(condition) || failed(yes) || failed(no))
      return mlir::failure();
    return createInferred<SelectOp>(node, {*condition, *yes, *no});
  }
  llvm::LogicalResult result(mlir::FailureOr<mlir::Value> value) {
    if (failed(value))
      return mlir::failure();
    node.results.push_back(*value);
    return mlir::success();
  }

private:
  NodeImporter &node;
  mlir::Type elementType;
};

/// log(softmax(x)) along `axis` as x - m - log(sum(exp(x - m))), m the
/// maximum: no exp overflows and no probability underflows to log(0).
mlir::FailureOr<mlir::Value> createLogSoftmax(NodeImporter &node, mlir::Value x,
                                              int64_t axis);

// Importers of neural-network layers (OnnxNeuralOps.cpp, OnnxPoolOps.cpp).
/// The strides, dilations and pads (all begins, then all ends) of a window
/// op (Conv, pools), auto_pad resolved against the spatial `inputSizes`.
struct WindowAttrs {
  llvm::SmallVector<int64_t> strides, dilations, pads;
};
mlir::FailureOr<WindowAttrs> getWindowAttrs(NodeImporter &node,
                                            llvm::ArrayRef<int64_t> inputSizes,
                                            llvm::ArrayRef<int64_t> kernel);
/// The 1-D, 2-D or 3-D convolution of `input` by `filter` (both f32 or
/// both i32) with the node's convolution attributes.
mlir::FailureOr<mlir::Value> createConvolution(NodeImporter &node,
                                               mlir::Value input,
                                               mlir::Value filter);
/// The same with the given window and group count instead of the node's;
/// a 1-D convolution runs as a 2-D one of height 1, a 3-D one as a sum of
/// 2-D ones over the filter's depth.
mlir::FailureOr<mlir::Value>
createConvolution(NodeImporter &node, mlir::Value input, mlir::Value filter,
                  const WindowAttrs &window, int64_t groups);
llvm::LogicalResult importConv(NodeImporter &node);
llvm::LogicalResult importConvTranspose(NodeImporter &node);
llvm::LogicalResult importAttention(NodeImporter &node); // OnnxAttention.cpp
llvm::LogicalResult importRotaryEmbedding(NodeImporter &node);
llvm::LogicalResult importEinsum(NodeImporter &node);    // OnnxEinsum.cpp
llvm::LogicalResult importLayerNormalization(NodeImporter &node);
llvm::LogicalResult importRMSNormalization(NodeImporter &node);
llvm::LogicalResult importInstanceNormalization(NodeImporter &node);
llvm::LogicalResult importGroupNormalization(NodeImporter &node);
llvm::LogicalResult importMeanVarianceNormalization(NodeImporter &node);
llvm::LogicalResult importLpNormalization(NodeImporter &node);
llvm::LogicalResult importResize(NodeImporter &node);
llvm::LogicalResult importGridSample(NodeImporter &node); // OnnxGridSample.cpp
llvm::LogicalResult importAffineGrid(NodeImporter &node);
// DFT as a product with a constant matrix (OnnxSpectralOps.cpp).
llvm::LogicalResult importDFT(NodeImporter &node);
llvm::LogicalResult importDet(NodeImporter &node); // OnnxDet.cpp
llvm::LogicalResult
importTfIdfVectorizer(NodeImporter &node); // OnnxTfIdfVectorizer.cpp
llvm::LogicalResult importSTFT(NodeImporter &node);
llvm::LogicalResult importUpsample(NodeImporter &node);
llvm::LogicalResult importMaxPool(NodeImporter &node);
/// The Indices output of MaxPool: for each element of `pooled` (the max pool
/// of `input` over `window` and `kernel`), the flat index into `input` of
/// the first window element equal to it (OnnxPoolIndices.cpp).
mlir::FailureOr<mlir::Value>
createMaxPoolIndices(NodeImporter &node, mlir::Value input, mlir::Value pooled,
                     const WindowAttrs &window, llvm::ArrayRef<int64_t> kernel);
llvm::LogicalResult importMaxUnpool(NodeImporter &node);
llvm::LogicalResult importAveragePool(NodeImporter &node);
llvm::LogicalResult importLpPool(NodeImporter &node);
llvm::LogicalResult importGlobalAveragePool(NodeImporter &node);
llvm::LogicalResult importGlobalMaxPool(NodeImporter &node);
llvm::LogicalResult importGlobalLpPool(NodeImporter &node);
llvm::LogicalResult importLRN(NodeImporter &node);
// Recurrent layers, unrolled over their sequence (OnnxRecurrent.cpp).
llvm::LogicalResult importRNN(NodeImporter &node);
llvm::LogicalResult importGRU(NodeImporter &node);
llvm::LogicalResult importLSTM(NodeImporter &node);

// Control flow, resolved or unrolled at import (OnnxControlFlow.cpp).
llvm::LogicalResult importIf(NodeImporter &node);
llvm::LogicalResult importLoop(NodeImporter &node);
llvm::LogicalResult importScan(NodeImporter &node);

// Importers of the ops that only move or reshape data (OnnxShapeOps.cpp).
llvm::LogicalResult importTranspose(NodeImporter &node);
llvm::LogicalResult importConcat(NodeImporter &node);
llvm::LogicalResult importReshape(NodeImporter &node);
llvm::LogicalResult importFlatten(NodeImporter &node);
llvm::LogicalResult importUnsqueeze(NodeImporter &node);
llvm::LogicalResult importSqueeze(NodeImporter &node);
llvm::LogicalResult importExpand(NodeImporter &node);
llvm::LogicalResult importSlice(NodeImporter &node);
llvm::LogicalResult importSplit(NodeImporter &node);
llvm::LogicalResult importShape(NodeImporter &node);
llvm::LogicalResult importConstantOfShape(NodeImporter &node);
llvm::LogicalResult importSize(NodeImporter &node);

// Rearrangements (OnnxRearrangeOps.cpp).
llvm::LogicalResult importTile(NodeImporter &node);
llvm::LogicalResult importPad(NodeImporter &node); // OnnxPad.cpp
llvm::LogicalResult importDepthToSpace(NodeImporter &node);
llvm::LogicalResult importSpaceToDepth(NodeImporter &node);
llvm::LogicalResult importReverseSequence(NodeImporter &node);
llvm::LogicalResult importCenterCropPad(NodeImporter &node);

// Importers of indexed reads and writes (OnnxGatherOps.cpp).
/// Operand `i` as int64 indices (int32 ones widened); an error for other
/// types.
mlir::FailureOr<mlir::Value> getIndicesOperand(NodeImporter &node, unsigned i);
llvm::LogicalResult importGather(NodeImporter &node);
llvm::LogicalResult importGatherElements(NodeImporter &node);
llvm::LogicalResult importGatherND(NodeImporter &node);
llvm::LogicalResult importScatterElements(NodeImporter &node);
llvm::LogicalResult importScatterND(NodeImporter &node);
llvm::LogicalResult importCompress(NodeImporter &node);

// Training-time ops in their inference form (OnnxInferenceForms.cpp).
llvm::LogicalResult importDropout(NodeImporter &node);
llvm::LogicalResult importBatchNormalization(NodeImporter &node);
llvm::LogicalResult importNegativeLogLikelihoodLoss(NodeImporter &node);
llvm::LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &node);

// Importers of the quantization ops (OnnxQuantOps.cpp).
llvm::LogicalResult importQuantizeLinear(NodeImporter &node);
llvm::LogicalResult importDequantizeLinear(NodeImporter &node);
llvm::LogicalResult importDynamicQuantizeLinear(NodeImporter &node);
llvm::LogicalResult importMatMulInteger(NodeImporter &node);
llvm::LogicalResult importQLinearMatMul(NodeImporter &node);
llvm::LogicalResult importMatMulNBits(NodeImporter &node);
llvm::LogicalResult importConvInteger(NodeImporter &node);
llvm::LogicalResult importQLinearConv(NodeImporter &node);

} // namespace kiln

#endif // KILN_LIB_IMPORT_ONNXOPUTILS_H
