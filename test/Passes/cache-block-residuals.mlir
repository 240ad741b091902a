// RUN: kiln-opt %s '-kiln-cache-block-residuals=interval=3' | FileCheck %s
// RUN: kiln-opt %s '-kiln-cache-block-residuals=interval=2 first=1' | FileCheck %s --check-prefix=LATER
// RUN: kiln-opt %s '-kiln-cache-block-residuals=threshold=0.25' | FileCheck %s --check-prefix=ADAPT
// RUN: not kiln-opt %s '-kiln-cache-block-residuals=last=5' 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: cannot cache blocks [0, 5): the denoiser has 2 (numbered from 0)

// A sampler step with two pre-LN blocks between an embedding and a final
// norm. Both blocks run on steps 0, 3, 6, ...; they store what they add to
// the stream (x2 - x0) in the carried value, and the other steps add it to
// their own x0.
// CHECK-LABEL: func.func @sample
// CHECK: %[[ZEROS:.*]] = kiln.constant dense<0.000000e+00> : tensor<1x4xf32>
// CHECK: kiln.sample ddim %{{.*}} carry(%[[ZEROS]] : tensor<1x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:[^:]*]]: tensor<1x4xf32>, %[[T:[^:]*]]: tensor<f32>, %[[I:[^:]*]]: index, %[[STORED:[^:]*]]: tensor<1x4xf32>):
// CHECK-NEXT: %[[X0:.*]] = kiln.mul %[[X]], %[[T]]
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[REM:.*]] = arith.remui %[[I]], %[[THREE]]
// CHECK: %[[COMPUTE:.*]] = arith.cmpi eq, %[[REM]], %[[ZERO]]
// CHECK: %[[CHOICE:.*]]:2 = scf.if %[[COMPUTE]] -> (tensor<1x4xf32>, tensor<1x4xf32>) {
// CHECK: kiln.layer_norm %[[X0]]
// CHECK: kiln.layer_norm
// CHECK: kiln.layer_norm
// CHECK: kiln.layer_norm
// CHECK: %[[X2:.*]] = kiln.add
// CHECK: %[[ADDED:.*]] = kiln.sub %[[X2]], %[[X0]]
// CHECK: scf.yield %[[X2]], %[[ADDED]]
// CHECK: } else {
// CHECK: %[[REUSED:.*]] = kiln.add %[[X0]], %[[STORED]]
// CHECK: scf.yield %[[REUSED]], %[[STORED]]
// CHECK: }
// CHECK: kiln.layer_norm %[[CHOICE]]#0
// CHECK: kiln.yield %{{.*}}, %[[CHOICE]]#1 : tensor<1x4xf32>, tensor<1x4xf32>

