//===- KilnShapeReification.cpp - result sizes from operand sizes ---------===//
//
// Every kiln op with a tensor result can compute its result's sizes from its
// operands' (ReifyRankedShapedTypeOpInterface): the lowering sizes the
// tensors it creates this way, and `tensor.dim` of any kiln value folds
// back to the inputs' dimensions.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

using Sizes = SmallVector<OpFoldResult>;

OpFoldResult getSize(OpBuilder &b, Location loc, Value value, int64_t dim) {
  auto type = cast<RankedTensorType>(value.getType());
  if (!type.isDynamicDim(dim))
    return b.getIndexAttr(type.getDimSize(dim));
  return tensor::DimOp::create(b, loc, value, dim).getResult();
}

Sizes getSizes(OpBuilder &b, Location loc, Value value) {
  Sizes sizes;
  for (int64_t d = 0; d < cast<RankedTensorType>(value.getType()).getRank();
       ++d)
    sizes.push_back(getSize(b, loc, value, d));
  return sizes;
}

/// The sizes of `result`, the ONNX broadcast of `operands`: a dynamic one
/// is that of an operand whose aligned dimension is dynamic (the others are
/// 1 or equal there).
Sizes getBroadcastSizes(OpBuilder &b, Location loc, ValueRange operands,
                        RankedTensorType result) {
  Sizes sizes;
  int64_t rank = result.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    if (!result.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(result.getDimSize(d)));
      continue;
    }
    OpFoldResult size;
    for (Value operand : operands) {
      auto type = cast<RankedTensorType>(operand.getType());
      int64_t aligned = d - (rank - type.getRank());
      if (aligned >= 0 && type.isDynamicDim(aligned)) {
        size = getSize(b, loc, operand, aligned);
        break;
      }
    }
    sizes.push_back(size);
  }
  return sizes;
}

/// `values` (index) in the order of the dynamic dimensions of `type`, with
/// the static ones as attributes.
Sizes getSizesWithDynamic(OpBuilder &b, RankedTensorType type,
                          ValueRange values) {
  Sizes sizes;
  size_t next = 0;
  for (int64_t size : type.getShape())
    sizes.push_back(ShapedType::isDynamic(size) ? OpFoldResult(values[next++])
                                                : b.getIndexAttr(size));
  return sizes;
}

/// `span floordiv stride + 1`: the windows `stride` apart whose starts lie
/// within `span` (the padded size less the window's extent).
OpFoldResult getWindowsAfter(OpBuilder &b, Location loc, Value span,
                             int64_t stride) {
  Value windows = arith::FloorDivSIOp::create(
      b, loc, span, arith::ConstantIndexOp::create(b, loc, stride));
  return arith::AddIOp::create(b, loc, windows,
                               arith::ConstantIndexOp::create(b, loc, 1))
      .getResult();
}

/// Dimension `d` of a sliding-window result: static as `resultType` has
/// it, or the number of windows of `extent` elements, `stride` apart, that
/// fit dimension `d` of `input` with `pads` added.
OpFoldResult getWindowCount(OpBuilder &b, Location loc, Value input, int64_t d,
                            RankedTensorType resultType, int64_t extent,
                            int64_t pads, int64_t stride) {
  if (!resultType.isDynamicDim(d))
    return b.getIndexAttr(resultType.getDimSize(d));
  Value span = arith::AddIOp::create(
      b, loc, tensor::DimOp::create(b, loc, input, d),
      arith::ConstantIndexOp::create(b, loc, pads - extent));
  return getWindowsAfter(b, loc, span, stride);
}

