// RUN: kiln-opt %s -kiln-fuse-group-norm -split-input-file | FileCheck %s

// PyTorch's export of nn.GroupNorm(4, 8), as imported: the instance norm
// of the maps reshaped to [N, 4, -1] is a group norm of the maps, and the
// weight and bias per channel become its scale and bias (the zero bias
// times the weight stays zero, zero plus the bias folds).
// CHECK-LABEL: func.func @torch_group_norm
// CHECK-NOT: kiln.reshape %arg0
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00]> : tensor<8xf32>
// CHECK-DAG: %[[BIAS:.*]] = kiln.reshape %arg1 : tensor<8x1x1xf32> -> tensor<8xf32>
// CHECK: %[[Y:.*]] = kiln.group_norm %arg0, %[[W]], %[[BIAS]] groups = 4 epsilon = 9.99999974E-6 : tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @torch_group_norm(%x: tensor<2x8x4x4xf32>, %b: tensor<8x1x1xf32>) -> tensor<2x8x4x4xf32> {
  %ones = kiln.constant dense<1.0> : tensor<4xf32>
  %zeros = kiln.constant dense<0.0> : tensor<4xf32>
  %w = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]]]> : tensor<8x1x1xf32>
  %0 = kiln.reshape %x : tensor<2x8x4x4xf32> -> tensor<2x4x32xf32>
  %1 = kiln.group_norm %0, %ones, %zeros groups = 4 epsilon = 1.0e-05 : tensor<2x4x32xf32>, tensor<4xf32>, tensor<4xf32>
  %2 = kiln.reshape %1 : tensor<2x4x32xf32> -> tensor<2x8x4x4xf32>
  %3 = kiln.mul %2, %w : tensor<2x8x4x4xf32>, tensor<8x1x1xf32>
  %4 = kiln.add %3, %b : tensor<2x8x4x4xf32>, tensor<8x1x1xf32>
  return %4 : tensor<2x8x4x4xf32>
}

// -----

// A weight on the left, [1, C, 1, 1] and a scalar bias: the scale becomes
// the norm's scale times the weight, the bias its bias times the weight plus
// the scalar broadcast per channel.
// CHECK-LABEL: func.func @affine_operands
// CHECK-DAG: %[[W:.*]] = kiln.reshape %arg1 : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK-DAG: %[[SCALE:.*]] = kiln.mul %arg2, %[[W]] : tensor<4xf32>, tensor<4xf32>
// CHECK-DAG: %[[SHIFT:.*]] = kiln.mul %arg3, %[[W]] : tensor<4xf32>, tensor<4xf32>
// CHECK-DAG: %[[C:.*]] = kiln.reshape %arg4 : tensor<f32> -> tensor<1xf32>
// CHECK-DAG: %[[CS:.*]] = kiln.broadcast %[[C]] : tensor<1xf32> -> tensor<4xf32>
// CHECK-DAG: %[[BIAS:.*]] = kiln.add %[[SHIFT]], %[[CS]] : tensor<4xf32>, tensor<4xf32>
// CHECK: %[[Y:.*]] = kiln.group_norm %arg0, %[[SCALE]], %[[BIAS]] groups = 2
// CHECK-NEXT: return %[[Y]]
func.func @affine_operands(%x: tensor<1x4x3x3xf32>, %w: tensor<1x4x1x1xf32>, %s: tensor<4xf32>, %t: tensor<4xf32>, %c: tensor<f32>) -> tensor<1x4x3x3xf32> {
  %0 = kiln.group_norm %x, %s, %t groups = 2 epsilon = 1.0e-05 : tensor<1x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
  %1 = kiln.mul %w, %0 : tensor<1x4x1x1xf32>, tensor<1x4x3x3xf32>
  %2 = kiln.add %1, %c : tensor<1x4x3x3xf32>, tensor<f32>
  return %2 : tensor<1x4x3x3xf32>
}

// -----

// Not absorbed: a product that varies along the spatial dims, a sum with a
// per-item tensor, and a norm with a second use.
// CHECK-LABEL: func.func @not_per_channel
// CHECK: %[[N:.*]] = kiln.group_norm %arg0, %arg3, %arg3 groups = 2
// CHECK: kiln.mul %[[N]], %arg1
// CHECK: kiln.add %{{.*}}, %arg2
// CHECK: %[[M:.*]] = kiln.group_norm %arg0, %arg3, %arg3 groups = 4
// CHECK: kiln.mul %[[M]], %arg1
// CHECK: kiln.add %[[M]], %arg1
func.func @not_per_channel(%x: tensor<2x4x3x3xf32>, %w: tensor<3x3xf32>, %b: tensor<2x1x1x1xf32>, %s: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
  %0 = kiln.group_norm %x, %s, %s groups = 2 epsilon = 1.0e-05 : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
  %1 = kiln.mul %0, %w : tensor<2x4x3x3xf32>, tensor<3x3xf32>
  %2 = kiln.add %1, %b : tensor<2x4x3x3xf32>, tensor<2x1x1x1xf32>
  %3 = kiln.group_norm %x, %s, %s groups = 4 epsilon = 1.0e-05 : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
  %4 = kiln.mul %3, %w : tensor<2x4x3x3xf32>, tensor<3x3xf32>
  %5 = kiln.add %3, %w : tensor<2x4x3x3xf32>, tensor<3x3xf32>
  return %2, %4, %5 : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
}

// -----

// Not regrouped: groups of the reshaped maps that straddle channels (3
// groups of 4 channels), a scale that is not a splat, and an item extent
// the reshape changes.
// CHECK-LABEL: func.func @not_groups
// CHECK-COUNT-3: kiln.reshape %arg0
// CHECK-NOT: kiln.group_norm %arg0
func.func @not_groups(%x: tensor<2x4x3x3xf32>, %s: tensor<3xf32>, %t: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) {
  %zeros3 = kiln.constant dense<0.0> : tensor<3xf32>
  %zeros4 = kiln.constant dense<0.0> : tensor<4xf32>
  %zeros6 = kiln.constant dense<0.0> : tensor<6xf32>
  %0 = kiln.reshape %x : tensor<2x4x3x3xf32> -> tensor<2x3x12xf32>
  %1 = kiln.group_norm %0, %zeros3, %zeros3 groups = 3 epsilon = 1.0e-05 : tensor<2x3x12xf32>, tensor<3xf32>, tensor<3xf32>
  %2 = kiln.reshape %1 : tensor<2x3x12xf32> -> tensor<2x4x3x3xf32>
  %3 = kiln.reshape %x : tensor<2x4x3x3xf32> -> tensor<2x4x9xf32>
  %4 = kiln.group_norm %3, %t, %zeros4 groups = 2 epsilon = 1.0e-05 : tensor<2x4x9xf32>, tensor<4xf32>, tensor<4xf32>
  %5 = kiln.reshape %4 : tensor<2x4x9xf32> -> tensor<2x4x3x3xf32>
  %6 = kiln.reshape %x : tensor<2x4x3x3xf32> -> tensor<1x6x12xf32>
  %7 = kiln.group_norm %6, %zeros6, %zeros6 groups = 2 epsilon = 1.0e-05 : tensor<1x6x12xf32>, tensor<6xf32>, tensor<6xf32>
  %8 = kiln.reshape %7 : tensor<1x6x12xf32> -> tensor<2x4x3x3xf32>
  return %2, %5, %8 : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>
}
