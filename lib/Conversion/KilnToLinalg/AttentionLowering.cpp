//===- AttentionLowering.cpp - kiln.attention as an online-softmax kernel -===//
//
// Each iteration of a parallel loop takes a block of query rows of one head
// through the keys a block at a time (flash attention's schedule): the block
// of scores, its running row maxima and sums and the output rows stay in
// L1, and the full scores tensor is never built. Every step is a linalg op on
// static shapes, updating the carried state in place, so the matmul and
// vector schedules apply and the state bufferizes without copies. Dynamic
// query or key counts keep the blocks static: full blocks over a run-time
// count, then smaller static blocks for what is left (the online softmax
// takes the keys in any partition).
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

using utils::IteratorType;

/// Rows of a `[..., S, W]` operand whose batch dimensions are flattened to
/// one, `B`: stored `[B, S, W]`, or sequence first as `[B / H, S, H, W]`.
struct Rows {
  Value tensor;
  int64_t heads = 0; // H if stored sequence first, else 0

  /// Where rows `[r0, r0 + count)` of batch entry `bh` lie, as a slice's
  /// offsets, sizes and strides.
  void locate(OpBuilder &b, Location loc, Value bh, OpFoldResult r0,
              int64_t count, int64_t width,
              SmallVectorImpl<OpFoldResult> &offsets,
              SmallVectorImpl<OpFoldResult> &sizes,
              SmallVectorImpl<OpFoldResult> &strides) const {
    OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
    if (heads == 0) {
      offsets.assign({bh, r0, zero});
      sizes.assign({one, b.getIndexAttr(count), b.getIndexAttr(width)});
    } else {
      Value h = arith::ConstantIndexOp::create(b, loc, heads);
      Value outer = arith::DivUIOp::create(b, loc, bh, h);
      Value head = arith::RemUIOp::create(b, loc, bh, h);
      offsets.assign({outer, r0, head, zero});
      sizes.assign({one, b.getIndexAttr(count), one, b.getIndexAttr(width)});
    }
    strides.assign(offsets.size(), one);
  }

  /// Those rows as a `[count, width]` tensor.
  Value extract(OpBuilder &b, Location loc, Value bh, OpFoldResult r0,
                int64_t count, int64_t width) const {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    locate(b, loc, bh, r0, count, width, offsets, sizes, strides);
    auto type = RankedTensorType::get(
        {count, width},
        cast<RankedTensorType>(tensor.getType()).getElementType());
    return tensor::ExtractSliceOp::create(b, loc, type, tensor, offsets, sizes,
                                          strides);
  }
};

/// The operands of one attention, each with its batch dimensions flattened
/// to one, `B`: q `[B, Sq, D]` and v `[B, Sk, Dv]` (as Rows), kt
/// `[B, D, Sk]`, mask `[1 or B, 1 or Sq, 1 or Sk]` (f32, or i8 for a boolean
/// mask that replaces scores).
struct Operands {
  Rows q, v;
  Value kt, mask;
  int64_t depth, valueDepth;
  OpFoldResult queries, keys; // static or run-time counts
  float scale;
  std::optional<float> fill;

  /// A positive scale keeps the scores' order: it is applied in the
  /// exponentials' subtraction, one fused multiply-add, instead of to the
  /// query rows, a pass over memory that took a twentieth of DiT's
  /// attention. The scores then stay unscaled: a mask's additions and
  /// fills are divided by it (where that overflows, a finite value becomes
  /// the lowest finite one, so a row masked entirely by finite values still
  /// averages its keys).
  bool scalesInExponent() const { return scale > 0 && scale != 1; }
  float exponentScale() const { return scalesInExponent() ? scale : 1; }
  float unscale() const { return 1 / exponentScale(); }
};

/// `value / scale` computed as `value * unscale` in the scores' unscaled
/// units: -inf stays -inf, a finite value stays finite.
static float unscaled(float value, float unscale) {
  if (std::isinf(value))
    return value;
  return std::max(value * unscale, std::numeric_limits<float>::lowest());
}

/// Key block sizes for a run-time key count: blocks of `keyColumns`, then
/// of 64 and of 16, each block shape static (the keys left after them go in
/// one tail block; see emitQueryBlock).
SmallVector<int64_t> getDynamicKeyBlocks(int64_t keyColumns) {
  SmallVector<int64_t> sizes = {keyColumns};
  for (int64_t size : {int64_t(64), int64_t(16)})
    if (size < sizes.back())
      sizes.push_back(size);
  return sizes;
}

/// A key whose mask adds this or less (or an i8 mask fills with it) weighs
/// at most e^-10^4 of a live key with the same score: nothing in f32, whose
/// least subnormal is e^-103, unless its score beats the row's live ones by
/// thousands. BERT-style exports mask padding with -10^4, others with
/// -3.4e38 or -inf.
constexpr float kMaskedScore = -1e4f;

