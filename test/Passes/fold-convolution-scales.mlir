// RUN: kiln-opt %s -kiln-fold-convolution-scales -split-input-file | FileCheck %s

// A batch norm's scale after a convolution: each filter times its
// channel's factor, computed here; the shift stays.
// CHECK-LABEL: func.func @batch_norm_scale
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}3.000000e+00, 6.000000e+00]]], {{\[\[\[}}-4.000000e+00, 2.000000e+00]]]]> : tensor<2x1x1x2xf32>
// CHECK: %[[C:.*]] = kiln.conv2d %arg0, %[[W]]
// CHECK-NOT: kiln.mul
// CHECK: kiln.add %[[C]]
func.func @batch_norm_scale(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x3xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0]]], [[[-1.0, 0.5]]]]> : tensor<2x1x1x2xf32>
  %a = kiln.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf32>
  %b = kiln.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %c = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x4x4xf32>, tensor<2x1x1x2xf32> -> tensor<1x2x4x3xf32>
  %s = kiln.mul %c, %a : tensor<1x2x4x3xf32>, tensor<2x1x1xf32>
  %y = kiln.add %s, %b : tensor<1x2x4x3xf32>, tensor<2x1x1xf32>
  return %y : tensor<1x2x4x3xf32>
}

// -----

// One factor for all filters, on the left.
// CHECK-LABEL: func.func @scalar_scale
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[\[}}5.000000e-01]]], {{\[\[\[}}1.000000e+00]]]]> : tensor<2x1x1x1xf32>
// CHECK: %[[C:.*]] = kiln.conv2d %arg0, %[[W]]
// CHECK: return %[[C]]
func.func @scalar_scale(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %a = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %y = kiln.mul %a, %c : tensor<f32>, tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// Factors per row (not per channel), a filter that is not a constant and
// a convolution used twice all stay.
// CHECK-LABEL: func.func @stays
// CHECK-COUNT-3: kiln.mul
func.func @stays(%x: tensor<1x1x2x2xf32>, %v: tensor<2x1x1x1xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = kiln.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %rows = kiln.constant dense<[[3.0], [4.0]]> : tensor<2x1xf32>
  %a = kiln.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf32>
  %c = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %y = kiln.mul %c, %rows : tensor<1x2x2x2xf32>, tensor<2x1xf32>
  %d = kiln.conv2d %x, %v strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %z = kiln.mul %d, %a : tensor<1x2x2x2xf32>, tensor<2x1x1xf32>
  %e = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32> -> tensor<1x2x2x2xf32>
  %u = kiln.mul %e, %a : tensor<1x2x2x2xf32>, tensor<2x1x1xf32>
  return %y, %z, %u, %e : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