FailureOr<Sizes> reifyKilnResult(Operation *op, OpBuilder &b) {
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  return TypeSwitch<Operation *, FailureOr<Sizes>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, RemOp, MinOp, MaxOp, AndOp, OrOp,
            XorOp, EqualOp, LessOp, LessEqualOp, SelectOp, ShiftLeftOp,
            ShiftRightOp>([&](auto) {
        return getBroadcastSizes(b, loc, op->getOperands(), resultType);
      })
      .Case<NegOp, AbsOp, ReluOp, ExpOp, LogOp, SqrtOp, SigmoidOp, TanhOp,
            ErfOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp, CoshOp,
            AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp, RoundOp, NotOp, CastOp,
            SoftmaxOp, LayerNormOp, GroupNormOp, QuantizeOp, DequantizeOp,
            ScatterElementsOp, ScatterNDOp>(
          [&](auto) { return getSizes(b, loc, op->getOperand(0)); })
      .Case<MatMulOp, MatMulIntegerOp>([&](auto matmul) -> FailureOr<Sizes> {
        auto lhs = cast<RankedTensorType>(matmul.getLhs().getType());
        auto rhs = cast<RankedTensorType>(matmul.getRhs().getType());
        // The batch dimensions broadcast; rows come from lhs, columns from
        // rhs (1-D operands add no dimension).
        int64_t batch = resultType.getRank() - (lhs.getRank() >= 2) -
                        (rhs.getRank() >= 2);
        Sizes sizes;
        for (int64_t d = 0; d < batch; ++d) {
          if (!resultType.isDynamicDim(d)) {
            sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
            continue;
          }
          int64_t fromLhs = d - (batch - (lhs.getRank() - 2));
          int64_t fromRhs = d - (batch - (rhs.getRank() - 2));
          sizes.push_back(fromLhs >= 0 && lhs.isDynamicDim(fromLhs)
                              ? getSize(b, loc, matmul.getLhs(), fromLhs)
                              : getSize(b, loc, matmul.getRhs(), fromRhs));
        }
        if (lhs.getRank() >= 2)
          sizes.push_back(getSize(b, loc, matmul.getLhs(), lhs.getRank() - 2));
        if (rhs.getRank() >= 2)
          sizes.push_back(getSize(b, loc, matmul.getRhs(), rhs.getRank() - 1));
        return sizes;
      })
      .Case<PackedMatMulOp, QuantizedMatMulOp, Int4MatMulOp>([&](auto matmul) {
        Sizes sizes = getSizes(b, loc, matmul->getOperand(0));
        sizes.back() = b.getIndexAttr(resultType.getShape().back());
        return sizes;
      })
      .Case([&](TransposeOp transpose) {
        Sizes input = getSizes(b, loc, transpose.getInput()), sizes;
        for (int64_t p : transpose.getPerm())
          sizes.push_back(input[p]);
        return sizes;
      })
      .Case([&](ConcatOp concat) {
        int64_t axis = concat.getAxis();
        Sizes sizes = getSizes(b, loc, concat.getInputs().front());
        if (resultType.isDynamicDim(axis)) {
          Value total = getValueOrCreateConstantIndexOp(b, loc, sizes[axis]);
          for (Value input : concat.getInputs().drop_front())
            total = arith::AddIOp::create(
                b, loc, total,
                getValueOrCreateConstantIndexOp(b, loc,
                                                getSize(b, loc, input, axis)));
          sizes[axis] = total;
        } else {
          sizes[axis] = b.getIndexAttr(resultType.getDimSize(axis));
        }
        return sizes;
      })
      .Case([&](GatherElementsOp gather) {
        return getSizes(b, loc, gather.getIndices());
      })
      .Case([&](GatherOp gather) {
        Sizes data = getSizes(b, loc, gather.getData());
        int64_t axis = gather.getAxis();
        Sizes sizes(data.begin(), data.begin() + axis);
        llvm::append_range(sizes, getSizes(b, loc, gather.getIndices()));
        sizes.append(data.begin() + axis + 1, data.end());
        return sizes;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](auto reduce) {
            Sizes input = getSizes(b, loc, reduce.getInput()), sizes;
            for (auto [d, size] : llvm::enumerate(input)) {
              if (!llvm::is_contained(reduce.getAxes(),
                                      static_cast<int64_t>(d)))
                sizes.push_back(size);
              else if (reduce.getKeepDims())
                sizes.push_back(b.getIndexAttr(1));
            }
            return FailureOr<Sizes>(sizes);
          })
      .Case([&](SliceOp slice) {
        Sizes sizes;
        for (auto [d, size] : llvm::enumerate(slice.getSizes()))
          sizes.push_back(ShapedType::isDynamic(size)
                              ? getSize(b, loc, slice.getInput(), d)
                              : b.getIndexAttr(size));
        return sizes;
      })
      .Case([&](DynamicSliceOp slice) {
        Sizes sizes = getSizes(b, loc, slice.getInput());
        for (auto [axis, size] : llvm::zip(slice.getAxes(), slice.getSizes()))
          sizes[axis] = size;
        return sizes;
      })
      .Case<ReshapeOp, BroadcastOp>([&](auto reshape) {
        return getSizesWithDynamic(b, resultType, reshape.getDims());
      })
      .Case([&](RangeOp range) {
        return getSizesWithDynamic(
            b, resultType,
            range.getSize() ? ValueRange(range.getSize()) : ValueRange());
      })
      .Case([&](AttentionOp attention) {
        // Heads-first [..., S, D] sizes of the query, rows of the value.
        auto headsFirst = [](Sizes sizes, bool seqFirst) {
          if (seqFirst && sizes.size() >= 3)
            std::swap(sizes[sizes.size() - 3], sizes[sizes.size() - 2]);
          return sizes;
        };
        Sizes sizes = headsFirst(getSizes(b, loc, attention.getQuery()),
                                 attention.getQuerySeqFirst());
        Sizes value = getSizes(b, loc, attention.getValue());
        sizes.back() = value.back();
        return headsFirst(sizes, attention.getResultSeqFirst());
      })
      .Case([&](PoolOp pool) -> FailureOr<Sizes> {
        // N and C as the input's; a dynamic spatial size counts the windows
        // that fit the padded input (no ceil mode then).
        Sizes sizes = {getSize(b, loc, pool.getInput(), 0),
                       getSize(b, loc, pool.getInput(), 1)};
        size_t spatial = pool.getKernel().size();
        for (size_t d = 0; d < spatial; ++d)
          sizes.push_back(getWindowCount(
              b, loc, pool.getInput(), 2 + d, resultType,
              pool.getDilations()[d] * (pool.getKernel()[d] - 1) + 1,
              pool.getPads()[d] + pool.getPads()[spatial + d],
              pool.getStrides()[d]));
        return sizes;
      })
      .Case([&](Conv2DOp conv) -> FailureOr<Sizes> {
        // The batch as the input's, the filter's output channels, and as
        // many positions as the filter fits in the padded input.
        Sizes sizes = {getSize(b, loc, conv.getInput(), 0)};
        if (resultType.isDynamicDim(1))
          return failure();
        sizes.push_back(b.getIndexAttr(resultType.getDimSize(1)));
        for (int64_t d = 0; d < 2; ++d) {
          if (!resultType.isDynamicDim(2 + d)) {
            sizes.push_back(b.getIndexAttr(resultType.getDimSize(2 + d)));
            continue;
          }
          // (size + pads - dilation * (taps - 1) - 1) floordiv stride + 1
          int64_t dilation = conv.getDilations()[d];
          Value taps = getValueOrCreateConstantIndexOp(
              b, loc, getSize(b, loc, conv.getFilter(), 2 + d));
          Value reach = arith::MulIOp::create(
              b, loc, taps, arith::ConstantIndexOp::create(b, loc, dilation));
          Value span = arith::SubIOp::create(
              b, loc,
              arith::AddIOp::create(
                  b, loc, tensor::DimOp::create(b, loc, conv.getInput(), 2 + d),
                  arith::ConstantIndexOp::create(b, loc,
                                                 conv.getPads()[d] +
                                                     conv.getPads()[2 + d] +
                                                     dilation - 1)),
              reach);
          sizes.push_back(getWindowsAfter(b, loc, span, conv.getStrides()[d]));
        }
        return sizes;
      })
      .Default([&](Operation *) -> FailureOr<Sizes> {
        if (!resultType.hasStaticShape())
          return failure();
        return getSizesWithDynamic(b, resultType, {});
      });
}

