// RUN: kiln-opt %s -kiln-approximate-math | FileCheck %s

// exp, erf and tanh on f32 become arithmetic the loop vectorizer can use.
// CHECK-LABEL: func.func @approximate
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK: math.fma
// CHECK: return
func.func @approximate(%x: f32) -> (f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.erf %x : f32
  %2 = math.tanh %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// Other functions keep their libm calls.
// CHECK-LABEL: func.func @untouched
// CHECK: math.log
func.func @untouched(%x: f32) -> f32 {
  %0 = math.log %x : f32
  return %0 : f32
}
