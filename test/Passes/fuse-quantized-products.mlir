// RUN: kiln-opt %s -kiln-fuse-quantized-products="panel-width=8" -split-input-file | FileCheck %s
// RUN: not kiln-opt %s -kiln-fuse-quantized-products="panel-width=12" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD-PANEL
// BAD-PANEL: error: kiln-fuse-quantized-products: panel-width must be a positive multiple of 8, not 12

// A uint8 QDQ activation (scale 0.05, zero point 3) into a product with
// constant weights: one kiln.quantized_matmul on the float activation
// with the model's scale and zero point, the weights packed as by
// kiln-quantize-int8-dynamic (7 bits per column, here as in
// quantize-int8-dynamic.mlir).
// CHECK-LABEL: func.func @uint8_activation
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<5.000000e-02> : tensor<f32>
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}[63, -63, 32, 0], [-63, 32, 0, 63], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]{{\]\]\]}}> : tensor<1x1x8x4xi8>
// CHECK-DAG: %[[ZP:.*]] = kiln.constant dense<3> : tensor<i8>
// CHECK: kiln.quantized_matmul %arg0, %[[W]], %{{.*}}, %{{.*}} static(%[[S]], %[[ZP]] : tensor<f32>, tensor<i8>) {kiln.weight_error = {{.*}}} : tensor<2x4xf32>, tensor<1x1x8x4xi8>, tensor<8xf32>, tensor<8xi32> -> tensor<2x3xf32>
// CHECK-NOT: kiln.quantize
// CHECK-NOT: kiln.dequantize
// CHECK-NOT: kiln.matmul
func.func @uint8_activation(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %d, %w : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// An int8 activation (zero point -2) is the uint8 one shifted by 128: zero
// point 126. Equal scales given as separate constants still match.
// CHECK-LABEL: func.func @int8_activation
// CHECK: %[[ZP:.*]] = kiln.constant dense<126> : tensor<i8>
// CHECK: kiln.quantized_matmul %arg0, {{.*}} static(%{{.*}}, %[[ZP]] : tensor<f32>, tensor<i8>)
func.func @int8_activation(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %s2 = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<-2> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s2, %zp : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %d, %w : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A dequantization with another scale than the quantization's is not an
// identity on the quantized values: left as written.
// CHECK-LABEL: func.func @different_scales
// CHECK: kiln.quantize
// CHECK: kiln.dequantize
// CHECK: kiln.matmul
func.func @different_scales(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %s2 = kiln.constant dense<0.1> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s2, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %d, %w : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Activation scales known only at run time are not fused.
// CHECK-LABEL: func.func @runtime_scale
// CHECK: kiln.matmul
func.func @runtime_scale(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %d, %w : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}
