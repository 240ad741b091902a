// RUN: kiln-opt %s -convert-kiln-to-linalg -split-input-file | FileCheck %s
// RUN: kiln-opt %s -convert-kiln-to-linalg="patch-columns=32" -split-input-file | FileCheck %s --check-prefix=PANELS

// Broadcasting lives in the indexing maps; nothing is materialized.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[SIZE1:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[SIZE1]], #[[ID]]]
// CHECK: arith.subf
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<3xf32>
  %1 = kiln.sub %0, %c : tensor<2x3xf32>, tensor<2x1xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Integer division never traps: x / 0 and INT64_MIN / -1 are selected away.
// CHECK-LABEL: func.func @int_div
// CHECK: %[[ZERO:.*]] = arith.cmpi eq, %[[D:.*]], %c0_i64
// CHECK: %[[MINUS_ONE:.*]] = arith.cmpi eq, %[[D]], %c-1_i64
// CHECK: %[[UNSAFE:.*]] = arith.ori %[[ZERO]], %[[MINUS_ONE]]
// CHECK: %[[DIVISOR:.*]] = arith.select %[[UNSAFE]], %c1_i64, %[[D]]
// CHECK: arith.divsi %{{.*}}, %[[DIVISOR]]
func.func @int_div(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = kiln.div %a, %b : tensor<4xi64>, tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A weight-like right operand: one linalg.matmul over all rows.
// CHECK-LABEL: func.func @matmul_rows
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : tensor<8x2x3xf32> into tensor<48xf32>
// CHECK: %[[LHS:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [16, 3]
// CHECK: %[[INIT:.*]] = linalg.fill
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[LHS]], %arg1 : tensor<16x3xf32>, tensor<3x4xf32>) outs(%[[INIT]] : tensor<16x4xf32>)
// CHECK: tensor.collapse_shape %[[MM]]
func.func @matmul_rows(%a: tensor<8x2x3xf32>, %b: tensor<3x4xf32>) -> tensor<8x2x4xf32> {
  %0 = kiln.matmul %a, %b : tensor<8x2x3xf32>, tensor<3x4xf32>
  return %0 : tensor<8x2x4xf32>
}

// -----

// Equal batch dimensions: a parallel loop of linalg.matmul over the
// flattened batch.
// CHECK-LABEL: func.func @matmul_batch
// CHECK: scf.forall (%[[I:.*]]) in (6) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<6x4x4xf32>)
// CHECK: %[[A:.*]] = tensor.extract_slice %{{.*}}[%[[I]], 0, 0] [1, 4, 8] [1, 1, 1] : tensor<6x4x8xf32> to tensor<4x8xf32>
// CHECK: %[[B:.*]] = tensor.extract_slice %{{.*}}[%[[I]], 0, 0] [1, 8, 4] [1, 1, 1] : tensor<6x8x4xf32> to tensor<8x4xf32>
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x4xf32>)
// CHECK: tensor.parallel_insert_slice %[[P]] into %[[OUT]][%[[I]], 0, 0] [1, 4, 4] [1, 1, 1]
func.func @matmul_batch(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// Broadcast batch dimensions stay a generic with the broadcast in its maps.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: %[[INIT:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<8x2x4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @matmul_broadcast_batch(%a: tensor<8x2x3xf32>, %b: tensor<1x3x4xf32>) -> tensor<8x2x4xf32> {
  %0 = kiln.matmul %a, %b : tensor<8x2x3xf32>, tensor<1x3x4xf32>
  return %0 : tensor<8x2x4xf32>
}

// -----

// A 1-D operand has no row (or column) loop.
// CHECK-DAG: #[[VEC:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[MAT:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[RES:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @vector_matrix
// CHECK: linalg.generic {indexing_maps = [#[[VEC]], #[[MAT]], #[[RES]]], iterator_types = ["parallel", "reduction"]}
func.func @vector_matrix(%v: tensor<3xf32>, %m: tensor<3x4xf32>) -> tensor<4xf32> {
  %0 = kiln.matmul %v, %m : tensor<3xf32>, tensor<3x4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Gather wraps negative indices once, then clamps into range.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IDX:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[IDX]], %c0_i64
