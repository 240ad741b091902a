//===- IndexedLowering.cpp - scatters and gather_nd to loops and generics -===//
//
// A scatter is a copy of its data updated element by element in row-major
// order of the updates: an scf.for nest carrying the tensor, which
// bufferizes to stores into the result buffer. Several updates may land on
// one element, so the writes cannot be a parallel linalg.generic. gather_nd
// reads independently per result element: a linalg.generic over the result.
// Every index is wrapped once if negative and clamped into its axis; the
// runtime checks report the ones that were out of range.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace kiln;

namespace {

/// `update` combined into the element `old` it lands on.
Value combine(OpBuilder &b, Location loc, ScatterReduction reduction, Value old,
              Value update) {
  bool isFloat = isa<FloatType>(update.getType());
  switch (reduction) {
  case ScatterReduction::None:
    return update;
  case ScatterReduction::Add:
    return isFloat ? arith::AddFOp::create(b, loc, old, update).getResult()
                   : arith::AddIOp::create(b, loc, old, update).getResult();
  case ScatterReduction::Mul:
    return isFloat ? arith::MulFOp::create(b, loc, old, update).getResult()
                   : arith::MulIOp::create(b, loc, old, update).getResult();
  case ScatterReduction::Max:
    return isFloat ? arith::MaximumFOp::create(b, loc, old, update).getResult()
                   : arith::MaxSIOp::create(b, loc, old, update).getResult();
  case ScatterReduction::Min:
    return isFloat ? arith::MinimumFOp::create(b, loc, old, update).getResult()
                   : arith::MinSIOp::create(b, loc, old, update).getResult();
  }
  llvm_unreachable("unknown scatter reduction");
}

/// A copy of `data` to which `body(ivs, tensor)` writes once for every
/// position `ivs` of `updates`, in row-major order.
Value createScatterLoops(
    OpBuilder &b, Location loc, Value data, Value updates,
    function_ref<Value(OpBuilder &, Location, ValueRange, Value)> body) {
  auto updatesType = cast<RankedTensorType>(updates.getType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> lower(updatesType.getRank(), zero),
      steps(updatesType.getRank(), one), upper;
  for (int64_t d = 0; d < updatesType.getRank(); ++d)
    upper.push_back(b.createOrFold<tensor::DimOp>(loc, updates, d));
  // The loops write into a copy: `data` may have other users.
  auto dataType = cast<RankedTensorType>(data.getType());
  Value copy =
      linalg::CopyOp::create(
          b, loc, data,
          createEmptyTensor(b, loc, dataType, getDynamicSizes(b, loc, data)))
          .getResult(0);
  scf::LoopNest nest =
      scf::buildLoopNest(b, loc, lower, upper, steps, ValueRange{copy},
                         [&](OpBuilder &nb, Location l, ValueRange ivs,
                             ValueRange carried) -> scf::ValueVector {
                           return {body(nb, l, ivs, carried[0])};
                         });
  return nest.results[0];
}

/// `tensor` with the element at `coords` replaced by (or combined with)
/// `updates[ivs]`.
Value writeElement(OpBuilder &b, Location loc, ScatterReduction reduction,
                   Value tensor, ValueRange coords, Value updates,
                   ValueRange ivs) {
  Value update = tensor::ExtractOp::create(b, loc, updates, ivs);
  if (reduction != ScatterReduction::None)
    update = combine(b, loc, reduction,
                     tensor::ExtractOp::create(b, loc, tensor, coords), update);
  return tensor::InsertOp::create(b, loc, update, tensor, coords);
}

/// Appends to `coords` the index tuple of `indices` at `position` (its
/// leading coordinates), each element wrapped and clamped into its data
/// axis, from `firstAxis` on.
void appendTupleCoords(OpBuilder &b, Location loc, Value data, Value indices,
                       ValueRange position, int64_t firstAxis,
                       SmallVectorImpl<Value> &coords) {
  SmallVector<Value> at(position);
  at.push_back(Value());
  int64_t depth = cast<RankedTensorType>(indices.getType()).getShape().back();
  for (int64_t j = 0; j < depth; ++j) {
    at.back() = arith::ConstantIndexOp::create(b, loc, j);
    Value index = tensor::ExtractOp::create(b, loc, indices, at);
    coords.push_back(getClampedIndex(b, loc, index,
                                     getAxisSize(b, loc, data, firstAxis + j)));
  }
}

struct ScatterElementsLowering : OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData();
    auto dataType = cast<RankedTensorType>(data.getType());
    auto indicesType = cast<RankedTensorType>(adaptor.getIndices().getType());
    int64_t axis = static_cast<int64_t>(op.getAxis());
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < dataType.getRank(); ++d)
      sizes.push_back(getAxisSize(rewriter, loc, data, d));
    Value result = createScatterLoops(
        rewriter, loc, data, adaptor.getUpdates(),
        [&](OpBuilder &b, Location l, ValueRange ivs, Value tensor) {
          SmallVector<Value> coords(ivs);
          Value index =
              tensor::ExtractOp::create(b, l, adaptor.getIndices(), ivs);
          coords[axis] = getClampedIndex(b, l, index, sizes[axis]);
          // The verifier bounds static sizes; dynamic ones are clamped.
          for (int64_t d = 0; d < dataType.getRank(); ++d)
            if (d != axis &&
                (dataType.isDynamicDim(d) || indicesType.isDynamicDim(d)))
              coords[d] = getClampedIndex(
                  b, l,
                  arith::IndexCastOp::create(b, l, b.getI64Type(), ivs[d]),
                  sizes[d]);
          return writeElement(b, l, op.getReduction(), tensor, coords,
                              adaptor.getUpdates(), ivs);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ScatterNDLowering : OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    int64_t tuples = cast<RankedTensorType>(indices.getType()).getRank() - 1;
    Value result = createScatterLoops(
        rewriter, loc, data, adaptor.getUpdates(),
        [&](OpBuilder &b, Location l, ValueRange ivs, Value tensor) {
          // data[indices[t.., 0], .., indices[t.., depth-1], ivs[tuples:]]
          SmallVector<Value> coords;
          appendTupleCoords(b, l, data, indices, ivs.take_front(tuples), 0,
                            coords);
          llvm::append_range(coords, ivs.drop_front(tuples));
          assert(static_cast<int64_t>(coords.size()) ==
                     cast<RankedTensorType>(data.getType()).getRank() &&
                 "scatter_nd coordinates do not match the data's rank");
          return writeElement(b, l, op.getReduction(), tensor, coords,
                              adaptor.getUpdates(), ivs);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// gather_nd as a linalg.generic over the result that reads the index
/// tuple of each result element and extracts from `data`.
struct GatherNDLowering : OpConversionPattern<GatherNDOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatherNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto resultType = cast<RankedTensorType>(op.getType());
    auto indicesType = cast<RankedTensorType>(indices.getType());
    int64_t batchDims = static_cast<int64_t>(op.getBatchDims());
    int64_t tuples = indicesType.getRank() - 1;
    unsigned rank = resultType.getRank();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange(),
        createEmptyTensor(rewriter, loc, resultType,
                          getDynamicResultSizes(rewriter, op)),
        AffineMap::getMultiDimIdentityMap(rank, op.getContext()),
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> position, coords;
          for (int64_t d = 0; d < tuples; ++d)
            position.push_back(linalg::IndexOp::create(b, l, d));
          // The batch dimensions are shared: the data's are the tuple's.
          coords.append(position.begin(), position.begin() + batchDims);
          appendTupleCoords(b, l, data, indices, position, batchDims, coords);
          for (unsigned d = tuples; d < rank; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, coords).getResult());
        });
    rewriter.replaceOp(op, generic.getResults());
    return success();
  }
};

} // namespace

void kiln::populateIndexedLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ScatterElementsLowering, ScatterNDLowering, GatherNDLowering>(
      patterns.getContext());
}
