// RUN: kiln-opt %s -kiln-winograd-convolutions="panel-width=4 min-channels=1" -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-winograd-convolutions="panel-width=4" -split-input-file | FileCheck %s --check-prefix=FEW
// RUN: kiln-opt %s -kiln-winograd-convolutions="panel-width=4 min-channels=1 largest-tile=2" -split-input-file | FileCheck %s --check-prefix=SMALL

// The filter's transform G g G^T, G = [[1, 0, 0], [1/2, 1/2, 1/2],
// [1/2, -1/2, 1/2], [0, 0, 1]], as [16, F, C]. For g = [[1, 2, 3],
// [4, 5, 6], [7, 8, 9]], G g has rows [1, 2, 3], [6, 7.5, 9], [2, 2.5, 3],
// [7, 8, 9], and each row [a, b, c] times G^T is [a, (a + b + c) / 2,
// (a - b + c) / 2, c]. For g all ones the transform is the outer product
// of [1, 1.5, 0.5, 1] with itself.
// CHECK-LABEL: func.func @transform
// CHECK: %[[U:.*]] = kiln.constant dense<{{\[\[}}[1.000000e+00], [1.000000e+00]], {{\[\[}}3.000000e+00], [1.500000e+00]], {{\[\[}}1.000000e+00], [5.000000e-01]], {{\[\[}}3.000000e+00], [1.000000e+00]], {{\[\[}}6.000000e+00], [1.500000e+00]], {{\[\[}}1.125000e+01], [2.250000e+00]], {{\[\[}}3.750000e+00], [7.500000e-01]], {{\[\[}}9.000000e+00], [1.500000e+00]], {{\[\[}}2.000000e+00], [5.000000e-01]], {{\[\[}}3.750000e+00], [7.500000e-01]], {{\[\[}}1.250000e+00], [2.500000e-01]], {{\[\[}}3.000000e+00], [5.000000e-01]], {{\[\[}}7.000000e+00], [1.000000e+00]], {{\[\[}}1.200000e+01], [1.500000e+00]], {{\[\[}}4.000000e+00], [5.000000e-01]], {{\[\[}}9.000000e+00], [1.000000e+00]]]> : tensor<16x2x1xf32>
// CHECK: kiln.winograd_conv2d %arg0, %[[U]] pads = [1, 1, 1, 1] : tensor<1x1x4x4xf32>, tensor<16x2x1xf32> -> tensor<1x2x4x4xf32>
// CHECK-NOT: kiln.conv2d
// FEW-LABEL: func.func @transform
// FEW: kiln.conv2d
// FEW-NOT: kiln.winograd_conv2d
func.func @transform(%x: tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]], [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]]> : tensor<2x1x3x3xf32>
  %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32> -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Padding need not be symmetric, nor present: the output's height and