// CHECK: %[[WRAPPED:.*]] = arith.addi %[[IDX]], %c5_i64
// CHECK: %[[SEL:.*]] = arith.select %[[NEG]], %[[WRAPPED]], %[[IDX]]
// CHECK: %[[LOW:.*]] = arith.maxsi %[[SEL]], %c0_i64
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %c4_i64
// CHECK: %[[I:.*]] = arith.index_cast %[[CLAMPED]]
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: tensor.extract %{{.*}}[%[[I]], %[[J]]] : tensor<5x4xf32>
func.func @gather(%table: tensor<5x4xf32>, %ids: tensor<2xi64>) -> tensor<2x4xf32> {
  %0 = kiln.gather %table[%ids], axis = 0 : tensor<5x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// GatherElements reads the axis coordinate from the indices and keeps the
// others; a dimension where the indices are larger than the data (1: 3 > 2)
// is clamped as well, one where they are not (0) is used as is.
// CHECK-LABEL: func.func @gather_elements
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IDX:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK-NOT: arith.index_cast %[[I]]
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[J64:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK: arith.cmpi slt, %[[J64]]
// CHECK: %[[JC:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: arith.cmpi slt, %[[IDX]]
// CHECK: %[[K:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %{{.*}}[%[[I]], %[[JC]], %[[K]]] : tensor<3x2x4xf32>
func.func @gather_elements(%x: tensor<3x2x4xf32>, %ids: tensor<2x3x1xi64>) -> tensor<2x3x1xf32> {
  %0 = kiln.gather_elements %x[%ids], axis = 2 : tensor<3x2x4xf32>, tensor<2x3x1xi64> -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

// A pool reads the input padded with its neutral element (the ceil-mode
// overhang included: 5 + 1 + 0 + 1), iterates window elements as
// reductions, and an average divides by each window's count of input
// elements, a constant: 2, 3 and 2 per dimension here.
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5)>
// CHECK-LABEL: func.func @pool_average
// CHECK: %[[PADDED:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.generic {indexing_maps = [#[[WINDOW]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[PADDED]], %{{.*}} : tensor<1x2x7x7xf32>, tensor<3x3xf32>)
// CHECK: arith.addf
// CHECK: arith.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
// CHECK: arith.divf
func.func @pool_average(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = kiln.pool average %x kernel = [3, 3] strides = [2, 2] dilations = [1, 1] pads = [1, 1, 0, 0] ceil_mode : tensor<1x2x5x5xf32> -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// With a dynamic width, an average counts each window's elements inside the
// input by the same window sums over ones padded with zeros; the result's
// width is (width + 1 + 1 - 3) floordiv 2 + 1.
// CHECK-LABEL: func.func @pool_average_dynamic
// CHECK: arith.floordivsi
// CHECK: %[[SUMS:.*]] = linalg.generic
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ONES:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<?xf32>)
// CHECK: tensor.pad %[[ONES]] low[1] high[1]
// CHECK: tensor.yield %[[ZERO]]
// CHECK: %[[COUNTS:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} ins(%[[SUMS]], %[[COUNTS]] : tensor<1x3x?xf32>, tensor<?xf32>)
// CHECK: arith.divf
func.func @pool_average_dynamic(%x: tensor<1x3x?xf32>) -> tensor<1x3x?xf32> {
  %0 = kiln.pool average %x kernel = [3] strides = [2] dilations = [1] pads = [1, 1] : tensor<1x3x?xf32> -> tensor<1x3x?xf32>
  return %0 : tensor<1x3x?xf32>
}

// -----

// A max pool pads with -inf and starts from it; a dynamic batch stays
// dynamic.
// CHECK-LABEL: func.func @pool_max
// CHECK: %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad %arg0 low[0, 0, 1] high[0, 0, 1]
// CHECK: tensor.yield %[[NEG_INF]]
// CHECK: linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<?x3x4xf32>)
// CHECK: arith.maximumf
// CHECK-NOT: arith.divf
func.func @pool_max(%x: tensor<?x3x8xf32>) -> tensor<?x3x4xf32> {
  %0 = kiln.pool max %x kernel = [3] strides = [2] dilations = [1] pads = [1, 1] : tensor<?x3x8xf32> -> tensor<?x3x4xf32>
  return %0 : tensor<?x3x4xf32>
}

// -----

// An integer remainder by 0 or -1 gives 0 instead of trapping; a float one
// is frem (C's fmod).
// CHECK-LABEL: func.func @remainder
// CHECK: ^bb0(%[[A:.*]]: i64, %[[B:.*]]: i64, %{{.*}}: i64):
// CHECK: %[[IS_ZERO:.*]] = arith.cmpi eq, %[[B]], %c0_i64
// CHECK: %[[IS_MINUS_ONE:.*]] = arith.cmpi eq, %[[B]], %c-1_i64
// CHECK: %[[UNSAFE:.*]] = arith.ori %[[IS_ZERO]], %[[IS_MINUS_ONE]]
// CHECK: %[[DIVISOR:.*]] = arith.select %[[UNSAFE]], %c1_i64, %[[B]]
// CHECK: %[[REM:.*]] = arith.remsi %[[A]], %[[DIVISOR]]
// CHECK: arith.select %[[UNSAFE]], %c0_i64, %[[REM]]
// CHECK: arith.remf
func.func @remainder(%a: tensor<4xi64>, %b: tensor<4xi64>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xi64>, tensor<4xf32>) {
  %0 = kiln.rem %a, %b : tensor<4xi64>, tensor<4xi64>
  %1 = kiln.rem %x, %y : tensor<4xf32>, tensor<4xf32>
  return %0, %1 : tensor<4xi64>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<2x5xf32>
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %arg0 into %[[EMPTY]][0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %arg1 into %[[FIRST]][0, 3] [2, 2] [1, 1]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x5xf32> {
  %0 = kiln.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Past 32 inputs, one tensor.concat: a chain of that many inserts takes
// one-shot bufferization quadratic time. Empty inputs are dropped.
// CHECK-LABEL: func.func @wide_concat
// CHECK-NOT: tensor.insert_slice
// CHECK: tensor.concat dim(0) %arg0, %arg1, {{.*}}, %arg32 : ({{.*}}) -> tensor<33x2xf32>
// CHECK-NOT: tensor.insert_slice
func.func @wide_concat(%a0: tensor<1x2xf32>, %a1: tensor<1x2xf32>, %a2: tensor<1x2xf32>, %a3: tensor<1x2xf32>, %a4: tensor<1x2xf32>, %a5: tensor<1x2xf32>, %a6: tensor<1x2xf32>, %a7: tensor<1x2xf32>, %a8: tensor<1x2xf32>, %a9: tensor<1x2xf32>, %a10: tensor<1x2xf32>, %a11: tensor<1x2xf32>, %a12: tensor<1x2xf32>, %a13: tensor<1x2xf32>, %a14: tensor<1x2xf32>, %a15: tensor<1x2xf32>, %a16: tensor<1x2xf32>, %a17: tensor<1x2xf32>, %a18: tensor<1x2xf32>, %a19: tensor<1x2xf32>, %a20: tensor<1x2xf32>, %a21: tensor<1x2xf32>, %a22: tensor<1x2xf32>, %a23: tensor<1x2xf32>, %a24: tensor<1x2xf32>, %a25: tensor<1x2xf32>, %a26: tensor<1x2xf32>, %a27: tensor<1x2xf32>, %a28: tensor<1x2xf32>, %a29: tensor<1x2xf32>, %a30: tensor<1x2xf32>, %a31: tensor<1x2xf32>, %a32: tensor<1x2xf32>, %empty: tensor<0x2xf32>) -> tensor<33x2xf32> {
  %0 = kiln.concat %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10, %a11, %a12, %a13, %a14, %a15, %a16, %a17, %a18, %a19, %a20, %a21, %a22, %a23, %a24, %a25, %a26, %a27, %a28, %a29, %a30, %a31, %a32, %empty axis = 0 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<0x2xf32> -> tensor<33x2xf32>
  return %0 : tensor<33x2xf32>
}

// -----

// Reshapes collapse to 1-D and expand, which bufferize without copies.
// CHECK-LABEL: func.func @reshape
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1, 2]] output_shape [3, 1, 2] : tensor<6xf32> into tensor<3x1x2xf32>
// CHECK: tensor.expand_shape %{{.*}} [] output_shape [1] : tensor<f32> into tensor<1xf32>
func.func @reshape(%a: tensor<2x3xf32>, %s: tensor<f32>) -> (tensor<3x1x2xf32>, tensor<1x1xf32>) {
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<3x1x2xf32>
  %1 = kiln.reshape %s : tensor<f32> -> tensor<1x1xf32>
  return %0, %1 : tensor<3x1x2xf32>, tensor<1x1xf32>
}

// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reduce_mean_keep_dims
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[ROWS]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.addf
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK: arith.divf %{{.*}}, %cst
// CHECK: tensor.expand_shape %[[MEAN]] {{\[\[}}0, 1]] output_shape [2, 1]
func.func @reduce_mean_keep_dims(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = kiln.reduce_mean %a axes = [1] keep_dims : tensor<2x3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Softmax over the last axis works row by row: max, exp of the difference
// written to the row of the result, sum, then the division in place.
// CHECK-LABEL: func.func @softmax
// CHECK-DAG: %[[LOWEST:.*]] = arith.constant dense<0xFF800000> : tensor<1xf32>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: scf.forall (%[[R:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<2x5xf32>)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg0[%[[R]], 0] [1, 5] [1, 1]
// CHECK: %[[DST:.*]] = tensor.extract_slice %[[OUT]][%[[R]], 0] [1, 5] [1, 1]
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[ROW]] : tensor<1x5xf32>) outs(%[[LOWEST]] : tensor<1xf32>)
// CHECK: arith.maximumf
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}} ins(%[[ROW]], %[[MAX]] : tensor<1x5xf32>, tensor<1xf32>) outs(%[[DST]] : tensor<1x5xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : tensor<1x5xf32>) outs(%[[ZERO]] : tensor<1xf32>)
// Sums may be reassociated, so they vectorize.
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<1xf32>) outs(%[[EXP]] : tensor<1x5xf32>)
// CHECK: arith.divf
// CHECK: tensor.parallel_insert_slice %[[Y]] into %[[OUT]][%[[R]], 0] [1, 5] [1, 1]
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = kiln.softmax %a, axis = 1 : tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Over another axis, softmax is four whole-tensor generics.
// CHECK-LABEL: func.func @softmax_axis0
// CHECK-NOT: scf.forall
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: arith.divf
func.func @softmax_axis0(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = kiln.softmax %a, axis = 0 : tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK-LABEL: func.func @unary_and_cast
// CHECK: arith.maximumf
// CHECK: math.erf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.sin
// CHECK: math.cos
// CHECK: arith.fptosi %{{.*}} : f32 to i64
func.func @unary_and_cast(%a: tensor<4xf32>) -> tensor<4xi64> {
  %0 = kiln.relu %a : tensor<4xf32>
  %1 = kiln.erf %0 : tensor<4xf32>
  %2 = kiln.sigmoid %1 : tensor<4xf32>
  %s = kiln.sin %2 : tensor<4xf32>
  %c = kiln.cos %s : tensor<4xf32>
  %3 = kiln.cast %c : tensor<4xf32> -> tensor<4xi64>
  return %3 : tensor<4xi64>
}

// -----

// Rounding, NaN-propagating minimum and maximum, ordered comparisons (false
// on NaN) and logic, each one scalar op in its generic.
// CHECK-LABEL: func.func @rounding_order_logic
// CHECK: math.floor
// CHECK: math.ceil
// CHECK: math.roundeven
// CHECK: arith.minimumf
// CHECK: arith.maxsi
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi sle
// CHECK: arith.andi
// CHECK: arith.ori
// CHECK: arith.xori
// CHECK: arith.xori %{{.*}}, %true
func.func @rounding_order_logic(%a: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xi1>) {
  %0 = kiln.floor %a : tensor<4xf32>
  %1 = kiln.ceil %0 : tensor<4xf32>
  %2 = kiln.round %1 : tensor<4xf32>
  %3 = kiln.min %2, %a : tensor<4xf32>, tensor<4xf32>
  %4 = kiln.max %i, %i : tensor<4xi64>, tensor<4xi64>
  %5 = kiln.less %3, %a : tensor<4xf32>, tensor<4xf32>
  %6 = kiln.less_equal %4, %i : tensor<4xi64>, tensor<4xi64>
  %7 = kiln.and %5, %6 : tensor<4xi1>, tensor<4xi1>
  %8 = kiln.or %7, %5 : tensor<4xi1>, tensor<4xi1>
  %9 = kiln.xor %8, %6 : tensor<4xi1>, tensor<4xi1>
  %10 = kiln.not %9 : tensor<4xi1>
  return %3, %4, %10 : tensor<4xf32>, tensor<4xi64>, tensor<4xi1>
}

// -----

// Minimum and product start from their combiner's identity: +inf (the
// highest integer) and 1.
// CHECK-LABEL: func.func @reduce_min_prod
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: linalg.fill ins(%[[INF]] : f32)
// CHECK: arith.minimumf
// CHECK: %[[MAXINT:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: linalg.fill ins(%[[MAXINT]] : i64)
// CHECK: arith.minsi
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ONE]] : f32)
// CHECK: arith.mulf
func.func @reduce_min_prod(%a: tensor<2x3xf32>, %i: tensor<2x3xi64>) -> (tensor<2xf32>, tensor<2xi64>, tensor<3xf32>) {
  %0 = kiln.reduce_min %a axes = [1] : tensor<2x3xf32> -> tensor<2xf32>
  %1 = kiln.reduce_min %i axes = [1] : tensor<2x3xi64> -> tensor<2xi64>
  %2 = kiln.reduce_prod %a axes = [0] : tensor<2x3xf32> -> tensor<3xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xi64>, tensor<3xf32>
}

