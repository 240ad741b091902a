//===- LowerInt4PanelProducts.cpp - AVX2 kernel for block-scaled int4 -----===//
//
// The int8 kernel's byte multiply-add (vpmaddubsw) on weights stored two to
// a byte: each load of packed weights is split into its low and high 4 bits
// in registers, so memory-bound products (a decoder's one-row steps) read
// half the bytes of int8. Integer sums are exact only within a block of
// rows that shares a scale, so each block's sums are scaled into float
// accumulators before the next block starts. Float rows (a model that
// keeps its activations float) get a kernel that converts the unpacked
// weights to float instead.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/LinalgToCpu/PanelKernels.h"
#include "lib/Conversion/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_LOWERINT4PANELPRODUCTSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Rows of a register block: per row, 2 int32 and 2 float accumulators for
/// a 16-column panel; with the unpacked weights, a row broadcast and three
/// constants, 2 rows fill AVX2's 16 registers. A single row (a decoder's
/// step) gets a kernel of its own rather than computing its row twice.
constexpr int64_t kBlockRows = 2;
/// AVX-512's 32 registers hold 4 rows' sums and totals for a 16-column
/// panel (one register each) beside the weights and constants.
constexpr int64_t kWideBlockRows = 4;
/// Rows of a register block against a dequantized panel: 6 rows x 2
/// registers of accumulators, 2 of weights and a broadcast fill 15 of
/// AVX2's 16 registers.
constexpr int64_t kPanelBlockRows = 6;
using kiln::kPanelLanes;

Value splat(OpBuilder &b, Location loc, VectorType type, Attribute value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<Attribute>{value}));
}

Value index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value).getResult();
}

/// A kiln.int4_panel_product's buffers and sizes, as both kernels read
/// them: each pair of groups of 4 rows of a panel as one run of 4 * width
/// bytes (`flatWeights`), and the rows with their groups (integer rows) or
/// all their padded columns (float rows) in one dimension.
struct Int4Product {
  Value rows, flatWeights, scales, zeroPoints, sums, rowCount;
  int64_t panels, blocks, pairsPerBlock, vectors;
  /// 32-bit lanes per register (8: AVX2, 16: AVX-512), and whether the
  /// byte products run as vpdpbusd (AVX512-VNNI).
  int64_t lanes;
  bool vnni;
};

/// Unpacks a panel's 4-bit weights into signed bytes, one register per 8
/// columns (their 4 rows of a group each), its constants made once.
class Unpacker {
public:
  Unpacker(OpBuilder &b, Location loc, const Int4Product &product)
      : loc(loc), product(product) {
    lowBits = splat(b, loc, bytes(b), b.getI8IntegerAttr(15));
    eights = splat(b, loc, bytes(b), b.getI8IntegerAttr(8));
    four = splat(b, loc, halves(b), b.getI16IntegerAttr(4));
    for (int64_t i = 0; i < 4 * product.lanes; ++i)
      repeatEach4.push_back(i / 4);
  }

  VectorType bytes(OpBuilder &b) const {
    return VectorType::get({4 * product.lanes}, b.getI8Type());
  }
  VectorType halves(OpBuilder &b) const {
    return VectorType::get({2 * product.lanes}, b.getI16Type());
  }

  /// A block's zero points for each register of `panel`: 8 (symmetric
  /// weights), or the block's 8 bytes of zero points, each repeated for
  /// its column's 4 lanes.
  SmallVector<Value> loadZeros(OpBuilder &b, Value panel, Value block) const {
    SmallVector<Value> zeros(product.vectors, eights);
    if (!product.zeroPoints)
      return zeros;
    auto columnBytes = VectorType::get({product.lanes}, b.getI8Type());
    for (int64_t c = 0; c < product.vectors; ++c) {
      Value perColumn = vector::LoadOp::create(
          b, loc, columnBytes, product.zeroPoints,
          ValueRange{panel, block, index(b, loc, c * product.lanes)});
      zeros[c] =
          vector::ShuffleOp::create(b, loc, perColumn, perColumn, repeatEach4);
    }
    return zeros;
  }