// width are what must be even.
// CHECK-LABEL: func.func @pads
// CHECK: kiln.winograd_conv2d %arg0, %{{.*}} pads = [2, 0, 0, 1] : tensor<2x1x4x5xf32>, tensor<16x1x1xf32> -> tensor<2x1x4x4xf32>
// CHECK: kiln.winograd_conv2d %arg1, %{{.*}} pads = [0, 0, 0, 0] : tensor<1x1x6x6xf32>, tensor<16x1x1xf32> -> tensor<1x1x4x4xf32>
func.func @pads(%x: tensor<2x1x4x5xf32>, %z: tensor<1x1x6x6xf32>) -> (tensor<2x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %w = kiln.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf32>
  %a = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [2, 0, 0, 1] groups = 1 : tensor<2x1x4x5xf32>, tensor<1x1x3x3xf32> -> tensor<2x1x4x4xf32>
  %b = kiln.conv2d %z, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x1x6x6xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x4x4xf32>
  return %a, %b : tensor<2x1x4x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// Convolutions Winograd's F(2x2, 3x3) doesn't compute stay direct: stride
// 2, dilation 2, two groups, a filter computed at run time, a 5x5 filter,
// an odd output width, and 2x2 tiles in rows of 3 that can't fill panels
// of 4 or 2.
// CHECK-LABEL: func.func @direct
// CHECK-COUNT-7: kiln.conv2d
// CHECK-NOT: kiln.winograd_conv2d
func.func @direct(%x: tensor<1x2x8x8xf32>, %f: tensor<2x2x3x3xf32>, %odd: tensor<1x2x8x7xf32>, %six: tensor<1x2x8x6xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x7xf32>, tensor<1x2x8x6xf32>) {
  %w = kiln.constant dense<1.0> : tensor<2x2x3x3xf32>
  %g = kiln.constant dense<1.0> : tensor<2x1x3x3xf32>
  %w5 = kiln.constant dense<1.0> : tensor<2x2x5x5xf32>
  %0 = kiln.conv2d %x, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
  %1 = kiln.conv2d %x, %w strides = [1, 1] dilations = [2, 2] pads = [0, 0, 0, 0] groups = 1 : tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
  %2 = kiln.conv2d %x, %g strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 2 : tensor<1x2x8x8xf32>, tensor<2x1x3x3xf32> -> tensor<1x2x8x8xf32>
  %3 = kiln.conv2d %x, %f strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x8x8xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x8x8xf32>
  %4 = kiln.conv2d %x, %w5 strides = [1, 1] dilations = [1, 1] pads = [2, 2, 2, 2] groups = 1 : tensor<1x2x8x8xf32>, tensor<2x2x5x5xf32> -> tensor<1x2x8x8xf32>
  %5 = kiln.conv2d %odd, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x8x7xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x8x7xf32>
  %6 = kiln.conv2d %six, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x8x6xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x8x6xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x7xf32>, tensor<1x2x8x6xf32>
}

// -----

// 8x8 outputs are 2x2 tiles of 4x4, which fill panels of 4: F(4x4, 3x3),
// with G from the points 0, 1, -1, 2, -2 and infinity. For g with a single
// 1 at (2, 2), G g G^T is the outer product of G's last column,
// [0, -1/6, -1/6, 1/6, 1/6, 1], with itself, as [36, F, C]. Limited to 2x2
// tiles, the same convolution takes F(2x2, 3x3).
// CHECK-LABEL: func.func @large_tiles
// CHECK: %[[U:.*]] = kiln.constant dense<{{\[\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.000000e+00]], {{\[\[}}0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}-0.166666672]], {{\[\[}}0.000000e+00]], {{\[\[}}0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}-0.166666672]], {{\[\[}}0.000000e+00]], {{\[\[}}-0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}0.166666672]], {{\[\[}}0.000000e+00]], {{\[\[}}-0.027777778]], {{\[\[}}-0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}0.027777778]], {{\[\[}}0.166666672]], {{\[\[}}0.000000e+00]], {{\[\[}}-0.166666672]], {{\[\[}}-0.166666672]], {{\[\[}}0.166666672]], {{\[\[}}0.166666672]], {{\[\[}}1.000000e+00]]]> : tensor<36x1x1xf32>
// CHECK: kiln.winograd_conv2d %arg0, %[[U]] pads = [1, 1, 1, 1] : tensor<1x1x8x8xf32>, tensor<36x1x1xf32> -> tensor<1x1x8x8xf32>
// SMALL-LABEL: func.func @large_tiles
// SMALL: kiln.winograd_conv2d %arg0, %{{.*}} pads = [1, 1, 1, 1] : tensor<1x1x8x8xf32>, tensor<16x1x1xf32> -> tensor<1x1x8x8xf32>
func.func @large_tiles(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %w = kiln.constant dense<[[[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]]> : tensor<1x1x3x3xf32>
  %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x8x8xf32>
  return %y : tensor<1x1x8x8xf32>
}

// -----

// 4x2 outputs are 2x1 tiles of 2x2, which fill no panel of 4 tiles but
// panels of 2: F(2x2, 3x3) in half-width panels.
// CHECK-LABEL: func.func @half_panels
// CHECK: kiln.winograd_conv2d %arg0, %{{.*}} pads = [1, 1, 1, 1] : tensor<1x1x4x2xf32>, tensor<16x1x1xf32> -> tensor<1x1x4x2xf32>
func.func @half_panels(%x: tensor<1x1x4x2xf32>) -> tensor<1x1x4x2xf32> {
  %w = kiln.constant dense<[[[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]]> : tensor<1x1x3x3xf32>
  %y = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x1x4x2xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x4x2xf32>
  return %y : tensor<1x1x4x2xf32>
}
