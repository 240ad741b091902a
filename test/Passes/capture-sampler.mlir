// RUN: kiln-opt %s '-kiln-capture-sampler=steps=2 cfg-scale=3' | FileCheck %s
// RUN: kiln-opt %s '-kiln-capture-sampler=steps=3 sampler=euler' | FileCheck %s --check-prefix=PLAIN
// RUN: not kiln-opt %s '-kiln-capture-sampler=cfg-scale=2 entry=main' 2>&1 | FileCheck %s --check-prefix=TAKEN
// RUN: not kiln-opt %s '-kiln-capture-sampler=steps=0' 2>&1 | FileCheck %s --check-prefix=STEPS
// TAKEN: error: cannot add the sampler entry 'main': the module already has a symbol of that name
// STEPS: error: a sampler needs at least one step

// A conditional denoiser (batch 2): the labels index an 11-row table, so
// the null label is 10. With guidance the sample entry takes one latent and
// one label; the labels' embedding doesn't depend on the step and leaves
// the loop; each step batches [x; x] with the labels [label; 10] and
// guides the halves of the prediction.
// CHECK-LABEL: func.func @main(
// CHECK-LABEL: func.func @sample(
// CHECK-SAME: %[[NOISE:[^:]*]]: tensor<1x4xf32> {kiln.name = "noise"}, %[[LABEL:[^:]*]]: tensor<1xi64> {kiln.name = "labels"}) -> (tensor<1x4xf32> {kiln.name = "sample"})
// CHECK: %[[NULL:.*]] = kiln.constant dense<10> : tensor<1xi64>
// CHECK: %[[LABELS:.*]] = kiln.concat %[[LABEL]], %[[NULL]] axis = 0
// CHECK: %[[EMBEDDED:.*]] = kiln.gather %{{.*}}[%[[LABELS]]], axis = 0
// CHECK: %[[SCALE:.*]] = kiln.constant dense<3.000000e+00> : tensor<f32>
// CHECK: %[[S:.*]] = kiln.sample ddim %[[NOISE]] noise_scale = 1.000000e+00 timesteps = dense<[9.990000e+02, 5.000000e+02]> : tensor<2xf32> coefficients = dense<{{.*}}> : tensor<2x5xf32> : tensor<1x4xf32> {
// CHECK-NEXT: ^bb0(%[[X:[^:]*]]: tensor<1x4xf32>, %[[T:[^:]*]]: tensor<f32>, %{{[^:]*}}: index):
// CHECK-NEXT: %[[BATCH:.*]] = kiln.concat %[[X]], %[[X]] axis = 0
// CHECK-NEXT: %[[TIMES:.*]] = kiln.broadcast %[[T]] : tensor<f32> -> tensor<2xf32>
// CHECK-NEXT: %[[COLUMN:.*]] = kiln.reshape %[[TIMES]]
// CHECK-NEXT: %[[SCALED:.*]] = kiln.mul %[[BATCH]], %[[COLUMN]]
// CHECK-NEXT: %[[E:.*]] = kiln.add %[[SCALED]], %[[EMBEDDED]]
// CHECK-NEXT: %[[C:.*]] = kiln.slice %[[E]] offsets = [0, 0] sizes = [1, 4]
// CHECK-NEXT: %[[U:.*]] = kiln.slice %[[E]] offsets = [1, 0] sizes = [1, 4]
// CHECK-NEXT: %[[D:.*]] = kiln.sub %[[C]], %[[U]]
// CHECK-NEXT: %[[G:.*]] = kiln.mul %[[D]], %[[SCALE]]
// CHECK-NEXT: %[[GUIDED:.*]] = kiln.add %[[U]], %[[G]]
// CHECK-NEXT: kiln.yield %[[GUIDED]] : tensor<1x4xf32>
// CHECK: return %[[S]]

// Unguided, the sample entry takes the denoiser's batch; Euler's first
// step starts at sigma(999), its last step at timestep 0.
// PLAIN-LABEL: func.func @sample(
// PLAIN-SAME: tensor<2x4xf32> {kiln.name = "noise"}, %{{[^:]*}}: tensor<2xi64> {kiln.name = "labels"})
// PLAIN: kiln.sample euler %{{.*}} noise_scale = {{0.99[0-9]*}} timesteps = dense<[9.990000e+02, {{.*}}, 0.000000e+00]> : tensor<3xf32>
// PLAIN-NOT: kiln.concat
// PLAIN: kiln.yield
func.func @main(%x: tensor<2x4xf32>, %t: tensor<2xf32>, %y: tensor<2xi64>) -> tensor<2x4xf32> {
  %table = kiln.constant dense<0.5> : tensor<11x4xf32>
  %e = kiln.gather %table[%y], axis = 0 : tensor<11x4xf32>, tensor<2xi64> -> tensor<2x4xf32>
  %t2 = kiln.reshape %t : tensor<2xf32> -> tensor<2x1xf32>
  %a = kiln.mul %x, %t2 : tensor<2x4xf32>, tensor<2x1xf32>
  %r = kiln.add %a, %e : tensor<2x4xf32>, tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
