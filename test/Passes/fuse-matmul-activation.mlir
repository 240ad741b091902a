// RUN: kiln-opt %s -kiln-fuse-matmul-activation -split-input-file | FileCheck %s

// PyTorch's nn.GELU() (erf form) on a linear layer, as imported.
// CHECK-LABEL: func.func @gelu_erf
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 bias %arg2 activation "gelu_erf" : tensor<4x8xf32>, tensor<1x8x32xf32>, tensor<1x32xf32> -> tensor<4x32xf32>
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
// CHECK: %[[Y:.*]] = kiln.packed_matmul %arg0, %arg1 activation "gelu_tanh" : tensor<4x8xf32>, tensor<1x8x32xf32> -> tensor<4x32xf32>
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
// CHECK: kiln.packed_matmul %arg0, %arg1 activation "gelu_tanh"
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