class AttentionKernel {
public:
  /// `skipColumns`: if not 0 and the mask removes keys (a mask varying
  /// along the keys that adds or fills with kMaskedScore or less), keys go
  /// in blocks of this many and blocks the mask removes for every row of a
  /// query block are skipped.
  AttentionKernel(const Operands &operands, Location loc, int64_t keyColumns,
                  int64_t skipColumns)
      : ops(operands), loc(loc), keyColumns(keyColumns),
        skipColumns(skipsMaskedKeys(operands) ? skipColumns : 0) {}

  /// Output rows `[q0, q0 + rows)` of batch entry `bh`, `[rows, Dv]`,
  /// accumulated in `destination`.
  Value emitQueryBlock(OpBuilder &b, Value bh, OpFoldResult q0, int64_t rows,
                       Value destination);

private:
  struct State {
    Value max, sum, output; // [rows], [rows], [rows, Dv]
  };

  /// Keys `[k0, k0 + columns)` folded into `state`; with `seenUntil`,
  /// those before it (already folded in) are left out.
  State emitKeyBlock(OpBuilder &b, Value bh, OpFoldResult q0, Value query,
                     OpFoldResult k0, int64_t columns, State state,
                     Value seenUntil = Value());
  Value slice2d(OpBuilder &b, Value source, ArrayRef<OpFoldResult> offsets,
                int64_t rows, int64_t columns);
  Value generic(OpBuilder &b, Type result, ValueRange ins, ValueRange outs,
                ArrayRef<AffineMap> maps, bool reduces,
                function_ref<void(OpBuilder &, Location, ValueRange)> body);
  Value splat(OpBuilder &b, ArrayRef<int64_t> shape, double value);

  static bool skipsMaskedKeys(const Operands &ops);
  /// The mask's block for query rows `[q0, q0 + rows)` and keys
  /// `[k0, k0 + columns)`; with `map`, also the map reading it from
  /// (row, key).
  Value maskBlock(OpBuilder &b, Value bh, OpFoldResult q0, int64_t rows,
                  OpFoldResult k0, int64_t columns,
                  AffineMap *map = nullptr);
  /// Per row of `block` (a mask block), whether some key in it is kept
  /// (i1, `[block rows]`).
  Value keptPerRow(OpBuilder &b, Value block);
  /// Whether any of `perRow` (i1) is true, or with `all`, every one.
  Value reduceRows(OpBuilder &b, Value perRow, bool all);
  /// `emitKeyBlock`, or the state unchanged where `skippable` (i1) holds
  /// and the mask removes every key of the block for every row.
  State emitUnlessMasked(OpBuilder &b, Value bh, OpFoldResult q0, Value query,
                         OpFoldResult k0, int64_t columns, State state,
                         Value skippable);

  const Operands &ops;
  Location loc;
  int64_t keyColumns, skipColumns;
};

Value AttentionKernel::slice2d(OpBuilder &b, Value source,
                               ArrayRef<OpFoldResult> offsets, int64_t rows,
                               int64_t columns) {
  auto sourceType = cast<RankedTensorType>(source.getType());
  auto type =
      RankedTensorType::get({rows, columns}, sourceType.getElementType());
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), b.getIndexAttr(rows),
                                     b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, source, offsets, sizes,
                                        strides);
}

Value AttentionKernel::generic(
    OpBuilder &b, Type result, ValueRange ins, ValueRange outs,
    ArrayRef<AffineMap> maps, bool reduces,
    function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  unsigned loops = maps.back().getNumDims();
  SmallVector<IteratorType> iterators(loops, IteratorType::parallel);
  if (reduces)
    iterators.back() = IteratorType::reduction;
  return linalg::GenericOp::create(b, loc, TypeRange{result}, ins, outs, maps,
                                   iterators, body)
      .getResult(0);
}

Value AttentionKernel::splat(OpBuilder &b, ArrayRef<int64_t> shape,
                             double value) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return createFilledTensor(
      b, loc, type, createScalarConstant(b, loc, b.getF32Type(), value));
}

/// `x == -inf ? 0 : x`: the row maximum to subtract while a row has seen
/// only masked keys, so exp gives 0 instead of exp(-inf - -inf) = NaN.
static Value finiteOrZero(OpBuilder &b, Location loc, Value x) {
  Value lowest = arith::ConstantOp::create(
      b, loc, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  Value isLowest =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, lowest);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  return arith::SelectOp::create(b, loc, isLowest, zero, x);
}

bool AttentionKernel::skipsMaskedKeys(const Operands &ops) {
  if (!ops.mask || !getConstantIntValue(ops.keys))
    return false;
  auto maskType = cast<RankedTensorType>(ops.mask.getType());
  if (maskType.getDimSize(2) == 1)
    return false;
  return !ops.fill || *ops.fill <= kMaskedScore;
}