// -----

// One reduction over the indices; a non-zero incoming status wins.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @check_index_range
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[SCALAR]]], iterator_types = ["reduction", "reduction"]} ins(%arg0 : tensor<2x3xi64>) outs(%arg1 : tensor<i32>)
// CHECK: ^bb0(%[[I:.*]]: i64, %[[S:.*]]: i32):
// CHECK: %[[LOW:.*]] = arith.cmpi slt, %[[I]], %c-7_i64
// CHECK: %[[HIGH:.*]] = arith.cmpi sge, %[[I]], %c7_i64
// CHECK: %[[OUT:.*]] = arith.ori %[[LOW]], %[[HIGH]]
// CHECK: %[[BEFORE:.*]] = arith.cmpi ne, %[[S]], %c0_i32
// CHECK: %[[FRESH:.*]] = arith.select %[[OUT]], %c3_i32, %c0_i32
// CHECK: arith.select %[[BEFORE]], %[[S]], %[[FRESH]]
func.func @check_index_range(%ids: tensor<2x3xi64>, %status: tensor<i32>) -> tensor<i32> {
  %0 = kiln.check_index_range %ids, %status, size = 7, code = 3 : tensor<2x3xi64>
  return %0 : tensor<i32>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK: tensor.extract_slice %arg0[1, 0] [2, 2] [1, 2] : tensor<4x4xf32> to tensor<2x2xf32>
func.func @slice(%a: tensor<4x4xf32>) -> tensor<2x2xf32> {
  %0 = kiln.slice %a offsets = [1, 0] sizes = [2, 2] strides = [1, 2] : tensor<4x4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2) -> (0, d1, d2)>
// CHECK-LABEL: func.func @broadcast_select
// CHECK: linalg.generic {indexing_maps = [#[[BCAST]], #{{.*}}]
// CHECK: arith.cmpi eq
// CHECK: arith.select
func.func @broadcast_select(%a: tensor<1x2x3xf32>, %i: tensor<3xi64>) -> (tensor<4x2x3xf32>, tensor<3xi64>) {
  %0 = kiln.broadcast %a : tensor<1x2x3xf32> -> tensor<4x2x3xf32>
  %eq = kiln.equal %i, %i : tensor<3xi64>, tensor<3xi64>
  %1 = kiln.select %eq, %i, %i : tensor<3xi1>, tensor<3xi64>, tensor<3xi64>
  return %0, %1 : tensor<4x2x3xf32>, tensor<3xi64>
}

// -----

// Two reductions over the normalized dimensions (the sum, then the squared
// deviations from the mean, recomputed from the input rather than stored),
// then one elementwise pass.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x8xf32>)
// CHECK: %[[SQUARES:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[SUM]] : tensor<2x8xf32>, tensor<2xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[SUM]], %[[SQUARES]], %arg1, %arg2 :
// CHECK: math.rsqrt
// CHECK-NOT: linalg.generic
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = kiln.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// The statistics over the groups as rows ([N * G, C / G * H * W]), the
// mean and the inverse deviation times the scale per (item, channel), then
// one elementwise pass over the feature maps' own shape.
// CHECK-LABEL: func.func @group_norm
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} output_shape [4, 50] : tensor<200xf32> into tensor<4x50xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[ROWS]] : tensor<4x50xf32>)
// CHECK: %[[SQUARES:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[ROWS]], %[[SUM]] : tensor<4x50xf32>, tensor<4xf32>)
// CHECK: %[[SCALE:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
// CHECK: %[[MEANS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x2xf32>)
// CHECK: arith.divf
// CHECK: %[[MEAN_CHANNELS:.*]] = tensor.collapse_shape %[[MEANS]] {{\[\[}}0], [1, 2]] : tensor<2x2x2xf32> into tensor<2x4xf32>
// CHECK: %[[FACTORS:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SCALE]] : tensor<2x2xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<2x2x2xf32>)
// CHECK: math.rsqrt
// CHECK: %[[FACTOR_CHANNELS:.*]] = tensor.collapse_shape %[[FACTORS]]
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID:.*]], #[[NC:.*]], #[[NC]], #[[C:.*]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %[[MEAN_CHANNELS]], %[[FACTOR_CHANNELS]], %arg2 : tensor<2x4x5x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return %[[Y]]
func.func @group_norm(%x: tensor<2x4x5x5xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x5x5xf32> {
  %0 = kiln.group_norm %x, %g, %b groups = 2 epsilon = 1.0e-05 : tensor<2x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<2x4x5x5xf32>
}

// -----

// An empty batch has no groups to normalize: the result is empty too.
// CHECK-LABEL: func.func @group_norm_empty
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<0x4x5x5xf32>
// CHECK-NEXT: return %[[E]]
func.func @group_norm_empty(%x: tensor<0x4x5x5xf32>, %g: tensor<4xf32>) -> tensor<0x4x5x5xf32> {
  %0 = kiln.group_norm %x, %g, %g groups = 2 epsilon = 1.0e-05 : tensor<0x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<0x4x5x5xf32>
}

// -----

// One image: padding, then im2col and a matrix product.
// CHECK-LABEL: func.func @conv
// CHECK: %[[PADDED:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: %[[PATCHES:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<36x16xf32>)
// CHECK: tensor.extract %[[PADDED]]
// CHECK: linalg.matmul ins(%{{.*}}, %[[PATCHES]] : tensor<6x36xf32>, tensor<36x16xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 8, 8]
// CHECK: linalg.conv_2d_ngchw_gfchw
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x3x6x6xf32> into tensor<1x6x6x6xf32>
// A batch of images: one product over the patches of both, [F, N, Ho, Wo]
// transposed to NCHW.
// CHECK: %[[BATCH_PATCHES:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<36x72xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %[[BATCH_PATCHES]] : tensor<6x36xf32>, tensor<36x72xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<6x2x6x6xf32>) outs(%{{.*}} : tensor<2x6x6x6xf32>) permutation = [1, 0, 2, 3]
// With patch-columns, output rows that do not tile the panels of 32 columns
// are computed over whole rows of the padded input (5 columns for 4 outputs
// at stride 2): per tap row, its input rows (every 2nd, 7 of them, zeros
// below the image) flattened; per tap, a strided slice of those copied into
// the panels with no gather; the overhang column cropped afterwards.
// PANELS-LABEL: func.func @conv
// PANELS: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 4, 7, 10] [1, 1, 2, 1] : tensor<1x4x15x10xf32> to tensor<1x4x7x10xf32>
// PANELS: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<1x4x7x10xf32> into tensor<1x4x70xf32>
// PANELS: tensor.extract_slice %{{.*}}[0, 0, 1] [1, 4, 32] [1, 1, 2] : tensor<1x4x70xf32> to tensor<1x4x32xf32>
// PANELS-NOT: arith.cmpi uge
// PANELS: scf.forall
// PANELS: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x36xf32>, tensor<36x32xf32>)
// PANELS: tensor.extract_slice %{{.*}}[0, 0, 0, 0] [6, 1, 4, 4] [1, 1, 1, 1] : tensor<6x1x4x5xf32> to tensor<6x1x4x4xf32>
// PANELS: linalg.transpose
// The batch: 6 rows of 8 per image, in 2 panels each.
// PANELS: scf.forall (%{{.*}}) in (4)
// PANELS: tensor.expand_shape %{{.*}} output_shape [6, 2, 6, 8]
func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %g: tensor<6x2x3x3xf32>, %batch: tensor<2x4x8x8xf32>) -> (tensor<1x6x4x4xf32>, tensor<1x6x6x6xf32>, tensor<2x6x6x6xf32>) {
  %0 = kiln.conv2d %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<1x6x4x4xf32>
  %1 = kiln.conv2d %x, %g strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 2 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x6x6xf32>
  %2 = kiln.conv2d %batch, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<2x6x6x6xf32>
  return %0, %1, %2 : tensor<1x6x4x4xf32>, tensor<1x6x6x6xf32>, tensor<2x6x6x6xf32>
}

