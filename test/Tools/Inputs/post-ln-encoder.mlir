// One post-LN (BERT) block over a padding mask, for merge-tokens.test and
// prune-tokens.test.
func.func @post_ln(%x: tensor<2x6x8xf32>, %mask: tensor<2x1x1x6xf32>,
                   %w: tensor<8x8xf32>, %w1: tensor<8x16xf32>,
                   %w2: tensor<16x8xf32>, %g: tensor<8xf32>,
                   %b: tensor<8xf32>) -> tensor<2x6x8xf32> {
  %p = kiln.matmul %x, %w : tensor<2x6x8xf32>, tensor<8x8xf32>
  %q = kiln.reshape %p : tensor<2x6x8xf32> -> tensor<2x6x2x4xf32>
  %k = kiln.transpose %q, perm = [0, 2, 3, 1] : tensor<2x6x2x4xf32> -> tensor<2x2x4x6xf32>
  %a = kiln.attention %q, %k, %q mask %mask scale = 0.5 {query_seq_first, result_seq_first, value_seq_first} : tensor<2x6x2x4xf32>, tensor<2x2x4x6xf32>, tensor<2x6x2x4xf32>, tensor<2x1x1x6xf32> -> tensor<2x6x2x4xf32>
  %r = kiln.reshape %a : tensor<2x6x2x4xf32> -> tensor<2x6x8xf32>
  %o = kiln.matmul %r, %w : tensor<2x6x8xf32>, tensor<8x8xf32>
  %h = kiln.add %x, %o : tensor<2x6x8xf32>, tensor<2x6x8xf32>
  %n = kiln.layer_norm %h, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<2x6x8xf32>, tensor<8xf32>, tensor<8xf32>
  %f = kiln.matmul %n, %w1 : tensor<2x6x8xf32>, tensor<8x16xf32>
  %e = kiln.erf %f : tensor<2x6x16xf32>
  %g2 = kiln.matmul %e, %w2 : tensor<2x6x16xf32>, tensor<16x8xf32>
  %y = kiln.add %n, %g2 : tensor<2x6x8xf32>, tensor<2x6x8xf32>
  %z = kiln.layer_norm %y, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<2x6x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %z : tensor<2x6x8xf32>
}
