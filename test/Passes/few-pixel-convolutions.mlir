// RUN: kiln-opt %s -kiln-few-pixel-convolutions -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-few-pixel-convolutions="max-pixels=2" -split-input-file | FileCheck %s --check-prefix=TWO

// A squeeze-excitation block's 1x1 map: the patches are the input's
// channels in order, the filter is transposed at compile time, and the
// [1, F] product is already NCHW.
// CHECK-LABEL: func.func @squeeze_excite
// CHECK-DAG: %[[INDICES:.*]] = kiln.constant dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>
// CHECK-DAG: %[[WT:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 5.000000e+00, 9.000000e+00], [2.000000e+00, 6.000000e+00, 1.000000e+01], [3.000000e+00, 7.000000e+00, 1.100000e+01], [4.000000e+00, 8.000000e+00, 1.200000e+01]]> : tensor<4x3xf32>
// CHECK: %[[FLAT:.*]] = kiln.reshape %arg0 : tensor<1x4x1x1xf32> -> tensor<4xf32>
// CHECK: %[[PATCHES:.*]] = kiln.gather %[[FLAT]][%[[INDICES]]], axis = 0 : tensor<4xf32>, tensor<1x4xi64> -> tensor<1x4xf32>
// CHECK: %[[PRODUCT:.*]] = kiln.matmul %[[PATCHES]], %[[WT]] : tensor<1x4xf32>, tensor<4x3xf32>
// CHECK: kiln.reshape %[[PRODUCT]] : tensor<1x3xf32> -> tensor<1x3x1x1xf32>
// CHECK-NOT: kiln.conv2d
// TWO-LABEL: func.func @squeeze_excite
// TWO: kiln.matmul
func.func @squeeze_excite(%x: tensor<1x4x1x1xf32>) -> tensor<1x3x1x1xf32> {
  %w = kiln.constant dense<[[[[1.0]], [[2.0]], [[3.0]], [[4.0]]], [[[5.0]], [[6.0]], [[7.0]], [[8.0]]], [[[9.0]], [[10.0]], [[11.0]], [[12.0]]]]> : tensor<3x4x1x1xf32>
  %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x4x1x1xf32>, tensor<3x4x1x1xf32> -> tensor<1x3x1x1xf32>
  return %y : tensor<1x3x1x1xf32>
}

// -----

// Three frames of a 1x3 filter padded by one column each side: the taps
// that read the padding index the zero appended to the input (3), and the
// [frames, F] product is transposed to [F, frames].
// CHECK-LABEL: func.func @frames
// CHECK-DAG: %[[INDICES:.*]] = kiln.constant dense<{{\[\[}}3, 0, 1], [0, 1, 2], [1, 2, 3]]> : tensor<3x3xi64>
// CHECK-DAG: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: %[[FLAT:.*]] = kiln.reshape %arg0 : tensor<1x1x1x3xf32> -> tensor<3xf32>
// CHECK: %[[DATA:.*]] = kiln.concat %[[FLAT]], %[[ZERO]] axis = 0 : tensor<3xf32>, tensor<1xf32> -> tensor<4xf32>
// CHECK: %[[PATCHES:.*]] = kiln.gather %[[DATA]][%[[INDICES]]]
// CHECK: %[[PRODUCT:.*]] = kiln.matmul %[[PATCHES]], %{{.*}} : tensor<3x3xf32>, tensor<3x2xf32>
// CHECK: %[[BY_IMAGE:.*]] = kiln.reshape %[[PRODUCT]] : tensor<3x2xf32> -> tensor<1x3x2xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[BY_IMAGE]], perm = [0, 2, 1] : tensor<1x3x2xf32> -> tensor<1x2x3xf32>
// CHECK: kiln.reshape %[[T]] : tensor<1x2x3xf32> -> tensor<1x2x1x3xf32>
// Three pixels are more than two: the convolution stays.
// TWO-LABEL: func.func @frames
// TWO: kiln.conv2d
func.func @frames(%x: tensor<1x1x1x3xf32>) -> tensor<1x2x1x3xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0, 3.0]]], [[[4.0, 5.0, 6.0]]]]> : tensor<2x1x1x3xf32>
  %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 1, 0, 1] groups = 1 : tensor<1x1x1x3xf32>, tensor<2x1x1x3xf32> -> tensor<1x2x1x3xf32>
  return %y : tensor<1x2x1x3xf32>
}

// -----

// Nine pixels fill more than half a panel; a filter that is not a constant
// can't be transposed at compile time.
// CHECK-LABEL: func.func @stays_direct
// CHECK-COUNT-2: kiln.conv2d
// CHECK-NOT: kiln.matmul
func.func @stays_direct(%x: tensor<1x2x3x3xf32>, %w: tensor<4x2x1x1xf32>, %s: tensor<1x2x1x1xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x1x1xf32>) {
  %c = kiln.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]]]> : tensor<4x2x1x1xf32>
  %y = kiln.conv2d %x, %c strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x2x3x3xf32>, tensor<4x2x1x1xf32> -> tensor<1x4x3x3xf32>
  %z = kiln.conv2d %s, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x2x1x1xf32>, tensor<4x2x1x1xf32> -> tensor<1x4x1x1xf32>
  return %y, %z : tensor<1x4x3x3xf32>, tensor<1x4x1x1xf32>
}
