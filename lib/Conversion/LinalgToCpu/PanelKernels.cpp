//===- PanelKernels.cpp - pieces of the integer panel kernels -------------===//
#include "lib/Conversion/LinalgToCpu/PanelKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value callX86Intrinsic(OpBuilder &b, Location loc, Type type, StringRef name,
                       ValueRange args) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name),
                                       args)
      .getResult(0);
}

} // namespace

kiln::RowBlockLoop kiln::createRowBlockLoop(OpBuilder &b, Location loc,
                                            Value rowCount, int64_t panels,
                                            int64_t blockRows) {
  Value lastRow = arith::SubIOp::create(b, loc, rowCount, index(b, loc, 1));
  Value rowBlocks =
      arith::CeilDivUIOp::create(b, loc, rowCount, index(b, loc, blockRows));
  // Panels outermost: consecutive iterations share a panel (a few KB, in
  // L1) and sweep the rows (in L2), where rows outermost would stream every
  // panel again for each block of rows.
  auto loop = scf::ParallelOp::create(
      b, loc, ValueRange{index(b, loc, 0), index(b, loc, 0)},
      ValueRange{index(b, loc, panels), rowBlocks},
      ValueRange{index(b, loc, 1), index(b, loc, 1)});
  b.setInsertionPointToStart(loop.getBody());
  RowBlockLoop block;
  block.panel = loop.getInductionVars()[0];
  block.firstRow = arith::MulIOp::create(b, loc, loop.getInductionVars()[1],
                                         index(b, loc, blockRows));
  for (int64_t i = 0; i < blockRows; ++i)
    block.rows.push_back(arith::MinSIOp::create(
        b, loc, arith::AddIOp::create(b, loc, block.firstRow, index(b, loc, i)),
        lastRow));
  return block;
}

Value kiln::broadcastRowGroup(OpBuilder &b, Location loc, Value rows, Value row,
                              Value group, int64_t lanes) {
  Type i32 = b.getI32Type();
  Value four = vector::LoadOp::create(b, loc, VectorType::get({4}, b.getI8Type()),
                                      rows,
                                      ValueRange{row, group, index(b, loc, 0)});
  Value word = vector::ExtractOp::create(
      b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), four),
      ArrayRef<int64_t>{0});
  return vector::BitCastOp::create(
      b, loc, VectorType::get({4 * lanes}, b.getI8Type()),
      vector::BroadcastOp::create(b, loc, VectorType::get({lanes}, i32), word));
}

Value kiln::createByteDotProduct(OpBuilder &b, Location loc, Value sums,
                                 Value rows, Value weights, Value ones,
                                 int64_t lanes, bool vnni) {
  assert((lanes == 8 || lanes == 16) && "AVX2 or AVX-512 registers");
  assert((!vnni || lanes == 16) && "vpdpbusd on 512-bit registers");
  auto words = VectorType::get({lanes}, b.getI32Type());
  if (vnni)
    return callX86Intrinsic(b, loc, words, "llvm.x86.avx512.vpdpbusd.512",
                            {sums, rows, weights});
  auto halves = VectorType::get({2 * lanes}, b.getI16Type());
  bool wide = lanes == 16;
  Value pairs = callX86Intrinsic(b, loc, halves,
                                 wide ? "llvm.x86.avx512.pmaddubs.w.512"
                                      : "llvm.x86.avx2.pmadd.ub.sw",
                                 {rows, weights});
  Value quads = callX86Intrinsic(b, loc, words,
                                 wide ? "llvm.x86.avx512.pmaddw.d.512"
                                      : "llvm.x86.avx2.pmadd.wd",
                                 {pairs, ones});
  return arith::AddIOp::create(b, loc, sums, quads);
}

void kiln::storeRowBlock(OpBuilder &b, Location loc, const RowBlockLoop &loop,
                         ValueRange sums, Value out, Value rowCount,
                         int64_t lanes) {
  int64_t blockRows = loop.rows.size();
  int64_t vectors = sums.size() / blockRows;
  for (int64_t i = 0; i < blockRows; ++i) {
    Value row = arith::AddIOp::create(b, loc, loop.firstRow, index(b, loc, i));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                         row, rowCount);
    auto guard = scf::IfOp::create(b, loc, inside, /*withElseRegion=*/false);
    OpBuilder tb = guard.getThenBodyBuilder();
    for (int64_t c = 0; c < vectors; ++c)
      vector::StoreOp::create(
          tb, loc, sums[i * vectors + c], out,
          ValueRange{row, loop.panel, index(tb, loc, c * lanes)});
  }
}
