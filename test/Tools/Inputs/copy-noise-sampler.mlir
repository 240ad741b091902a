// A sampler whose steps keep the latent (c0 = 1, c1 = 0): its sample is
// the noise.
func.func @sample(%noise: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %s = kiln.sample ddim %noise noise_scale = 1.0 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<[[1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0]]> : tensor<2x5xf32> : tensor<64x64xf32> {
  ^bb0(%x: tensor<64x64xf32>, %t: tensor<f32>, %i: index):
    %e = kiln.mul %x, %t : tensor<64x64xf32>, tensor<f32>
    kiln.yield %e : tensor<64x64xf32>
  }
  return %s : tensor<64x64xf32>
}
