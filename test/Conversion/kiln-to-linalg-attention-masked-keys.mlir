// RUN: kiln-opt %s -convert-kiln-to-linalg="attention-query-rows=8 attention-key-columns=16 attention-masked-key-columns=8" -canonicalize -cse | FileCheck %s

// A padding mask (-1e4 added to the padded keys, per batch entry): keys in
// blocks of 8 rather than 16. Each query block first checks that each of
// its rows keeps some key of the 16; then each key block is skipped, the
// running maxima, sums and output rows passed on as they are, when no row
// keeps any of its keys. The scale, 0.5, applies in the exponentials: the
// mask is divided by it (once, written out per head), and so is the -1e4
// that masks a key.
// CHECK-LABEL: func.func @padding
// CHECK-DAG: %[[TRUE:[a-zA-Z0-9_]+]] = arith.constant true
// CHECK-DAG: %[[MASKED:[a-zA-Z0-9_]+]] = arith.constant -2.000000e+04 : f32
// CHECK: scf.forall
// CHECK:   %[[WHOLE:[a-zA-Z0-9_]+]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0, 0] [1, 1, 16] [1, 1, 1] : tensor<4x1x16xf32> to tensor<1x16xf32>
// CHECK:   %[[ROWS:[a-zA-Z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[WHOLE]] : tensor<1x16xf32>) outs(%{{.*}} : tensor<1xi1>)
// CHECK:     arith.cmpf ugt, %{{.*}}, %[[MASKED]] : f32
// CHECK:     arith.ori
// CHECK:   %[[EVERY:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%[[ROWS]] : tensor<1xi1>) outs(%{{.*}} : tensor<i1>)
// CHECK:     arith.andi
// CHECK:   %[[SKIPPABLE:[a-zA-Z0-9_]+]] = tensor.extract %[[EVERY]][] : tensor<i1>
// CHECK:   scf.for %[[K0:[a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[MAX:[a-zA-Z0-9_]+]] = %{{.*}}, %[[SUM:[a-zA-Z0-9_]+]] = %{{.*}}, %[[OUT:[a-zA-Z0-9_]+]] = %{{.*}}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>)
// CHECK:     %[[BLOCK:[a-zA-Z0-9_]+]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0, %[[K0]]] [1, 1, 8] [1, 1, 1] : tensor<4x1x16xf32> to tensor<1x8xf32>
// CHECK:     linalg.generic {{.*}} ins(%[[BLOCK]] : tensor<1x8xf32>) outs(%{{.*}} : tensor<1xi1>)
// CHECK:     %[[ANY:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<i1>)
// CHECK:       arith.ori
// CHECK:     %[[KEPT:[a-zA-Z0-9_]+]] = tensor.extract %[[ANY]][] : tensor<i1>
// CHECK:     %[[NONE:[a-zA-Z0-9_]+]] = arith.xori %[[KEPT]], %[[TRUE]] : i1
// CHECK:     %[[SKIP:[a-zA-Z0-9_]+]] = arith.andi %[[SKIPPABLE]], %[[NONE]] : i1
// CHECK:     scf.if %[[SKIP]] -> (tensor<8xf32>, tensor<8xf32>, tensor<8x4xf32>) {
// CHECK-NEXT:  scf.yield %[[MAX]], %[[SUM]], %[[OUT]]
// CHECK:     } else {
// CHECK:       linalg.matmul {{.*}} : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK:       linalg.matmul {{.*}} : tensor<8x8xf32>, tensor<8x4xf32>
func.func @padding(%q: tensor<2x2x8x4xf32>, %kt: tensor<2x2x4x16xf32>, %v: tensor<2x2x16x4xf32>, %m: tensor<2x1x1x16xf32>) -> tensor<2x2x8x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.5 : tensor<2x2x8x4xf32>, tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>, tensor<2x1x1x16xf32> -> tensor<2x2x8x4xf32>
  return %0 : tensor<2x2x8x4xf32>
}

// A causal mask (a boolean one filling -inf, so added as -inf and 0) is
// checked per query row: the block of each query block's rows.
// CHECK-LABEL: func.func @causal
// CHECK: scf.forall
// CHECK:   tensor.extract_slice %{{.*}}[0, %{{.*}}, 0] [1, 8, 16] [1, 1, 1] : tensor<1x16x16xf32> to tensor<8x16xf32>
// CHECK:   scf.for
// CHECK:     tensor.extract_slice %{{.*}}[0, %{{.*}}, %{{.*}}] [1, 8, 8] [1, 1, 1] : tensor<1x16x16xf32> to tensor<8x8xf32>
// CHECK:     scf.if
func.func @causal(%q: tensor<1x2x16x4xf32>, %kt: tensor<1x2x4x16xf32>, %v: tensor<1x2x16x4xf32>, %m: tensor<1x1x16x16xi1>) -> tensor<1x2x16x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.5 mask_fill = 0xFF800000 : tensor<1x2x16x4xf32>, tensor<1x2x4x16xf32>, tensor<1x2x16x4xf32>, tensor<1x1x16x16xi1> -> tensor<1x2x16x4xf32>
  return %0 : tensor<1x2x16x4xf32>
}

// A boolean mask filling -1e4 keeps the keys where it is 0 (as bytes).
// CHECK-LABEL: func.func @fill_removes
// CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<8x16xi8>) outs(%{{.*}} : tensor<8xi1>)
// CHECK:     arith.cmpi eq
// CHECK:   scf.if
func.func @fill_removes(%q: tensor<8x4xf32>, %kt: tensor<4x16xf32>, %v: tensor<16x4xf32>, %m: tensor<8x16xi1>) -> tensor<8x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 mask_fill = -1.0e+04 : tensor<8x4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<8x16xi1> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// Nothing is skipped where the mask may keep every key: a fill of -1
// weighs keys e^-1 of their peers, and a mask the same for every key
// removes none.
// CHECK-LABEL: func.func @fill_keeps
// CHECK-NOT: scf.if
// CHECK: linalg.matmul {{.*}} : tensor<8x4xf32>, tensor<4x16xf32>
// CHECK-NOT: scf.if
// CHECK-LABEL: func.func @same_for_every_key
// CHECK-NOT: scf.if
// CHECK: linalg.matmul {{.*}} : tensor<8x4xf32>, tensor<4x16xf32>
// CHECK-NOT: scf.if
// CHECK: return
func.func @fill_keeps(%q: tensor<8x4xf32>, %kt: tensor<4x16xf32>, %v: tensor<16x4xf32>, %m: tensor<8x16xi1>) -> tensor<8x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 mask_fill = -1.0 : tensor<8x4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<8x16xi1> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

func.func @same_for_every_key(%q: tensor<8x4xf32>, %kt: tensor<4x16xf32>, %v: tensor<16x4xf32>, %m: tensor<8x1xf32>) -> tensor<8x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 : tensor<8x4xf32>, tensor<4x16xf32>, tensor<16x4xf32>, tensor<8x1xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
