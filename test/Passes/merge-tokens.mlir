// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{tokens=2}))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{tokens=0}))' | FileCheck %s --check-prefix=NONE
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{tokens=2 schedule=decreasing}))' | FileCheck %s --check-prefix=DECREASING
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{per-block=0,3}))' | FileCheck %s --check-prefix=PER-BLOCK
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{per-block=1}))' 2>/dev/null | FileCheck %s --check-prefix=DIT
// RUN: kiln-opt %s -split-input-file '-pass-pipeline=builtin.module(func.func(kiln-merge-tokens{tokens=1 scope=attention}))' 2>/dev/null | FileCheck %s --check-prefix=SCOPE

// Two pre-LN blocks (ViT) on 9 tokens of width 8, 2 heads of depth 4, and
// the class token's row sliced out at the end. With r = 2, block 0 merges
// its stream after the attention's residual add (9 -> 7 tokens), block 1
// the same (7 -> 5); block 1's attention adds log(size) to its scores, and
// the slice reads the stream unmerged twice, back to 9 tokens.
// CHECK-LABEL: func.func @pre_ln
// CHECK: %[[A0:.*]] = kiln.attention %{{.*}} : tensor<1x9x2x4xf32>, tensor<1x2x4x9xf32>, tensor<1x9x2x4xf32> -> tensor<1x9x2x4xf32>
// CHECK: %[[H0:.*]] = kiln.add %arg0,
// CHECK: %[[ONES:.*]] = kiln.constant dense<1.000000e+00> : tensor<1x9xf32>
// CHECK: %[[K0:.*]] = kiln.reduce_mean %{{.*}} axes = [1] : tensor<1x2x4x9xf32> -> tensor<1x4x9xf32>
// CHECK: %[[M0:.*]] = kiln.transpose %[[K0]], perm = [0, 2, 1] : tensor<1x4x9xf32> -> tensor<1x9x4xf32>
// CHECK: %[[D0:.*]], %{{.*}} = kiln.token_match %[[M0]] merged = 2 protected = 1 : tensor<1x9x4xf32> -> tensor<1x9xi64>, tensor<1x7xi64>
// CHECK: %[[X0:.*]], %[[S0:.*]] = kiln.token_merge %[[H0]], %[[ONES]], %[[D0]] : tensor<1x9x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x7x8xf32>, tensor<1x7xf32>
// CHECK: %[[L0:.*]] = kiln.log %[[S0]] : tensor<1x7xf32>
// CHECK: %[[B0:.*]] = kiln.reshape %[[L0]] : tensor<1x7xf32> -> tensor<1x1x1x7xf32>
// CHECK: kiln.layer_norm %[[X0]], {{.*}} : tensor<1x7x8xf32>
// CHECK: kiln.matmul {{.*}} : tensor<1x7x8xf32>, tensor<8x16xf32>
// CHECK: %[[Y0:.*]] = kiln.add %[[X0]], {{.*}} : tensor<1x7x8xf32>, tensor<1x7x8xf32>
// CHECK: kiln.reshape {{.*}} : tensor<1x7x8xf32> -> tensor<1x7x2x4xf32>
// CHECK: kiln.transpose {{.*}} : tensor<1x7x2x4xf32> -> tensor<1x2x4x7xf32>
// CHECK: %[[A1:.*]] = kiln.attention {{.*}} mask %[[B0]] scale = 5.000000e-01 {{.*}} : tensor<1x7x2x4xf32>, tensor<1x2x4x7xf32>, tensor<1x7x2x4xf32>, tensor<1x1x1x7xf32> -> tensor<1x7x2x4xf32>
// CHECK: %[[H1:.*]] = kiln.add %[[Y0]], {{.*}} : tensor<1x7x8xf32>, tensor<1x7x8xf32>
// CHECK: %[[D1:.*]], %{{.*}} = kiln.token_match {{.*}} merged = 2 protected = 1 : tensor<1x7x4xf32> -> tensor<1x7xi64>, tensor<1x5xi64>
// CHECK: %[[X1:.*]], %{{.*}} = kiln.token_merge %[[H1]], %[[S0]], %[[D1]] : {{.*}} -> tensor<1x5x8xf32>, tensor<1x5xf32>
// CHECK: %[[Y1:.*]] = kiln.add %[[X1]], {{.*}} : tensor<1x5x8xf32>, tensor<1x5x8xf32>
// CHECK: %[[F:.*]] = kiln.layer_norm %[[Y1]], {{.*}} : tensor<1x5x8xf32>
// CHECK: %[[U1:.*]] = kiln.token_unmerge %[[F]], %[[D1]] : tensor<1x5x8xf32>, tensor<1x7xi64> -> tensor<1x7x8xf32>
// CHECK: %[[U0:.*]] = kiln.token_unmerge %[[U1]], %[[D0]] : tensor<1x7x8xf32>, tensor<1x9xi64> -> tensor<1x9x8xf32>
// CHECK: kiln.slice %[[U0]] offsets = [0, 0, 0] sizes = [1, 1, 8] strides = [1, 1, 1] : tensor<1x9x8xf32> -> tensor<1x1x8xf32>

