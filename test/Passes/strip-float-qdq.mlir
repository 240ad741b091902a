// RUN: kiln-opt %s -kiln-strip-float-qdq -split-input-file | FileCheck %s

// A fake-quantized activation into a float op (Softmax): the pair goes,
// the softmax reads the float activation.
// CHECK-LABEL: func.func @float_op
// CHECK-NEXT: %[[Y:.*]] = kiln.softmax %arg0, axis = 1 : tensor<2x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @float_op(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %y = kiln.softmax %d, axis = 1 : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Into a product with constant weights the pair stays: it is the int8
// product kiln-fuse-quantized-products makes. The same dequantized values
// into a float op (a residual add), or a second dequantization of them,
// are the float activation.
// CHECK-LABEL: func.func @integer_product
// CHECK: %[[Q:.*]] = kiln.quantize %arg0
// CHECK: %[[D:.*]] = kiln.dequantize %[[Q]]
// CHECK: kiln.matmul %[[D]]
// CHECK: kiln.add %arg0, %arg0
// CHECK: kiln.softmax %arg0
// CHECK-NOT: kiln.dequantize
func.func @integer_product(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %w = kiln.constant dense<[[0.63, -1.26, 0.0], [-0.63, 0.63, 0.0], [0.315, 0.0, 0.0], [0.0, 1.26, 0.0]]> : tensor<4x3xf32>
  %y = kiln.matmul %d, %w : tensor<2x4xf32>, tensor<4x3xf32>
  %r = kiln.add %d, %x : tensor<2x4xf32>, tensor<2x4xf32>
  %d2 = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %z = kiln.softmax %d2, axis = 1 : tensor<2x4xf32>
  return %y, %r, %z : tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A product of two activations (attention's scores) is float in Kiln: both
// pairs go.
// CHECK-LABEL: func.func @activation_product
// CHECK-NEXT: kiln.matmul %arg0, %arg1 : tensor<2x4xf32>, tensor<4x3xf32>
func.func @activation_product(%x: tensor<2x4xf32>, %v: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %qv = kiln.quantize %v, %s, %zp {result_unsigned} : tensor<4x3xf32>, tensor<f32>, tensor<i8> -> tensor<4x3xi8>
  %dv = kiln.dequantize %qv, %s, %zp {input_unsigned} : tensor<4x3xi8>, tensor<f32>, tensor<i8> -> tensor<4x3xf32>
  %y = kiln.matmul %d, %dv : tensor<2x4xf32>, tensor<4x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Different scales (a requantization) or a quantized value used as such
// are not fake quantization: left as written.
// CHECK-LABEL: func.func @not_a_pair
// CHECK: kiln.quantize
// CHECK: kiln.dequantize
// CHECK: kiln.softmax
func.func @not_a_pair(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi8>) {
  %s = kiln.constant dense<0.05> : tensor<f32>
  %s2 = kiln.constant dense<0.1> : tensor<f32>
  %zp = kiln.constant dense<3> : tensor<i8>
  %q = kiln.quantize %x, %s, %zp {result_unsigned} : tensor<2x4xf32>, tensor<f32>, tensor<i8> -> tensor<2x4xi8>
  %d = kiln.dequantize %q, %s2, %zp {input_unsigned} : tensor<2x4xi8>, tensor<f32>, tensor<i8> -> tensor<2x4xf32>
  %y = kiln.softmax %d, axis = 1 : tensor<2x4xf32>
  return %y, %q : tensor<2x4xf32>, tensor<2x4xi8>
}