// -----

// Packed weights: a parallel loop over the full panels writes two columns
// each into the result; the padded last panel goes to a block of its own,
// whose valid column is copied.
// CHECK-LABEL: func.func @packed_matmul
// CHECK: %[[LHS:.*]] = tensor.expand_shape
// CHECK: scf.forall (%[[P:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<4x5xf32>)
// CHECK: %[[COL:.*]] = arith.muli %[[P]], %{{.*}}
// CHECK: %[[PANEL:.*]] = tensor.extract_slice %arg1[%[[P]], 0, 0] [1, 3, 2] [1, 1, 1] : tensor<3x3x2xf32> to tensor<3x2xf32>
// CHECK: %[[BLOCK:.*]] = linalg.matmul ins(%[[LHS]], %[[PANEL]] : tensor<4x3xf32>, tensor<3x2xf32>)
// CHECK: tensor.parallel_insert_slice %[[BLOCK]] into %[[OUT]][0, %[[COL]]] [4, 2] [1, 1]
// CHECK: %[[LAST:.*]] = tensor.extract_slice %arg1[2, 0, 0] [1, 3, 2] [1, 1, 1]
// CHECK: %[[TAIL:.*]] = linalg.matmul ins(%[[LHS]], %[[LAST]]
// CHECK: %[[VALID:.*]] = tensor.extract_slice %[[TAIL]][0, 0] [4, 1] [1, 1] : tensor<4x2xf32> to tensor<4x1xf32>
// CHECK: tensor.insert_slice %[[VALID]] into %{{.*}}[0, 4] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<4x5xf32>
func.func @packed_matmul(%x: tensor<1x4x3xf32>, %w: tensor<3x3x2xf32>) -> tensor<1x4x5xf32> {
  %0 = kiln.packed_matmul %x, %w : tensor<1x4x3xf32>, tensor<3x3x2xf32> -> tensor<1x4x5xf32>
  return %0 : tensor<1x4x5xf32>
}

