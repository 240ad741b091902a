// RUN: kiln-opt %s -convert-kiln-to-linalg="attention-query-rows=8 attention-key-columns=8 attention-masked-key-columns=0" -canonicalize -cse | FileCheck %s

// 3 heads x 21 query rows in blocks of 8: a parallel loop over the 3 x 2
// full blocks and one over the 3 heads for the last 5 rows. 21 keys in
// blocks of 8: a loop over the two full blocks carrying the row maxima, the
// row sums and the output rows, then the 5 keys left. A boolean mask filling
// -inf is added instead: -inf where set, 0 elsewhere.
// CHECK-LABEL: func.func @attention
// CHECK-DAG: %[[MINUS_SCALE:[a-zA-Z0-9_]+]] = arith.constant -2.500000e-01 : f32
// CHECK-DAG: %[[SCALE:[a-zA-Z0-9_]+]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[MASK:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%arg3 : tensor<1x1x21x21xi1>) outs({{.*}} : tensor<1x1x21x21xf32>)
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: scf.forall (%[[I:[a-zA-Z0-9_]+]]) in (6)
// The scale (positive: it keeps the scores' order) is applied in the
// exponentials, not to the query rows.
// CHECK:   %[[Q:[a-zA-Z0-9_]+]] = tensor.extract_slice {{.*}} [1, 8, 16] [1, 1, 1] : tensor<3x21x16xf32> to tensor<8x16xf32>
// CHECK-NOT: linalg.generic
// CHECK:   %[[RESULT:[a-zA-Z0-9_]+]]:3 = scf.for %[[K0:[a-zA-Z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[MAX:[a-zA-Z0-9_]+]] = %{{.*}}, %[[SUM:[a-zA-Z0-9_]+]] = %{{.*}}, %[[OUT:[a-zA-Z0-9_]+]] = %{{.*}}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8x8xf32>)
// CHECK:     %[[KT:[a-zA-Z0-9_]+]] = tensor.extract_slice {{.*}}[%{{.*}}, 0, %[[K0]]] [1, 16, 8] [1, 1, 1] : tensor<3x16x21xf32> to tensor<16x8xf32>
// The product accumulates onto the mask's block (-inf and 0: the scale
// leaves them as they are).
// CHECK:     %[[MASKBLOCK:[a-zA-Z0-9_]+]] = tensor.extract_slice {{.*}}[0, %{{.*}}, %[[K0]]] [1, 8, 8] [1, 1, 1] : tensor<1x21x21xf32> to tensor<8x8xf32>
// CHECK:     %[[S:[a-zA-Z0-9_]+]] = linalg.matmul ins(%[[Q]], %[[KT]] : tensor<8x16xf32>, tensor<16x8xf32>) outs(%[[MASKBLOCK]] : tensor<8x8xf32>)
// The block's row maxima, then the running maxima updated in place and
// the factor for what was accumulated before.
// CHECK:     %[[BLOCKMAX:[a-zA-Z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[S]] : tensor<8x8xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK:       arith.maxnumf
// CHECK:     %[[UPDATE:[a-zA-Z0-9_]+]]:2 = linalg.generic {{.*}} outs(%[[MAX]], %[[BLOCKMAX]] : tensor<8xf32>, tensor<8xf32>)
// CHECK:       %[[OLD_OFFSET:[a-zA-Z0-9_]+]] = arith.mulf %{{.*}}, %[[MINUS_SCALE]] : f32
// CHECK:       %[[OLD_EXPONENT:[a-zA-Z0-9_]+]] = math.fma %{{.*}}, %[[SCALE]], %[[OLD_OFFSET]] : f32
// CHECK:       math.exp %[[OLD_EXPONENT]]
// exp(scale * score - scale * max), one fused multiply-add per score.
// CHECK:     %[[P:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%[[UPDATE]]#0 : tensor<8xf32>) outs(%[[S]] : tensor<8x8xf32>)
// CHECK:       %[[OFFSET:[a-zA-Z0-9_]+]] = arith.mulf %{{.*}}, %[[MINUS_SCALE]] : f32
// CHECK:       %[[EXPONENT:[a-zA-Z0-9_]+]] = math.fma %{{.*}}, %[[SCALE]], %[[OFFSET]] : f32
// CHECK:       math.exp %[[EXPONENT]]
// CHECK:     linalg.generic {{.*}} ins(%[[UPDATE]]#1 : tensor<8xf32>) outs(%[[SUM]] : tensor<8xf32>)
// CHECK:     %[[NEWSUM:[a-zA-Z0-9_]+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[P]] : tensor<8x8xf32>)
// CHECK:     %[[SCALED:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%[[UPDATE]]#1 : tensor<8xf32>) outs(%[[OUT]] : tensor<8x8xf32>)
// CHECK:     %[[NEWOUT:[a-zA-Z0-9_]+]] = linalg.matmul ins(%[[P]], %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>) outs(%[[SCALED]] : tensor<8x8xf32>)
// CHECK:     scf.yield %[[UPDATE]]#0, %[[NEWSUM]], %[[NEWOUT]]
// The last 5 keys, static.
// CHECK:   tensor.extract_slice {{.*}}[%{{.*}}, 0, 16] [1, 16, 5] [1, 1, 1] : tensor<3x16x21xf32> to tensor<16x5xf32>
// CHECK:   linalg.matmul {{.*}} : tensor<8x16xf32>, tensor<16x5xf32>
// CHECK:   linalg.matmul {{.*}} : tensor<8x5xf32>, tensor<5x8xf32>
// Normalized by the row sums.
// CHECK:   %[[NORM:[a-zA-Z0-9_]+]] = linalg.generic
// CHECK:     arith.divf
// CHECK:   tensor.parallel_insert_slice %[[NORM]] into {{.*}} [1, 8, 8] [1, 1, 1]
// The last 5 query rows of each head.
// CHECK: scf.forall (%{{.*}}) in (3)
// CHECK:   tensor.extract_slice {{.*}}[%{{.*}}, 16, 0] [1, 5, 16] [1, 1, 1] : tensor<3x21x16xf32> to tensor<5x16xf32>
// CHECK:   tensor.parallel_insert_slice {{.*}} [1, 5, 8] [1, 1, 1]
func.func @attention(%q: tensor<1x3x21x16xf32>, %kt: tensor<1x3x16x21xf32>, %v: tensor<1x3x21x8xf32>, %m: tensor<1x1x21x21xi1>) -> tensor<1x3x21x8xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.25 mask_fill = 0xFF800000 : tensor<1x3x21x16xf32>, tensor<1x3x16x21xf32>, tensor<1x3x21x8xf32>, tensor<1x1x21x21xi1> -> tensor<1x3x21x8xf32>
  return %0 : tensor<1x3x21x8xf32>
}

