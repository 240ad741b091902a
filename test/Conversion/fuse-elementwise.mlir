// RUN: kiln-opt %s -convert-kiln-to-linalg -kiln-fuse-elementwise | FileCheck %s

// GELU's chain of elementwise ops becomes one loop.
// CHECK-LABEL: func.func @gelu
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.div %x, %sqrt2 : tensor<4x8xf32>, tensor<f32>
  %1 = kiln.erf %0 : tensor<4x8xf32>
  %2 = kiln.add %1, %one : tensor<4x8xf32>, tensor<f32>
  %3 = kiln.mul %x, %2 : tensor<4x8xf32>, tensor<4x8xf32>
  %4 = kiln.mul %3, %half : tensor<4x8xf32>, tensor<f32>
  return %4 : tensor<4x8xf32>
}

// Producers stay out of matrix products and reductions, which would
// recompute them once per reduction step.
// CHECK-LABEL: func.func @not_into_contractions
// CHECK: %[[SCALED:.*]] = linalg.generic
// CHECK: linalg.matmul ins(%[[SCALED]], %{{.*}} :
// CHECK: %[[EXP:.*]] = linalg.generic
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[EXP]]
func.func @not_into_contractions(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.mul %a, %s : tensor<4x8xf32>, tensor<f32>
  %1 = kiln.matmul %0, %b : tensor<4x8xf32>, tensor<8x4xf32>
  %2 = kiln.exp %a : tensor<4x8xf32>
  %3 = kiln.reduce_sum %2 axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  return %1, %3 : tensor<4x4xf32>, tensor<4xf32>
}

// A fused body holds at most max-fused-ops ops (each fusion copies both
// bodies, so an unbounded chain costs n^2): with 4, two Relus (2 ops each
// with the yield) make one loop of 3, and no more join it.
// RUN: kiln-opt %s -convert-kiln-to-linalg "-kiln-fuse-elementwise=max-fused-ops=4" | FileCheck %s --check-prefix=BOUNDED
// BOUNDED-LABEL: func.func @relu_chain
// BOUNDED: %[[FIRST:.*]] = linalg.generic
// BOUNDED-COUNT-2: arith.maximumf
// BOUNDED-NEXT: linalg.yield
// BOUNDED: linalg.generic {{.*}} ins(%[[FIRST]] :
// BOUNDED-COUNT-2: arith.maximumf
// BOUNDED-NEXT: linalg.yield
// BOUNDED-NOT: linalg.generic
// BOUNDED: return
func.func @relu_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.relu %x : tensor<4x8xf32>
  %1 = kiln.relu %0 : tensor<4x8xf32>
  %2 = kiln.relu %1 : tensor<4x8xf32>
  %3 = kiln.relu %2 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
