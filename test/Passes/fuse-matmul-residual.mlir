// RUN: kiln-opt %s -kiln-fuse-matmul-residual -split-input-file | FileCheck %s

// The skip connection of a transformer block, on either side of the add,
// after a product with a bias.
// CHECK-LABEL: func.func @residual
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 bias %arg2 residual %arg3 : tensor<4x5xf32>, tensor<2x5x2xf32>, tensor<2x2xf32> -> tensor<4x3xf32>
// CHECK-NOT: kiln.add
// CHECK: return %[[Y]]
func.func @residual(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %b: tensor<2x2xf32>, %r: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = kiln.packed_matmul %x, %w bias %b : tensor<4x5xf32>, tensor<2x5x2xf32>, tensor<2x2xf32> -> tensor<4x3xf32>
  %z = kiln.add %r, %y : tensor<4x3xf32>, tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// After a GELU epilogue the residual still comes last.
// CHECK-LABEL: func.func @after_activation
// CHECK: kiln.packed_matmul %arg0, %arg1 activation "gelu_erf" residual %arg2
func.func @after_activation(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = kiln.packed_matmul %x, %w activation "gelu_erf" : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %z = kiln.add %y, %r : tensor<4x3xf32>, tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

// -----

// Not fused: a product used twice, an add that broadcasts a row, one that
// broadcasts the product to more rows, and a second add after a residual.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-3: kiln.add
// CHECK: kiln.packed_matmul %arg0, %arg1 residual %arg2
// CHECK-NEXT: kiln.add
func.func @keep(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<4x3xf32>, %row: tensor<3xf32>, %big: tensor<2x4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<4x3xf32>) {
  %y = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %a = kiln.add %y, %y : tensor<4x3xf32>, tensor<4x3xf32>
  %y2 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %b = kiln.add %y2, %row : tensor<4x3xf32>, tensor<3xf32>
  %y3 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %c = kiln.add %y3, %big : tensor<4x3xf32>, tensor<2x4x3xf32>
  %y4 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %d = kiln.add %y4, %r : tensor<4x3xf32>, tensor<4x3xf32>
  %e = kiln.add %d, %r : tensor<4x3xf32>, tensor<4x3xf32>
  return %a, %b, %c, %e : tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<4x3xf32>
}