  /// The packed bytes of `pair` of `panel`, a register per 8 columns.
  SmallVector<Value> loadPair(OpBuilder &b, Value panel, Value pair) const {
    SmallVector<Value> packed;
    for (int64_t c = 0; c < product.vectors; ++c)
      packed.push_back(vector::LoadOp::create(
          b, loc, bytes(b), product.flatWeights,
          ValueRange{panel, pair, index(b, loc, c * 4 * product.lanes)}));
    return packed;
  }

  /// `packed` unpacked: the low 4 bits (group 2 * pair) or, for `half` 1,
  /// the high 4 bits (the next group), less the zero points unless
  /// `zeros` is empty.
  SmallVector<Value> unpack(OpBuilder &b, ArrayRef<Value> packed, int64_t half,
                            ArrayRef<Value> zeros) const {
    SmallVector<Value> weights;
    for (auto [c, bytePairs] : llvm::enumerate(packed)) {
      Value v = bytePairs;
      if (half == 1)
        v = vector::BitCastOp::create(
            b, loc, bytes(b),
            arith::ShRUIOp::create(
                b, loc, vector::BitCastOp::create(b, loc, halves(b), v), four));
      v = arith::AndIOp::create(b, loc, v, lowBits);
      if (!zeros.empty())
        v = arith::SubIOp::create(b, loc, v, zeros[c]);
      weights.push_back(v);
    }
    return weights;
  }

private:
  Location loc;
  const Int4Product &product;
  Value lowBits, eights, four;
  SmallVector<int64_t> repeatEach4;
};

/// The index of group `half` of `pair`: 2 * pair + half.
Value groupIndex(OpBuilder &b, Location loc, Value pair, int64_t half) {
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, pair, index(b, loc, 2)),
      index(b, loc, half));
}

/// What a kernel does with one group of 4 rows of a panel's weights
/// (`half` of pair `pair`, unpacked less the zero points, a register per 8
/// columns, and their block's scales): the sums carried through the
/// block, updated.
using GroupBody = function_ref<SmallVector<Value>(
    OpBuilder &b, Location loc, Value pair, int64_t half,
    ArrayRef<Value> weights, ArrayRef<Value> scales, ArrayRef<Value> sums)>;
/// What a kernel does at the end of block `block`: the totals carried
/// through the blocks, updated from the block's sums and its scales (a
/// register per 8 columns).
using BlockEnd = function_ref<SmallVector<Value>(
    OpBuilder &b, Location loc, Value block, ArrayRef<Value> sums,
    ArrayRef<Value> scales, ArrayRef<Value> totals)>;

/// The loops every kernel runs over `panel`: its blocks, carrying
/// `totals`, and in each its pairs of groups, carrying sums started at
/// `sumsInit`; each pair's bytes loaded once and unpacked per group, less
/// the zero points unless `blockEnd` takes them off (`subtractZeros`
/// false). Returns the final totals.
SmallVector<Value> emitPanelLoops(OpBuilder &b, Location loc,
                                  const Int4Product &p, Value panel,
                                  const Unpacker &unpacker, ValueRange totals,
                                  ValueRange sumsInit, GroupBody groupBody,
                                  BlockEnd blockEnd,
                                  bool subtractZeros = true) {
  auto floats = VectorType::get({p.lanes}, b.getF32Type());
  auto blockLoop = scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, p.blocks), index(b, loc, 1),
      totals,
      [&](OpBuilder &ob, Location l, Value scaleBlock, ValueRange blockTotals) {
        Value firstPair = arith::MulIOp::create(
            ob, l, scaleBlock, index(ob, l, p.pairsPerBlock));
        SmallVector<Value> zeros;
        if (subtractZeros)
          zeros = unpacker.loadZeros(ob, panel, scaleBlock);
        SmallVector<Value> scales;
        for (int64_t c = 0; c < p.vectors; ++c)
          scales.push_back(vector::LoadOp::create(
              ob, l, floats, p.scales,
              ValueRange{panel, scaleBlock, index(ob, l, c * p.lanes)}));
        auto pairLoop = scf::ForOp::create(
            ob, l, index(ob, l, 0), index(ob, l, p.pairsPerBlock),
            index(ob, l, 1), sumsInit,
            [&](OpBuilder &nb, Location l, Value pairInBlock, ValueRange acc) {
              Value pair = arith::AddIOp::create(nb, l, firstPair, pairInBlock);
              SmallVector<Value> packed = unpacker.loadPair(nb, panel, pair);
              SmallVector<Value> sums(acc);
              for (int64_t half = 0; half < 2; ++half)
                sums = groupBody(nb, l, pair, half,
                                 unpacker.unpack(nb, packed, half, zeros),
                                 scales, sums);
              scf::YieldOp::create(nb, l, sums);
            });
        SmallVector<Value> sums(pairLoop.getResults());
        scf::YieldOp::create(ob, l,
                             blockEnd(ob, l, scaleBlock, sums, scales,
                                      SmallVector<Value>(blockTotals)));
      });
  return SmallVector<Value>(blockLoop.getResults());
}