// A per-batch padding mask over 2 heads is written out per head, divided
// by the scale (0.5) on the way, -inf kept and finite values kept finite;
// its row of keys, broadcast over the query rows, is where the product
// starts.
// CHECK-LABEL: func.func @padding_mask
// CHECK-DAG: %[[TWO:[a-zA-Z0-9_]+]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG: %[[LOWEST:[a-zA-Z0-9_]+]] = arith.constant -3.40282347E+38 : f32
// CHECK-DAG: %[[MINUS_INF:[a-zA-Z0-9_]+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[FULL:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%arg3 : tensor<2x1x1x8xf32>) outs(%{{.*}} : tensor<2x2x1x8xf32>)
// CHECK:   ^bb0(%[[M:[a-zA-Z0-9_]+]]: f32, %{{.*}}: f32):
// CHECK:   %[[HALVED:[a-zA-Z0-9_]+]] = arith.mulf %[[M]], %[[TWO]] : f32
// CHECK:   %[[FINITE:[a-zA-Z0-9_]+]] = arith.maximumf %[[HALVED]], %[[LOWEST]] : f32
// CHECK:   %[[IS_INF:[a-zA-Z0-9_]+]] = arith.cmpf oeq, %[[M]], %[[MINUS_INF]] : f32
// CHECK:   arith.select %[[IS_INF]], %[[MINUS_INF]], %[[FINITE]] : f32
// CHECK: tensor.collapse_shape %[[FULL]] {{.*}} into tensor<4x1x8xf32>
// CHECK: scf.forall (%{{.*}}) in (4)
// CHECK-NOT: scf.for
// CHECK: %[[ROW:[a-zA-Z0-9_]+]] = tensor.extract_slice {{.*}} [1, 1, 8] [1, 1, 1] : tensor<4x1x8xf32> to tensor<1x8xf32>
// CHECK: %[[INIT:[a-zA-Z0-9_]+]] = linalg.generic {{.*}} ins(%[[ROW]] : tensor<1x8xf32>) outs(%{{.*}} : tensor<8x8xf32>)
// CHECK: linalg.matmul {{.*}} outs(%[[INIT]] : tensor<8x8xf32>)

