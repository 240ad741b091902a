// RUN: kiln-opt %s -kiln-vectorize-generics | FileCheck %s

// Elementwise: blocks of 16 along the innermost dimension, shared by threads
// through an scf.forall; the broadcast operand is read as a vector too.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (4, 64) step (1, 16)
// CHECK: %[[X:.*]] = vector.transfer_read {{.*}} : tensor<1x16xf32>, vector<16xf32>
// CHECK: %[[Y:.*]] = vector.transfer_read {{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : vector<16xf32>
// CHECK: math.exp %[[S]] : vector<16xf32>
// CHECK: tensor.parallel_insert_slice

// A reduction over the innermost dimension: one block per row, one
// vector.reduction over the whole row, folding in the initial value.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.forall (%{{.*}}) in (8)
// CHECK: %[[ROW:.*]] = vector.transfer_read {{.*}} : tensor<1x128xf32>, vector<128xf32>
// CHECK: vector.reduction <add>, %[[ROW]], %{{.*}} : vector<128xf32> into f32

// 16 doesn't divide a row of 40: the block is the whole row.
// CHECK-LABEL: func.func @ragged_row
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: arith.negf %{{.*}} : vector<40xf32>

// A transpose reads its innermost dimension with a stride: 16x16 blocks,
// each one register transpose.
// CHECK-LABEL: func.func @transpose
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 32) step (16, 16)
// CHECK: %[[BLOCK:.*]] = vector.transfer_read {{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK: vector.transpose %[[BLOCK]], [1, 0] : vector<16x16xf32> to vector<16x16xf32>

// An attention mask broadcast over heads and rows (zeros in its map) is
// read as a vector like the scores.
// CHECK-LABEL: func.func @mask
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) = (0, 0, 0) to (4, 8, 32) step (1, 1, 16)
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x16xf32>, vector<16xf32>
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x1x16xf32>, vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>

// Booleans are a byte each in memory but packed bits in LLVM's vectors, and
// a row of 7 is shorter than half a vector: both stay scalar generics.
// CHECK-LABEL: func.func @bool_select
// CHECK-NOT: vector
// CHECK: linalg.generic
// CHECK-LABEL: func.func @ragged
// CHECK-NOT: vector
// CHECK: linalg.generic

// A ragged row of 1000 whose body has 17 operations would be 17 values of
// 1000 lanes each, which LLVM's register allocator takes minutes over: it
// stays scalar (the same row with one operation is one vector).
// CHECK-LABEL: func.func @ragged_long_body
// CHECK-NOT: vector
// CHECK: linalg.generic
// CHECK-LABEL: func.func @ragged_short_body
// CHECK: arith.negf %{{.*}} : vector<1000xf32>

// A row of 10 (14x14 feature maps have rows of 14) fills most of a
// vector: one vector per row.
// CHECK-LABEL: func.func @half_row
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK: arith.negf %{{.*}} : vector<10xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @elementwise(%a: tensor<4x64xf32>, %b: tensor<64xf32>) -> tensor<4x64xf32> {
  %init = tensor.empty() : tensor<4x64xf32>
  %0 = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d1)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x64xf32>, tensor<64xf32>) outs(%init : tensor<4x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  } -> tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}
func.func @row_sum(%a: tensor<8x128xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<8xf32>) -> tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x128xf32>) outs(%fill : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @ragged_row(%a: tensor<2x40xf32>) -> tensor<2x40xf32> {
  %init = tensor.empty() : tensor<2x40xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<2x40xf32>) outs(%init : tensor<2x40xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<2x40xf32>
  return %0 : tensor<2x40xf32>
}
func.func @transpose(%a: tensor<32x64xf32>) -> tensor<64x32xf32> {
  %init = tensor.empty() : tensor<64x32xf32>
  %0 = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<32x64xf32>) outs(%init : tensor<64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}
func.func @mask(%s: tensor<1x4x8x32xf32>, %m: tensor<1x1x1x32xf32>) -> tensor<1x4x8x32xf32> {
  %init = tensor.empty() : tensor<1x4x8x32xf32>
  %c = arith.constant 8.0 : f32
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<1x4x8x32xf32>, tensor<1x1x1x32xf32>) outs(%init : tensor<1x4x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.divf %x, %c : f32
    %a = arith.addf %d, %y : f32
    linalg.yield %a : f32
  } -> tensor<1x4x8x32xf32>
  return %0 : tensor<1x4x8x32xf32>
}
func.func @bool_select(%c: tensor<4x32xi1>, %a: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %init = tensor.empty() : tensor<4x32xf32>
  %inf = arith.constant 0xFF800000 : f32
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %a : tensor<4x32xi1>, tensor<4x32xf32>) outs(%init : tensor<4x32xf32>) {
  ^bb0(%x: i1, %y: f32, %o: f32):
    %r = arith.select %x, %inf, %y : f32
    linalg.yield %r : f32
  } -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
