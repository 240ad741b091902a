// RUN: kiln-opt %s '-kiln-cache-block-residuals=interval=3' | FileCheck %s
// RUN: kiln-opt %s '-kiln-cache-block-residuals=interval=2 first=1' | FileCheck %s --check-prefix=LATER
// RUN: kiln-opt %s '-kiln-cache-block-residuals=threshold=0.25' | FileCheck %s --check-prefix=ADAPT
// RUN: kiln-opt %s '-kiln-cache-block-residuals=interval=3 forecast=2' | FileCheck %s --check-prefix=FORECAST
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
// Quadratic forecast: the sample op also carries the residual's first and
// second divided differences (D1, D2) and the steps of the last two
// computations (S0, S1, -1 until then). Computing at step i: D1' = (R' - R)
// / (i - S0), D2' = (D1' - D1) / (i - S1), each 0 while its step is -1;
// the steps shift after the choice. Between: R + D1 (i - S0) + D2 (i - S0)
// (i - S1).
// FORECAST: %[[NONE0:.*]] = kiln.constant dense<-1.000000e+00> : tensor<f32>
// FORECAST: %[[NONE1:.*]] = kiln.constant dense<-1.000000e+00> : tensor<f32>
// FORECAST: kiln.sample ddim %{{.*}} carry(%{{.*}}, %{{.*}}, %{{.*}}, %[[NONE0]], %[[NONE1]] : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<f32>, tensor<f32>)
// FORECAST-NEXT: ^bb0(%{{[^:]*}}: tensor<1x4xf32>, %{{[^:]*}}: tensor<f32>, %[[I:[^:]*]]: index, %[[R:[^:]*]]: tensor<1x4xf32>, %[[D1:[^:]*]]: tensor<1x4xf32>, %[[D2:[^:]*]]: tensor<1x4xf32>, %[[S0:[^:]*]]: tensor<f32>, %[[S1:[^:]*]]: tensor<f32>):
// FORECAST: %[[X0:.*]] = kiln.mul
// FORECAST: %[[COMPUTE:.*]] = arith.cmpi eq
// FORECAST: %[[IINT:.*]] = arith.index_castui %[[I]] : index to i64
// FORECAST: %[[STEP:.*]] = arith.uitofp %[[IINT]] : i64 to f32
// FORECAST: %[[CHOICE:.*]]:4 = scf.if %[[COMPUTE]]
// FORECAST: %[[NEWR:.*]] = kiln.sub %{{.*}}, %[[X0]]
// FORECAST-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// FORECAST-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// FORECAST: %[[AT0:.*]] = tensor.extract %[[S0]][]
// FORECAST: %[[KNOWN0:.*]] = arith.cmpf oge, %[[AT0]], %[[ZERO]]
// FORECAST: %[[GAP0:.*]] = arith.subf %[[STEP]], %[[AT0]]
// FORECAST: %[[INV0:.*]] = arith.divf %[[ONE]], %[[GAP0]]
// FORECAST: %[[F0:.*]] = arith.select %[[KNOWN0]], %[[INV0]], %[[ZERO]]
// FORECAST: %[[DR:.*]] = kiln.sub %[[NEWR]], %[[R]]
// FORECAST: %[[TF0:.*]] = tensor.from_elements %[[F0]]
// FORECAST: %[[NEWD1:.*]] = kiln.mul %[[DR]], %[[TF0]]
// FORECAST: %[[AT1:.*]] = tensor.extract %[[S1]][]
// FORECAST: %[[KNOWN1:.*]] = arith.cmpf oge, %[[AT1]], %[[ZERO]]
// FORECAST: %[[GAP1:.*]] = arith.subf %[[STEP]], %[[AT1]]
// FORECAST: %[[INV1:.*]] = arith.divf %[[ONE]], %[[GAP1]]
// FORECAST: %[[F1:.*]] = arith.select %[[KNOWN1]], %[[INV1]], %[[ZERO]]
// FORECAST: %[[DD:.*]] = kiln.sub %[[NEWD1]], %[[D1]]
// FORECAST: %[[TF1:.*]] = tensor.from_elements %[[F1]]
// FORECAST: %[[NEWD2:.*]] = kiln.mul %[[DD]], %[[TF1]]
// FORECAST: scf.yield %{{.*}}, %[[NEWR]], %[[NEWD1]], %[[NEWD2]]
// FORECAST: } else {
// FORECAST: %[[B0:.*]] = tensor.extract %[[S0]][]
// FORECAST: %[[P1:.*]] = arith.subf %[[STEP]], %[[B0]]
// FORECAST: %[[TP1:.*]] = tensor.from_elements %[[P1]]
// FORECAST: %[[T1:.*]] = kiln.mul %[[D1]], %[[TP1]]
// FORECAST: %[[SUM1:.*]] = kiln.add %[[R]], %[[T1]]
// FORECAST: %[[B1:.*]] = tensor.extract %[[S1]][]
// FORECAST: %[[G1:.*]] = arith.subf %[[STEP]], %[[B1]]
// FORECAST: %[[P2:.*]] = arith.mulf %[[P1]], %[[G1]]
// FORECAST: %[[TP2:.*]] = tensor.from_elements %[[P2]]
// FORECAST: %[[T2:.*]] = kiln.mul %[[D2]], %[[TP2]]
// FORECAST: %[[SUM2:.*]] = kiln.add %[[SUM1]], %[[T2]]
// FORECAST: %[[OUT:.*]] = kiln.add %[[X0]], %[[SUM2]]
// FORECAST: scf.yield %[[OUT]], %[[R]], %[[D1]], %[[D2]]
// FORECAST: }
// FORECAST: %[[OLD0:.*]] = tensor.extract %[[S0]][]
// FORECAST: %[[NEWS0:.*]] = arith.select %[[COMPUTE]], %[[STEP]], %[[OLD0]] : f32
// FORECAST: %[[TS0:.*]] = tensor.from_elements %[[NEWS0]]
// FORECAST: %[[OLD1:.*]] = tensor.extract %[[S1]][]
// FORECAST: %[[NEWS1:.*]] = arith.select %[[COMPUTE]], %[[OLD0]], %[[OLD1]] : f32
// FORECAST: %[[TS1:.*]] = tensor.from_elements %[[NEWS1]]
// FORECAST: kiln.yield %{{.*}}, %[[CHOICE]]#1, %[[CHOICE]]#2, %[[CHOICE]]#3, %[[TS0]], %[[TS1]] :
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