/// The sums of a single row's bytes over each block of groups, `[blocks]`
/// int32 (the row is uint8, `[1, groups, 4]`).
Value emitRowBlockSums(OpBuilder &b, Location loc, const Int4Product &p) {
  Type i32 = b.getI32Type();
  auto fourBytes = VectorType::get({4}, b.getI8Type());
  auto fourWords = VectorType::get({4}, i32);
  Value sums =
      memref::AllocaOp::create(b, loc, MemRefType::get({p.blocks}, i32));
  int64_t groups = 2 * p.pairsPerBlock;
  scf::ForOp::create(
      b, loc, index(b, loc, 0), index(b, loc, p.blocks), index(b, loc, 1),
      ValueRange{}, [&](OpBuilder &ob, Location l, Value block, ValueRange) {
        Value first = arith::MulIOp::create(ob, l, block, index(ob, l, groups));
        auto groupLoop = scf::ForOp::create(
            ob, l, index(ob, l, 0), index(ob, l, groups), index(ob, l, 1),
            ValueRange{splat(ob, l, fourWords, ob.getI32IntegerAttr(0))},
            [&](OpBuilder &gb, Location l, Value g, ValueRange acc) {
              Value bytes = vector::LoadOp::create(
                  gb, l, fourBytes, p.rows,
                  ValueRange{index(gb, l, 0),
                             arith::AddIOp::create(gb, l, first, g),
                             index(gb, l, 0)});
              Value words = arith::ExtUIOp::create(gb, l, fourWords, bytes);
              scf::YieldOp::create(
                  gb, l,
                  ValueRange{
                      arith::AddIOp::create(gb, l, acc[0], words).getResult()});
            });
        Value total = vector::ReductionOp::create(
            ob, l, vector::CombiningKind::ADD, groupLoop.getResult(0));
        memref::StoreOp::create(ob, l, total, sums, ValueRange{block});
        scf::YieldOp::create(ob, l);
      });
  return sums;
}

/// Each column's zero point in block `block` of `panel` for register `c`,
/// as int32 lanes (8 for symmetric weights).
Value loadZeroWords(OpBuilder &b, Location loc, const Int4Product &p,
                    Value panel, Value block, int64_t c) {
  auto words = VectorType::get({p.lanes}, b.getI32Type());
  if (!p.zeroPoints)
    return splat(b, loc, words, b.getI32IntegerAttr(8));
  Value bytes = vector::LoadOp::create(
      b, loc, VectorType::get({p.lanes}, b.getI8Type()), p.zeroPoints,
      ValueRange{panel, block, index(b, loc, c * p.lanes)});
  return arith::ExtUIOp::create(b, loc, words, bytes);
}