Value AttentionKernel::maskBlock(OpBuilder &b, Value bh, OpFoldResult q0,
                                 int64_t rows, OpFoldResult k0, int64_t columns,
                                 AffineMap *map) {
  MLIRContext *ctx = b.getContext();
  OpFoldResult zeroIndex = b.getIndexAttr(0);
  auto maskType = cast<RankedTensorType>(ops.mask.getType());
  bool perBatch = maskType.getDimSize(0) != 1;
  bool perQuery = maskType.getDimSize(1) != 1;
  bool perKey = maskType.getDimSize(2) != 1;
  if (map)
    *map = AffineMap::get(
        2, 0,
        {perQuery ? getAffineDimExpr(0, ctx) : getAffineConstantExpr(0, ctx),
         perKey ? getAffineDimExpr(1, ctx) : getAffineConstantExpr(0, ctx)},
        ctx);
  return slice2d(b, ops.mask,
                 {perBatch ? OpFoldResult(bh) : zeroIndex,
                  perQuery ? q0 : zeroIndex, perKey ? k0 : zeroIndex},
                 perQuery ? rows : 1, perKey ? columns : 1);
}

Value AttentionKernel::keptPerRow(OpBuilder &b, Value block) {
  MLIRContext *ctx = b.getContext();
  int64_t rows = cast<RankedTensorType>(block.getType()).getDimSize(0);
  auto type = RankedTensorType::get({rows}, b.getI1Type());
  Value none = createFilledTensor(
      b, loc, type, arith::ConstantOp::create(b, loc, b.getBoolAttr(false)));
  // An f32 mask keeps a key it adds more than kMaskedScore to; an i8 one
  // (filling where it is set) one where it is 0.
  bool additive = !ops.fill;
  return generic(
      b, type, block, none,
      {AffineMap::getMultiDimIdentityMap(2, ctx),
       AffineMap::get(2, 0, getAffineDimExpr(0, ctx))},
      true, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value kept;
        if (additive) {
          Value masked = arith::ConstantOp::create(
              nb, l, nb.getF32FloatAttr(unscaled(kMaskedScore, ops.unscale())));
          kept = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UGT,
                                       args[0], masked);
        } else {
          Value zero = arith::ConstantOp::create(
              nb, l, nb.getIntegerAttr(args[0].getType(), 0));
          kept = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, args[0],
                                       zero);
        }
        linalg::YieldOp::create(
            nb, l, arith::OrIOp::create(nb, l, args[1], kept).getResult());
      });
}

Value AttentionKernel::reduceRows(OpBuilder &b, Value perRow, bool all) {
  MLIRContext *ctx = b.getContext();
  auto type = RankedTensorType::get({}, b.getI1Type());
  Value init = createFilledTensor(
      b, loc, type, arith::ConstantOp::create(b, loc, b.getBoolAttr(all)));
  Value reduced = generic(
      b, type, perRow, init,
      {AffineMap::getMultiDimIdentityMap(1, ctx), AffineMap::get(1, 0, ctx)},
      true, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value next =
            all ? arith::AndIOp::create(nb, l, args[0], args[1]).getResult()
                : arith::OrIOp::create(nb, l, args[0], args[1]).getResult();
        linalg::YieldOp::create(nb, l, next);
      });
  return tensor::ExtractOp::create(b, loc, reduced, ValueRange{});
}

AttentionKernel::State
AttentionKernel::emitUnlessMasked(OpBuilder &b, Value bh, OpFoldResult q0,
                                  Value query, OpFoldResult k0, int64_t columns,
                                  State state, Value skippable) {
  int64_t rows = cast<RankedTensorType>(query.getType()).getDimSize(0);
  Value block = maskBlock(b, bh, q0, rows, k0, columns);
  Value kept = reduceRows(b, keptPerRow(b, block), /*all=*/false);
  Value skip = arith::AndIOp::create(
      b, loc, skippable,
      arith::XOrIOp::create(
          b, loc, kept,
          arith::ConstantOp::create(b, loc, b.getBoolAttr(true))));
  auto choice = scf::IfOp::create(
      b, loc, skip,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(tb, l,
                             ValueRange{state.max, state.sum, state.output});
      },
      [&](OpBuilder &eb, Location l) {
        State next = emitKeyBlock(eb, bh, q0, query, k0, columns, state);
        scf::YieldOp::create(eb, l,
                             ValueRange{next.max, next.sum, next.output});
      });
  return {choice.getResult(0), choice.getResult(1), choice.getResult(2)};
}

