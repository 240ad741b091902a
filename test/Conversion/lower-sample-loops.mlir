// RUN: kiln-opt %s -kiln-lower-sample-loops -split-input-file | FileCheck %s

// A single-step sampler: one carried latent, a copy of the noise, updated
// in place from the step's coefficients 0 and 1.
// CHECK-LABEL: func.func @ddim(
// CHECK-SAME: %[[NOISE:[^:]*]]: tensor<1x4xf32>
// CHECK-DAG: %[[TIMES:.*]] = arith.constant dense<[9.990000e+02, 4.990000e+02]> : tensor<2xf32>
// CHECK-DAG: %[[TABLE:.*]] = arith.constant dense<{{.*}}> : tensor<2x5xf32>
// CHECK-DAG: %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[NOISE]])
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[LOOP:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[C2]] step %{{.*}} iter_args(%[[X:.*]] = %[[COPY]]) -> (tensor<1x4xf32>) {
// CHECK: %[[TS:.*]] = tensor.extract_slice %[[TIMES]][%[[I]]] [1] [1]
// CHECK: %[[T:.*]] = tensor.collapse_shape %[[TS]] []
// CHECK: %[[E:.*]] = kiln.mul %[[X]], %[[T]]
// CHECK: tensor.extract_slice %[[TABLE]][%[[I]], 0] [1, 1] [1, 1]
// CHECK: %[[A:.*]] = kiln.mul %[[X]],
// CHECK: tensor.extract_slice %[[TABLE]][%[[I]], 1] [1, 1] [1, 1]
// CHECK: %[[B:.*]] = kiln.mul %[[E]],
// CHECK: %[[NEXT:.*]] = kiln.add %[[A]], %[[B]]
// CHECK: %[[Y:.*]] = bufferization.materialize_in_destination %[[NEXT]] in %[[X]]
// CHECK: scf.yield %[[Y]]
// CHECK: return %[[LOOP]]
func.func @ddim(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<[[1.0, 2.0, 0.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0, 0.0]]> : tensor<2x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %e = kiln.mul %x, %t : tensor<1x4xf32>, tensor<f32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

// A multistep sampler also carries the previous estimate, from zeros; the
// noise is scaled first.
// CHECK-LABEL: func.func @multistep(
// CHECK: %[[COPY:.*]] = bufferization.alloc_tensor() copy(
// CHECK: %[[SCALE:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[START:.*]] = kiln.mul %[[COPY]], %[[SCALE]]
// CHECK: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<1x4xf32>
// CHECK: scf.for {{.*}} iter_args(%[[X:.*]] = %[[START]], %[[P:.*]] = %[[ZERO]]) -> (tensor<1x4xf32>, tensor<1x4xf32>)
// CHECK: kiln.mul %[[P]],
// CHECK: %[[Y:.*]] = bufferization.materialize_in_destination %{{.*}} in %[[X]]
// CHECK: %[[Q:.*]] = bufferization.materialize_in_destination %{{.*}} in %[[P]]
// CHECK: scf.yield %[[Y]], %[[Q]]
func.func @multistep(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %s = kiln.sample dpmpp_2m %n noise_scale = 0.5 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<[[1.0, 2.0, 0.0, 3.0, 4.0], [1.0, 2.0, 0.5, 3.0, 4.0]]> : tensor<2x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %e = kiln.mul %x, %t : tensor<1x4xf32>, tensor<f32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

// A carried value is one more iteration argument, from the operand, written
// back in place; one passed on unchanged is yielded as it is.
// CHECK-LABEL: func.func @carried(
// CHECK-SAME: %[[NOISE:[^:]*]]: tensor<1x4xf32>, %[[CACHE:[^:]*]]: tensor<1x4xf32>, %[[KEPT:[^:]*]]: tensor<2xf32>
// CHECK: %[[COPY:.*]] = bufferization.alloc_tensor() copy(%[[NOISE]])
// CHECK: scf.for {{.*}} iter_args(%[[X:.*]] = %[[COPY]], %[[C:.*]] = %[[CACHE]], %[[K:.*]] = %[[KEPT]]) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<2xf32>)
// CHECK: %[[E:.*]] = kiln.add %[[X]], %[[C]]
// CHECK: %[[Y:.*]] = bufferization.materialize_in_destination %{{.*}} in %[[X]]
// CHECK: %[[NEXT:.*]] = bufferization.materialize_in_destination %[[E]] in %[[C]]
// CHECK: scf.yield %[[Y]], %[[NEXT]], %[[K]]
func.func @carried(%n: tensor<1x4xf32>, %cache: tensor<1x4xf32>, %kept: tensor<2xf32>) -> tensor<1x4xf32> {
  %s = kiln.sample ddim %n carry(%cache, %kept : tensor<1x4xf32>, tensor<2xf32>) noise_scale = 1.0 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<[[1.0, 2.0, 0.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0, 0.0]]> : tensor<2x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index, %c: tensor<1x4xf32>, %k: tensor<2xf32>):
    %e = kiln.add %x, %c : tensor<1x4xf32>, tensor<1x4xf32>
    kiln.yield %e, %e, %k : tensor<1x4xf32>, tensor<1x4xf32>, tensor<2xf32>
  }
  return %s : tensor<1x4xf32>
}
