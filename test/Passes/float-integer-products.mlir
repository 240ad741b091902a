// RUN: kiln-opt %s -kiln-float-integer-products -split-input-file | FileCheck %s

// The MatMulInteger-Cast chain of ONNX Runtime's dynamic quantization, with
// constant weights: the weights less their (per-column) zero points become
// a float constant, the rows less theirs a float operand.
// (-128 less 1 is -129: outside int8, exact in f32.)
// CHECK-LABEL: func.func @dynamic_chain
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[}}-2.000000e+00, 2.000000e+00], [0.000000e+00, -1.000000e+00], [-1.290000e+02, -1.260000e+02]]> : tensor<3x2xf32>
// CHECK-DAG: %[[X:.*]] = kiln.cast %arg0 {input_unsigned} : tensor<2x3xi8> -> tensor<2x3xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.cast %arg1 {input_unsigned} : tensor<i8> -> tensor<f32>
// CHECK: %[[D:.*]] = kiln.sub %[[X]], %[[Z]] : tensor<2x3xf32>, tensor<f32>
// CHECK: %[[P:.*]] = kiln.matmul %[[D]], %[[W]] : tensor<2x3xf32>, tensor<3x2xf32>
// CHECK: return %[[P]]
// CHECK-NOT: kiln.matmul_integer
func.func @dynamic_chain(%x: tensor<2x3xi8>, %zx: tensor<i8>) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[-1, 1], [1, -2], [-128, -127]]> : tensor<3x2xi8>
  %zw = kiln.constant dense<[1, -1]> : tensor<2xi8>
  %p = kiln.matmul_integer %x, %w, %zx, %zw {lhs_unsigned} : tensor<2x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<2x2xi32>
  %f = kiln.cast %p : tensor<2x2xi32> -> tensor<2x2xf32>
  return %f : tensor<2x2xf32>
}

// -----

// An integer result someone reads as integers stays an integer product.
// CHECK-LABEL: func.func @integer_result
// CHECK: kiln.matmul_integer
func.func @integer_result(%x: tensor<2x3xi8>, %zx: tensor<i8>) -> tensor<2x2xi32> {
  %w = kiln.constant dense<[[-1, 1], [1, -2], [-128, -127]]> : tensor<3x2xi8>
  %zw = kiln.constant dense<[1, -1]> : tensor<2xi8>
  %p = kiln.matmul_integer %x, %w, %zx, %zw {lhs_unsigned} : tensor<2x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<2x2xi32>
  return %p : tensor<2x2xi32>
}
