// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-prune-tokens{keep-rate=0.25 blocks=0,1}))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-prune-tokens{keep-rate=0.25}))' | FileCheck %s --check-prefix=DEFAULT
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-prune-tokens{per-block=-1,3 importance=key-norm}))' | FileCheck %s --check-prefix=KEY-NORM

// Two pre-LN blocks (ViT) on 9 tokens of width 8, 2 heads of depth 4, and
// the class token's row sliced out at the end. With keep-rate 0.25 in
// blocks 0 and 1, block 0 keeps the class token and ceil(0.25 * 8) = 2
// others and fuses the rest into one token (9 -> 4), block 1 keeps 1 of 3
// (4 -> 3). The class token's attention is recomputed from its query row
// and the attention's keys (block 1's with the log(size) bias its
// attention adds), and the slice reads the stream back at 9 tokens.
// CHECK-LABEL: func.func @pre_ln
// CHECK: %[[Q0:.*]] = kiln.reshape {{.*}} : tensor<1x9x8xf32> -> tensor<1x9x2x4xf32>
// CHECK: %[[KT0:.*]] = kiln.transpose %[[Q0]]
// CHECK: %[[H0:.*]] = kiln.add %arg0,
// CHECK: %[[ONES:.*]] = kiln.constant dense<1.000000e+00> : tensor<1x9xf32>
// CHECK: %[[CQ0:.*]] = kiln.slice %[[Q0]] offsets = [0, 0, 0, 0] sizes = [1, 1, 2, 4] strides = [1, 1, 1, 1] : tensor<1x9x2x4xf32> -> tensor<1x1x2x4xf32>
// CHECK: %[[CQ0R:.*]] = kiln.reshape %[[CQ0]] : tensor<1x1x2x4xf32> -> tensor<1x2x1x4xf32>
// CHECK: %[[S0:.*]] = kiln.matmul %[[CQ0R]], %[[KT0]] : tensor<1x2x1x4xf32>, tensor<1x2x4x9xf32>
// CHECK: %[[SCALE:.*]] = kiln.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[SS0:.*]] = kiln.mul %[[S0]], %[[SCALE]]
// CHECK: %[[P0:.*]] = kiln.softmax %[[SS0]], axis = 3 : tensor<1x2x1x9xf32>
// CHECK: %[[I0:.*]] = kiln.reduce_mean %[[P0]] axes = [1, 2] : tensor<1x2x1x9xf32> -> tensor<1x9xf32>
// CHECK: %[[D0:.*]], %{{.*}} = kiln.token_select %[[I0]] kept = 2 protected = 1 : tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x4xi64>
// CHECK: %[[X0:.*]], %[[Z0:.*]] = kiln.token_merge %[[H0]], %[[ONES]], %[[D0]] : tensor<1x9x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x4x8xf32>, tensor<1x4xf32>
// CHECK: %[[L0:.*]] = kiln.log %[[Z0]] : tensor<1x4xf32>
// CHECK: %[[B0:.*]] = kiln.reshape %[[L0]] : tensor<1x4xf32> -> tensor<1x1x1x4xf32>
// CHECK: kiln.attention {{.*}} mask %[[B0]] {{.*}} -> tensor<1x4x2x4xf32>
// CHECK: kiln.add %{{.*}}, %[[B0]] : tensor<1x2x1x4xf32>, tensor<1x1x1x4xf32>
// CHECK: kiln.softmax
// CHECK: %[[D1:.*]], %{{.*}} = kiln.token_select %{{.*}} kept = 1 protected = 1 : tensor<1x4xf32> -> tensor<1x4xi64>, tensor<1x3xi64>
// CHECK: kiln.token_merge %{{.*}}, %[[Z0]], %[[D1]] : {{.*}} -> tensor<1x3x8xf32>, tensor<1x3xf32>
// CHECK: %[[U1:.*]] = kiln.token_unmerge %{{.*}}, %[[D1]] : tensor<1x3x8xf32>, tensor<1x4xi64> -> tensor<1x4x8xf32>
// CHECK: %[[U0:.*]] = kiln.token_unmerge %[[U1]], %[[D0]] : tensor<1x4x8xf32>, tensor<1x9xi64> -> tensor<1x9x8xf32>
// CHECK: kiln.slice %[[U0]] offsets = [0, 0, 0] sizes = [1, 1, 8]

