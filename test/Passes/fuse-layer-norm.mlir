// RUN: kiln-opt %s -kiln-fuse-layer-norm -split-input-file | FileCheck %s

// PyTorch's opset-14 spelling of nn.LayerNorm (ReduceMean, Sub, Pow,
// ReduceMean, Add, Sqrt, Div, Mul, Add), as imported.
// CHECK-LABEL: func.func @torch_opset14
// CHECK: %[[Y:.*]] = kiln.layer_norm %arg0, %arg1, %arg2 axis = 2 epsilon = 9.99999996E-13 : tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT: kiln.reduce_mean
// CHECK-NOT: kiln.sqrt
// CHECK: return %[[Y]]
func.func @torch_opset14(%x: tensor<1x4x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %0 = kiln.reduce_mean %x axes = [2] keep_dims : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %1 = kiln.sub %x, %0 : tensor<1x4x8xf32>, tensor<1x4x1xf32>
  %2 = kiln.constant dense<2.000000e+00> : tensor<f32>
  %3 = kiln.pow %1, %2 : tensor<1x4x8xf32>, tensor<f32>
  %4 = kiln.reduce_mean %3 axes = [2] keep_dims : tensor<1x4x8xf32> -> tensor<1x4x1xf32>
  %5 = kiln.constant dense<9.99999996E-13> : tensor<f32>
  %6 = kiln.add %4, %5 : tensor<1x4x1xf32>, tensor<f32>
  %7 = kiln.sqrt %6 : tensor<1x4x1xf32>
  %8 = kiln.div %1, %7 : tensor<1x4x8xf32>, tensor<1x4x1xf32>
  %9 = kiln.mul %8, %gamma : tensor<1x4x8xf32>, tensor<8xf32>
  %10 = kiln.add %9, %beta : tensor<1x4x8xf32>, tensor<8xf32>
  return %10 : tensor<1x4x8xf32>
}

// -----

// Squares as Mul, epsilon on the left, parameters on the left, two
// normalized axes; no beta: only gamma is absorbed and beta is zero.
// CHECK-LABEL: func.func @variants
// CHECK: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<4x8xf32>
// CHECK: kiln.layer_norm %arg0, %arg1, %[[ZERO]] axis = 1 epsilon = 9.99999974E-6 : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
func.func @variants(%x: tensor<2x4x8xf32>, %gamma: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = kiln.reduce_mean %x axes = [1, 2] keep_dims : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %1 = kiln.sub %x, %0 : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  %3 = kiln.mul %1, %1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %4 = kiln.reduce_mean %3 axes = [1, 2] keep_dims : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %5 = kiln.constant dense<9.99999974E-6> : tensor<f32>
  %6 = kiln.add %5, %4 : tensor<f32>, tensor<2x1x1xf32>
  %7 = kiln.sqrt %6 : tensor<2x1x1xf32>
  %8 = kiln.div %1, %7 : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  %9 = kiln.mul %gamma, %8 : tensor<4x8xf32>, tensor<2x4x8xf32>
  return %9 : tensor<2x4x8xf32>
}

// -----

// Not layer norms: the mean over a leading axis, the variance of something
// else, and a mean of the input but a difference from another tensor.
// CHECK-LABEL: func.func @keep
// CHECK-NOT: kiln.layer_norm
func.func @keep(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = kiln.constant dense<2.000000e+00> : tensor<f32>
  %eps = kiln.constant dense<1.0e-05> : tensor<f32>
  %0 = kiln.reduce_mean %x axes = [0] keep_dims : tensor<4x8xf32> -> tensor<1x8xf32>
  %1 = kiln.sub %x, %0 : tensor<4x8xf32>, tensor<1x8xf32>
  %2 = kiln.pow %1, %two : tensor<4x8xf32>, tensor<f32>
  %3 = kiln.reduce_mean %2 axes = [0] keep_dims : tensor<4x8xf32> -> tensor<1x8xf32>
  %4 = kiln.add %3, %eps : tensor<1x8xf32>, tensor<f32>
  %5 = kiln.sqrt %4 : tensor<1x8xf32>
  %6 = kiln.div %1, %5 : tensor<4x8xf32>, tensor<1x8xf32>

  %10 = kiln.reduce_mean %x axes = [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %11 = kiln.sub %x, %10 : tensor<4x8xf32>, tensor<4x1xf32>
  %12 = kiln.pow %y, %two : tensor<4x8xf32>, tensor<f32>
  %13 = kiln.reduce_mean %12 axes = [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %14 = kiln.add %13, %eps : tensor<4x1xf32>, tensor<f32>
  %15 = kiln.sqrt %14 : tensor<4x1xf32>
  %16 = kiln.div %11, %15 : tensor<4x8xf32>, tensor<4x1xf32>

  %21 = kiln.sub %y, %10 : tensor<4x8xf32>, tensor<4x1xf32>
  %22 = kiln.pow %21, %two : tensor<4x8xf32>, tensor<f32>
  %23 = kiln.reduce_mean %22 axes = [1] keep_dims : tensor<4x8xf32> -> tensor<4x1xf32>
  %24 = kiln.add %23, %eps : tensor<4x1xf32>, tensor<f32>
  %25 = kiln.sqrt %24 : tensor<4x1xf32>
  %26 = kiln.div %21, %25 : tensor<4x8xf32>, tensor<4x1xf32>
  return %6, %16, %26 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