/// The kernel over uint8 rows: each block's pairs of groups multiplied in
/// bytes (vpmaddubsw) into int32 sums, which the block's scales scale into
/// float totals.
void emitIntegerKernel(OpBuilder &b, Location loc, const Int4Product &p,
                       int64_t blockRows) {
  auto words = VectorType::get({p.lanes}, b.getI32Type());
  auto floats = VectorType::get({p.lanes}, b.getF32Type());
  int64_t vectors = p.vectors;
  // A single row (a decoder's step) uses each weight once, so unpacking
  // costs as much as the products: it multiplies the 4-bit values as
  // stored, and each block's sums lose zero_point * (the block's sum of
  // the row's bytes) once at its end, summed before the panels. The same
  // integers, two vector ops fewer per pair of groups.
  Value rowBlockSums;
  if (blockRows == 1)
    rowBlockSums = emitRowBlockSums(b, loc, p);
  kiln::RowBlockLoop block =
      kiln::createRowBlockLoop(b, loc, p.rowCount, p.panels, blockRows);
  Unpacker unpacker(b, loc, p);
  Value intZero = splat(b, loc, words, b.getI32IntegerAttr(0));
  Value floatZero = splat(b, loc, floats, b.getF32FloatAttr(0));
  Value ones = splat(b, loc, unpacker.halves(b), b.getI16IntegerAttr(1));
  SmallVector<Value> totals = emitPanelLoops(
      b, loc, p, block.panel, unpacker,
      SmallVector<Value>(blockRows * vectors, floatZero),
      SmallVector<Value>(blockRows * vectors, intZero),
      [&](OpBuilder &nb, Location l, Value pair, int64_t half,
          ArrayRef<Value> weights, ArrayRef<Value>, ArrayRef<Value> sums) {
        SmallVector<Value> next(sums);
        Value group = groupIndex(nb, l, pair, half);
        for (int64_t i = 0; i < blockRows; ++i) {
          Value broadcast = kiln::broadcastRowGroup(
              nb, l, p.rows, block.rows[i], group, p.lanes);
          for (int64_t c = 0; c < vectors; ++c)
            next[i * vectors + c] = kiln::createByteDotProduct(
                nb, l, next[i * vectors + c], broadcast, weights[c], ones,
                p.lanes, p.vnni);
        }
        return next;
      },
      // The block's integer sums, scaled by its scales, into the totals.
      [&](OpBuilder &ob, Location l, Value scaleBlock, ArrayRef<Value> sums,
          ArrayRef<Value> scales, ArrayRef<Value> totals) {
        SmallVector<Value> scaled;
        Value rowSum;
        if (rowBlockSums)
          rowSum = vector::BroadcastOp::create(
              ob, l, words,
              memref::LoadOp::create(ob, l, rowBlockSums,
                                     ValueRange{scaleBlock}));
        for (int64_t i = 0; i < blockRows; ++i)
          for (int64_t c = 0; c < vectors; ++c) {
            Value sum = sums[i * vectors + c];
            if (rowSum)
              sum = arith::SubIOp::create(
                  ob, l, sum,
                  arith::MulIOp::create(
                      ob, l,
                      loadZeroWords(ob, l, p, block.panel, scaleBlock, c),
                      rowSum));
            Value real = arith::SIToFPOp::create(ob, l, floats, sum);
            scaled.push_back(vector::FMAOp::create(ob, l, real, scales[c],
                                                   totals[i * vectors + c]));
          }
        return scaled;
      },
      /*subtractZeros=*/!rowBlockSums);
  kiln::storeRowBlock(b, loc, block, totals, p.sums, p.rowCount, p.lanes);
}

/// The index of row `lane` of group `group`: 4 * group + lane.
Value rowIndex(OpBuilder &b, Location loc, Value group, int64_t lane) {
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, group, index(b, loc, 4)),
      index(b, loc, lane));
}

