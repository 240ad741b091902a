// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// The quantization ops print and parse back.

// CHECK-LABEL: func.func @per_tensor
// CHECK: %[[Q:.*]] = kiln.quantize %arg0, %arg1, %arg2 {result_unsigned} : tensor<6xf32>, tensor<f32>, tensor<i8> -> tensor<6xi8>
// CHECK: kiln.dequantize %[[Q]], %arg1, %arg2 {input_unsigned} : tensor<6xi8>, tensor<f32>, tensor<i8> -> tensor<6xf32>
func.func @per_tensor(%x: tensor<6xf32>, %s: tensor<f32>, %zp: tensor<i8>) -> tensor<6xf32> {
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<6xf32>, tensor<f32>, tensor<i8> -> tensor<6xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<6xi8>, tensor<f32>, tensor<i8> -> tensor<6xf32>
  return %d : tensor<6xf32>
}

// CHECK-LABEL: func.func @per_axis
// CHECK: kiln.quantize %arg0, %arg1, %arg2 axis = 1 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xi8>
// CHECK: kiln.dequantize %arg3, %arg1, %arg4 axis = 1 : tensor<2x3xi32>, tensor<3xf32>, tensor<3xi32> -> tensor<2x3xf32>
func.func @per_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %zp: tensor<3xi8>, %b: tensor<2x3xi32>, %bzp: tensor<3xi32>) -> (tensor<2x3xi8>, tensor<2x3xf32>) {
  %q = kiln.quantize %x, %s, %zp axis = 1 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xi8>
  %d = kiln.dequantize %b, %s, %bzp axis = 1 : tensor<2x3xi32>, tensor<3xf32>, tensor<3xi32> -> tensor<2x3xf32>
  return %q, %d : tensor<2x3xi8>, tensor<2x3xf32>
}

// Blocked (opset 21): a ragged last block of 4 rows along axis 0.
// CHECK-LABEL: func.func @blocked
// CHECK: kiln.dequantize %arg0, %arg1, %arg2 axis = 0 block_size = 8 {input_unsigned} : tensor<20x6xi8>, tensor<3x6xf32>, tensor<3x6xi8> -> tensor<20x6xf32>
// CHECK: kiln.quantize %arg3, %arg1, %arg2 axis = 0 block_size = 8 : tensor<20x6xf32>, tensor<3x6xf32>, tensor<3x6xi8> -> tensor<20x6xi8>
func.func @blocked(%q: tensor<20x6xi8>, %s: tensor<3x6xf32>, %zp: tensor<3x6xi8>, %x: tensor<20x6xf32>) -> (tensor<20x6xf32>, tensor<20x6xi8>) {
  %d = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 {input_unsigned} : tensor<20x6xi8>, tensor<3x6xf32>, tensor<3x6xi8> -> tensor<20x6xf32>
  %r = kiln.quantize %x, %s, %zp axis = 0 block_size = 8 : tensor<20x6xf32>, tensor<3x6xf32>, tensor<3x6xi8> -> tensor<20x6xi8>
  return %d, %r : tensor<20x6xf32>, tensor<20x6xi8>
}

// CHECK-LABEL: func.func @dynamic_and_product
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = kiln.dynamic_quantize %arg0 : tensor<4x3xf32> -> tensor<4x3xi8>, tensor<f32>, tensor<i8>
// CHECK: kiln.matmul_integer %{{.*}}, %arg1, %{{.*}}, %arg2 {lhs_unsigned} : tensor<4x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<4x2xi32>
func.func @dynamic_and_product(%x: tensor<4x3xf32>, %w: tensor<3x2xi8>, %wzp: tensor<2xi8>) -> tensor<4x2xi32> {
  %q, %s, %zp = kiln.dynamic_quantize %x : tensor<4x3xf32> -> tensor<4x3xi8>, tensor<f32>, tensor<i8>
  %p = kiln.matmul_integer %q, %w, %zp, %wzp {lhs_unsigned} : tensor<4x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<4x2xi32>
  return %p : tensor<4x2xi32>
}

// CHECK-LABEL: func.func @casts
// CHECK: kiln.cast %arg0 {input_unsigned} : tensor<4xi8> -> tensor<4xf32>
// CHECK: kiln.cast %{{.*}} : tensor<4xf32> -> tensor<4xbf16>
func.func @casts(%x: tensor<4xi8>) -> tensor<4xbf16> {
  %f = kiln.cast %x {input_unsigned} : tensor<4xi8> -> tensor<4xf32>
  %h = kiln.cast %f : tensor<4xf32> -> tensor<4xbf16>
  return %h : tensor<4xbf16>
}

// CHECK-LABEL: func.func @quantized_product
// CHECK: kiln.quantized_matmul %arg0, %arg1, %arg2, %arg3 : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
func.func @quantized_product(%x: tensor<2x5x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// 72 rows in 3 blocks of 32 (96 padded, 12 pairs of groups of 4), 70
// columns in 5 panels of 16.
// CHECK-LABEL: func.func @int4_product
// CHECK: kiln.int4_matmul %arg0, %arg1, %arg2, %arg3 : tensor<2x?x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x?x70xf32>
func.func @int4_product(%x: tensor<2x?x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>) -> tensor<2x?x70xf32> {
  %y = kiln.int4_matmul %x, %w, %s, %c : tensor<2x?x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x?x70xf32>
  return %y : tensor<2x?x70xf32>
}

// With a static input quantization (a QDQ model's activation).
// CHECK-LABEL: func.func @static_quantized_product
// CHECK: kiln.quantized_matmul %arg0, %arg1, %arg2, %arg3 static(%arg4, %arg5 : tensor<f32>, tensor<i8>) : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
func.func @static_quantized_product(%x: tensor<2x5x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>, %xzp: tensor<i8>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c static(%xs, %xzp : tensor<f32>, tensor<i8>) : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// With SmoothQuant's per-column smoothing of the static quantization.
// CHECK-LABEL: func.func @smoothed_quantized_product
// CHECK: kiln.quantized_matmul %arg0, %arg1, %arg2, %arg3 static(%arg4, %arg5 : tensor<f32>, tensor<i8>) smooth(%arg6 : tensor<72xf32>) : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
func.func @smoothed_quantized_product(%x: tensor<2x5x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>, %xzp: tensor<i8>, %f: tensor<72xf32>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c static(%xs, %xzp : tensor<f32>, tensor<i8>) smooth(%f : tensor<72xf32>) : tensor<2x5x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// With a zero point per block (asymmetric 4-bit weights).
// CHECK-LABEL: func.func @int4_product_zero_points
// CHECK: kiln.int4_matmul %arg0, %arg1, %arg2, %arg3 zero_points(%arg4 : tensor<5x3x16xi8>) : tensor<2x5x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x5x70xf32>
func.func @int4_product_zero_points(%x: tensor<2x5x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>, %z: tensor<5x3x16xi8>) -> tensor<2x5x70xf32> {
  %y = kiln.int4_matmul %x, %w, %s, %c zero_points(%z : tensor<5x3x16xi8>) : tensor<2x5x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}
