//===- TokenMergeLowering.cpp - token matching, merging and unmerging -----===//
//
// kiln.token_match is a chain of generics over the tokens of each batch
// entry: the normalized even and odd metric rows multiply as a batched
// product (the cosine similarities), each even token keeps its best
// allowed odd partner, and the ranks of those best scores (counted, as
// TopK is: no sort) say which even tokens merge. Slots are prefix counts of
// the kept tokens. Every step is a parallel loop over tokens or a
// reduction over tokens, O(N^2) at most, small beside the block's products.
//
// kiln.token_select ranks the tokens the same way and counts slots in one
// pass over them.
//
// kiln.token_merge adds each token's size-weighted row into its slot: a
// scatter, so a loop over the tokens carrying the sums, each step a
// vectorized row update. kiln.token_unmerge is a gather: a parallel generic.
//
//===----------------------------------------------------------------------===//
#include "dialects/Kiln/IR/KilnOps.h"
#include "lib/Conversion/KilnToLinalg/LoweringUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace kiln;

namespace {

using utils::IteratorType;
constexpr IteratorType kParallel = IteratorType::parallel;
constexpr IteratorType kReduction = IteratorType::reduction;

/// A key whose mask adds this much or less to its scores is padding (as
/// the attention lowering's key skipping reads masks).
constexpr double kPaddingBias = -1.0e4;
/// The score of a pair of padding tokens: above any cosine, so padding
/// merges first, which costs no quality.
constexpr double kPaddingPairScore = 2.0;
/// Taken off the cosine of a padding and a real token: below any pair of
/// one kind, so they merge only when too few of those are left.
constexpr double kMixedPairPenalty = 4.0;

/// Builds affine maps and generics over one op's loop nests.
struct GenericBuilder {
  OpBuilder &b;
  Location loc;

  AffineExpr dim(unsigned d) { return getAffineDimExpr(d, b.getContext()); }
  AffineMap map(unsigned dims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(dims, 0, results, b.getContext());
  }
  /// `init` filled with `value` (f32 or i64), shaped `shape`.
  Value filled(ArrayRef<int64_t> shape, Type type, double value) {
    return createFilledTensor(b, loc, RankedTensorType::get(shape, type),
                              createScalarConstant(b, loc, type, value));
  }
  Value empty(ArrayRef<int64_t> shape, Type type) {
    return createEmptyTensor(b, loc, RankedTensorType::get(shape, type));
  }
  ValueRange
  generic(ValueRange inputs, ValueRange inits, ArrayRef<AffineMap> maps,
          ArrayRef<IteratorType> iterators,
          function_ref<void(OpBuilder &, Location, ValueRange)> body) {
    return linalg::GenericOp::create(b, loc, TypeRange(inits), inputs, inits,
                                     maps, iterators, body)
        .getResults();
  }
};

void yield(OpBuilder &b, Location loc, ValueRange values) {
  linalg::YieldOp::create(b, loc, values);
}
void yield(OpBuilder &b, Location loc, Value value) {
  linalg::YieldOp::create(b, loc, ValueRange{value});
}

Value index(OpBuilder &b, Location loc, unsigned dim) {
  return linalg::IndexOp::create(b, loc, dim);
}
Value constIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}
Value toI64(OpBuilder &b, Location loc, Value indexValue) {
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), indexValue);
}
Value toIndex(OpBuilder &b, Location loc, Value i64Value) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), i64Value);
}

/// The i64 slot `slot` clamped into `[0, slots)`, as an index.
Value clampSlot(OpBuilder &b, Location loc, Value slot, int64_t slots) {
  Value low = createScalarConstant(b, loc, b.getI64Type(), 0);
  Value high = createScalarConstant(b, loc, b.getI64Type(), slots - 1);
  Value clamped = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, slot, low), high);
  return toIndex(b, loc, clamped);
}