// From block 1: block 0 runs every step, outside the choice.
// LATER: ^bb0(
// LATER: kiln.layer_norm
// LATER: kiln.layer_norm
// LATER: %[[X1:.*]] = kiln.add
// LATER: arith.constant 2 : index
// LATER: scf.if
// LATER: kiln.layer_norm %[[X1]]
// LATER: } else {
// LATER-NEXT: kiln.add %[[X1]],
// Adaptive: block 0's layer norm (the probe) runs every step, before the
// choice; its relative L1 change from the carried previous probe adds to
// the carried distance, and the blocks run when that reaches 0.25 or on
// the first or last step (3 steps: index 2); running them zeroes it.
// ADAPT: kiln.sample ddim %{{.*}} carry(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4xf32>, tensor<1x4xf32>, tensor<f32>)
// ADAPT-NEXT: ^bb0(%{{[^:]*}}: tensor<1x4xf32>, %{{[^:]*}}: tensor<f32>, %[[I:[^:]*]]: index, %[[STORED:[^:]*]]: tensor<1x4xf32>, %[[PREVIOUS:[^:]*]]: tensor<1x4xf32>, %[[SUM:[^:]*]]: tensor<f32>):
// ADAPT: %[[X0:.*]] = kiln.mul
// ADAPT-NEXT: %[[PROBE:.*]] = kiln.layer_norm %[[X0]]
// ADAPT: %[[DIFF:.*]] = kiln.sub %[[PROBE]], %[[PREVIOUS]]
// ADAPT: %[[ABS:.*]] = kiln.abs %[[DIFF]]
// ADAPT: %[[NUM:.*]] = kiln.reduce_mean %[[ABS]] axes = [0, 1] : tensor<1x4xf32> -> tensor<f32>
// ADAPT: kiln.abs %[[PREVIOUS]]
// ADAPT: %[[DEN:.*]] = kiln.reduce_mean
// ADAPT: %[[CHANGE:.*]] = kiln.div %[[NUM]], %[[DEN]]
// ADAPT: %[[DISTANCE:.*]] = kiln.add %[[SUM]], %[[CHANGE]]
// ADAPT: %[[TOTAL:.*]] = tensor.extract %[[DISTANCE]][]
// ADAPT: %[[LIMIT:.*]] = arith.constant 2.500000e-01 : f32
// ADAPT: %[[OVER:.*]] = arith.cmpf oge, %[[TOTAL]], %[[LIMIT]]
// ADAPT: %[[LAST:.*]] = arith.constant 2 : index
// ADAPT: %[[AT0:.*]] = arith.cmpi eq, %[[I]], %{{.*}}
// ADAPT: %[[ATLAST:.*]] = arith.cmpi eq, %[[I]], %[[LAST]]
// ADAPT: %[[ENDS:.*]] = arith.ori %[[AT0]], %[[ATLAST]]
// ADAPT: %[[DECIDE:.*]] = arith.ori %[[OVER]], %[[ENDS]]
// ADAPT: %[[CHOICE:.*]]:3 = scf.if %[[DECIDE]] -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<f32>) {
// ADAPT: kiln.matmul %[[PROBE]]
// ADAPT: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<f32>
// ADAPT: scf.yield %{{.*}}, %{{.*}}, %[[ZERO]]
// ADAPT: } else {
// ADAPT: scf.yield %{{.*}}, %[[STORED]], %[[DISTANCE]]
// ADAPT: kiln.yield %{{.*}}, %[[CHOICE]]#1, %[[PROBE]], %[[CHOICE]]#2 :
func.func @sample(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %g = kiln.constant dense<1.0> : tensor<4xf32>
  %b = kiln.constant dense<0.0> : tensor<4xf32>
  %w = kiln.constant dense<0.5> : tensor<4x4xf32>
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0, 499.0, 0.0]> : tensor<3xf32> coefficients = dense<1.0> : tensor<3x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %x0 = kiln.mul %x, %t : tensor<1x4xf32>, tensor<f32>
    %n0 = kiln.layer_norm %x0, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
    %a0 = kiln.matmul %n0, %w : tensor<1x4xf32>, tensor<4x4xf32>
    %h0 = kiln.add %x0, %a0 : tensor<1x4xf32>, tensor<1x4xf32>
    %m0 = kiln.layer_norm %h0, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
    %f0 = kiln.matmul %m0, %w : tensor<1x4xf32>, tensor<4x4xf32>
    %x1 = kiln.add %h0, %f0 : tensor<1x4xf32>, tensor<1x4xf32>
    %n1 = kiln.layer_norm %x1, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
    %a1 = kiln.matmul %n1, %w : tensor<1x4xf32>, tensor<4x4xf32>
    %h1 = kiln.add %x1, %a1 : tensor<1x4xf32>, tensor<1x4xf32>
    %m1 = kiln.layer_norm %h1, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
    %f1 = kiln.matmul %m1, %w : tensor<1x4xf32>, tensor<4x4xf32>
    %x2 = kiln.add %h1, %f1 : tensor<1x4xf32>, tensor<1x4xf32>
    %nf = kiln.layer_norm %x2, %g, %b axis = 1 epsilon = 1.0e-05 : tensor<1x4xf32>, tensor<4xf32>, tensor<4xf32>
    %e = kiln.matmul %nf, %w : tensor<1x4xf32>, tensor<4x4xf32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}
