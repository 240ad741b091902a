// RUN: kiln-opt %s '-kiln-capture-sampler=steps=2 sampler=dpm++2m' | FileCheck %s
// RUN: not kiln-opt %s '-kiln-capture-sampler=cfg-scale=4' 2>&1 | FileCheck %s --check-prefix=GUIDED
// GUIDED: error: classifier-free guidance needs a denoiser with class labels and an even batch (conditional and unconditional halves); this one takes no labels

// kiln-capture-sampler on an unconditional denoiser with integer timesteps
// and a learned variance (8 channels, the noise the first 4).
// CHECK-LABEL: func.func @sample(
// CHECK-SAME: %[[NOISE:[^:]*]]: tensor<2x4x2xf32> {kiln.name = "noise"}) -> (tensor<2x4x2xf32> {kiln.name = "sample"})
// CHECK: kiln.sample dpmpp_2m %[[NOISE]]
// CHECK-NEXT: ^bb0(%[[X:[^:]*]]: tensor<2x4x2xf32>, %[[T:[^:]*]]: tensor<f32>
// CHECK-NEXT: %[[I:.*]] = kiln.cast %[[T]] : tensor<f32> -> tensor<i64>
// CHECK-NEXT: %[[TIMES:.*]] = kiln.broadcast %[[I]] : tensor<i64> -> tensor<2xi64>
// CHECK-NEXT: kiln.cast %[[TIMES]]
// CHECK: %[[PREDICTED:.*]] = kiln.mul
// CHECK-NEXT: %[[NOISE_PART:.*]] = kiln.slice %[[PREDICTED]] offsets = [0, 0, 0] sizes = [2, 4, 2] strides = [1, 1, 1] : tensor<2x8x2xf32> -> tensor<2x4x2xf32>
// CHECK-NEXT: kiln.yield %[[NOISE_PART]]
func.func @main(%x: tensor<2x4x2xf32>, %t: tensor<2xi64>) -> tensor<2x8x2xf32> {
  %tf = kiln.cast %t : tensor<2xi64> -> tensor<2xf32>
  %tr = kiln.reshape %tf : tensor<2xf32> -> tensor<2x1x1xf32>
  %d = kiln.concat %x, %x axis = 1 : tensor<2x4x2xf32>, tensor<2x4x2xf32> -> tensor<2x8x2xf32>
  %r = kiln.mul %d, %tr : tensor<2x8x2xf32>, tensor<2x1x1xf32>
  return %r : tensor<2x8x2xf32>
}
