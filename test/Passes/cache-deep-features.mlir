// RUN: kiln-opt %s '-kiln-cache-deep-features=interval=3' | FileCheck %s
// RUN: kiln-opt %s '-kiln-cache-deep-features=interval=2 forecast=1' | FileCheck %s --check-prefix=FORECAST
// RUN: not kiln-opt %s '-kiln-cache-deep-features=branch=1' 2>&1 | FileCheck %s --check-prefix=BRANCH
// BRANCH: error: cannot cache the deep features of skip concatenation 1 (numbered from the outermost): the denoiser has 1 (channel concatenations of two feature maps)

// A sampler step with a two-level UNet: the first level's output (the
// skip) goes down and comes back as the deep features, joined to the skip
// along the channels. The deep path (two convolutions and a scaling, used
// by nothing else) runs on steps 0, 3, 6, ... and stores its features in
// the carried value; the steps between take the stored ones. The first
// level and what follows the concatenation run every step.
// CHECK-LABEL: func.func @sample
// CHECK: %[[ZEROS:.*]] = kiln.constant dense<0.000000e+00> : tensor<1x2x4x4xf32>
// CHECK: kiln.sample ddim %{{.*}} carry(%[[ZEROS]] : tensor<1x2x4x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:[^:]*]]: tensor<1x2x4x4xf32>, %[[T:[^:]*]]: tensor<f32>, %[[I:[^:]*]]: index, %[[STORED:[^:]*]]: tensor<1x2x4x4xf32>):
// CHECK-NEXT: %[[X0:.*]] = kiln.mul %[[X]], %[[T]]
// CHECK-NEXT: %[[FIRST:.*]] = kiln.conv2d %[[X0]]
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[REM:.*]] = arith.remui %[[I]], %[[THREE]]
// CHECK: %[[COMPUTE:.*]] = arith.cmpi eq, %[[REM]], %[[ZERO]]
// CHECK: %[[CHOICE:.*]]:2 = scf.if %[[COMPUTE]] -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
// CHECK-NEXT: %[[DOWN:.*]] = kiln.conv2d %[[FIRST]]
// CHECK-NEXT: %[[BACK:.*]] = kiln.conv2d %[[DOWN]]
// CHECK-NEXT: %[[DEEP:.*]] = kiln.mul %[[BACK]], %[[T]]
// CHECK-NEXT: scf.yield %[[DEEP]], %[[DEEP]]
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[STORED]], %[[STORED]]
// CHECK-NEXT: }
// CHECK: %[[CAT:.*]] = kiln.concat %[[CHOICE]]#0, %[[FIRST]] axis = 1
// CHECK: %[[OUT:.*]] = kiln.conv2d %[[CAT]]
// CHECK: kiln.yield %[[OUT]], %[[CHOICE]]#1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>

// Linear forecast: the features' first divided difference (D1) and the
// step they last ran at (S0) are carried too; a skipped step takes
// F + D1 (i - S0).
// FORECAST: kiln.sample ddim %{{.*}} carry(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<f32>)
// FORECAST-NEXT: ^bb0(%{{[^:]*}}: tensor<1x2x4x4xf32>, %{{[^:]*}}: tensor<f32>, %[[I:[^:]*]]: index, %[[F:[^:]*]]: tensor<1x2x4x4xf32>, %[[D1:[^:]*]]: tensor<1x2x4x4xf32>, %[[S0:[^:]*]]: tensor<f32>):
// FORECAST: %[[STEP:.*]] = arith.uitofp
// FORECAST: %[[CHOICE:.*]]:3 = scf.if
// FORECAST: %[[DEEP:.*]] = kiln.mul
// FORECAST: %[[CHANGE:.*]] = kiln.sub %[[DEEP]], %[[F]]
// FORECAST: %[[NEWD1:.*]] = kiln.mul %[[CHANGE]]
// FORECAST: scf.yield %[[DEEP]], %[[DEEP]], %[[NEWD1]]
// FORECAST: } else {
// FORECAST: %[[AT:.*]] = tensor.extract %[[S0]][]
// FORECAST: %[[GAP:.*]] = arith.subf %[[STEP]], %[[AT]]
// FORECAST: %[[TGAP:.*]] = tensor.from_elements %[[GAP]]
// FORECAST: %[[TERM:.*]] = kiln.mul %[[D1]], %[[TGAP]]
// FORECAST: %[[PREDICTED:.*]] = kiln.add %[[F]], %[[TERM]]
// FORECAST: scf.yield %[[PREDICTED]], %[[F]], %[[D1]]
// FORECAST: kiln.concat %[[CHOICE]]#0
func.func @sample(%n: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<2x2x3x3xf32>
  %w4 = kiln.constant dense<0.25> : tensor<2x4x3x3xf32>
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0, 499.0, 0.0]> : tensor<3xf32> coefficients = dense<1.0> : tensor<3x5xf32> : tensor<1x2x4x4xf32> {
  ^bb0(%x: tensor<1x2x4x4xf32>, %t: tensor<f32>, %i: index):
    %x0 = kiln.mul %x, %t : tensor<1x2x4x4xf32>, tensor<f32>
    %first = kiln.conv2d %x0, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
    %down = kiln.conv2d %first, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
    %back = kiln.conv2d %down, %w strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
    %deep = kiln.mul %back, %t : tensor<1x2x4x4xf32>, tensor<f32>
    %cat = kiln.concat %deep, %first axis = 1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x4x4x4xf32>
    %out = kiln.conv2d %cat, %w4 strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 1 : tensor<1x4x4x4xf32>, tensor<2x4x3x3xf32> -> tensor<1x2x4x4xf32>
    kiln.yield %out : tensor<1x2x4x4xf32>
  }
  return %s : tensor<1x2x4x4xf32>
}
