// RUN: kiln-opt %s -kiln-insert-runtime-checks | FileCheck %s

// Checks chain in program order; each names its ONNX node.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<2x4xf32> {kiln.name = "y"}, tensor<i32> {kiln.status})
// CHECK-SAME: attributes {kiln.errors = ["Gather index out of range at node 'first'", "Gather index out of range at node 'second'"]}
// CHECK: %[[A:.*]] = kiln.gather %arg0[%arg1]
// CHECK: %[[B:.*]] = kiln.gather %[[A]][%arg2], axis = 1
// CHECK: %[[OK:.*]] = arith.constant dense<0> : tensor<i32>
// CHECK: %[[S1:.*]] = kiln.check_index_range %arg1, %[[OK]], size = 5, code = 1 : tensor<2xi64>
// CHECK: %[[S2:.*]] = kiln.check_index_range %arg2, %[[S1]], size = 4, code = 2 : tensor<4xi64>
// CHECK: return %[[B]], %[[S2]] : tensor<2x4xf32>, tensor<i32>
func.func @main(%t: tensor<5x4xf32>, %i: tensor<2xi64>, %j: tensor<4xi64>)
    -> (tensor<2x4xf32> {kiln.name = "y"}) {
  %0 = kiln.gather %t[%i], axis = 0 : tensor<5x4xf32>, tensor<2xi64> -> tensor<2x4xf32> loc("first")
  %1 = kiln.gather %0[%j], axis = 1 : tensor<2x4xf32>, tensor<4xi64> -> tensor<2x4xf32> loc("second")
  return %1 : tensor<2x4xf32>
}

// GatherElements is checked against the data's size along its axis; along
// a dynamic axis the lowering's clamping is all there is.
// CHECK-LABEL: func.func @gather_elements
// CHECK-SAME: attributes {kiln.errors = ["GatherElements index out of range at node 'pick'"]}
// CHECK: kiln.check_index_range %arg1, %{{.*}}, size = 3, code = 1 : tensor<2x1xi64>
// CHECK-NOT: kiln.check_index_range
func.func @gather_elements(%x: tensor<2x3xf32>, %i: tensor<2x1xi64>,
                           %d: tensor<2x?xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>) {
  %0 = kiln.gather_elements %x[%i], axis = 1 : tensor<2x3xf32>, tensor<2x1xi64> -> tensor<2x1xf32> loc("pick")
  %1 = kiln.gather_elements %d[%i], axis = 1 : tensor<2x?xf32>, tensor<2x1xi64> -> tensor<2x1xf32> loc("dynamic")
  return %0, %1 : tensor<2x1xf32>, tensor<2x1xf32>
}

// Without checks the status is a constant 0.
// CHECK-LABEL: func.func @no_checks
// CHECK-SAME: -> (tensor<3xf32>, tensor<i32> {kiln.status}) attributes {kiln.errors = []}
// CHECK: %[[ZERO:.*]] = arith.constant dense<0> : tensor<i32>
// CHECK: return %arg0, %[[ZERO]]
func.func @no_checks(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}

// Private helpers are not entry points.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: -> tensor<3xf32> {
func.func private @helper(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
