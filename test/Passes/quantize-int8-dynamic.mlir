// RUN: kiln-opt %s -kiln-quantize-int8-dynamic="min-depth=4 panel-width=8" -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-quantize-int8-dynamic -split-input-file | FileCheck %s --check-prefix=SHALLOW

// Each column gets the scale max|w| / 63 and integers in [-63, 63] (31.5
// rounds to the even 32); the all-zero column scale 0. Panels of 8 columns
// hold each column's 4 rows side by side, zeros past N = 3; the column
// sums correct for the rows' zero points.
// CHECK-LABEL: func.func @product
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[63, -63, 32, 0], [-63, 32, 0, 63], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK: %[[S:.*]] = kiln.constant dense<[0.00999999977, 2.000000e-02, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<8xf32>
// CHECK: %[[C:.*]] = kiln.constant dense<[32, 32, 0, 0, 0, 0, 0, 0]> : tensor<8xi32>
// The report's relative RMS weight error: 0.315 and 0.63 round to 0.32 and
// 0.64, so sqrt((0.005^2 + 0.01^2) / sum(w^2) = 4.465125) = 0.005291.
// CHECK: kiln.quantized_matmul %arg0, %[[W]], %[[S]], %[[C]] {kiln.weight_error = 0.00529{{[0-9]*}} : f32} : tensor<2x4xf32>, tensor<1x1x8x4xi8>, tensor<8xf32>, tensor<8xi32> -> tensor<2x3xf32>
// CHECK-NOT: kiln.matmul
// By default, products this shallow (K = 4 < 64) stay in float, and say why.
// SHALLOW-LABEL: func.func @product
// SHALLOW: kiln.matmul %arg0, %{{.*}} {kiln.kept_float = "depth 4 is below min-depth 64"}
func.func @product(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Products of two activations (attention's) stay in float.
// CHECK-LABEL: func.func @activations
// CHECK: kiln.matmul %arg0, %arg1 : tensor<2x4xf32>, tensor<4x3xf32>
func.func @activations(%x: tensor<2x4xf32>, %y: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %z = kiln.matmul %x, %y : tensor<2x4xf32>, tensor<4x3xf32>
  return %z : tensor<2x3xf32>
}

// -----

// Rows of dynamic count (a sequence length) are quantized like the others.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: kiln.quantized_matmul %arg0, {{.*}} : tensor<?x4xf32>, tensor<1x1x8x4xi8>, tensor<8xf32>, tensor<8xi32> -> tensor<?x3xf32>
func.func @dynamic_rows(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %x, %w : tensor<?x4xf32>, tensor<4x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// A product with the input quantization calibration chose (int8-static)
// quantizes its input with it: 0-D constants, the zero point 200 as the
// uint8 bits of i8 -56.
// CHECK-LABEL: func.func @calibrated_input
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<2.500000e-02> : tensor<f32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<-56> : tensor<i8>
// CHECK: kiln.quantized_matmul %arg0, %{{.*}}, %{{.*}}, %{{.*}} static(%[[S]], %[[Z]] : tensor<f32>, tensor<i8>) {kiln.calibration_error = 1.250000e-02 : f32, kiln.weight_error = {{.*}}}
func.func @calibrated_input(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %x, %w {kiln.input_scale = 0.025 : f32, kiln.input_zero_point = 200 : i64, kiln.calibration_error = 0.0125 : f32} : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// With SmoothQuant's smoothing calibration chose, the weights' rows are
// multiplied by the factors [2, 0.5, 4, 0.8] before they are quantized
// (columns [1.26, -0.315, 1.26, 0] and [-2.52, 0.315, 0, 1.008]: scales
// 0.02 and 0.04), and the product divides its input's columns by them.
// CHECK-LABEL: func.func @smoothed_input
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[63, -16, 63, 0], [-63, 8, 0, 25], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<[2.000000e-02, 4.000000e-02, 0.000000e+00, {{.*}}]> : tensor<8xf32>
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[110, -30, 0, 0, 0, 0, 0, 0]> : tensor<8xi32>
// CHECK-DAG: %[[F:.*]] = kiln.constant dense<[2.000000e+00, 5.000000e-01, 4.000000e+00, 8.000000e-01]> : tensor<4xf32>
// CHECK: kiln.quantized_matmul %arg0, %[[W]], %[[S]], %[[C]] static(%{{.*}}, %{{.*}} : tensor<f32>, tensor<i8>) smooth(%[[F]] : tensor<4xf32>) {kiln.calibration_error = 1.250000e-02 : f32, kiln.smoothing_alpha = 5.000000e-01 : f32, kiln.weight_error = {{.*}}}
func.func @smoothed_input(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %x, %w {kiln.input_scale = 0.025 : f32, kiln.input_zero_point = 200 : i64, kiln.input_smoothing = dense<[2.0, 0.5, 4.0, 0.8]> : tensor<4xf32>, kiln.smoothing_alpha = 0.5 : f32, kiln.calibration_error = 0.0125 : f32} : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}
