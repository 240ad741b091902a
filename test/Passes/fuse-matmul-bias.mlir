// RUN: kiln-opt %s -kiln-fuse-matmul-bias -split-input-file | FileCheck %s

// A bias of 3 columns in panels of 2: [[b0, b1], [b2, 0]], whichever side of
// the add the product is on.
// CHECK-LABEL: func.func @bias
// CHECK: %[[B:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 bias %[[B]] : tensor<4x5xf32>, tensor<2x5x2xf32>, tensor<2x2xf32> -> tensor<4x3xf32>
// CHECK-NOT: kiln.add
// CHECK: return %[[Y]]
func.func @bias(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>) -> tensor<4x3xf32> {
  %b = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %z = kiln.add %b, %y : tensor<3xf32>, tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// Not a bias: a run-time row, a constant that varies by row, a product used
// twice, and a sum broadcast to more rows than the product has.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-5: kiln.add
// CHECK-NOT: bias
func.func @keep(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x4x3xf32>) {
  %y = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %a = kiln.add %y, %r : tensor<4x3xf32>, tensor<3xf32>
  %y2 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %m = kiln.constant dense<1.0> : tensor<4x3xf32>
  %b = kiln.add %y2, %m : tensor<4x3xf32>, tensor<4x3xf32>
  %y3 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %c = kiln.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %d = kiln.add %y3, %c : tensor<4x3xf32>, tensor<3xf32>
  %e = kiln.add %y3, %d : tensor<4x3xf32>, tensor<4x3xf32>
  %y4 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %c2 = kiln.constant dense<[[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]]> : tensor<2x1x3xf32>
  %f = kiln.add %y4, %c2 : tensor<4x3xf32>, tensor<2x1x3xf32>
  return %a, %b, %e, %f : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x4x3xf32>
}
