// RUN: kiln-opt %s -kiln-quantize-int4-weight="min-depth=8 block-size=8 panel-width=8 zero-points=false" -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-quantize-int4-weight="min-depth=8 block-size=8 panel-width=8" -split-input-file | FileCheck %s --check-prefix=ZERO
// RUN: kiln-opt %s -kiln-quantize-int4-weight -split-input-file | FileCheck %s --check-prefix=SHALLOW
// RUN: not kiln-opt %s -kiln-quantize-int4-weight="block-size=12" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK
// BAD-BLOCK: error: kiln-quantize-int4-weight: block-size must be a positive multiple of 8, not 12
// RUN: not kiln-opt %s -kiln-quantize-int4-weight="panel-width=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-PANEL
// BAD-PANEL: error: kiln-quantize-int4-weight: panel-width must be a positive multiple of 8, not 0

// Symmetric (zero-points=false): one block of 8 rows: column 0 gets the scale 0.7 / 7 = 0.1 and integers
// [7, -7, 4, 0, 1, 0, 0, 0] (3.5 rounds to the even 4), column 1 the scale
// 0.2 and [-7, 0, 0, 0, 0, 0, 0, 3]. Each byte holds a row of the first
// group of 4 (low 4 bits) and the same row of the second (high 4 bits),
// both + 8: column 0's first byte is (7 + 8) | (1 + 8) << 4 = 159, -97 as
// i8; the padded columns are 8 | 8 << 4 = 136, -120. The column sums are
// the scaled integer sums: 0.1 * 5 and 0.2 * -4.
// CHECK-LABEL: func.func @product
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[-97, -127, -116, -120], [-127, -120, -120, -72], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120], [-120, -120, -120, -120]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK: %[[S:.*]] = kiln.constant dense<{{\[\[}}[1.000000e-01, 2.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]]> : tensor<1x1x8xf32>
// CHECK: %[[C:.*]] = kiln.constant dense<[5.000000e-01, -8.000000e-01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<8xf32>
// The relative RMS weight error: only 0.35 is off (by 0.05), so
// sqrt(0.05^2 / sum(w^2) = 3.4325) = 0.02699.
// CHECK: kiln.int4_matmul %arg0, %[[W]], %[[S]], %[[C]] {kiln.weight_error = 0.0269{{[0-9]*}} : f32} : tensor<2x8xf32>, tensor<1x1x8x4xi8>, tensor<1x1x8xf32>, tensor<8xf32> -> tensor<2x2xf32>
// CHECK-NOT: kiln.matmul
// By default, products this shallow (K = 8 < 64) stay in float, and say why.
// SHALLOW-LABEL: func.func @product
// SHALLOW: kiln.matmul %arg0, %{{.*}} {kiln.kept_float = "depth 8 is below min-depth 64"}
func.func @product(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[0.7, -1.4], [-0.7, 0.0], [0.35, 0.0], [0.0, 0.0], [0.1, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.6]]> : tensor<8x2xf32>
  %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// A depth that is not a multiple of the block is padded with zero weights
// to whole blocks: 12 rows make 2 blocks of 8, 2 pairs of groups of 4.
// CHECK-LABEL: func.func @padded_depth
// CHECK: kiln.int4_matmul %arg0, {{.*}} : tensor<?x12xf32>, tensor<1x2x8x4xi8>, tensor<1x2x8xf32>, tensor<8xf32> -> tensor<?x3xf32>
func.func @padded_depth(%x: tensor<?x12xf32>) -> tensor<?x3xf32> {
  %w = kiln.constant dense<[[-0.5, -0.25, 0.0], [0.25, 0.5, -0.5], [-0.25, 0.0, 0.25], [0.5, -0.5, -0.25], [0.0, 0.25, 0.5], [-0.5, -0.25, 0.0], [0.25, 0.5, -0.5], [-0.25, 0.0, 0.25], [0.5, -0.5, -0.25], [0.0, 0.25, 0.5], [-0.5, -0.25, 0.0], [0.25, 0.5, -0.5]]> : tensor<12x3xf32>
  %y = kiln.matmul %x, %w : tensor<?x12xf32>, tensor<12x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

// Products of two activations (attention's) stay in float.
// CHECK-LABEL: func.func @activations
// CHECK: kiln.matmul %arg0, %arg1 : tensor<2x8xf32>, tensor<8x3xf32>
func.func @activations(%x: tensor<2x8xf32>, %y: tensor<8x3xf32>) -> tensor<2x3xf32> {
  %z = kiln.matmul %x, %y : tensor<2x8xf32>, tensor<8x3xf32>
  return %z : tensor<2x3xf32>
}

// -----

// With zero points (the default): each block of a column spans its range
// widened to 0 in 15 steps. Column 0 ([-0.6, 0.9]) gets the scale 0.1 and
// zero point 6, integers [9, -6, 3, 0, 1, 0, 0, 0], stored + 6 as
// [15, 0, 9, 6, 7, 6, 6, 6]: bytes 15 | 7 << 4 = 127, 0 | 6 << 4 = 96, ...;
// column 1 ([-1.5, 0.5]) the scale 2 / 15 and zero point round(11.25) = 11,
// integers -11 at row 0 and round(3.75) = 4 at row 7. Padded columns keep
// zero point 8. The column sums: 0.1 * 7 and 0.1333 * -7. Two weights
// are off by 0.0333: sqrt(2 * 0.0333^2 / sum(w^2) = 3.77) = 0.02428.
// ZERO-LABEL: func.func @zero_points
// ZERO: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[127, 96, 105, 102], [-80, -69, -69, -5], [-120, -120, -120, -120], {{.*}}]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// ZERO: %[[S:.*]] = kiln.constant dense<{{\[\[}}[1.000000e-01, 0.13333334, 0.000000e+00, {{.*}}]]]> : tensor<1x1x8xf32>
// ZERO: %[[C:.*]] = kiln.constant dense<[0.699999988, -0.933333396, 0.000000e+00, {{.*}}]> : tensor<8xf32>
// ZERO: %[[Z:.*]] = kiln.constant dense<{{\[\[\[}}6, 11, 8, 8, 8, 8, 8, 8]]]> : tensor<1x1x8xi8>
// ZERO: kiln.int4_matmul %arg0, %[[W]], %[[S]], %[[C]] zero_points(%[[Z]] : tensor<1x1x8xi8>) {kiln.weight_error = 0.0242{{[0-9]*}} : f32}
func.func @zero_points(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[0.9, -1.5], [-0.6, 0.0], [0.3, 0.0], [0.0, 0.0], [0.1, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.5]]> : tensor<8x2xf32>
  %y = kiln.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32>
  return %y : tensor<2x2xf32>
}