/// The rank of each of `scores`' `count` entries per batch entry, higher
/// first and ties to the lower index (i64, [B, count]): counted, as TopK
/// is, without a sort.
Value rankDescending(GenericBuilder &g, Value scores, int64_t batch,
                     int64_t count) {
  auto d = [&](unsigned i) { return g.dim(i); };
  return g.generic(
      ValueRange{scores, scores}, g.filled({batch, count}, g.b.getI64Type(), 0),
      {g.map(3, {d(0), d(1)}), g.map(3, {d(0), d(2)}), g.map(3, {d(0), d(1)})},
      {kParallel, kParallel, kReduction},
      [](OpBuilder &b, Location l, ValueRange args) {
        Value higher = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                             args[1], args[0]);
        Value tie = arith::AndIOp::create(
            b, l,
            arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, args[1],
                                  args[0]),
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                  index(b, l, 2), index(b, l, 1)));
        Value before = arith::OrIOp::create(b, l, higher, tie);
        yield(b, l,
              arith::AddIOp::create(
                  b, l, args[2],
                  arith::ExtUIOp::create(b, l, b.getI64Type(), before)));
      })[0];
}

struct TokenMatchLowering : OpConversionPattern<TokenMatchOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TokenMatchOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    GenericBuilder g{rewriter, loc};
    Value metric = adaptor.getMetric(), bias = adaptor.getKeyBias();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(metric.getType()).getShape();
    int64_t batch = shape[0], tokens = shape[1], depth = shape[2];
    int64_t evens = (tokens + 1) / 2, odds = tokens / 2;
    int64_t merged = static_cast<int64_t>(op.getMerged());
    int64_t slots = tokens - merged;
    int64_t protectedPrefix = static_cast<int64_t>(op.getProtectedPrefix());
    Type f32 = rewriter.getF32Type(), i64 = rewriter.getI64Type();
    auto d = [&](unsigned i) { return g.dim(i); };

    // 1 / |metric row|, a zero row left at 0 rather than NaN.
    Value norms =
        g.generic(metric, g.filled({batch, tokens}, f32, 0.0),
                  {g.map(3, {d(0), d(1), d(2)}), g.map(3, {d(0), d(1)})},
                  {kParallel, kParallel, kReduction},
                  [](OpBuilder &b, Location l, ValueRange args) {
                    Value square =
                        arith::MulFOp::create(b, l, args[0], args[0]);
                    yield(b, l, createSumStep(b, l, square, args[1]));
                  })[0];
    Value inverseNorms = g.generic(
        norms, g.empty({batch, tokens}, f32),
        {g.map(2, {d(0), d(1)}), g.map(2, {d(0), d(1)})},
        {kParallel, kParallel}, [](OpBuilder &b, Location l, ValueRange args) {
          Value tiny = createScalarConstant(b, l, b.getF32Type(), 1.0e-30);
          Value root = math::SqrtOp::create(
              b, l, arith::MaximumFOp::create(b, l, args[0], tiny));
          Value one = createScalarConstant(b, l, b.getF32Type(), 1.0);
          yield(b, l, arith::DivFOp::create(b, l, one, root));
        })[0];

    // The normalized even rows [B, E, D] and odd rows transposed [B, D, O]:
    // their product is every even-odd cosine.
    auto scaleRows = [&](bool odd, ArrayRef<int64_t> rowsShape,
                         AffineMap resultMap) {
      AffineExpr token = odd ? d(1) * 2 + 1 : d(1) * 2;
      return g.generic(
          ValueRange{metric, inverseNorms}, g.empty(rowsShape, f32),
          {g.map(3, {d(0), token, d(2)}), g.map(3, {d(0), token}), resultMap},
          {kParallel, kParallel, kParallel},
          [](OpBuilder &b, Location l, ValueRange args) {
            yield(b, l, arith::MulFOp::create(b, l, args[0], args[1]));
          })[0];
    };
    Value evenRows =
        scaleRows(false, {batch, evens, depth}, g.map(3, {d(0), d(1), d(2)}));
    Value oddColumns =
        scaleRows(true, {batch, depth, odds}, g.map(3, {d(0), d(2), d(1)}));
    Value cosines =
        createMatMul(rewriter, loc, evenRows, oddColumns,
                     RankedTensorType::get({batch, evens, odds}, f32));

    // Each even token's best partner: its score and index. Scores are
    // tiered: padding pairs at 2, then the cosines of pairs of one kind,
    // then those of mixed pairs (4 lower), and a protected token in a pair
    // at -inf.
    SmallVector<Value> pairInputs{cosines};
    SmallVector<AffineMap> pairMaps{g.map(3, {d(0), d(1), d(2)})};
    if (bias) {
      pairInputs.append({bias, bias});
      pairMaps.append(
          {g.map(3, {d(0), d(1) * 2}), g.map(3, {d(0), d(2) * 2 + 1})});
    }
    pairMaps.append(2, g.map(3, {d(0), d(1)}));
    double lowest = -std::numeric_limits<double>::infinity();
    ValueRange best = g.generic(
        pairInputs,
        ValueRange{g.filled({batch, evens}, f32, lowest),
                   g.filled({batch, evens}, i64, 0)},
        pairMaps, {kParallel, kParallel, kReduction},
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto f32Constant = [&](double value) {
            return createScalarConstant(b, l, b.getF32Type(), value);
          };
          Value even =
              arith::MulIOp::create(b, l, index(b, l, 1), constIndex(b, l, 2));
          Value oddIndex = index(b, l, 2);
          Value odd = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, oddIndex, constIndex(b, l, 2)),
              constIndex(b, l, 1));
          Value prefix = constIndex(b, l, protectedPrefix);
          Value unprotected = arith::AndIOp::create(
              b, l,
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, even,
                                    prefix),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, odd,
                                    prefix));
          Value score = args[0];
          unsigned outs = 1;
          if (bias) {
            Value padding = f32Constant(kPaddingBias);
            Value evenPad = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OLE, args[1], padding);
            Value oddPad = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OLE, args[2], padding);
            Value sameKind = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::eq, evenPad, oddPad);
            Value mixed = arith::SubFOp::create(b, l, score,
                                                f32Constant(kMixedPairPenalty));
            score = arith::SelectOp::create(
                b, l, sameKind,
                arith::SelectOp::create(b, l, evenPad,
                                        f32Constant(kPaddingPairScore), score),
                mixed);
            outs = 3;
          }
          score = arith::SelectOp::create(b, l, unprotected, score,
                                          f32Constant(lowest));
          Value better = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                               score, args[outs]);
          yield(b, l,
                ValueRange{
                    arith::SelectOp::create(b, l, better, score, args[outs]),
                    arith::SelectOp::create(b, l, better, toI64(b, l, oddIndex),
                                            args[outs + 1])});
        });
    Value bestScores = best[0], partners = best[1];

    // The `merged` best-ranked even tokens merge.
    Value ranks = rankDescending(g, bestScores, batch, evens);

    // 1 where token n keeps a slot of its own.
    Value keptFlags = g.generic(
        ValueRange{}, g.empty({batch, tokens}, i64), {g.map(2, {d(0), d(1)})},
        {kParallel, kParallel}, [&](OpBuilder &b, Location l, ValueRange) {
          Value entry = index(b, l, 0), token = index(b, l, 1);
          Value two = constIndex(b, l, 2);
          Value half = arith::DivUIOp::create(b, l, token, two);
          Value odd = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ne,
              arith::RemUIOp::create(b, l, token, two), constIndex(b, l, 0));
          Value rank =
              tensor::ExtractOp::create(b, l, ranks, ValueRange{entry, half});
          // The verifier leaves at least `merged` unprotected even tokens,
          // each with a finite best score, ranked before protected ones.
          Value merges = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::slt, rank,
              createScalarConstant(b, l, b.getI64Type(), merged));
          Value keeps = arith::OrIOp::create(
              b, l, odd,
              arith::XOrIOp::create(
                  b, l, merges,
                  arith::ConstantIntOp::create(b, l, b.getI1Type(), 1)));
          yield(b, l, arith::ExtUIOp::create(b, l, b.getI64Type(), keeps));
        })[0];

    // A kept token's slot (how many tokens before it are kept) and the
    // token each slot is kept from: one pass over the tokens, a running
    // count.
    Value zero = constIndex(rewriter, loc, 0),
          one = constIndex(rewriter, loc, 1);
    scf::LoopNest counting = scf::buildLoopNest(
        rewriter, loc, {zero, zero},
        {constIndex(rewriter, loc, batch), constIndex(rewriter, loc, tokens)},
        {one, one},
        ValueRange{g.empty({batch, tokens}, i64),
                   g.filled({batch, slots}, i64, 0), g.filled({batch}, i64, 0)},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange carried) -> scf::ValueVector {
          Value count = tensor::ExtractOp::create(b, l, carried[2], ivs[0]);
          Value keeps = tensor::ExtractOp::create(b, l, keptFlags, ivs);
          Value slotsOut =
              tensor::InsertOp::create(b, l, count, carried[0], ivs);
          // Every slot is filled once: only a kept token reaches `count`'s
          // slot before the count moves past it.
          Value at = clampSlot(b, l, count, slots);
          Value token = toI64(b, l, ivs[1]);
          Value previous = tensor::ExtractOp::create(b, l, carried[1],
                                                     ValueRange{ivs[0], at});
          Value isKept = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ne, keeps,
              createScalarConstant(b, l, b.getI64Type(), 0));
          Value keptOut = tensor::InsertOp::create(
              b, l, arith::SelectOp::create(b, l, isKept, token, previous),
              carried[1], ValueRange{ivs[0], at});
          Value countOut = tensor::InsertOp::create(
              b, l, arith::AddIOp::create(b, l, count, keeps), carried[2],
              ivs[0]);
          return {slotsOut, keptOut, countOut};
        });
    Value keptSlots = counting.results[0], kept = counting.results[1];

    // A merged token goes to its partner's slot.
    Value destination = g.generic(
        ValueRange{keptFlags, keptSlots}, g.empty({batch, tokens}, i64),
        SmallVector<AffineMap>(3, g.map(2, {d(0), d(1)})),
        {kParallel, kParallel}, [&](OpBuilder &b, Location l, ValueRange args) {
          Value entry = index(b, l, 0);
          Value half =
              arith::DivUIOp::create(b, l, index(b, l, 1), constIndex(b, l, 2));
          Value partner = toIndex(b, l,
                                  tensor::ExtractOp::create(
                                      b, l, partners, ValueRange{entry, half}));
          Value partnerToken = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, partner, constIndex(b, l, 2)),
              constIndex(b, l, 1));
          Value partnerSlot = tensor::ExtractOp::create(
              b, l, keptSlots, ValueRange{entry, partnerToken});
          Value keeps = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ne, args[0],
              createScalarConstant(b, l, b.getI64Type(), 0));
          yield(b, l,
                arith::SelectOp::create(b, l, keeps, args[1], partnerSlot));
        })[0];

    rewriter.replaceOp(op, ValueRange{destination, kept});
    return success();
  }
};