// -----

// A bias: each panel's block starts from its row of the bias, broadcast
// over the rows, instead of zeros.
// CHECK-LABEL: func.func @packed_matmul_bias
// CHECK: scf.forall (%[[P:.*]]) in (2)
// CHECK: %[[ROW:.*]] = tensor.extract_slice %arg2[%[[P]], 0] [1, 2] [1, 1] : tensor<2x2xf32> to tensor<2xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[ROW]] : tensor<2xf32>)
// CHECK: linalg.matmul ins({{.*}}) outs(%[[INIT]] : tensor<4x2xf32>)
func.func @packed_matmul_bias(%x: tensor<4x3xf32>, %w: tensor<2x3x2xf32>, %b: tensor<2x2xf32>) -> tensor<4x4xf32> {
  %0 = kiln.packed_matmul %x, %w bias %b : tensor<4x3xf32>, tensor<2x3x2xf32>, tensor<2x2xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// An activation runs on each panel's block after its product, in place,
// before the block is written into the result: tanh's argument as
// x * (c + c * 0.044715 * x^2), c = sqrt(2 / pi), then h + h * tanh with
// h = x / 2.
// CHECK-LABEL: func.func @packed_matmul_gelu
// CHECK: scf.forall
// CHECK: %[[BLOCK:.*]] = linalg.matmul
// CHECK: %[[ACT:.*]] = linalg.generic {{.*}} outs(%[[BLOCK]] : tensor<4x2xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32):
// CHECK:   %[[SQUARE:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK:   %[[FACTOR:.*]] = math.fma %[[SQUARE]], %{{.*}}, %{{.*}} : f32
// CHECK:   %[[U:.*]] = arith.mulf %[[X]], %[[FACTOR]] : f32
// CHECK:   %[[TANH:.*]] = math.tanh %[[U]] : f32
// CHECK:   %[[HALF:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK:   %[[GELU:.*]] = math.fma %[[HALF]], %[[TANH]], %[[HALF]] : f32
// CHECK:   linalg.yield %[[GELU]]
// CHECK: tensor.parallel_insert_slice %[[ACT]]
func.func @packed_matmul_gelu(%x: tensor<4x3xf32>, %w: tensor<2x3x2xf32>) -> tensor<4x4xf32> {
  %0 = kiln.packed_matmul %x, %w activation gelu_tanh : tensor<4x3xf32>, tensor<2x3x2xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// A residual is added to each block last, in place, from the block's
// columns of the residual; the padded last panel adds it to its valid
// columns only.
// CHECK-LABEL: func.func @packed_matmul_residual
// CHECK: scf.forall (%[[P:.*]]) in (2)
// CHECK: %[[COL:.*]] = arith.muli %[[P]]
// CHECK: %[[BLOCK:.*]] = linalg.matmul
// CHECK: %[[PART:.*]] = tensor.extract_slice %arg2[0, %[[COL]]] [4, 2] [1, 1] : tensor<4x5xf32> to tensor<4x2xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PART]] : tensor<4x2xf32>) outs(%[[BLOCK]] : tensor<4x2xf32>)
// CHECK: arith.addf
// CHECK: tensor.parallel_insert_slice %[[SUM]]
// CHECK: %[[VALID:.*]] = tensor.extract_slice %{{.*}}[0, 0] [4, 1] [1, 1] : tensor<4x2xf32> to tensor<4x1xf32>
// CHECK: %[[LASTPART:.*]] = tensor.extract_slice %arg2[0, 4] [4, 1] [1, 1] : tensor<4x5xf32> to tensor<4x1xf32>
// CHECK: %[[LASTSUM:.*]] = linalg.generic {{.*}} ins(%[[LASTPART]] : tensor<4x1xf32>) outs(%[[VALID]] : tensor<4x1xf32>)
// CHECK: tensor.insert_slice %[[LASTSUM]] into %{{.*}}[0, 4] [4, 1] [1, 1]
func.func @packed_matmul_residual(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>, %r: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = kiln.packed_matmul %x, %w residual %r : tensor<4x3xf32>, tensor<3x3x2xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// 512 rows or more, a whole number of 256-row blocks: the loop runs over
// (row block, panel), the row block outer, and each iteration multiplies
// its 256 rows of the lhs and adds its block of the residual; 256 rows
// stay one block.
// CHECK-LABEL: func.func @packed_matmul_row_blocks
// CHECK: scf.forall (%[[R:.*]], %[[P:.*]]) in (2, 2)
// CHECK: %[[COL:.*]] = arith.muli %[[P]]
// CHECK: %[[ROW:.*]] = arith.muli %[[R]]
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %{{.*}}[%[[ROW]], 0] [256, 3] [1, 1] : tensor<512x3xf32> to tensor<256x3xf32>
// CHECK: %[[BLOCK:.*]] = linalg.matmul ins(%[[ROWS]], %{{.*}} : tensor<256x3xf32>, tensor<3x2xf32>)
// CHECK: %[[PART:.*]] = tensor.extract_slice %arg2[%[[ROW]], %[[COL]]] [256, 2] [1, 1] : tensor<512x4xf32> to tensor<256x2xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[PART]] : tensor<256x2xf32>) outs(%[[BLOCK]] : tensor<256x2xf32>)
// CHECK: tensor.parallel_insert_slice %[[SUM]] into %{{.*}}[%[[ROW]], %[[COL]]] [256, 2] [1, 1]
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<256x3xf32>, tensor<3x2xf32>)
func.func @packed_matmul_row_blocks(%x: tensor<512x3xf32>, %w: tensor<2x3x2xf32>, %r: tensor<512x4xf32>, %y: tensor<256x3xf32>) -> (tensor<512x4xf32>, tensor<256x4xf32>) {
  %0 = kiln.packed_matmul %x, %w residual %r : tensor<512x3xf32>, tensor<2x3x2xf32> -> tensor<512x4xf32>
  %1 = kiln.packed_matmul %y, %w : tensor<256x3xf32>, tensor<2x3x2xf32> -> tensor<256x4xf32>
  return %0, %1 : tensor<512x4xf32>, tensor<256x4xf32>
}

// -----

// Panels of whole output rows (8 wide: 4 rows a panel of 32): per filter
// tap, the input slice it reads, split into groups of rows, is copied into
// the panels' (c, i, j) rows by a copy whose innermost dimension reads an
// input row contiguously; the taps chain through the panels.
// PANELS-DAG: #[[READ:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d3, d4)>
// PANELS-DAG: #[[SAME:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// PANELS-LABEL: func.func @conv_rows
// PANELS: %[[PAD:.*]] = tensor.pad
// PANELS: %[[EMPTY:.*]] = tensor.empty() : tensor<1x2x4x3x3x4x8xf32>
// PANELS: %[[TAP:.*]] = tensor.extract_slice %[[PAD]][0, 0, 0, 0] [1, 4, 8, 8] [1, 1, 1, 1] : tensor<1x4x10x10xf32> to tensor<1x4x8x8xf32>
// PANELS: %[[ROWS:.*]] = tensor.expand_shape %[[TAP]] {{\[}}[0], [1], [2, 3], [4]] output_shape [1, 4, 2, 4, 8]
// PANELS: %[[DEST:.*]] = tensor.extract_slice %[[EMPTY]][0, 0, 0, 0, 0, 0, 0] [1, 2, 4, 1, 1, 4, 8] [1, 1, 1, 1, 1, 1, 1] : tensor<1x2x4x3x3x4x8xf32> to tensor<1x2x4x4x8xf32>
// PANELS: %[[COPY:.*]] = linalg.generic {indexing_maps = [#[[READ]], #[[SAME]]], {{.*}} ins(%[[ROWS]] : tensor<1x4x2x4x8xf32>) outs(%[[DEST]] : tensor<1x2x4x4x8xf32>)
// PANELS: %[[FIRST:.*]] = tensor.insert_slice %[[COPY]] into %[[EMPTY]][0, 0, 0, 0, 0, 0, 0]
// PANELS: tensor.extract_slice %[[PAD]][0, 0, 0, 1] [1, 4, 8, 8] [1, 1, 1, 1]
// PANELS: tensor.extract_slice %[[FIRST]][0, 0, 0, 0, 1, 0, 0]
// PANELS: tensor.extract_slice %[[PAD]][0, 0, 2, 2] [1, 4, 8, 8] [1, 1, 1, 1]
// PANELS: %[[LAST:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 2, 2, 0, 0]
// PANELS: %[[PATCHES:.*]] = tensor.collapse_shape %[[LAST]] {{\[}}[0, 1], [2, 3, 4], [5, 6]] : tensor<1x2x4x3x3x4x8xf32> into tensor<2x36x32xf32>
// PANELS: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<6x36xf32>, tensor<36x32xf32>)
func.func @conv_rows(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32> {
  %0 = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<1x6x8x8xf32>
  return %0 : tensor<1x6x8x8xf32>
}

// -----

// A scatter copies its data, then updates it element by element in the
// updates' row-major order: an scf.for nest carrying the tensor, each
// index wrapped and clamped into its axis.
// CHECK-LABEL: func.func @scatter_elements
// CHECK: %[[COPY:.*]] = linalg.copy ins(%arg0 : tensor<3x4xf32>)
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %[[COPY]])
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[U:.*]] = %[[T]])
// CHECK: %[[IDX:.*]] = tensor.extract %arg1[%[[I]], %[[J]]] : tensor<3x2xi64>
// CHECK: arith.cmpi slt, %[[IDX]]
// CHECK: %[[K:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[NEW:.*]] = tensor.extract %arg2[%[[I]], %[[J]]]
// CHECK: %[[OLD:.*]] = tensor.extract %[[U]][%[[I]], %[[K]]]
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]]
// CHECK: tensor.insert %[[SUM]] into %[[U]][%[[I]], %[[K]]]
func.func @scatter_elements(%d: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %0 = kiln.scatter_elements %d[%i] = %u, axis = 1, reduction = add : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// gather_nd reads each result element's index tuple, then the data.
// CHECK-LABEL: func.func @gather_nd
// CHECK: linalg.generic
// CHECK: %[[B:.*]] = linalg.index 0
// CHECK: %[[ROW:.*]] = tensor.extract %arg1[%[[B]], %{{.*}}] : tensor<5x2xi64>
// CHECK: %[[COL:.*]] = tensor.extract %arg1[%[[B]], %{{.*}}] : tensor<5x2xi64>
// CHECK: tensor.extract %arg0[%{{.*}}, %{{.*}}] : tensor<3x4xf32>
func.func @gather_nd(%d: tensor<3x4xf32>, %i: tensor<5x2xi64>) -> tensor<5xf32> {
  %0 = kiln.gather_nd %d[%i], batch_dims = 0 : tensor<3x4xf32>, tensor<5x2xi64> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// A depthwise convolution is one elementwise generic over the taps' shifted
// windows and per-channel weights. With stride 2 the padded input is first
// split into its even and odd columns, so every tap reads a unit-stride row.
// CHECK-LABEL: func.func @depthwise
// CHECK: %[[PADDED:.*]] = tensor.pad
// CHECK: %[[W:.*]] = tensor.expand_shape {{.*}} into tensor<4x9xf32>
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [1, 4, 8, 8] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %[[W]][0, 0] [4, 1] [1, 1] : tensor<4x9xf32> to tensor<4xf32>
// CHECK: tensor.extract_slice %[[PADDED]][0, 0, 2, 2] [1, 4, 8, 8] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %[[W]][0, 8] [4, 1]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: arith.mulf
// CHECK-COUNT-8: math.fma
// CHECK-NEXT: linalg.yield
// CHECK: %[[EVEN_COLUMNS:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 4, 10, 5] [1, 1, 1, 2]
// CHECK: %[[EVEN:.*]] = linalg.copy ins(%[[EVEN_COLUMNS]]
// CHECK: %[[ODD_COLUMNS:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0, 1] [1, 4, 10, 5] [1, 1, 1, 2]
// CHECK: %[[ODD:.*]] = linalg.copy ins(%[[ODD_COLUMNS]]
// CHECK: tensor.extract_slice %[[EVEN]][0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[ODD]][0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 2, 1]
// CHECK: tensor.extract_slice %[[EVEN]][0, 0, 0, 1] [1, 4, 4, 4] [1, 1, 2, 1]
// CHECK: linalg.generic
// CHECK-NOT: linalg.conv
func.func @depthwise(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>) {
  %0 = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 4 : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  %1 = kiln.conv2d %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 4 : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x4x4xf32>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x4x4xf32>
}