AttentionKernel::State
AttentionKernel::emitKeyBlock(OpBuilder &b, Value bh, OpFoldResult q0,
                              Value query, OpFoldResult k0, int64_t columns,
                              State state, Value seenUntil) {
  MLIRContext *ctx = b.getContext();
  int64_t rows = cast<RankedTensorType>(query.getType()).getDimSize(0);
  OpFoldResult zeroIndex = b.getIndexAttr(0);
  Value keys = slice2d(b, ops.kt, {bh, zeroIndex, k0}, ops.depth, columns);
  Value values = ops.v.extract(b, loc, bh, k0, columns, ops.valueDepth);
  auto scoresType = RankedTensorType::get({rows, columns}, b.getF32Type());
  AffineMap all = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap perRow = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
  AffineMap vector = AffineMap::getMultiDimIdentityMap(1, ctx);

  // The product starts from the block of an additive mask, so masking costs
  // no pass over the scores.
  Value maskBlock;
  AffineMap maskMap;
  if (ops.mask)
    maskBlock = this->maskBlock(b, bh, q0, rows, k0, columns, &maskMap);
  Value init;
  if (maskBlock && !ops.fill)
    init = generic(b, scoresType, maskBlock,
                   createEmptyTensor(b, loc, scoresType), {maskMap, all}, false,
                   [](OpBuilder &nb, Location l, ValueRange args) {
                     linalg::YieldOp::create(nb, l, args[0]);
                   });
  else
    init = splat(b, {rows, columns}, 0);
  Value scores = linalg::MatmulOp::create(b, loc, scoresType,
                                          ValueRange{query, keys}, init)
                     .getResult(0);
  if (maskBlock && ops.fill) {
    // A boolean mask whose fill isn't -inf replaces scores, in place.
    float fill = unscaled(*ops.fill, ops.unscale());
    scores = generic(
        b, scoresType, maskBlock, scores, {maskMap, all}, false,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value zero = arith::ConstantOp::create(
              nb, l, nb.getIntegerAttr(args[0].getType(), 0));
          Value masked = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                               args[0], zero);
          Value value =
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(fill));
          linalg::YieldOp::create(
              nb, l,
              arith::SelectOp::create(nb, l, masked, value, args[1])
                  .getResult());
        });
  }

  if (seenUntil) {
    // Keys already folded in score -inf: they add nothing to the sums.
    Value seenColumns = arith::SubIOp::create(
        b, loc, seenUntil, getValueOrCreateConstantIndexOp(b, loc, k0));
    scores = generic(
        b, scoresType, ValueRange{}, scores, {all}, false,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value column = linalg::IndexOp::create(nb, l, 1);
          Value seen = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                             column, seenColumns);
          Value lowest = arith::ConstantOp::create(
              nb, l,
              nb.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
          linalg::YieldOp::create(
              nb, l,
              arith::SelectOp::create(nb, l, seen, lowest, args[0])
                  .getResult());
        });
  }

  // maxnumf rather than maximumf: it is cheaper on x86, and a NaN score
  // still makes its row NaN, through its exponential and the row's sum.
  auto rowType = RankedTensorType::get({rows}, b.getF32Type());
  Value blockMax = generic(
      b, rowType, scores,
      splat(b, {rows}, -std::numeric_limits<double>::infinity()), {all, perRow},
      true, [](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l,
            arith::MaxNumFOp::create(nb, l, args[0], args[1]).getResult());
      });
  // scale * (score - max), as one fused multiply-add where scaled.
  float exponentScale = ops.exponentScale();
  auto exponent = [&](OpBuilder &nb, Location l, Value score, Value max) {
    Value shift = finiteOrZero(nb, l, max);
    if (exponentScale == 1)
      return arith::SubFOp::create(nb, l, score, shift).getResult();
    Value scale =
        arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(exponentScale));
    Value offset = arith::MulFOp::create(
        nb, l, shift,
        arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(-exponentScale)));
    return math::FmaOp::create(nb, l, score, scale, offset).getResult();
  };
  // One op updates the running maximum in place and turns the block's
  // maximum into the factor that rescales what was accumulated so far.
  auto update = linalg::GenericOp::create(
      b, loc, TypeRange{rowType, rowType}, ValueRange{},
      ValueRange{state.max, blockMax}, ArrayRef<AffineMap>{vector, vector},
      ArrayRef<IteratorType>{IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value max = arith::MaxNumFOp::create(nb, l, args[0], args[1]);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{max, math::ExpOp::create(
                                nb, l, exponent(nb, l, args[0], max))});
      });
  Value max = update.getResult(0), factor = update.getResult(1);
  Value probabilities = generic(
      b, scoresType, max, scores, {perRow, all}, false,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l,
            math::ExpOp::create(nb, l, exponent(nb, l, args[1], args[0]))
                .getResult());
      });
  auto rescale = [&](Value accumulated, AffineMap map, AffineMap factorMap) {
    return generic(
        b, accumulated.getType(), factor, accumulated, {factorMap, map}, false,
        [](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(
              nb, l,
              arith::MulFOp::create(nb, l, args[1], args[0]).getResult());
        });
  };
  Value sum = rescale(state.sum, vector, vector);
  sum = generic(b, rowType, probabilities, sum, {all, perRow}, true,
                [](OpBuilder &nb, Location l, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, l, createSumStep(nb, l, args[0], args[1]));
                });
  Value output = rescale(state.output, all, perRow);
  output = linalg::MatmulOp::create(b, loc, output.getType(),
                                    ValueRange{probabilities, values}, output)
               .getResult(0);
  return {max, sum, output};
}

