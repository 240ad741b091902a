// RUN: kiln-opt %s -kiln-insert-runtime-checks -split-input-file -verify-diagnostics | FileCheck %s

// Inside a sampler's loop, a Gather whose indices come from outside it is
// checked where the entry returns.
// CHECK-LABEL: func.func @outside
// CHECK: kiln.sample
// CHECK: %[[S:.*]] = kiln.check_index_range %arg1, %{{.*}}, size = 3, code = 1 : tensor<1xi64>
// CHECK: return %{{.*}}, %[[S]]
func.func @outside(%n: tensor<1x4xf32>, %y: tensor<1xi64>) -> tensor<1x4xf32> {
  %table = kiln.constant dense<1.0> : tensor<3x4xf32>
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0]> : tensor<1xf32> coefficients = dense<1.0> : tensor<1x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %g = kiln.gather %table[%y], axis = 0 : tensor<3x4xf32>, tensor<1xi64> -> tensor<1x4xf32>
    %e = kiln.mul %x, %g : tensor<1x4xf32>, tensor<1x4xf32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

// Indices computed in the step can't be: the status leaves the entry.
func.func @inside(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %table = kiln.constant dense<1.0> : tensor<3x4xf32>
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0]> : tensor<1xf32> coefficients = dense<1.0> : tensor<1x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %k = kiln.cast %t : tensor<f32> -> tensor<i64>
    %ks = kiln.reshape %k : tensor<i64> -> tensor<1xi64>
    // expected-error @+1 {{cannot check Gather indices computed inside a loop (a sampler step) at run time}}
    %g = kiln.gather %table[%ks], axis = 0 : tensor<3x4xf32>, tensor<1xi64> -> tensor<1x4xf32>
    %e = kiln.mul %x, %g : tensor<1x4xf32>, tensor<1x4xf32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}
