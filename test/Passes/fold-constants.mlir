// RUN: kiln-opt %s -kiln-fold-constants -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-fold-constants=max-elements=3 -split-input-file | FileCheck %s --check-prefix=CAPPED
// RUN: kiln-opt %s -kiln-fold-constants=max-created-bytes=0 -split-input-file | FileCheck %s --check-prefix=BUDGET

// Gemm's transB on a weight: the transpose happens at compile time.
// CHECK-LABEL: func.func @transpose_weight
// CHECK-NOT: kiln.transpose
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK: kiln.matmul %arg0, %[[W]]
// A transpose is no larger than its input, so it folds under any cap.
// CAPPED-LABEL: func.func @transpose_weight
// CAPPED-NOT: kiln.transpose
func.func @transpose_weight(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = kiln.transpose %w, perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %y = kiln.matmul %x, %t : tensor<4x3xf32>, tensor<3x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Broadcasting arithmetic between constants, then a reshape.
// CHECK-LABEL: func.func @broadcast_arith
// CHECK: %[[C:.*]] = kiln.constant dense<{{\[}}[1.500000e+00, 3.000000e+00], [4.500000e+00, 6.000000e+00]]> : tensor<2x2xf32>
// CHECK-NOT: kiln.mul
// CHECK: kiln.add %arg0, %[[C]]
func.func @broadcast_arith(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %a = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = kiln.constant dense<1.5> : tensor<f32>
  %m = kiln.mul %a, %s : tensor<2x2xf32>, tensor<f32>
  %y = kiln.add %x, %m : tensor<2x2xf32>, tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Integer division folds with the run-time semantics: x / 0 is 0.
// CHECK-LABEL: func.func @int_div
// CHECK: kiln.constant dense<[3, 0, -7, -2]> : tensor<4xi64>
func.func @int_div() -> tensor<4xi64> {
  %a = kiln.constant dense<[7, 5, 7, -5]> : tensor<4xi64>
  %b = kiln.constant dense<[2, 0, -1, 2]> : tensor<4xi64>
  %q = kiln.div %a, %b : tensor<4xi64>, tensor<4xi64>
  return %q : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @cast_neg_reshape
// CHECK: kiln.constant dense<{{\[}}[-1.000000e+00, 2.000000e+00]]> : tensor<1x2xf32>
func.func @cast_neg_reshape() -> tensor<1x2xf32> {
  %a = kiln.constant dense<[1, -2]> : tensor<2xi64>
  %n = kiln.neg %a : tensor<2xi64>
  %c = kiln.cast %n : tensor<2xi64> -> tensor<2xf32>
  %r = kiln.reshape %c : tensor<2xf32> -> tensor<1x2xf32>
  return %r : tensor<1x2xf32>
}

// -----

// Ops reading run-time values stay.
// CHECK-LABEL: func.func @not_constant
// CHECK: kiln.add %arg0
func.func @not_constant(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = kiln.constant dense<1.0> : tensor<2xf32>
  %y = kiln.add %x, %a : tensor<2xf32>, tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// The ViT exporter's expand pattern: Equal/Where on shape constants, then
// a slice and a concat of constants.
// CHECK-LABEL: func.func @shape_arithmetic
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<[4, 1, 8, 3]> : tensor<4xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_arithmetic() -> tensor<4xi64> {
  %shape = kiln.constant dense<[4, -1, 8]> : tensor<3xi64>
  %minus = kiln.constant dense<-1> : tensor<3xi64>
  %ones = kiln.constant dense<1> : tensor<3xi64>
  %eq = kiln.equal %shape, %minus : tensor<3xi64>, tensor<3xi64>
  %fixed = kiln.select %eq, %ones, %shape : tensor<3xi1>, tensor<3xi64>, tensor<3xi64>
  %more = kiln.constant dense<[9, 3]> : tensor<2xi64>
  %last = kiln.slice %more offsets = [1] sizes = [1] strides = [1] : tensor<2xi64> -> tensor<1xi64>
  %all = kiln.concat %fixed, %last axis = 0 : tensor<3xi64>, tensor<1xi64> -> tensor<4xi64>
  return %all : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @broadcast_cast_bool
// CHECK: kiln.constant dense<{{\[}}[true, false], [true, false]]> : tensor<2x2xi1>
func.func @broadcast_cast_bool() -> tensor<2x2xi1> {
  %a = kiln.constant dense<[[2.5, 0.0]]> : tensor<1x2xf32>
  %b = kiln.broadcast %a : tensor<1x2xf32> -> tensor<2x2xf32>
  %c = kiln.cast %b : tensor<2x2xf32> -> tensor<2x2xi1>
  return %c : tensor<2x2xi1>
}

// -----

// A broadcast grows its operand: beyond the cap it stays for run time.
// CHECK-LABEL: func.func @growing_broadcast
// CHECK-NOT: kiln.broadcast
// CAPPED-LABEL: func.func @growing_broadcast
// CAPPED: kiln.broadcast
func.func @growing_broadcast() -> tensor<2x3xf32> {
  %a = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = kiln.broadcast %a : tensor<3xf32> -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// A QDQ model's weights: dequantize of constants is the float constant,
// (q - zero_point) * scale per column (uint8 here: -1 is 255, (255 - 5) * 0.5
// = 125).
// CHECK-LABEL: func.func @dequantize_weights
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[}}2.500000e+00, -2.000000e+00], [1.250000e+02, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK: return %[[W]]
// CHECK-NOT: kiln.dequantize
func.func @dequantize_weights() -> tensor<2x2xf32> {
  %q = kiln.constant dense<[[10, 0], [-1, 2]]> : tensor<2x2xi8>
  %s = kiln.constant dense<[0.5, 1.0]> : tensor<2xf32>
  %z = kiln.constant dense<[5, 2]> : tensor<2xi8>
  %w = kiln.dequantize %q, %s, %z axis = 1 {input_unsigned} : tensor<2x2xi8>, tensor<2xf32>, tensor<2xi8> -> tensor<2x2xf32>
  return %w : tensor<2x2xf32>
}

// -----

// Blocked (opset 21): along axis 1 in blocks of 2, rows 0-1 read block 0
// and the ragged row 2 block 1, in each index of the outer and inner
// dimensions: (1 - zero_point) * scale, the one zero point 1 making 0.
// CHECK-LABEL: func.func @dequantize_blocked
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}1.000000e+00, 2.000000e+00], [1.000000e+00, 2.000000e+00], [3.000000e+00, 0.000000e+00]], {{\[\[}}5.000000e+00, 6.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]]> : tensor<2x3x2xf32>
// CHECK: return %[[W]]
func.func @dequantize_blocked() -> tensor<2x3x2xf32> {
  %q = kiln.constant dense<1> : tensor<2x3x2xi8>
  %s = kiln.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]> : tensor<2x2x2xf32>
  %z = kiln.constant dense<[[[0, 0], [0, 1]], [[0, 0], [0, 0]]]> : tensor<2x2x2xi8>
  %w = kiln.dequantize %q, %s, %z axis = 1 block_size = 2 : tensor<2x3x2xi8>, tensor<2x2x2xf32>, tensor<2x2x2xi8> -> tensor<2x3x2xf32>
  return %w : tensor<2x3x2xf32>
}

// -----

// A batch norm's scale gamma / sqrt(var + eps) is computed at compile time.
// CHECK-LABEL: func.func @batch_norm_scale
// CHECK: %[[A:.*]] = kiln.constant dense<[1.000000e+00, 5.000000e-01]> : tensor<2xf32>
// CHECK: return %[[A]]
func.func @batch_norm_scale() -> tensor<2xf32> {
  %gamma = kiln.constant dense<[2.0, 3.0]> : tensor<2xf32>
  %var = kiln.constant dense<[3.5, 35.5]> : tensor<2xf32>
  %eps = kiln.constant dense<0.5> : tensor<f32>
  %v = kiln.add %var, %eps : tensor<2xf32>, tensor<f32>
  %s = kiln.sqrt %v : tensor<2xf32>
  %a = kiln.div %gamma, %s : tensor<2xf32>, tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

// Concatenated weights that are resource blobs (an LSTM's gates reordered
// on import) are joined on their bytes, along either axis.
// CHECK-LABEL: func.func @concat_resources
// CHECK-DAG: kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]> : tensor<1x4xf32>
// CHECK-NOT: kiln.concat
func.func @concat_resources() -> (tensor<2x2xf32>, tensor<1x4xf32>) {
  %a = kiln.constant dense_resource<first> : tensor<1x2xf32>
  %b = kiln.constant dense_resource<second> : tensor<1x2xf32>
  %rows = kiln.concat %a, %b axis = 0 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<2x2xf32>
  %columns = kiln.concat %a, %b axis = 1 : tensor<1x2xf32>, tensor<1x2xf32> -> tensor<1x4xf32>
  return %rows, %columns : tensor<2x2xf32>, tensor<1x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      first: "0x040000000000803F00000040",
      second: "0x040000000000404000008040"
    }
  }
#-}

// -----

// A weight of 16 bytes leaves a budget of four times that: four folded
// sums of 16 bytes, then the fifth is left to run time.
// CHECK-LABEL: func.func @folding_budget
// CHECK: %[[S:.*]] = kiln.constant dense<[6.000000e+00, 1.200000e+01, 1.800000e+01, 2.400000e+01]>
// CHECK-NEXT: kiln.add %arg0, %[[S]]
// BUDGET-LABEL: func.func @folding_budget
// BUDGET-DAG: %[[W:.*]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// BUDGET-DAG: %[[D:.*]] = kiln.constant dense<[5.000000e+00, 1.000000e+01, 1.500000e+01, 2.000000e+01]>
// BUDGET: %[[E:.*]] = kiln.add %[[D]], %[[W]]
// BUDGET: kiln.add %arg0, %[[E]]
func.func @folding_budget(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %a = kiln.add %w, %w : tensor<4xf32>, tensor<4xf32>
  %b = kiln.add %a, %w : tensor<4xf32>, tensor<4xf32>
  %c = kiln.add %b, %w : tensor<4xf32>, tensor<4xf32>
  %d = kiln.add %c, %w : tensor<4xf32>, tensor<4xf32>
  %e = kiln.add %d, %w : tensor<4xf32>, tensor<4xf32>
  %y = kiln.add %x, %e : tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}