/// Calls `body` for each lane's column of weights of a group of 4 rows,
/// `unpacked` (each column's 4 signed bytes in one 32-bit lane): each
/// lane's byte sign-extended to 32 bits in place (a shift left unless it is
/// the top byte, then an arithmetic shift right by 24) and converted to
/// float, a register per 8 columns.
void forEachLaneAsFloats(
    OpBuilder &b, Location loc, ArrayRef<Value> unpacked,
    function_ref<void(int64_t lane, ArrayRef<Value> floats)> body) {
  int64_t lanes =
      cast<VectorType>(unpacked.front().getType()).getNumElements() / 4;
  auto words = VectorType::get({lanes}, b.getI32Type());
  auto floats = VectorType::get({lanes}, b.getF32Type());
  auto shift = [&](int64_t bits) {
    return splat(b, loc, words, b.getI32IntegerAttr(bits));
  };
  for (int64_t lane = 0; lane < 4; ++lane) {
    SmallVector<Value> columns;
    for (Value weights : unpacked) {
      Value w = vector::BitCastOp::create(b, loc, words, weights);
      if (lane != 3)
        w = arith::ShLIOp::create(b, loc, w, shift(24 - 8 * lane));
      w = arith::ShRSIOp::create(b, loc, w, shift(24));
      columns.push_back(arith::SIToFPOp::create(b, loc, floats, w));
    }
    body(lane, columns);
  }
}

/// One float row (`float_input`, a decoder's step): each pair's bytes
/// unpacked as for the integer kernel, converted to floats lane by lane
/// and multiplied with the row's broadcast float, the block's sums scaled
/// at its end: one float product per weight, the row never rounded.
void emitFloatRowKernel(OpBuilder &b, Location loc, const Int4Product &p) {
  auto floats = VectorType::get({p.lanes}, b.getF32Type());
  int64_t vectors = p.vectors;
  kiln::RowBlockLoop block =
      kiln::createRowBlockLoop(b, loc, p.rowCount, p.panels, /*blockRows=*/1);
  Unpacker unpacker(b, loc, p);
  Value floatZero = splat(b, loc, floats, b.getF32FloatAttr(0));
  SmallVector<Value> zeros(vectors, floatZero);
  SmallVector<Value> totals = emitPanelLoops(
      b, loc, p, block.panel, unpacker, zeros, zeros,
      [&](OpBuilder &nb, Location l, Value pair, int64_t half,
          ArrayRef<Value> weights, ArrayRef<Value>, ArrayRef<Value> sums) {
        SmallVector<Value> next(sums);
        Value group = groupIndex(nb, l, pair, half);
        forEachLaneAsFloats(nb, l, weights,
                            [&](int64_t lane, ArrayRef<Value> columns) {
                              Value x = memref::LoadOp::create(
                                  nb, l, p.rows,
                                  ValueRange{block.rows[0],
                                             rowIndex(nb, l, group, lane)});
                              Value broadcast =
                                  vector::BroadcastOp::create(nb, l, floats, x);
                              for (int64_t c = 0; c < vectors; ++c)
                                next[c] = vector::FMAOp::create(
                                    nb, l, broadcast, columns[c], next[c]);
                            });
        return next;
      },
      [&](OpBuilder &ob, Location l, Value, ArrayRef<Value> sums,
          ArrayRef<Value> scales, ArrayRef<Value> totals) {
        SmallVector<Value> scaled;
        for (int64_t c = 0; c < vectors; ++c)
          scaled.push_back(
              vector::FMAOp::create(ob, l, sums[c], scales[c], totals[c]));
        return scaled;
      });
  kiln::storeRowBlock(b, loc, block, totals, p.sums, p.rowCount, p.lanes);
}