struct TokenSelectLowering : OpConversionPattern<TokenSelectOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TokenSelectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    GenericBuilder g{rewriter, loc};
    Value importance = adaptor.getImportance(), bias = adaptor.getKeyBias();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(importance.getType()).getShape();
    int64_t batch = shape[0], tokens = shape[1];
    int64_t keptCount = static_cast<int64_t>(op.getProtectedPrefix()) +
                        static_cast<int64_t>(op.getKept());
    int64_t slots = op.getKeptTokens().getType().getShape()[1];
    Type f32 = rewriter.getF32Type(), i64 = rewriter.getI64Type();
    auto d = [&](unsigned i) { return g.dim(i); };
    auto perToken = g.map(2, {d(0), d(1)});

    // Protected tokens rank first, padding last.
    SmallVector<Value> scoreInputs{importance};
    if (bias)
      scoreInputs.push_back(bias);
    int64_t protectedPrefix = static_cast<int64_t>(op.getProtectedPrefix());
    Value scores = g.generic(
        scoreInputs, g.empty({batch, tokens}, f32),
        SmallVector<AffineMap>(scoreInputs.size() + 1, perToken),
        {kParallel, kParallel}, [&](OpBuilder &b, Location l, ValueRange args) {
          double infinity = std::numeric_limits<double>::infinity();
          Value score = args[0];
          if (bias) {
            Value padding = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OLE, args[1],
                createScalarConstant(b, l, b.getF32Type(), kPaddingBias));
            score = arith::SelectOp::create(
                b, l, padding,
                createScalarConstant(b, l, b.getF32Type(), -infinity), score);
          }
          Value isProtected = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ult, index(b, l, 1),
              constIndex(b, l, protectedPrefix));
          yield(b, l,
                arith::SelectOp::create(
                    b, l, isProtected,
                    createScalarConstant(b, l, b.getF32Type(), infinity),
                    score));
        })[0];
    Value ranks = rankDescending(g, scores, batch, tokens);

    // One pass over the tokens with a running count of the kept ones: a
    // kept token takes the next slot, another one its extra slot.
    Value zero = constIndex(rewriter, loc, 0),
          one = constIndex(rewriter, loc, 1);
    scf::LoopNest counting = scf::buildLoopNest(
        rewriter, loc, {zero, zero},
        {constIndex(rewriter, loc, batch), constIndex(rewriter, loc, tokens)},
        {one, one},
        ValueRange{g.empty({batch, tokens}, i64),
                   g.filled({batch, slots}, i64, 0), g.filled({batch}, i64, 0)},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange carried) -> scf::ValueVector {
          auto i64Constant = [&](int64_t value) {
            return createScalarConstant(b, l, b.getI64Type(), value);
          };
          Value count = tensor::ExtractOp::create(b, l, carried[2], ivs[0]);
          Value rank = tensor::ExtractOp::create(b, l, ranks, ivs);
          Value keeps = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                              rank, i64Constant(keptCount));
          Value extraSlot = i64Constant(keptCount);
          if (bias) {
            Value padding = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OLE,
                tensor::ExtractOp::create(b, l, bias, ivs),
                createScalarConstant(b, l, b.getF32Type(), kPaddingBias));
            extraSlot = arith::SelectOp::create(
                b, l, padding, i64Constant(keptCount + 1), extraSlot);
          }
          Value slot = arith::SelectOp::create(b, l, keeps, count, extraSlot);
          Value destinationOut =
              tensor::InsertOp::create(b, l, slot, carried[0], ivs);
          Value keptOut = tensor::InsertOp::create(
              b, l, toI64(b, l, ivs[1]), carried[1],
              ValueRange{ivs[0], clampSlot(b, l, slot, slots)});
          Value countOut = tensor::InsertOp::create(
              b, l,
              arith::AddIOp::create(
                  b, l, count,
                  arith::ExtUIOp::create(b, l, b.getI64Type(), keeps)),
              carried[2], ivs[0]);
          return {destinationOut, keptOut, countOut};
        });
    rewriter.replaceOp(op,
                       ValueRange{counting.results[0], counting.results[1]});
    return success();
  }
};

