// RUN: kiln-opt %s -convert-kiln-to-linalg | FileCheck %s

// kiln.token_match: the even and odd rows, normalized, multiply as a
// batched product of cosines [2, 5, 4]; one reduction keeps each even
// token's best allowed partner (score and index), with padding pairs at 2
// and disallowed pairs at -inf; the best scores are ranked by counting.
// CHECK-LABEL: func.func @match_and_merge
// CHECK: scf.forall
// CHECK: linalg.matmul ins(%{{.*}} : tensor<5x4xf32>, tensor<4x4xf32>)
// CHECK: %[[BEST:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.cmpf ole, %{{.*}}, %{{.*}} : f32
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i64
// CHECK: linalg.generic {{.*}} ins(%[[BEST]]#0, %[[BEST]]#0 : tensor<2x5xf32>, tensor<2x5xf32>) outs(%{{.*}} : tensor<2x5xi64>)
// The slots: one pass over the tokens with a running count of the kept
// ones, writing each token's slot and each slot's token.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2 {{.*}} -> (tensor<2x9xi64>, tensor<2x7xi64>, tensor<2xi64>)
// CHECK: scf.for
// CHECK: tensor.insert %{{.*}} into %{{.*}} : tensor<2x9xi64>
// CHECK: tensor.insert %{{.*}} into %{{.*}} : tensor<2x7xi64>
// kiln.token_merge: a loop over the batch and the tokens adding each
// size-weighted row and size into its slot, then the division.
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} -> (tensor<2x7x8xf32>, tensor<2x7xf32>)
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} -> (tensor<2x7x8xf32>, tensor<2x7xf32>)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg3[%[[B]], %[[T]], 0] [1, 1, 8]
// CHECK: linalg.generic {{.*}} ins(%[[ROW]] : tensor<8xf32>)
// CHECK: tensor.insert_slice
// CHECK: scf.yield %{{.*}}, %{{.*}} : tensor<2x7x8xf32>, tensor<2x7xf32>
// CHECK: arith.divf
// kiln.token_unmerge: a parallel gather of each token's slot.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: arith.minsi %{{.*}}, %c6_i64
// CHECK: tensor.extract %{{.*}} : tensor<2x7x8xf32>
// CHECK-NOT: kiln.
func.func @match_and_merge(%metric: tensor<2x9x4xf32>, %sizes: tensor<2x9xf32>, %bias: tensor<2x9xf32>, %x: tensor<2x9x8xf32>) -> (tensor<2x7x8xf32>, tensor<2x9x8xf32>, tensor<2x7xi64>) {
  %d, %k = kiln.token_match %metric bias %bias merged = 2 protected = 1 : tensor<2x9x4xf32>, tensor<2x9xf32> -> tensor<2x9xi64>, tensor<2x7xi64>
  %m, %s = kiln.token_merge %x, %sizes, %d : tensor<2x9x8xf32>, tensor<2x9xf32>, tensor<2x9xi64> -> tensor<2x7x8xf32>, tensor<2x7xf32>
  %u = kiln.token_unmerge %m, %d : tensor<2x7x8xf32>, tensor<2x9xi64> -> tensor<2x9x8xf32>
  return %m, %u, %k : tensor<2x7x8xf32>, tensor<2x9x8xf32>, tensor<2x7xi64>
}