/// Several float rows (a prefill, an encoder): each panel's weights are
/// dequantized once, scaled, into a `[K, W]` float buffer on the stack,
/// and every block of rows is multiplied with it as an fp32 product: per
/// row of weights 2 loads, a broadcast per row and an FMA per row and
/// register, as Kiln's fp32 kernels. Unpacking per block of rows instead
/// made MiniLM 1.5x slower than fp32.
void emitDequantizedPanelKernel(OpBuilder &b, Location loc,
                                const Int4Product &p) {
  auto floats = VectorType::get({p.lanes}, b.getF32Type());
  int64_t vectors = p.vectors, depth = p.blocks * p.pairsPerBlock * 8;
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{index(b, loc, 0)},
                                      ValueRange{index(b, loc, p.panels)},
                                      ValueRange{index(b, loc, 1)});
  b.setInsertionPointToStart(loop.getBody());
  Value panel = loop.getInductionVars()[0];
  Value buffer = memref::AllocaOp::create(
      b, loc, MemRefType::get({depth, vectors * p.lanes}, b.getF32Type()));
  Unpacker unpacker(b, loc, p);

  // The panel, dequantized and scaled: stores only, nothing carried.
  emitPanelLoops(
      b, loc, p, panel, unpacker, {}, {},
      [&](OpBuilder &nb, Location l, Value pair, int64_t half,
          ArrayRef<Value> weights, ArrayRef<Value> scales, ArrayRef<Value>) {
        Value group = groupIndex(nb, l, pair, half);
        forEachLaneAsFloats(
            nb, l, weights, [&](int64_t lane, ArrayRef<Value> columns) {
              for (int64_t c = 0; c < vectors; ++c)
                vector::StoreOp::create(
                    nb, l, arith::MulFOp::create(nb, l, columns[c], scales[c]),
                    buffer,
                    ValueRange{rowIndex(nb, l, group, lane),
                               index(nb, l, c * p.lanes)});
            });
        return SmallVector<Value>();
      },
      [&](OpBuilder &, Location, Value, ArrayRef<Value>, ArrayRef<Value>,
          ArrayRef<Value>) { return SmallVector<Value>(); });

  // Blocks of rows against the buffer; rows past the end read the last
  // row and are not stored.
  Value lastRow = arith::SubIOp::create(b, loc, p.rowCount, index(b, loc, 1));
  Value floatZero = splat(b, loc, floats, b.getF32FloatAttr(0));
  scf::ForOp::create(
      b, loc, index(b, loc, 0), p.rowCount, index(b, loc, kPanelBlockRows),
      ValueRange{},
      [&](OpBuilder &rb, Location l, Value firstRow, ValueRange) {
        kiln::RowBlockLoop block;
        block.panel = panel;
        block.firstRow = firstRow;
        for (int64_t i = 0; i < kPanelBlockRows; ++i)
          block.rows.push_back(arith::MinSIOp::create(
              rb, l, arith::AddIOp::create(rb, l, firstRow, index(rb, l, i)),
              lastRow));
        auto depthLoop = scf::ForOp::create(
            rb, l, index(rb, l, 0), index(rb, l, depth), index(rb, l, 1),
            SmallVector<Value>(kPanelBlockRows * vectors, floatZero),
            [&](OpBuilder &kb, Location l, Value k, ValueRange acc) {
              SmallVector<Value> weights, next(acc);
              for (int64_t c = 0; c < vectors; ++c)
                weights.push_back(vector::LoadOp::create(
                    kb, l, floats, buffer,
                    ValueRange{k, index(kb, l, c * p.lanes)}));
              for (int64_t i = 0; i < kPanelBlockRows; ++i) {
                Value x = memref::LoadOp::create(kb, l, p.rows,
                                                 ValueRange{block.rows[i], k});
                Value broadcast = vector::BroadcastOp::create(kb, l, floats, x);
                for (int64_t c = 0; c < vectors; ++c)
                  next[i * vectors + c] = vector::FMAOp::create(
                      kb, l, broadcast, weights[c], next[i * vectors + c]);
              }
              scf::YieldOp::create(kb, l, next);
            });
        kiln::storeRowBlock(rb, l, block, depthLoop.getResults(), p.sums,
                            p.rowCount, p.lanes);
        scf::YieldOp::create(rb, l);
      });
}