struct TokenMergeLowering : OpConversionPattern<TokenMergeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TokenMergeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    GenericBuilder g{rewriter, loc};
    Value input = adaptor.getInput(), sizes = adaptor.getSizes(),
          destination = adaptor.getDestination();
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(input.getType()).getShape();
    int64_t batch = shape[0], tokens = shape[1], width = shape[2];
    int64_t slots = op.getResult().getType().getShape()[1];
    Type f32 = rewriter.getF32Type();
    auto d = [&](unsigned i) { return g.dim(i); };

    // sums[b, slot(n)] += sizes[b, n] * input[b, n] and the slot's size
    // += sizes[b, n], token by token.
    Value zero = constIndex(rewriter, loc, 0),
          one = constIndex(rewriter, loc, 1);
    Value sums = g.filled({batch, slots, width}, f32, 0.0);
    auto rowType = RankedTensorType::get({width}, f32);
    SmallVector<OpFoldResult> rowSizes{rewriter.getIndexAttr(1),
                                       rewriter.getIndexAttr(1),
                                       rewriter.getIndexAttr(width)};
    SmallVector<OpFoldResult> unitStrides(3, rewriter.getIndexAttr(1));
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, {zero, zero},
        {constIndex(rewriter, loc, batch), constIndex(rewriter, loc, tokens)},
        {one, one}, ValueRange{sums, g.filled({batch, slots}, f32, 0.0)},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange carried) -> scf::ValueVector {
          Value slot = clampSlot(
              b, l, tensor::ExtractOp::create(b, l, destination, ivs), slots);
          Value size = tensor::ExtractOp::create(b, l, sizes, ivs);
          Value slotSize = tensor::ExtractOp::create(b, l, carried[1],
                                                     ValueRange{ivs[0], slot});
          Value sizesOut = tensor::InsertOp::create(
              b, l, arith::AddFOp::create(b, l, slotSize, size), carried[1],
              ValueRange{ivs[0], slot});
          Value row = tensor::ExtractSliceOp::create(
              b, l, rowType, input,
              SmallVector<OpFoldResult>{ivs[0], ivs[1], b.getIndexAttr(0)},
              rowSizes, unitStrides);
          SmallVector<OpFoldResult> at{ivs[0], slot, b.getIndexAttr(0)};
          Value sumRow = tensor::ExtractSliceOp::create(
              b, l, rowType, carried[0], at, rowSizes, unitStrides);
          AffineMap identity =
              AffineMap::getMultiDimIdentityMap(1, b.getContext());
          Value updated =
              linalg::GenericOp::create(
                  b, l, TypeRange{rowType}, ValueRange{row}, ValueRange{sumRow},
                  SmallVector<AffineMap>{identity, identity}, {kParallel},
                  [&](OpBuilder &nb, Location nl, ValueRange args) {
                    Value weighted =
                        arith::MulFOp::create(nb, nl, args[0], size);
                    yield(nb, nl,
                          arith::AddFOp::create(nb, nl, args[1], weighted));
                  })
                  .getResult(0);
          return {tensor::InsertSliceOp::create(b, l, updated, carried[0], at,
                                                rowSizes, unitStrides),
                  sizesOut};
        });

    Value slotSizes = nest.results[1];
    Value result = g.generic(
        ValueRange{nest.results[0], slotSizes},
        g.empty({batch, slots, width}, f32),
        {g.map(3, {d(0), d(1), d(2)}), g.map(3, {d(0), d(1)}),
         g.map(3, {d(0), d(1), d(2)})},
        {kParallel, kParallel, kParallel},
        [](OpBuilder &b, Location l, ValueRange args) {
          Value zero = createScalarConstant(b, l, b.getF32Type(), 0.0);
          Value filled = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                               args[1], zero);
          Value mean = arith::DivFOp::create(b, l, args[0], args[1]);
          yield(b, l, arith::SelectOp::create(b, l, filled, mean, zero));
        })[0];
    rewriter.replaceOp(op, ValueRange{result, slotSizes});
    return success();
  }
};

struct TokenUnmergeLowering : OpConversionPattern<TokenUnmergeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TokenUnmergeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    GenericBuilder g{rewriter, loc};
    Value input = adaptor.getInput();
    int64_t slots = cast<RankedTensorType>(input.getType()).getShape()[1];
    auto d = [&](unsigned i) { return g.dim(i); };
    ArrayRef<int64_t> shape = op.getResult().getType().getShape();
    Value result = g.generic(
        adaptor.getDestination(), g.empty(shape, rewriter.getF32Type()),
        {g.map(3, {d(0), d(1)}), g.map(3, {d(0), d(1), d(2)})},
        {kParallel, kParallel, kParallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value slot = clampSlot(b, l, args[0], slots);
          yield(
              b, l,
              tensor::ExtractOp::create(
                  b, l, input, ValueRange{index(b, l, 0), slot, index(b, l, 2)})
                  .getResult());
        })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::populateTokenMergeLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<TokenMatchLowering, TokenSelectLowering, TokenMergeLowering,
               TokenUnmergeLowering>(patterns.getContext());
}