// Without merges the function stays as it is.
// NONE-LABEL: func.func @pre_ln
// NONE-NOT: kiln.token_

// Decreasing from 2r = 4 in block 0 to 0 in block 1 (the last).
// DECREASING-LABEL: func.func @pre_ln
// DECREASING: kiln.token_match {{.*}} merged = 4 protected = 1
// DECREASING-NOT: kiln.token_match
// DECREASING: kiln.token_unmerge
// DECREASING-NOT: kiln.token_unmerge
// With one block, that block merges r.
// DECREASING-LABEL: func.func @post_ln
// DECREASING: kiln.token_match {{.*}} merged = 2 protected = 1

// Block by block: none in block 0, 3 in block 1.
// PER-BLOCK-LABEL: func.func @pre_ln
// PER-BLOCK: kiln.token_match {{.*}} merged = 3 protected = 1 : tensor<1x9x4xf32>
// PER-BLOCK-NOT: kiln.token_match
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

// One post-LN block (BERT) over a padding mask, batch 2: the stream merges
// after the norm that follows the attention's residual add, the mask
// marks padding for the match and is gathered to the kept tokens, and the
// function's result is unmerged.
// CHECK-LABEL: func.func @post_ln
// CHECK: %[[N:.*]] = kiln.layer_norm %{{.*}} : tensor<2x6x8xf32>
// CHECK: %[[MASK:.*]] = kiln.reshape %arg1 : tensor<2x1x1x6xf32> -> tensor<2x6xf32>
// CHECK: %[[D:.*]], %[[KEPT:.*]] = kiln.token_match %{{.*}} bias %[[MASK]] merged = 2 protected = 1 : tensor<2x6x4xf32>, tensor<2x6xf32> -> tensor<2x6xi64>, tensor<2x4xi64>
// CHECK: %[[X:.*]], %{{.*}} = kiln.token_merge %[[N]], %{{.*}}, %[[D]] : {{.*}} -> tensor<2x4x8xf32>, tensor<2x4xf32>
// CHECK: kiln.gather_elements %[[MASK]][%[[KEPT]]], axis = 1 : tensor<2x6xf32>, tensor<2x4xi64> -> tensor<2x4xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[X]], %{{.*}} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK: %[[Z:.*]] = kiln.layer_norm %[[Y]], {{.*}} : tensor<2x4x8xf32>
// CHECK: %[[U:.*]] = kiln.token_unmerge %[[Z]], %[[D]] : tensor<2x4x8xf32>, tensor<2x6xi64> -> tensor<2x6x8xf32>
// CHECK: return %[[U]] : tensor<2x6x8xf32>
// Around the attention only (scope=attention): the branch's input (here
// the stream itself) merges by its own rows, nothing protected; the mask
// follows into the attention, the branch's output is unmerged for the
// residual add, which still reads every token of the stream.
// SCOPE-LABEL: func.func @post_ln
// SCOPE: %[[MASK:.*]] = kiln.reshape %arg1 : tensor<2x1x1x6xf32> -> tensor<2x6xf32>
// SCOPE: %[[D:.*]], %[[KEPT:.*]] = kiln.token_match %arg0 bias %[[MASK]] merged = 1 protected = 0 : tensor<2x6x8xf32>, tensor<2x6xf32> -> tensor<2x6xi64>, tensor<2x5xi64>
// SCOPE: %[[X:.*]], %[[S:.*]] = kiln.token_merge %arg0, %{{.*}}, %[[D]] : {{.*}} -> tensor<2x5x8xf32>, tensor<2x5xf32>
// SCOPE: kiln.gather_elements %[[MASK]][%[[KEPT]]], axis = 1 : tensor<2x6xf32>, tensor<2x5xi64> -> tensor<2x5xf32>
// SCOPE: %[[P:.*]] = kiln.matmul %[[X]], %arg2 : tensor<2x5x8xf32>, tensor<8x8xf32>
// SCOPE: kiln.attention {{.*}} -> tensor<2x5x2x4xf32>
// SCOPE: %[[O:.*]] = kiln.matmul %{{.*}}, %arg2 : tensor<2x5x8xf32>, tensor<8x8xf32>
// SCOPE: %[[U:.*]] = kiln.token_unmerge %[[O]], %[[D]] : tensor<2x5x8xf32>, tensor<2x6xi64> -> tensor<2x6x8xf32>
// SCOPE: kiln.add %arg0, %[[U]] : tensor<2x6x8xf32>, tensor<2x6x8xf32>
// SCOPE-NOT: kiln.token_
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