LogicalResult lowerProduct(linalg::GenericOp op, int64_t lanes, bool vnni) {
  SmallVector<Value> inputs = op.getDpsInputs();
  Value rows = inputs[0], weights = inputs[1], scales = inputs[2],
        sums = op.getDpsInits()[0];
  Value zeroPoints = inputs.size() > 3 ? inputs[3] : Value();
  auto rowType = dyn_cast<MemRefType>(rows.getType());
  auto weightType = dyn_cast<MemRefType>(weights.getType());
  auto scaleType = dyn_cast<MemRefType>(scales.getType());
  auto sumType = dyn_cast<MemRefType>(sums.getType());
  // Only the row count may be dynamic (a sequence length). Rows are
  // [R, blocks, pairs, 2, 4] (uint8, or f32 for float rows), weights [P,
  // blocks, pairs, W, 4], zero points (if any) like the scales, [P,
  // blocks, W].
  if (!rowType || !weightType || !scaleType || !sumType ||
      rowType.getRank() != 5 || weightType.getRank() != 5 ||
      ShapedType::isDynamicShape(rowType.getShape().drop_front()) ||
      !weightType.hasStaticShape() || !scaleType.hasStaticShape() ||
      ShapedType::isDynamicShape(sumType.getShape().drop_front()) ||
      !weightType.getLayout().isIdentity() ||
      (zeroPoints && cast<MemRefType>(zeroPoints.getType()).getShape() !=
                         scaleType.getShape()))
    return op.emitError("internal error: kiln.int4_panel_product on ")
           << rows.getType() << ", " << weights.getType() << ", "
           << scales.getType() << ", " << sums.getType();
  int64_t width = weightType.getDimSize(3);
  assert(width % kPanelLanes == 0 && "panels are whole registers wide");
  // Panels narrower than an AVX-512 register keep AVX2's.
  if (width % lanes != 0)
    lanes = kPanelLanes;
  bool floatRows = rowType.getElementType().isF32();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Int4Product product;
  product.flatWeights = memref::CollapseShapeOp::create(
      b, loc, weights, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3, 4}});
  product.rows = memref::CollapseShapeOp::create(
      b, loc, rows,
      floatRows ? ArrayRef<ReassociationIndices>{{0}, {1, 2, 3, 4}}
                : ArrayRef<ReassociationIndices>{{0}, {1, 2, 3}, {4}});
  product.scales = scales;
  product.zeroPoints = zeroPoints;
  product.sums = sums;
  product.rowCount = memref::DimOp::create(b, loc, product.rows, 0);
  product.panels = weightType.getDimSize(0);
  product.blocks = weightType.getDimSize(1);
  product.pairsPerBlock = weightType.getDimSize(2);
  product.vectors = width / lanes;
  product.lanes = lanes;
  product.vnni = vnni && lanes == 16;

  Value single = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                       product.rowCount, index(b, loc, 1));
  auto choice = scf::IfOp::create(b, loc, single, /*withElseRegion=*/true);
  OpBuilder thenBuilder = choice.getThenBodyBuilder();
  OpBuilder elseBuilder = choice.getElseBodyBuilder();
  if (floatRows) {
    emitFloatRowKernel(thenBuilder, loc, product);
    emitDequantizedPanelKernel(elseBuilder, loc, product);
  } else {
    emitIntegerKernel(thenBuilder, loc, product, 1);
    emitIntegerKernel(elseBuilder, loc, product,
                      lanes == 16 ? kWideBlockRows : kBlockRows);
  }
  op.erase();
  return success();
}

struct LowerInt4PanelProductsPass
    : kiln::impl::LowerInt4PanelProductsPassBase<LowerInt4PanelProductsPass> {
  using LowerInt4PanelProductsPassBase::LowerInt4PanelProductsPassBase;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> products;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kiln::kInt4PanelProductAttr) &&
          op.hasPureBufferSemantics())
        products.push_back(op);
    });
    for (linalg::GenericOp op : products)
      if (failed(lowerProduct(op, lanes, vnni)))
        return signalPassFailure();
  }
};

} // namespace