func.func @ragged(%a: tensor<4x7xf32>) -> tensor<4x7xf32> {
  %init = tensor.empty() : tensor<4x7xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x7xf32>) outs(%init : tensor<4x7xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}
func.func @ragged_long_body(%a: tensor<1000xf32>) -> tensor<1000xf32> {
  %init = tensor.empty() : tensor<1000xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<1000xf32>) outs(%init : tensor<1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v0 = arith.negf %x : f32
    %v1 = arith.mulf %v0, %v0 : f32
    %v2 = arith.mulf %v1, %v1 : f32
    %v3 = arith.mulf %v2, %v2 : f32
    %v4 = arith.mulf %v3, %v3 : f32
    %v5 = arith.mulf %v4, %v4 : f32
    %v6 = arith.mulf %v5, %v5 : f32
    %v7 = arith.mulf %v6, %v6 : f32
    %v8 = arith.mulf %v7, %v7 : f32
    %v9 = arith.mulf %v8, %v8 : f32
    %v10 = arith.mulf %v9, %v9 : f32
    %v11 = arith.mulf %v10, %v10 : f32
    %v12 = arith.mulf %v11, %v11 : f32
    %v13 = arith.mulf %v12, %v12 : f32
    %v14 = arith.mulf %v13, %v13 : f32
    %v15 = arith.mulf %v14, %v14 : f32
    linalg.yield %v15 : f32
  } -> tensor<1000xf32>
  return %0 : tensor<1000xf32>
}
func.func @ragged_short_body(%a: tensor<1000xf32>) -> tensor<1000xf32> {
  %init = tensor.empty() : tensor<1000xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<1000xf32>) outs(%init : tensor<1000xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<1000xf32>
  return %0 : tensor<1000xf32>
}
func.func @half_row(%a: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %init = tensor.empty() : tensor<4x10xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x10xf32>) outs(%init : tensor<4x10xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  } -> tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// Named transposes (kiln.transpose's lowering) are generalized first and
// take the same 16x16 register-transpose path.
// CHECK-LABEL: func.func @named_transpose
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 32) step (16, 16)
// CHECK: vector.transpose %{{.*}}, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
func.func @named_transpose(%a: tensor<32x64xf32>) -> tensor<64x32xf32> {
  %init = tensor.empty() : tensor<64x32xf32>
  %0 = linalg.transpose ins(%a : tensor<32x64xf32>) outs(%init : tensor<64x32xf32>) permutation = [1, 0]
  return %0 : tensor<64x32xf32>
}

// A sum too long for one block (6144 > 4096 elements) is split into two
// partial sums of 3072 that vectorize, and a short sum of those.
// CHECK-LABEL: func.func @long_sum
// CHECK: %[[PARTS:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [4, 2, 3072]
// CHECK: %[[PARTIAL:.*]] = scf.forall (%[[I:.*]], %[[J:.*]]) in (4, 2)
// CHECK: tensor.extract_slice %[[PARTS]][%[[I]], %[[J]], 0] [1, 1, 3072]
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<3072xf32> into f32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[PARTIAL]] : tensor<4x2xf32>)
func.func @long_sum(%x: tensor<4x6144xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x6144xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %sum : tensor<4xf32>
}