// -----

// DiT blocks: the query is gathered from stacked [3, B, H, N, D]
// projections of the adaLN-modulated norm (`norm * scale + shift`), and
// the attention's gated output goes back on the stream. Block 0 merges
// after its residual add; block 1's modulation, stacked projection and
// gathers are retyped to 6 tokens.
// DIT-LABEL: func.func @dit
// DIT: %[[H0:.*]] = kiln.add %arg0, %{{.*}} : tensor<2x7x8xf32>, tensor<2x7x8xf32>
// DIT: %[[D:.*]], %{{.*}} = kiln.token_match %{{.*}} merged = 1 protected = 1 : tensor<2x7x4xf32> -> tensor<2x7xi64>, tensor<2x6xi64>
// DIT: %[[X:.*]], %{{.*}} = kiln.token_merge %[[H0]], %{{.*}}, %[[D]] : {{.*}} -> tensor<2x6x8xf32>, tensor<2x6xf32>
// DIT: kiln.mul %{{.*}}, %arg1 : tensor<2x6x8xf32>, tensor<2x1x8xf32>
// DIT: kiln.transpose %{{.*}}, perm = [2, 0, 3, 1, 4] : tensor<2x6x3x2x4xf32> -> tensor<3x2x2x6x4xf32>
// DIT: kiln.gather %{{.*}} axis = 0 : tensor<3x2x2x6x4xf32>, tensor<i64> -> tensor<2x2x6x4xf32>
// DIT: kiln.attention {{.*}} -> tensor<2x6x2x4xf32>
// DIT: %[[H1:.*]] = kiln.add %[[X]], %{{.*}} : tensor<2x6x8xf32>, tensor<2x6x8xf32>
// DIT: kiln.token_unmerge %[[H1]], %[[D]] : tensor<2x6x8xf32>, tensor<2x7xi64> -> tensor<2x7x8xf32>
// Around each attention only: each block merges its modulated norm, runs
// its projections and attention on 6 tokens and unmerges the gated output
// for the residual add; the stream keeps 7 tokens.
// SCOPE-LABEL: func.func @dit
// SCOPE: %[[M0:.*]] = kiln.add %{{.*}}, %arg2 : tensor<2x7x8xf32>, tensor<2x1x8xf32>
// SCOPE: %[[D0:.*]], %{{.*}} = kiln.token_match %[[M0]] merged = 1 protected = 0 : tensor<2x7x8xf32> -> tensor<2x7xi64>, tensor<2x6xi64>
// SCOPE: %[[X0:.*]], %{{.*}} = kiln.token_merge %[[M0]], %{{.*}}, %[[D0]] : {{.*}} -> tensor<2x6x8xf32>, tensor<2x6xf32>
// SCOPE: kiln.matmul %[[X0]], %arg4 : tensor<2x6x8xf32>, tensor<8x24xf32>
// SCOPE: kiln.gather %{{.*}} axis = 0 : tensor<3x2x2x6x4xf32>, tensor<i64> -> tensor<2x2x6x4xf32>
// SCOPE: %[[G0:.*]] = kiln.mul %arg3, %{{.*}} : tensor<2x1x8xf32>, tensor<2x6x8xf32>
// SCOPE: %[[U0:.*]] = kiln.token_unmerge %[[G0]], %[[D0]] : tensor<2x6x8xf32>, tensor<2x7xi64> -> tensor<2x7x8xf32>
// SCOPE: %[[H0:.*]] = kiln.add %arg0, %[[U0]] : tensor<2x7x8xf32>, tensor<2x7x8xf32>
// SCOPE: kiln.layer_norm %[[H0]], {{.*}} : tensor<2x7x8xf32>
// SCOPE: kiln.token_match {{.*}} merged = 1 protected = 0 : tensor<2x7x8xf32>
// SCOPE: kiln.token_unmerge {{.*}} -> tensor<2x7x8xf32>
// SCOPE: %[[H1:.*]] = kiln.add %[[H0]], %{{.*}} : tensor<2x7x8xf32>, tensor<2x7x8xf32>
// SCOPE: return %[[H1]] : tensor<2x7x8xf32>
func.func @dit(%x: tensor<2x7x8xf32>, %scale: tensor<2x1x8xf32>,
               %shift: tensor<2x1x8xf32>, %gate: tensor<2x1x8xf32>,
               %w: tensor<8x24xf32>, %wo: tensor<8x8xf32>,
               %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x7x8xf32> {
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %c2 = kiln.constant dense<2> : tensor<i64>
  %n0 = kiln.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-06 : tensor<2x7x8xf32>, tensor<8xf32>, tensor<8xf32>
  %s0 = kiln.mul %n0, %scale : tensor<2x7x8xf32>, tensor<2x1x8xf32>
  %m0 = kiln.add %s0, %shift : tensor<2x7x8xf32>, tensor<2x1x8xf32>
  %p0 = kiln.matmul %m0, %w : tensor<2x7x8xf32>, tensor<8x24xf32>
  %r0 = kiln.reshape %p0 : tensor<2x7x24xf32> -> tensor<2x7x3x2x4xf32>
  %t0 = kiln.transpose %r0, perm = [2, 0, 3, 1, 4] : tensor<2x7x3x2x4xf32> -> tensor<3x2x2x7x4xf32>
  %q0 = kiln.gather %t0[%c0], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %k0 = kiln.gather %t0[%c1], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %v0 = kiln.gather %t0[%c2], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %kt0 = kiln.transpose %k0, perm = [0, 1, 3, 2] : tensor<2x2x7x4xf32> -> tensor<2x2x4x7xf32>
  %a0 = kiln.attention %q0, %kt0, %v0 scale = 0.5 {result_seq_first} : tensor<2x2x7x4xf32>, tensor<2x2x4x7xf32>, tensor<2x2x7x4xf32> -> tensor<2x7x2x4xf32>
  %j0 = kiln.reshape %a0 : tensor<2x7x2x4xf32> -> tensor<2x7x8xf32>
  %o0 = kiln.matmul %j0, %wo : tensor<2x7x8xf32>, tensor<8x8xf32>
  %e0 = kiln.mul %gate, %o0 : tensor<2x1x8xf32>, tensor<2x7x8xf32>
  %h0 = kiln.add %x, %e0 : tensor<2x7x8xf32>, tensor<2x7x8xf32>
  %n1 = kiln.layer_norm %h0, %g, %b axis = 2 epsilon = 1.0e-06 : tensor<2x7x8xf32>, tensor<8xf32>, tensor<8xf32>
  %s1 = kiln.mul %n1, %scale : tensor<2x7x8xf32>, tensor<2x1x8xf32>
  %m1 = kiln.add %s1, %shift : tensor<2x7x8xf32>, tensor<2x1x8xf32>
  %p1 = kiln.matmul %m1, %w : tensor<2x7x8xf32>, tensor<8x24xf32>
  %r1 = kiln.reshape %p1 : tensor<2x7x24xf32> -> tensor<2x7x3x2x4xf32>
  %t1 = kiln.transpose %r1, perm = [2, 0, 3, 1, 4] : tensor<2x7x3x2x4xf32> -> tensor<3x2x2x7x4xf32>
  %q1 = kiln.gather %t1[%c0], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %k1 = kiln.gather %t1[%c1], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %v1 = kiln.gather %t1[%c2], axis = 0 : tensor<3x2x2x7x4xf32>, tensor<i64> -> tensor<2x2x7x4xf32>
  %kt1 = kiln.transpose %k1, perm = [0, 1, 3, 2] : tensor<2x2x7x4xf32> -> tensor<2x2x4x7xf32>
  %a1 = kiln.attention %q1, %kt1, %v1 scale = 0.5 {result_seq_first} : tensor<2x2x7x4xf32>, tensor<2x2x4x7xf32>, tensor<2x2x7x4xf32> -> tensor<2x7x2x4xf32>
  %j1 = kiln.reshape %a1 : tensor<2x7x2x4xf32> -> tensor<2x7x8xf32>
  %o1 = kiln.matmul %j1, %wo : tensor<2x7x8xf32>, tensor<8x8xf32>
  %e1 = kiln.mul %gate, %o1 : tensor<2x1x8xf32>, tensor<2x7x8xf32>
  %h1 = kiln.add %h0, %e1 : tensor<2x7x8xf32>, tensor<2x7x8xf32>
  return %h1 : tensor<2x7x8xf32>
}
