// RUN: kiln-opt %s -convert-kiln-to-linalg -split-input-file | FileCheck %s

// Result sizes come from the operands (kiln ops reify them): an
// elementwise op over a dynamic sequence sizes its result from its input.
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1 : tensor<1x?x384xf32>
// CHECK: tensor.empty(%[[N]]) : tensor<1x?x384xf32>
// CHECK: linalg.generic
func.func @elementwise(%x: tensor<1x?x384xf32>, %b: tensor<384xf32>) -> tensor<1x?x384xf32> {
  %0 = kiln.add %x, %b : tensor<1x?x384xf32>, tensor<384xf32>
  return %0 : tensor<1x?x384xf32>
}

// -----

// A reshape to a dynamic shape expands with the sizes it is given.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x?x384xf32>, %[[SEQ:.*]]: index)
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1, 2]] : tensor<1x?x384xf32> into tensor<?xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{\[}}[0, 1, 2, 3]] output_shape [1, %[[SEQ]], 12, 32] : tensor<?xf32> into tensor<1x?x12x32xf32>
func.func @reshape(%x: tensor<1x?x384xf32>, %seq: index) -> tensor<1x?x12x32xf32> {
  %0 = kiln.reshape %x dims(%seq) : tensor<1x?x384xf32> -> tensor<1x?x12x32xf32>
  return %0 : tensor<1x?x12x32xf32>
}

// -----

// Range writes start + i * delta over its size.
// CHECK-LABEL: func.func @range
// CHECK-SAME: (%[[START:.*]]: tensor<i64>, %[[DELTA:.*]]: tensor<i64>, %[[N:.*]]: index)
// CHECK: %[[EMPTY:.*]] = tensor.empty(%[[N]]) : tensor<?xi64>
// CHECK: linalg.generic {{.*}} ins(%[[START]], %[[DELTA]] : tensor<i64>, tensor<i64>) outs(%[[EMPTY]] : tensor<?xi64>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[STEP:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.muli %[[STEP]]
// CHECK: arith.addi
func.func @range(%start: tensor<i64>, %delta: tensor<i64>, %n: index) -> tensor<?xi64> {
  %0 = kiln.range %start, %delta size %n : tensor<i64>, tensor<i64> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// A packed product over a run-time number of rows: the row count is the
// lhs's, and every block has it.
// CHECK-LABEL: func.func @packed
// CHECK: %[[ROWS:.*]] = tensor.dim %arg0, %c1 : tensor<1x?x64xf32>
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?x64xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<?x32xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}] [%[[ROWS]], 32] [1, 1]
func.func @packed(%x: tensor<1x?x64xf32>, %w: tensor<2x64x32xf32>) -> tensor<1x?x64xf32> {
  %0 = kiln.packed_matmul %x, %w : tensor<1x?x64xf32>, tensor<2x64x32xf32> -> tensor<1x?x64xf32>
  return %0 : tensor<1x?x64xf32>
}

// -----

// Attention over run-time query and key counts keeps its blocks static:
// blocks of 16 query rows, then of 4, then single rows; key blocks of 256, then 64,
// then 16, each run up to the last multiple of its size. The keys left
// (fewer than 16) are one block of 16 ending at the last key, its columns
// already seen scored -inf (every read stays within the keys); with fewer
// than 16 keys in all, one key at a time.
// CHECK-LABEL: func.func @attention
// CHECK: %[[KEYS:.*]] = tensor.dim %arg1, %c3 : tensor<1x2x8x?xf32>
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x256xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x64xf32>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SIXTEENS:.*]] step %c16
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x16xf32>)
// CHECK: %[[ENOUGH:.*]] = arith.cmpi uge, %[[KEYS]], %c16
// CHECK: %[[LEFT:.*]] = arith.cmpi ult, %[[SIXTEENS]], %[[KEYS]]
// CHECK: %[[TAIL:.*]] = arith.andi %[[ENOUGH]], %[[LEFT]]
// CHECK: scf.if %[[TAIL]]
// CHECK: %[[START:.*]] = arith.subi %[[KEYS]], %c16
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x16xf32>)
// CHECK: %[[SEEN:.*]] = arith.subi %[[SIXTEENS]], %[[START]]
// CHECK: linalg.index 1
// CHECK: arith.cmpi ult, %{{.*}}, %[[SEEN]]
// CHECK: arith.select
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[SIXTEENS]] to %[[KEYS]] step %c1
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x1xf32>)
// The rows left over in blocks of 4 (a decoder's verify step), from the
// first row after the blocks of 16; then one at a time, after those.
// CHECK: %[[SIXTEEN_ROWS:.*]] = arith.muli %{{.*}}, %c16
// CHECK: %[[FULL:.*]] = arith.addi %c0{{.*}}, %[[SIXTEEN_ROWS]]
// CHECK: %[[LEFT4:.*]] = arith.subi %{{.*}}, %[[FULL]]
// CHECK: %[[FOURS:.*]] = arith.divui %[[LEFT4]], %c4
// CHECK: scf.forall
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x256xf32>)
// CHECK: %[[ROWS4:.*]] = arith.muli %[[FOURS]], %c4
// CHECK: %[[SINGLES_FROM:.*]] = arith.addi %[[FULL]], %[[ROWS4]]
// CHECK: arith.subi %{{.*}}, %[[SINGLES_FROM]]
// CHECK: scf.forall
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x8xf32>, tensor<8x256xf32>)
func.func @attention(%q: tensor<1x2x?x8xf32>, %kt: tensor<1x2x8x?xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %0 = kiln.attention %q, %kt, %v scale = 0.5 : tensor<1x2x?x8xf32>, tensor<1x2x8x?xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}