func.func @padding_mask(%q: tensor<2x2x8x4xf32>, %kt: tensor<2x2x4x8xf32>, %v: tensor<2x2x8x4xf32>, %m: tensor<2x1x1x8xf32>) -> tensor<2x2x8x4xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.5 : tensor<2x2x8x4xf32>, tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>, tensor<2x1x1x8xf32> -> tensor<2x2x8x4xf32>
  return %0 : tensor<2x2x8x4xf32>
}

// A boolean mask filling another value replaces the scores after the
// product, from bytes.
// CHECK-LABEL: func.func @fill_mask
// CHECK: linalg.generic {{.*}} ins(%arg3 : tensor<4x4xi1>) outs(%{{.*}} : tensor<4x4xi8>)
// CHECK: arith.extui
// CHECK: %[[S:[a-zA-Z0-9_]+]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x4xi8>) outs(%[[S]] : tensor<4x4xf32>)
// CHECK:   arith.cmpi ne
// CHECK:   arith.select
func.func @fill_mask(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>, %m: tensor<4x4xi1>) -> tensor<4x3xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 mask_fill = -1.0e+04 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x4xi1> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// With a scale, the fill is divided by it: the scores it replaces are
// unscaled until the exponentials.
// CHECK-LABEL: func.func @scaled_fill_mask
// CHECK-DAG: %[[FILL:[a-zA-Z0-9_]+]] = arith.constant -2.000000e+04 : f32
// CHECK: %[[S:[a-zA-Z0-9_]+]] = linalg.matmul
// CHECK: linalg.generic {{.*}} outs(%[[S]] : tensor<4x4xf32>)
// CHECK:   arith.select %{{.*}}, %[[FILL]], %{{.*}} : f32
func.func @scaled_fill_mask(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>, %m: tensor<4x4xi1>) -> tensor<4x3xf32> {
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.5 mask_fill = -1.0e+04 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x4xi1> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// A negative scale reverses the scores' order, so the row maxima must be of
// scaled scores: the query rows are scaled once, and the exponentials
// subtract.
// CHECK-LABEL: func.func @negative_scale
// CHECK: %[[Q:[a-zA-Z0-9_]+]] = linalg.generic
// CHECK:   arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: linalg.matmul ins(%[[Q]], %{{.*}} : tensor<4x8xf32>, tensor<8x4xf32>)
// CHECK-NOT: math.fma
// CHECK: arith.subf
// CHECK: math.exp
func.func @negative_scale(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = kiln.attention %q, %kt, %v scale = -0.5 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// Sequence-first query, value and result ([B, S, H, D]): each block reads
// and writes its head's rows in place, the output rows accumulating in the
// result's own slice.
// CHECK-LABEL: func.func @seq_first
// CHECK: scf.forall (%[[I:[a-zA-Z0-9_]+]]) in (6) shared_outs(%[[RESULT:[a-zA-Z0-9_]+]] = %{{.*}}) -> (tensor<2x8x3x4xf32>)
// CHECK:   %[[B:[a-zA-Z0-9_]+]] = arith.divui %[[I]], %{{.*}} : index
// CHECK:   %[[H:[a-zA-Z0-9_]+]] = arith.remui %[[I]], %{{.*}} : index
// CHECK:   %[[DEST:[a-zA-Z0-9_]+]] = tensor.extract_slice %[[RESULT]][%[[B]], 0, %[[H]], 0] [1, 8, 1, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<8x4xf32>
// CHECK:   tensor.extract_slice %arg0[%[[B]], 0, %[[H]], 0] [1, 8, 1, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<8x4xf32>
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%[[DEST]] : tensor<8x4xf32>)
// CHECK:   tensor.extract_slice %arg2[%[[B]], 0, %[[H]], 0] [1, 8, 1, 4] [1, 1, 1, 1] : tensor<2x8x3x4xf32> to tensor<8x4xf32>
// CHECK:   tensor.parallel_insert_slice %{{.*}} into %[[RESULT]][%[[B]], 0, %[[H]], 0] [1, 8, 1, 4] [1, 1, 1, 1] : tensor<8x4xf32> into tensor<2x8x3x4xf32>
func.func @seq_first(%q: tensor<2x8x3x4xf32>, %kt: tensor<2x3x4x8xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32> {
  %0 = kiln.attention %q, %kt, %v scale = 1.0 {query_seq_first, value_seq_first, result_seq_first} : tensor<2x8x3x4xf32>, tensor<2x3x4x8xf32>, tensor<2x8x3x4xf32> -> tensor<2x8x3x4xf32>
  return %0 : tensor<2x8x3x4xf32>
}
