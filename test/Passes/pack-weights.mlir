// RUN: kiln-opt %s -kiln-pack-weights=panel-width=2 -split-input-file | FileCheck %s

// A [3, 5] weight becomes three panels of two columns; the last one holds
// column 4 and a zero column of padding. Panel p, row k is
// [w[k][2p], w[k][2p+1]].
// CHECK-LABEL: func.func @pack
// CHECK: %[[P:.*]] = kiln.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+00], [5.000000e+00, 6.000000e+00], [1.000000e+01, 1.100000e+01]], {{\[\[}}2.000000e+00, 3.000000e+00], [7.000000e+00, 8.000000e+00], [1.200000e+01, 1.300000e+01]], {{\[\[}}4.000000e+00, 0.000000e+00], [9.000000e+00, 0.000000e+00], [1.400000e+01, 0.000000e+00]]]> : tensor<3x3x2xf32>
// CHECK: kiln.packed_matmul %arg0, %[[P]] : tensor<1x4x3xf32>, tensor<3x3x2xf32> -> tensor<1x4x5xf32>
// CHECK-NOT: kiln.matmul
func.func @pack(%x: tensor<1x4x3xf32>) -> tensor<1x4x5xf32> {
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0], [10.0, 11.0, 12.0, 13.0, 14.0]]> : tensor<3x5xf32>
  %y = kiln.matmul %x, %w : tensor<1x4x3xf32>, tensor<3x5xf32>
  return %y : tensor<1x4x5xf32>
}

// -----

// Products of two activations, splat weights and vector-times-matrix
// products keep their kiln.matmul.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-3: kiln.matmul
// CHECK-NOT: kiln.packed_matmul
func.func @keep(%x: tensor<4x3xf32>, %y: tensor<3x2xf32>, %v: tensor<3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>) {
  %ones = kiln.constant dense<1.0> : tensor<3x2xf32>
  %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %a = kiln.matmul %x, %y : tensor<4x3xf32>, tensor<3x2xf32>
  %b = kiln.matmul %x, %ones : tensor<4x3xf32>, tensor<3x2xf32>
  %c = kiln.matmul %v, %w : tensor<3xf32>, tensor<3x2xf32>
  return %a, %b, %c : tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>
}
