// RUN: kiln-opt %s -kiln-tile-dynamic-dims | FileCheck %s

// A product over a dynamic number of rows: full tiles of 8 rows, then the
// rows left as one tile of exactly their count (a loop of one iteration or
// none for each count from 7 down to 1), each tile static.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<?x384xf32>, %[[B:.*]]: tensor<384x32xf32>, %[[C:.*]]: tensor<?x32xf32>)
// CHECK: %[[ROWS:.*]] = tensor.dim %[[A]], %c0
// CHECK: %[[FULL_TILES:.*]] = arith.divui %[[ROWS]], %c8
// CHECK: %[[FULL:.*]] = arith.muli %[[FULL_TILES]], %c8
// CHECK: %[[FIRST:.*]] = scf.forall (%[[I:.*]]) = (0) to (%[[FULL]]) step (8) shared_outs(%[[OUT:.*]] = %[[C]])
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x384xf32>, tensor<384x32xf32>) outs(%{{.*}} : tensor<8x32xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%[[I]], 0] [8, 32] [1, 1]
// CHECK: %[[LEFT:.*]] = arith.subi %[[ROWS]], %[[FULL]]
// CHECK: %[[IS7:.*]] = arith.cmpi eq, %[[LEFT]], %c7
// CHECK: %[[TAKE7:.*]] = arith.select %[[IS7]], %c7, %c0
// CHECK: %[[END7:.*]] = arith.addi %[[FULL]], %[[TAKE7]]
// CHECK: %[[SEVEN:.*]] = scf.forall (%{{.*}}) = (%[[FULL]]) to (%[[END7]]) step (7) shared_outs(%{{.*}} = %[[FIRST]])
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<7x384xf32>, tensor<384x32xf32>) outs(%{{.*}} : tensor<7x32xf32>)
// CHECK: %[[IS6:.*]] = arith.cmpi eq, %[[LEFT]], %c6
// CHECK: scf.forall (%{{.*}}) = (%[[FULL]]) to (%{{.*}}) step (6) shared_outs(%{{.*}} = %[[SEVEN]])
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x384xf32>, tensor<384x32xf32>) outs(%{{.*}} : tensor<6x32xf32>)
// CHECK-COUNT-4: linalg.matmul
// CHECK: %[[IS1:.*]] = arith.cmpi eq, %[[LEFT]], %c1
// CHECK: scf.forall (%[[J:.*]]) = (%[[FULL]]) to (%{{.*}}) step (1) shared_outs(%[[REST:.*]] = %{{.*}})
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x384xf32>, tensor<384x32xf32>) outs(%{{.*}} : tensor<1x32xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[REST]][%[[J]], 0] [1, 32] [1, 1]
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @matmul(%a: tensor<?x384xf32>, %b: tensor<384x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x384xf32>, tensor<384x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// Other ops take tiles of 16 rows: a transpose whose dynamic dimension
// moves innermost still gets static 16-wide tiles, then 8, 4, 2 and 1.
// CHECK-LABEL: func.func @transpose
// CHECK: scf.forall (%{{.*}}) = (0) to (%{{.*}}) step (16)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<16x32xf32>) outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: scf.forall (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (8)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<8x32xf32>) outs(%{{.*}} : tensor<32x8xf32>)
// CHECK-NOT: arith.cmpi
// CHECK: scf.forall (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (1)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<1x32xf32>) outs(%{{.*}} : tensor<32x1xf32>)
func.func @transpose(%x: tensor<?x32xf32>, %init: tensor<32x?xf32>) -> tensor<32x?xf32> {
  %0 = linalg.transpose ins(%x : tensor<?x32xf32>) outs(%init : tensor<32x?xf32>) permutation = [1, 0]
  return %0 : tensor<32x?xf32>
}

// A dynamic reduction, or two dynamic loops, stay as they are.
// CHECK-LABEL: func.func @dynamic_reduction
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-LABEL: func.func @two_dynamic
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @dynamic_reduction(%x: tensor<4x?xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x?xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @two_dynamic(%x: tensor<?x?xf32>, %init: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// An op with an empty dimension computes nothing: it is left as it is.
// CHECK-LABEL: func.func @empty
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
func.func @empty(%x: tensor<0x?xf32>, %init: tensor<0x?xf32>) -> tensor<0x?xf32> {
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<0x?xf32>) outs(%init : tensor<0x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.negf %in : f32
    linalg.yield %s : f32
  } -> tensor<0x?xf32>
  return %0 : tensor<0x?xf32>
}