// By default only every third block from the fourth prunes: two blocks
// stay as they are.
// DEFAULT-LABEL: func.func @pre_ln
// DEFAULT-NOT: kiln.token_

// Key norms, block by block: block 0 does not prune, block 1 keeps 3 of
// 9 tokens (none protected) and fuses the other 6.
// KEY-NORM-LABEL: func.func @pre_ln
// KEY-NORM: %[[KEYS:.*]] = kiln.reduce_mean %{{.*}} axes = [1] : tensor<1x2x4x9xf32> -> tensor<1x4x9xf32>
// KEY-NORM: %[[METRIC:.*]] = kiln.transpose %[[KEYS]]
// KEY-NORM: %[[SQUARES:.*]] = kiln.mul %[[METRIC]], %[[METRIC]] : tensor<1x9x4xf32>, tensor<1x9x4xf32>
// KEY-NORM: %[[NORMS:.*]] = kiln.reduce_sum %[[SQUARES]] axes = [2] : tensor<1x9x4xf32> -> tensor<1x9xf32>
// KEY-NORM: kiln.token_select %[[NORMS]] kept = 3 protected = 0 : tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x4xi64>
// KEY-NORM-NOT: kiln.token_select
func.func @pre_ln(%x: tensor<1x9x8xf32>, %w: tensor<8x8xf32>,
                  %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>,
                  %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<1x1x8xf32> {
  %n0 = kiln.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<1x9x8xf32>, tensor<8xf32>, tensor<8xf32>
  %p0 = kiln.matmul %n0, %w : tensor<1x9x8xf32>, tensor<8x8xf32>
  %q0 = kiln.reshape %p0 : tensor<1x9x8xf32> -> tensor<1x9x2x4xf32>
  %k0 = kiln.transpose %q0, perm = [0, 2, 3, 1] : tensor<1x9x2x4xf32> -> tensor<1x2x4x9xf32>
  %a0 = kiln.attention %q0, %k0, %q0 scale = 0.5 {query_seq_first, result_seq_first, value_seq_first} : tensor<1x9x2x4xf32>, tensor<1x2x4x9xf32>, tensor<1x9x2x4xf32> -> tensor<1x9x2x4xf32>
  %r0 = kiln.reshape %a0 : tensor<1x9x2x4xf32> -> tensor<1x9x8xf32>
  %o0 = kiln.matmul %r0, %w : tensor<1x9x8xf32>, tensor<8x8xf32>
  %h0 = kiln.add %x, %o0 : tensor<1x9x8xf32>, tensor<1x9x8xf32>
  %m0 = kiln.layer_norm %h0, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<1x9x8xf32>, tensor<8xf32>, tensor<8xf32>
  %f0 = kiln.matmul %m0, %w1 : tensor<1x9x8xf32>, tensor<8x16xf32>
  %e0 = kiln.erf %f0 : tensor<1x9x16xf32>
  %g0 = kiln.matmul %e0, %w2 : tensor<1x9x16xf32>, tensor<16x8xf32>
  %y0 = kiln.add %h0, %g0 : tensor<1x9x8xf32>, tensor<1x9x8xf32>
  %n1 = kiln.layer_norm %y0, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<1x9x8xf32>, tensor<8xf32>, tensor<8xf32>
  %p1 = kiln.matmul %n1, %w : tensor<1x9x8xf32>, tensor<8x8xf32>
  %q1 = kiln.reshape %p1 : tensor<1x9x8xf32> -> tensor<1x9x2x4xf32>
  %k1 = kiln.transpose %q1, perm = [0, 2, 3, 1] : tensor<1x9x2x4xf32> -> tensor<1x2x4x9xf32>
  %a1 = kiln.attention %q1, %k1, %q1 scale = 0.5 {query_seq_first, result_seq_first, value_seq_first} : tensor<1x9x2x4xf32>, tensor<1x2x4x9xf32>, tensor<1x9x2x4xf32> -> tensor<1x9x2x4xf32>
  %r1 = kiln.reshape %a1 : tensor<1x9x2x4xf32> -> tensor<1x9x8xf32>
  %o1 = kiln.matmul %r1, %w : tensor<1x9x8xf32>, tensor<8x8xf32>
  %h1 = kiln.add %y0, %o1 : tensor<1x9x8xf32>, tensor<1x9x8xf32>
  %m1 = kiln.layer_norm %h1, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<1x9x8xf32>, tensor<8xf32>, tensor<8xf32>
  %f1 = kiln.matmul %m1, %w1 : tensor<1x9x8xf32>, tensor<8x16xf32>
  %e1 = kiln.erf %f1 : tensor<1x9x16xf32>
  %g1 = kiln.matmul %e1, %w2 : tensor<1x9x16xf32>, tensor<16x8xf32>
  %y1 = kiln.add %h1, %g1 : tensor<1x9x8xf32>, tensor<1x9x8xf32>
  %fin = kiln.layer_norm %y1, %g, %b axis = 2 epsilon = 1.0e-05 : tensor<1x9x8xf32>, tensor<8xf32>, tensor<8xf32>
  %cls = kiln.slice %fin offsets = [0, 0, 0] sizes = [1, 1, 8] strides = [1, 1, 1] : tensor<1x9x8xf32> -> tensor<1x1x8xf32>
  return %cls : tensor<1x1x8xf32>
}

// -----

// One post-LN block (BERT) over a padding mask, batch 2: the class token's
// attention adds the mask, padding has a fused slot of its own (1 + 2 + 2
// slots), and the mask is gathered to the slots.
// CHECK-LABEL: func.func @post_ln
// CHECK: %[[N:.*]] = kiln.layer_norm %{{.*}} : tensor<2x6x8xf32>
// CHECK: %[[MASK:.*]] = kiln.reshape %arg1 : tensor<2x1x1x6xf32> -> tensor<2x6xf32>
// CHECK: %[[BIAS:.*]] = kiln.reshape %[[MASK]] : tensor<2x6xf32> -> tensor<2x1x1x6xf32>
// CHECK: kiln.add %{{.*}}, %[[BIAS]] : tensor<2x2x1x6xf32>, tensor<2x1x1x6xf32>
// CHECK: %[[D:.*]], %[[KEPT:.*]] = kiln.token_select %{{.*}} bias %[[MASK]] kept = 2 protected = 1 : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6xi64>, tensor<2x5xi64>
// CHECK: %[[X:.*]], %{{.*}} = kiln.token_merge %[[N]], %{{.*}}, %[[D]] : {{.*}} -> tensor<2x5x8xf32>, tensor<2x5xf32>
// CHECK: kiln.gather_elements %[[MASK]][%[[KEPT]]], axis = 1 : tensor<2x6xf32>, tensor<2x5xi64> -> tensor<2x5xf32>
// CHECK: %[[Z:.*]] = kiln.layer_norm {{.*}} : tensor<2x5x8xf32>
// CHECK: %[[U:.*]] = kiln.token_unmerge %[[Z]], %[[D]] : tensor<2x5x8xf32>, tensor<2x6xi64> -> tensor<2x6x8xf32>
// CHECK: return %[[U]] : tensor<2x6x8xf32>
// KEY-NORM-LABEL: func.func @post_ln
// KEY-NORM-NOT: kiln.token_
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
