// RUN: kiln-opt %s -kiln-fuse-matmul-epilogue -split-input-file | FileCheck %s

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

// Not a bias: a run-time row, a constant that varies by row (of the
// product's shape, so a residual), a product used twice, and a sum
// broadcast to more rows than the product has.
// CHECK-LABEL: func.func @keep
// CHECK: kiln.add %{{.*}}, %arg2
// CHECK: kiln.packed_matmul %arg0, %arg1 residual
// CHECK-COUNT-3: kiln.add
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

// -----

// PyTorch's nn.GELU() (erf form) on a linear layer, as imported.
// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 bias %arg2 activation gelu_erf : tensor<4x8xf32>, tensor<1x8x32xf32>, tensor<1x32xf32> -> tensor<4x32xf32>
// CHECK-NOT: kiln.erf
// CHECK: return %[[Y]]
func.func @gelu_erf(%a: tensor<4x8xf32>, %w: tensor<1x8x32xf32>, %b: tensor<1x32xf32>) -> tensor<4x32xf32> {
  %x = kiln.packed_matmul %a, %w bias %b : tensor<4x8xf32>, tensor<1x8x32xf32>, tensor<1x32xf32> -> tensor<4x32xf32>
  %c0 = kiln.constant dense<1.41421354> : tensor<f32>
  %0 = kiln.div %x, %c0 : tensor<4x32xf32>, tensor<f32>
  %1 = kiln.erf %0 : tensor<4x32xf32>
  %c1 = kiln.constant dense<1.000000e+00> : tensor<f32>
  %2 = kiln.add %1, %c1 : tensor<4x32xf32>, tensor<f32>
  %3 = kiln.mul %x, %2 : tensor<4x32xf32>, tensor<4x32xf32>
  %c2 = kiln.constant dense<5.000000e-01> : tensor<f32>
  %4 = kiln.mul %3, %c2 : tensor<4x32xf32>, tensor<f32>
  return %4 : tensor<4x32xf32>
}

// -----

// GPT-2's gelu_new (tanh form), constants on the left, as imported.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 activation gelu_tanh : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
// CHECK-NOT: kiln.tanh
// CHECK: return %[[Y]]
func.func @gelu_tanh(%a: tensor<4x8xf32>, %w: tensor<1x8x32xf32>) -> tensor<4x32xf32> {
  %x = kiln.packed_matmul %a, %w : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
  %0 = kiln.mul %x, %x : tensor<4x32xf32>, tensor<4x32xf32>
  %1 = kiln.mul %x, %0 : tensor<4x32xf32>, tensor<4x32xf32>
  %c0 = kiln.constant dense<4.471500e-02> : tensor<f32>
  %2 = kiln.mul %c0, %1 : tensor<f32>, tensor<4x32xf32>
  %3 = kiln.add %x, %2 : tensor<4x32xf32>, tensor<4x32xf32>
  %c1 = kiln.constant dense<0.797884583> : tensor<f32>
  %4 = kiln.mul %c1, %3 : tensor<f32>, tensor<4x32xf32>
  %5 = kiln.tanh %4 : tensor<4x32xf32>
  %c2 = kiln.constant dense<1.000000e+00> : tensor<f32>
  %6 = kiln.add %c2, %5 : tensor<f32>, tensor<4x32xf32>
  %7 = kiln.mul %x, %6 : tensor<4x32xf32>, tensor<4x32xf32>
  %c3 = kiln.constant dense<5.000000e-01> : tensor<f32>
  %8 = kiln.mul %c3, %7 : tensor<f32>, tensor<4x32xf32>
  return %8 : tensor<4x32xf32>
}

// -----

// nn.GELU(approximate="tanh"): 0.5 * x first, the cube as Pow.
// CHECK-LABEL: func.func @gelu_tanh_pow
// CHECK: kiln.packed_matmul %arg0, %arg1 activation gelu_tanh
// CHECK-NOT: kiln.pow
func.func @gelu_tanh_pow(%a: tensor<4x8xf32>, %w: tensor<1x8x32xf32>) -> tensor<4x32xf32> {
  %x = kiln.packed_matmul %a, %w : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
  %three = kiln.constant dense<3.000000e+00> : tensor<f32>
  %0 = kiln.pow %x, %three : tensor<4x32xf32>, tensor<f32>
  %c0 = kiln.constant dense<4.471500e-02> : tensor<f32>
  %1 = kiln.mul %0, %c0 : tensor<4x32xf32>, tensor<f32>
  %2 = kiln.add %1, %x : tensor<4x32xf32>, tensor<4x32xf32>
  %c1 = kiln.constant dense<0.797884583> : tensor<f32>
  %3 = kiln.mul %2, %c1 : tensor<4x32xf32>, tensor<f32>
  %4 = kiln.tanh %3 : tensor<4x32xf32>
  %c2 = kiln.constant dense<1.000000e+00> : tensor<f32>
  %5 = kiln.add %4, %c2 : tensor<4x32xf32>, tensor<f32>
  %c3 = kiln.constant dense<5.000000e-01> : tensor<f32>
  %6 = kiln.mul %x, %c3 : tensor<4x32xf32>, tensor<f32>
  %7 = kiln.mul %6, %5 : tensor<4x32xf32>, tensor<4x32xf32>
  return %7 : tensor<4x32xf32>
}