template <typename OpTy>
struct KilnShapeModel
    : ReifyRankedShapedTypeOpInterface::ExternalModel<KilnShapeModel<OpTy>,
                                                      OpTy> {
  LogicalResult
  reifyResultShapes(Operation *op, OpBuilder &b,
                    ReifiedRankedShapedTypeDims &shapes) const {
    FailureOr<Sizes> sizes = reifyKilnResult(op, b);
    if (failed(sizes))
      return failure();
    shapes.push_back(std::move(*sizes));
    return success();
  }
};

template <typename... OpTys> void attachShapeModels(MLIRContext &context) {
  (OpTys::template attachInterface<KilnShapeModel<OpTys>>(context), ...);
}

} // namespace

void kiln::registerShapeReification(MLIRContext &context) {
  attachShapeModels<
      AddOp, SubOp, MulOp, DivOp, PowOp, RemOp, MinOp, MaxOp, AndOp, OrOp,
      XorOp, EqualOp, LessOp, LessEqualOp, SelectOp, ShiftLeftOp, ShiftRightOp,
      ScatterElementsOp, ScatterNDOp, NegOp, AbsOp, ReluOp, ExpOp, LogOp,
      SqrtOp, SigmoidOp, TanhOp, ErfOp, SinOp, CosOp, TanOp, AsinOp, AcosOp,
      AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp,
      RoundOp, NotOp, CastOp, SoftmaxOp, LayerNormOp, GroupNormOp, MatMulOp,
      PackedMatMulOp, TransposeOp, ConcatOp, GatherOp, GatherElementsOp,
      ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
      SliceOp, DynamicSliceOp, ReshapeOp, BroadcastOp, RangeOp, AttentionOp,
      Conv2DOp, PoolOp, QuantizeOp, DequantizeOp, MatMulIntegerOp,
      QuantizedMatMulOp, Int4MatMulOp>(context);
}