Value AttentionKernel::emitQueryBlock(OpBuilder &b, Value bh, OpFoldResult q0,
                                      int64_t rows, Value destination) {
  MLIRContext *ctx = b.getContext();
  Value query = ops.q.extract(b, loc, bh, q0, rows, ops.depth);
  if (ops.scale != 1 && !ops.scalesInExponent()) {
    // A scale that reverses the scores' order: scaling the query rows once
    // costs less than scaling every block of scores.
    auto queryType = cast<RankedTensorType>(query.getType());
    AffineMap identity = AffineMap::getMultiDimIdentityMap(2, ctx);
    float scale = ops.scale;
    query = generic(
        b, queryType, query, createEmptyTensor(b, loc, queryType),
        {identity, identity}, false,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value factor =
              arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(scale));
          linalg::YieldOp::create(
              nb, l, arith::MulFOp::create(nb, l, args[0], factor).getResult());
        });
  }
  // The output rows accumulate where they are stored.
  Value zero = createScalarConstant(b, loc, b.getF32Type(), 0);
  State state = {
      splat(b, {rows}, -std::numeric_limits<double>::infinity()),
      splat(b, {rows}, 0),
      linalg::FillOp::create(b, loc, zero, destination).getResult(0)};
  // Skipping blocks the mask removes is exact only while every row keeps
  // some key: a row whose keys are all masked by a finite value takes the
  // softmax of its unmasked scores.
  Value skippable;
  std::optional<int64_t> staticKeys = getConstantIntValue(ops.keys);
  if (skipColumns > 0) {
    Value whole = maskBlock(b, bh, q0, rows, b.getIndexAttr(0), *staticKeys);
    skippable = reduceRows(b, keptPerRow(b, whole), /*all=*/true);
  }
  auto keyBlock = [&](OpBuilder &nb, OpFoldResult k0, int64_t columns,
                      State carried) {
    if (skippable)
      return emitUnlessMasked(nb, bh, q0, query, k0, columns, carried,
                              skippable);
    return emitKeyBlock(nb, bh, q0, query, k0, columns, carried);
  };
  // Key blocks of static sizes: one loop per size over its run of keys.
  auto keyLoop = [&](Value lower, Value upper, int64_t columns) {
    auto loop = scf::ForOp::create(
        b, loc, lower, upper, arith::ConstantIndexOp::create(b, loc, columns),
        ValueRange{state.max, state.sum, state.output},
        [&](OpBuilder &nb, Location l, Value k0, ValueRange carried) {
          State next =
              keyBlock(nb, k0, columns, {carried[0], carried[1], carried[2]});
          scf::YieldOp::create(nb, l,
                               ValueRange{next.max, next.sum, next.output});
        });
    state = {loop.getResult(0), loop.getResult(1), loop.getResult(2)};
  };
  if (staticKeys) {
    int64_t columns =
        std::min(skipColumns > 0 ? skipColumns : keyColumns, *staticKeys);
    int64_t fullBlocks = *staticKeys / columns, tail = *staticKeys % columns;
    if (fullBlocks == 1)
      state = keyBlock(b, b.getIndexAttr(0), columns, state);
    else if (fullBlocks > 1)
      keyLoop(arith::ConstantIndexOp::create(b, loc, 0),
              arith::ConstantIndexOp::create(b, loc, fullBlocks * columns),
              columns);
    if (tail > 0)
      state = keyBlock(b, b.getIndexAttr(fullBlocks * columns), tail, state);
  } else {
    Value keyCount = cast<Value>(ops.keys);
    Value lower = arith::ConstantIndexOp::create(b, loc, 0);
    SmallVector<int64_t> blocks = getDynamicKeyBlocks(keyColumns);
    for (int64_t columns : blocks) {
      // Up to the last multiple of this block size.
      Value size = arith::ConstantIndexOp::create(b, loc, columns);
      Value upper =
          arith::MulIOp::create(
              b, loc, arith::DivUIOp::create(b, loc, keyCount, size), size)
              .getResult();
      keyLoop(lower, upper, columns);
      lower = upper;
    }
    // The keys left, fewer than the smallest block: one block of that size
    // ending at the last key, the keys before `lower` in it left out (every
    // read stays within the keys), if there are that many keys; else one
    // key at a time. A decoder's step would otherwise fold in up to 15 keys
    // singly, each a full online-softmax update.
    int64_t last = blocks.back();
    Value lastSize = arith::ConstantIndexOp::create(b, loc, last);
    Value enough = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                         keyCount, lastSize);
    Value left = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lower,
                                       keyCount);
    auto tail = scf::IfOp::create(
        b, loc, arith::AndIOp::create(b, loc, enough, left),
        [&](OpBuilder &tb, Location l) {
          Value k0 = arith::SubIOp::create(tb, l, keyCount, lastSize);
          State next = emitKeyBlock(tb, bh, q0, query, k0, last, state, lower);
          scf::YieldOp::create(tb, l,
                               ValueRange{next.max, next.sum, next.output});
        },
        [&](OpBuilder &eb, Location l) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(eb.getInsertionBlock(), eb.getInsertionPoint());
          keyLoop(lower, keyCount, 1);
          scf::YieldOp::create(b, l,
                               ValueRange{state.max, state.sum, state.output});
        });
    state = {tail.getResult(0), tail.getResult(1), tail.getResult(2)};
  }
  // Normalize by the row sums, in place.
  AffineMap all = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap perRow = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
  return generic(
      b, state.output.getType(), state.sum, state.output, {perRow, all}, false,
      [](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l, arith::DivFOp::create(nb, l, args[1], args[0]).getResult());
      });
}