// -----

// Not fused: the product is also returned, and a GELU with the wrong
// constant (x / 2) is another function.
// CHECK-LABEL: func.func @keep
// CHECK-NOT: activation
// CHECK-COUNT-2: kiln.erf
func.func @keep(%a: tensor<4x8xf32>, %w: tensor<1x8x32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %x = kiln.packed_matmul %a, %w : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
  %c0 = kiln.constant dense<1.41421354> : tensor<f32>
  %c1 = kiln.constant dense<1.000000e+00> : tensor<f32>
  %c2 = kiln.constant dense<5.000000e-01> : tensor<f32>
  %0 = kiln.div %x, %c0 : tensor<4x32xf32>, tensor<f32>
  %1 = kiln.erf %0 : tensor<4x32xf32>
  %2 = kiln.add %1, %c1 : tensor<4x32xf32>, tensor<f32>
  %3 = kiln.mul %x, %2 : tensor<4x32xf32>, tensor<4x32xf32>
  %4 = kiln.mul %3, %c2 : tensor<4x32xf32>, tensor<f32>
  %y = kiln.packed_matmul %a, %w : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %5 = kiln.div %y, %two : tensor<4x32xf32>, tensor<f32>
  %6 = kiln.erf %5 : tensor<4x32xf32>
  %7 = kiln.add %6, %c1 : tensor<4x32xf32>, tensor<f32>
  %8 = kiln.mul %y, %7 : tensor<4x32xf32>, tensor<4x32xf32>
  %9 = kiln.mul %8, %c2 : tensor<4x32xf32>, tensor<f32>
  return %x, %4, %9 : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

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
// CHECK: kiln.packed_matmul %arg0, %arg1 activation gelu_erf residual %arg2
func.func @after_activation(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = kiln.packed_matmul %x, %w activation gelu_erf : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
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

// -----

// The whole epilogue in one go, in the kernel's order: a [1, N] row added
// to a [1, N] product is its bias (not a residual), GELU follows, and the
// skip connection comes last.
// CHECK-LABEL: func.func @whole_epilogue
// CHECK: %[[B:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 0.000000e+00]]> : tensor<2x2xf32>
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 bias %[[B]] activation gelu_erf residual %arg2 : tensor<1x5xf32>, tensor<2x5x2xf32>, tensor<2x2xf32> -> tensor<1x3xf32>
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.mul
// CHECK: return %[[Y]]
func.func @whole_epilogue(%x: tensor<1x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %b = kiln.constant dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %y = kiln.packed_matmul %x, %w : tensor<1x5xf32>, tensor<2x5x2xf32> -> tensor<1x3xf32>
  %z = kiln.add %y, %b : tensor<1x3xf32>, tensor<1x3xf32>
  %s = kiln.div %z, %sqrt2 : tensor<1x3xf32>, tensor<f32>
  %e = kiln.erf %s : tensor<1x3xf32>
  %p = kiln.add %e, %one : tensor<1x3xf32>, tensor<f32>
  %m = kiln.mul %z, %p : tensor<1x3xf32>, tensor<1x3xf32>
  %g = kiln.mul %m, %half : tensor<1x3xf32>, tensor<f32>
  %o = kiln.add %r, %g : tensor<1x3xf32>, tensor<1x3xf32>
  return %o : tensor<1x3xf32>
}

// -----

// A residual fused first keeps GELU out: it would have to come before it.
// CHECK-LABEL: func.func @no_activation_after_residual
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 residual %arg2
// CHECK: kiln.erf
// CHECK-NOT: activation
func.func @no_activation_after_residual(%x: tensor<4x5xf32>, %w: tensor<2x5x2xf32>, %r: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %y = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<2x5x2xf32> -> tensor<4x3xf32>
  %z = kiln.add %y, %r : tensor<4x3xf32>, tensor<4x3xf32>
  %s = kiln.div %z, %sqrt2 : tensor<4x3xf32>, tensor<f32>
  %e = kiln.erf %s : tensor<4x3xf32>
  %p = kiln.add %e, %one : tensor<4x3xf32>, tensor<f32>
  %m = kiln.mul %z, %p : tensor<4x3xf32>, tensor<4x3xf32>
  %g = kiln.mul %m, %half : tensor<4x3xf32>, tensor<f32>
  return %g : tensor<4x3xf32>
}
