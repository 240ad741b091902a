// RUN: kiln-opt %s -kiln-fuse-int4-weight-products="panel-width=8" -split-input-file | FileCheck %s
// RUN: not kiln-opt %s -kiln-fuse-int4-weight-products="panel-width=4" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-PANEL
// BAD-PANEL: error: kiln-fuse-int4-weight-products: panel-width must be a positive multiple of 8, not 4

// INT4 weights with zero point 0 in one block of 8 rows, the integers and
// scales of quantize-int4-weight.mlir's symmetric @product (column 0: scale
// 0.1, [7, -7, 4, 0, 1, 0, 0, 0]; column 1: scale 0.2, [-7, 0, 0, 0, 0, 0,
// 0, 3]), so the same panels: each byte holds a row of the first group of 4
// (low 4 bits) and of the second (high 4 bits), both + 8. Symmetric: no
// zero points stored. The model's integers are kept: weight error 0.
// CHECK-LABEL: func.func @int4
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[-97, -127, -116, -120], [-127, -120, -120, -72], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[\[}}[1.000000e-01, 2.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]> : tensor<1x1x8xf32>
// CHECK: %[[C:.*]] = kiln.constant dense<[5.000000e-01, -8.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<8xf32>
// CHECK: kiln.int4_matmul %arg0, %[[W]], %[[S]], %[[C]] {kiln.weight_error = 0.000000e+00 : f32} : tensor<2x8xf32>, tensor<1x1x8x4xi8>, tensor<1x1x8xf32>, tensor<8xf32> -> tensor<2x2xf32>
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.matmul
func.func @int4(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %q = kiln.constant dense<[[7, -7], [-7, 0], [4, 0], [0, 0], [1, 0], [0, 0], [0, 0], [0, 3]]> : tensor<8x2xi8>
  %s = kiln.constant dense<[[0.1, 0.2]]> : tensor<1x2xf32>
  %zp = kiln.constant dense<0> : tensor<1x2xi8>
  %w = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 : tensor<8x2xi8>, tensor<1x2xf32>, tensor<1x2xi8> -> tensor<8x2xf32>
  %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// UINT4 weights with zero points 6 and 11: quantize-int4-weight.mlir's
// @zero_points (column 0: scale 0.1, [15, 0, 9, 6, 7, 6, 6, 6] - 6;
// column 1: scale 2 / 15, [0, 11, ..., 11, 15] - 11), whose panels store
// the unsigned integers as they are, with their zero points.
// CHECK-LABEL: func.func @uint4_zero_points
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[127, 96, 105, 102], [-80, -69, -69, -5], [-120, -120, -120, -120], {{.*}}]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[\[}}[1.000000e-01, 0.13333334, 0.000000e+00, {{.*}}]]]> : tensor<1x1x8xf32>
// CHECK: %[[C:.*]] = kiln.constant dense<[0.699999988, -0.933333396, 0.000000e+00, {{.*}}]> : tensor<8xf32>
// CHECK: %[[Z:.*]] = kiln.constant dense<{{\[\[\[}}6, 11, 8, 8, 8, 8, 8, 8]]]> : tensor<1x1x8xi8>
// CHECK: kiln.int4_matmul %arg0, %[[W]], %[[S]], %[[C]] zero_points(%[[Z]] : tensor<1x1x8xi8>)
func.func @uint4_zero_points(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %q = kiln.constant dense<[[15, 0], [0, 11], [9, 11], [6, 11], [7, 11], [6, 11], [6, 11], [6, 15]]> : tensor<8x2xi8>
  %s = kiln.constant dense<[[0.1, 0.13333334]]> : tensor<1x2xf32>
  %zp = kiln.constant dense<[[6, 11]]> : tensor<1x2xi8>
  %w = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 {input_unsigned} : tensor<8x2xi8>, tensor<1x2xf32>, tensor<1x2xi8> -> tensor<8x2xf32>
  %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// The same integers as INT4, each 8 lower, zero points -2 and 3: the same
// panels and zero points (the kernel's nibbles are the signed ones + 8).
// CHECK-LABEL: func.func @int4_zero_points
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[127, 96, 105, 102], [-80, -69, -69, -5], [-120, -120, -120, -120], {{.*}}]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK: %[[Z:.*]] = kiln.constant dense<{{\[\[\[}}6, 11, 8, 8, 8, 8, 8, 8]]]> : tensor<1x1x8xi8>
// CHECK: kiln.int4_matmul %arg0, %[[W]], %{{.*}}, %{{.*}} zero_points(%[[Z]] : tensor<1x1x8xi8>)
func.func @int4_zero_points(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %q = kiln.constant dense<[[7, -8], [-8, 3], [1, 3], [-2, 3], [-1, 3], [-2, 3], [-2, 3], [-2, 7]]> : tensor<8x2xi8>
  %s = kiln.constant dense<[[0.1, 0.13333334]]> : tensor<1x2xf32>
  %zp = kiln.constant dense<[[-2, 3]]> : tensor<1x2xi8>
  %w = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 : tensor<8x2xi8>, tensor<1x2xf32>, tensor<1x2xi8> -> tensor<8x2xf32>
  %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Left as they are: 8-bit integers (20 is no 4-bit value), blocks the
// kernel can't take (12 rows), blocks along N, and weights given at run
// time.
// CHECK-LABEL: func.func @not_fused
// CHECK-COUNT-4: kiln.matmul
// CHECK-NOT: kiln.int4_matmul
func.func @not_fused(%x: tensor<2x24xf32>, %qa: tensor<24x2xi8>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %s = kiln.constant dense<0.5> : tensor<3x2xf32>
  %zp = kiln.constant dense<0> : tensor<3x2xi8>
  %q8 = kiln.constant dense<20> : tensor<24x2xi8>
  %w8 = kiln.dequantize %q8, %s, %zp axis = 0 block_size = 8 : tensor<24x2xi8>, tensor<3x2xf32>, tensor<3x2xi8> -> tensor<24x2xf32>
  %y8 = kiln.matmul %x, %w8 : tensor<2x24xf32>, tensor<24x2xf32>
  %q = kiln.constant dense<1> : tensor<24x2xi8>
  %s12 = kiln.constant dense<0.5> : tensor<2x2xf32>
  %zp12 = kiln.constant dense<0> : tensor<2x2xi8>
  %w12 = kiln.dequantize %q, %s12, %zp12 axis = 0 block_size = 12 : tensor<24x2xi8>, tensor<2x2xf32>, tensor<2x2xi8> -> tensor<24x2xf32>
  %y12 = kiln.matmul %x, %w12 : tensor<2x24xf32>, tensor<24x2xf32>
  %sn = kiln.constant dense<0.5> : tensor<24x1xf32>
  %zpn = kiln.constant dense<0> : tensor<24x1xi8>
  %wn = kiln.dequantize %q, %sn, %zpn axis = 1 block_size = 8 : tensor<24x2xi8>, tensor<24x1xf32>, tensor<24x1xi8> -> tensor<24x2xf32>
  %yn = kiln.matmul %x, %wn : tensor<2x24xf32>, tensor<24x2xf32>
  %wa = kiln.dequantize %qa, %s, %zp axis = 0 block_size = 8 : tensor<24x2xi8>, tensor<3x2xf32>, tensor<3x2xi8> -> tensor<24x2xf32>
  %ya = kiln.matmul %x, %wa : tensor<2x24xf32>, tensor<24x2xf32>
  return %y8, %y12, %yn, %ya : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
