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

// erf: one rational function of the clamped input, x * P(x^2) / Q(x^2),
// with no per-element selection of coefficients; the division may use a
// reciprocal estimate (its denominator is finite).
// CHECK-LABEL: func.func @erf
// CHECK-DAG: %[[HI:.*]] = arith.constant dense<3.920000e+00> : vector<16xf32>
// CHECK-DAG: %[[LO:.*]] = arith.constant dense<-3.920000e+00> : vector<16xf32>
// CHECK: %[[MIN:.*]] = arith.minimumf %arg0, %[[HI]]
// CHECK: %[[X:.*]] = arith.maximumf %[[MIN]], %[[LO]]
// CHECK: %[[T:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-COUNT-5: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[NUM:.*]] = arith.mulf %[[X]], %{{.*}} : vector<16xf32>
// CHECK-COUNT-5: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[ERF:.*]] = arith.divf %[[NUM]], %{{.*}} fastmath<ninf,arcp,contract> : vector<16xf32>
// CHECK-NOT: arith.select
// CHECK: return %[[ERF]]
func.func @erf(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.erf %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// tanh: the same form on [-8.5, 8.5], with no selection for tiny inputs.
// CHECK-LABEL: func.func @tanh
// CHECK-DAG: %[[HI:.*]] = arith.constant dense<8.500000e+00> : vector<16xf32>
// CHECK-DAG: %[[LO:.*]] = arith.constant dense<-8.500000e+00> : vector<16xf32>
// CHECK: %[[MIN:.*]] = arith.minimumf %arg0, %[[HI]]
// CHECK: %[[X:.*]] = arith.maximumf %[[MIN]], %[[LO]]
// CHECK: %[[T:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-COUNT-4: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[NUM:.*]] = arith.mulf %[[X]], %{{.*}} : vector<16xf32>
// CHECK-COUNT-4: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[TANH:.*]] = arith.divf %[[NUM]], %{{.*}} fastmath<ninf,arcp,contract> : vector<16xf32>
// CHECK-NOT: arith.select
// CHECK: return %[[TANH]]
func.func @tanh(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.tanh %x : vector<16xf32>
  return %0 : vector<16xf32>
}