/// Rows of the query blocks between full blocks and single rows, for a
/// run-time query count.
constexpr int64_t kFewQueryRows = 4;

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t queryRows, int64_t keyColumns,
                    int64_t maskedKeyColumns)
      : OpConversionPattern(ctx), queryRows(queryRows), keyColumns(keyColumns),
        maskedKeyColumns(maskedKeyColumns) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto resultType = cast<RankedTensorType>(op.getType());
    // Shapes in heads-first order; key_t is always stored that way.
    ArrayRef<int64_t> keyT = op.getKeyT().getType().getShape();
    ArrayRef<int64_t> batchShape = keyT.drop_back(2);
    int64_t batch = 1;
    for (int64_t dim : batchShape)
      batch *= dim;
    Operands ops;
    int64_t querySeq = resultType.getRank() - 1 - (op.getQuerySeqFirst() ? 2 : 1);
    ops.queries =
        tensor::getMixedSize(rewriter, loc, adaptor.getQuery(), querySeq);
    ops.depth = keyT[keyT.size() - 2];
    ops.keys = tensor::getMixedSize(rewriter, loc, adaptor.getKeyT(),
                                    keyT.size() - 1);
    ops.valueDepth = resultType.getShape().back();
    ops.scale = op.getScale().convertToFloat();
    if (std::optional<APFloat> fill = op.getMaskFill())
      ops.fill = fill->convertToFloat();
    if (ShapedType::isDynamicShape(batchShape) ||
        ShapedType::isDynamic(ops.depth) ||
        ShapedType::isDynamic(ops.valueDepth))
      return rewriter.notifyMatchFailure(
          op, "dynamic batch, heads or depth");
    if (batch == 0 || ops.valueDepth == 0 ||
        isConstantIntValue(ops.queries, 0) || isConstantIntValue(ops.keys, 0))
      return rewriter.notifyMatchFailure(op, "empty attention");
    Type f32 = rewriter.getF32Type();
    int64_t heads = batchShape.empty() ? 1 : batchShape.back();
    // A run-time row count is the one dynamic size of the flattened forms.
    auto rowsType = [&](OpFoldResult rows, int64_t columns, bool seqFirst) {
      int64_t count = getConstantIntValue(rows).value_or(ShapedType::kDynamic);
      if (seqFirst)
        return RankedTensorType::get({batch / heads, count, heads, columns},
                                     f32);
      return RankedTensorType::get({batch, count, columns}, f32);
    };
    auto dynamicRows = [](OpFoldResult rows) {
      return isa<Value>(rows) ? SmallVector<Value>{cast<Value>(rows)}
                              : SmallVector<Value>();
    };
    auto flat = [&](Value v, OpFoldResult rows, int64_t columns,
                    bool seqFirst) {
      return Rows{reshapeTensor(rewriter, loc, v,
                                rowsType(rows, columns, seqFirst),
                                dynamicRows(rows)),
                  seqFirst ? heads : 0};
    };
    ops.q =
        flat(adaptor.getQuery(), ops.queries, ops.depth, op.getQuerySeqFirst());
    ops.kt = reshapeTensor(
        rewriter, loc, adaptor.getKeyT(),
        RankedTensorType::get(
            {batch, ops.depth,
             getConstantIntValue(ops.keys).value_or(ShapedType::kDynamic)},
            f32),
        dynamicRows(ops.keys));
    ops.v = flat(adaptor.getValue(), ops.keys, ops.valueDepth,
                 op.getValueSeqFirst());
    if (Value mask = adaptor.getMask()) {
      auto maskType = cast<RankedTensorType>(mask.getType());
      if (ShapedType::isDynamicShape(
              maskType.getShape().drop_back(std::min<int64_t>(2, maskType.getRank()))))
        return rewriter.notifyMatchFailure(op, "mask with dynamic batch");
      // Filling with -inf is adding -inf (scores are finite): such a mask
      // becomes an additive one.
      bool additive = !ops.fill || (std::isinf(*ops.fill) && *ops.fill < 0);
      ops.mask =
          flattenMask(rewriter, loc, mask, batchShape, additive, ops.unscale());
      if (additive)
        ops.fill.reset();
    }

    AttentionKernel kernel(ops, loc, keyColumns, maskedKeyColumns);
    bool resultSeqFirst = op.getResultSeqFirst();
    Value result = createEmptyTensor(
        rewriter, loc, rowsType(ops.queries, ops.valueDepth, resultSeqFirst),
        dynamicRows(ops.queries));
    // One parallel loop over (batch entry, block of rows), then one over
    // (batch entry, row) for the rows left over.
    auto parallelBlocks =
        [&](OpFoldResult count, int64_t blockRows,
            function_ref<std::pair<Value, OpFoldResult>(OpBuilder &, Value)>
                position) {
          auto loop = scf::ForallOp::create(rewriter, loc,
                                            ArrayRef<OpFoldResult>{count},
                                            ValueRange{result}, std::nullopt);
          OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
          auto [bh, q0] = position(b, loop.getInductionVar(0));
          Rows out{loop.getRegionIterArgs()[0], resultSeqFirst ? heads : 0};
          SmallVector<OpFoldResult> offsets, sizes, strides;
          out.locate(b, loc, bh, q0, blockRows, ops.valueDepth, offsets, sizes,
                     strides);
          Value destination =
              out.extract(b, loc, bh, q0, blockRows, ops.valueDepth);
          Value block =
              kernel.emitQueryBlock(b, bh, q0, blockRows, destination);
          b.setInsertionPointToStart(loop.getTerminator().getBody());
          tensor::ParallelInsertSliceOp::create(b, loc, block, out.tensor,
                                                offsets, sizes, strides);
          result = loop.getResult(0);
        };
    // Iteration i of `perEntry` iterations per batch entry, as (entry,
    // first row); `first` is the first row of the run.
    auto position = [&](OpBuilder &b, Value i, Value perEntry, int64_t step,
                        Value first) {
      Value bh = arith::DivUIOp::create(b, loc, i, perEntry);
      Value index = arith::RemUIOp::create(b, loc, i, perEntry);
      Value q0 = arith::AddIOp::create(
          b, loc, first,
          arith::MulIOp::create(b, loc, index,
                                arith::ConstantIndexOp::create(b, loc, step)));
      return std::pair<Value, OpFoldResult>(bh, q0);
    };
    if (std::optional<int64_t> queries = getConstantIntValue(ops.queries)) {
      int64_t rows = std::min(queryRows, *queries);
      int64_t fullBlocks = *queries / rows, tail = *queries % rows;
      if (fullBlocks > 0)
        parallelBlocks(rewriter.getIndexAttr(batch * fullBlocks), rows,
                       [&](OpBuilder &b, Value i) {
                         return position(
                             b, i, arith::ConstantIndexOp::create(b, loc, fullBlocks),
                             rows, arith::ConstantIndexOp::create(b, loc, 0));
                       });
      if (tail > 0)
        parallelBlocks(rewriter.getIndexAttr(batch), tail,
                       [&](OpBuilder &b, Value i) {
                         return std::pair<Value, OpFoldResult>(
                             i, b.getIndexAttr(fullBlocks * rows));
                       });
    } else {
      // Blocks of queryRows rows, then of kFewQueryRows, then single rows.
      // A decoder's verify step (a few rows) then reads each key block
      // once for its rows, with a register per row.
      Value queryCount = cast<Value>(ops.queries);
      Value batchSize = arith::ConstantIndexOp::create(rewriter, loc, batch);
      Value first = arith::ConstantIndexOp::create(rewriter, loc, 0);
      SmallVector<int64_t> blockRows = {queryRows};
      if (kFewQueryRows > 1 && kFewQueryRows < queryRows)
        blockRows.push_back(kFewQueryRows);
      blockRows.push_back(1);
      for (int64_t rows : blockRows) {
        Value size = arith::ConstantIndexOp::create(rewriter, loc, rows);
        Value left = arith::SubIOp::create(rewriter, loc, queryCount, first);
        Value blocks =
            rows == 1
                ? left
                : arith::DivUIOp::create(rewriter, loc, left, size).getResult();
        parallelBlocks(OpFoldResult(arith::MulIOp::create(rewriter, loc,
                                                          batchSize, blocks)),
                       rows, [&](OpBuilder &b, Value i) {
                         return position(b, i, blocks, rows, first);
                       });
        first = arith::AddIOp::create(
            rewriter, loc, first,
            arith::MulIOp::create(rewriter, loc, blocks, size));
      }
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, resultType,
                                         getDynamicResultSizes(rewriter, op)));
    return success();
  }

  /// The mask as `[1 or B, 1 or Sq, 1 or Sk]`. A boolean mask becomes f32
  /// (-inf where set, else 0) if `additive`, otherwise i8, which loads as
  /// bytes in vectors (vectors of i1 are bit-packed). An f32 mask is
  /// multiplied by `unscale` (as `unscaled` says), once here rather
  /// than in every block of scores.
  static Value flattenMask(OpBuilder &b, Location loc, Value mask,
                           ArrayRef<int64_t> batchShape, bool additive,
                           float unscale) {
    auto type = cast<RankedTensorType>(mask.getType());
    Type elementType = type.getElementType();
    size_t rank = batchShape.size() + 2;
    SmallVector<int64_t> shape(rank - type.getRank(), 1);
    llvm::append_range(shape, type.getShape());
    ArrayRef<int64_t> maskBatch = ArrayRef<int64_t>(shape).drop_back(2);
    int64_t maskEntries = 1;
    for (int64_t dim : maskBatch)
      maskEntries *= dim;
    int64_t batch = 1;
    for (int64_t dim : batchShape)
      batch *= dim;
    bool boolean = elementType.isInteger(1);
    Type resultElement = elementType;
    if (boolean)
      resultElement = additive ? Type(b.getF32Type()) : Type(b.getI8Type());
    bool expand = maskEntries != 1 && maskBatch != batchShape;
    bool scales = !boolean && unscale != 1;
    SmallVector<int64_t> resultShape(expand ? batchShape : maskBatch);
    resultShape.append({shape[rank - 2], shape[rank - 1]});
    // Only the last two dimensions (queries, keys) may be dynamic; every
    // form below keeps them, so their sizes serve all the reshapes.
    SmallVector<Value> dynamicSizes = getDynamicSizes(b, loc, mask);
    Value expanded = reshapeTensor(
        b, loc, mask, RankedTensorType::get(shape, elementType), dynamicSizes);
    if (expand || resultElement != elementType || scales) {
      // Batch dimensions the mask broadcasts over only some of (a per-batch
      // padding mask with several heads) are written out.
      MLIRContext *ctx = b.getContext();
      auto resultType = RankedTensorType::get(resultShape, resultElement);
      AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, ctx);
      expanded =
          linalg::GenericOp::create(
              b, loc, resultType, expanded,
              createEmptyTensor(b, loc, resultType, dynamicSizes),
              ArrayRef<AffineMap>{
                  getBroadcastMap(ctx, shape, resultShape, rank), identity},
              SmallVector<IteratorType>(rank, IteratorType::parallel),
              [&](OpBuilder &nb, Location l, ValueRange args) {
                Value x = args[0];
                if (boolean && additive) {
                  Value lowest = arith::ConstantOp::create(
                      nb, l,
                      nb.getF32FloatAttr(
                          -std::numeric_limits<float>::infinity()));
                  Value zero =
                      arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0));
                  x = arith::SelectOp::create(nb, l, x, lowest, zero);
                } else if (boolean) {
                  x = arith::ExtUIOp::create(nb, l, resultElement, x);
                } else if (scales) {
                  x = unscaledMask(nb, l, x, unscale);
                }
                linalg::YieldOp::create(nb, l, x);
              })
              .getResult(0);
    }
    int64_t entries = expand ? batch : maskEntries;
    return reshapeTensor(
        b, loc, expanded,
        RankedTensorType::get({entries, shape[rank - 2], shape[rank - 1]},
                              resultElement),
        dynamicSizes);
  }

  /// `unscaled` of a mask element, in generated code.
  static Value unscaledMask(OpBuilder &b, Location loc, Value x,
                            float unscale) {
    auto constant = [&](float value) -> Value {
      return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
    };
    Value product = arith::MulFOp::create(b, loc, x, constant(unscale));
    Value finite = arith::MaximumFOp::create(
        b, loc, product, constant(std::numeric_limits<float>::lowest()));
    Value minusInfinity = constant(-std::numeric_limits<float>::infinity());
    Value isMinusInfinity = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, x, minusInfinity);
    return arith::SelectOp::create(b, loc, isMinusInfinity, minusInfinity,
                                   finite);
  }

  int64_t queryRows, keyColumns, maskedKeyColumns;
};

} // namespace

void kiln::populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                             int64_t queryRows,
                                             int64_t keyColumns,
                                             int64_t maskedKeyColumns) {
  patterns.add<AttentionLowering>(patterns.getContext(), queryRows, keyColumns,
                                  maskedKeyColumns);
}
