// RUN: kiln-opt %s -split-input-file -kiln-expose-past-keys-values=max-context=16 -verify-diagnostics | FileCheck %s

// A one-layer plain decoder (token ids to scores' weighted values): the
// keys and values get past inputs, concatenated before the new rows and
// returned as present outputs; the causal mask's window starts at the past
// length along the queries and spans past + seq keys; the position range
// starts at the past length.
// CHECK: module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>, #kiln.dim<"past_seq", 0, 16>, #kiln.dim<"past_seq + seq", 1, 24, size = #{{.*}} of ["past_seq", "seq"]>]}
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[IDS:.*]]: tensor<1x?xi64> {kiln.dim_names = ["", "seq"], kiln.name = "ids"}
// CHECK-SAME: %[[PK:[^:]*]]: tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "past_seq", ""], kiln.name = "past_key_values.0.key"}
// CHECK-SAME: %[[PV:[^:]*]]: tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "past_seq", ""], kiln.name = "past_key_values.0.value"}
// CHECK-SAME: -> (tensor<1x2x?x4xf32> {kiln.name = "out"},
// CHECK-SAME: tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "past_seq + seq", ""], kiln.name = "present.0.key"},
// CHECK-SAME: tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "past_seq + seq", ""], kiln.name = "present.0.value"})
// CHECK: %[[SEQ:.*]] = tensor.dim %[[IDS]], %c1
// CHECK: %[[PAST:.*]] = tensor.dim %[[PK]], %c2
// CHECK: %[[PAST64:.*]] = arith.index_cast %[[PAST]] : index to i64
// CHECK: %[[PASTT:.*]] = tensor.from_elements %[[PAST64]]
// CHECK: %[[SHIFT:.*]] = kiln.mul %[[PASTT]], %[[STEP:.*]] : tensor<i64>, tensor<i64>
// CHECK: %[[START:.*]] = kiln.add %[[ZERO:.*]], %[[SHIFT]]
// CHECK: kiln.range %[[START]], %[[STEP]] size %[[SEQ]]
// CHECK: %[[KT:.*]] = kiln.transpose %{{.*}}, perm = [0, 2, 3, 1]
// CHECK: %[[K:.*]] = kiln.transpose %[[KT]], perm = [0, 1, 3, 2] : tensor<1x2x4x?xf32> -> tensor<1x2x?x4xf32>
// CHECK: %[[PRESENTK:.*]] = kiln.concat %[[PK]], %[[K]] axis = 2
// CHECK: %[[KEYS:.*]] = kiln.transpose %[[PRESENTK]], perm = [0, 1, 3, 2]
// CHECK: kiln.matmul %{{.*}}, %[[KEYS]]
// CHECK: %[[ROWS:.*]] = kiln.dynamic_slice %{{.*}} axes = [2] offsets(%[[PAST]]) sizes(%[[SEQ]])
// CHECK: %[[TOTAL:.*]] = arith.addi %[[PAST]], %[[SEQ]]
// CHECK: kiln.dynamic_slice %[[ROWS]] axes = [3] offsets(%c0) sizes(%[[TOTAL]])
// CHECK: kiln.softmax
// CHECK: %[[PRESENTV:.*]] = kiln.concat %[[PV]], %{{.*}} axis = 2
// CHECK: kiln.matmul %{{.*}}, %[[PRESENTV]]
// CHECK: return %{{.*}}, %[[PRESENTK]], %[[PRESENTV]]
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>]} {
  func.func @main(%ids: tensor<1x?xi64> {kiln.dim_names = ["", "seq"], kiln.name = "ids"})
      -> (tensor<1x2x?x4xf32> {kiln.name = "out"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %seq = tensor.dim %ids, %c1 : tensor<1x?xi64>
    %zero = kiln.constant dense<0> : tensor<i64>
    %one = kiln.constant dense<1> : tensor<i64>
    %positions = kiln.range %zero, %one size %seq : tensor<i64>, tensor<i64> -> tensor<?xi64>
    %rows = kiln.reshape %positions dims(%seq) : tensor<?xi64> -> tensor<1x?xi64>
    %table = kiln.constant dense<1.0> : tensor<16x8xf32>
    %x = kiln.gather %table[%rows], axis = 0 : tensor<16x8xf32>, tensor<1x?xi64> -> tensor<1x?x8xf32>
    %heads = kiln.reshape %x dims(%seq) : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
    %q = kiln.transpose %heads, perm = [0, 2, 1, 3] : tensor<1x?x2x4xf32> -> tensor<1x2x?x4xf32>
    %kt = kiln.transpose %heads, perm = [0, 2, 3, 1] : tensor<1x?x2x4xf32> -> tensor<1x2x4x?xf32>
    %scores = kiln.matmul %q, %kt : tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>
    %causal = kiln.constant dense<1.0> : tensor<1x1x16x16xf32>
    %r = kiln.dynamic_slice %causal axes = [2] offsets(%c0) sizes(%seq) : tensor<1x1x16x16xf32> -> tensor<1x1x?x16xf32>
    %window = kiln.dynamic_slice %r axes = [3] offsets(%c0) sizes(%seq) : tensor<1x1x?x16xf32> -> tensor<1x1x?x?xf32>
    %fzero = kiln.constant dense<0.0> : tensor<f32>
    %hidden = kiln.equal %window, %fzero : tensor<1x1x?x?xf32>, tensor<f32>
    %fill = kiln.constant dense<0xFF800000> : tensor<f32>
    %masked = kiln.select %hidden, %fill, %scores : tensor<1x1x?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>
    %p = kiln.softmax %masked, axis = 3 : tensor<1x2x?x?xf32>
    %out = kiln.matmul %p, %q : tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>
    return %out : tensor<1x2x?x4xf32>
  }
}

// -----

// A mask whose window covers fewer positions than the cache will hold.
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>]} {
  func.func @main(%ids: tensor<1x?xi64> {kiln.dim_names = ["", "seq"], kiln.name = "ids"})
      -> (tensor<1x2x?x4xf32> {kiln.name = "out"}) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %seq = tensor.dim %ids, %c1 : tensor<1x?xi64>
    %table = kiln.constant dense<1.0> : tensor<16x8xf32>
    %x = kiln.gather %table[%ids], axis = 0 : tensor<16x8xf32>, tensor<1x?xi64> -> tensor<1x?x8xf32>
    %heads = kiln.reshape %x dims(%seq) : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
    %q = kiln.transpose %heads, perm = [0, 2, 1, 3] : tensor<1x?x2x4xf32> -> tensor<1x2x?x4xf32>
    %kt = kiln.transpose %heads, perm = [0, 2, 3, 1] : tensor<1x?x2x4xf32> -> tensor<1x2x4x?xf32>
    %scores = kiln.matmul %q, %kt : tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>
    %causal = kiln.constant dense<0.0> : tensor<1x1x8x8xf32>
    %r = kiln.dynamic_slice %causal axes = [2] offsets(%c0) sizes(%seq) : tensor<1x1x8x8xf32> -> tensor<1x1x?x8xf32>
    // expected-error @+1 {{the mask covers 8 positions, fewer than the 16 of --max-context}}
    %window = kiln.dynamic_slice %r axes = [3] offsets(%c0) sizes(%seq) : tensor<1x1x?x8xf32> -> tensor<1x1x?x?xf32>
    %masked = kiln.add %scores, %window : tensor<1x2x?x?xf32>, tensor<1x1x?x?xf32>
    %p = kiln.softmax %masked, axis = 3 : tensor<1x2x?x?xf32>
    %out = kiln.matmul %p, %q : tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>
    return %out : tensor<1x2x?x4xf32>
  }
}

// -----

// A plain graph with more than the token ids as inputs.
module {
  // expected-error @+1 {{a decoder without past_key_values inputs must take one input, its token ids [batch, seq], for Kiln to add a KV cache; this one takes 2}}
  func.func @main(%ids: tensor<1x?xi64> {kiln.name = "ids"}, %mask: tensor<1x?xi64> {kiln.name = "attention_mask"}) -> tensor<1x?xi64> {
    return %ids : tensor<1x?xi64>
  }
}

// -----

// No attention to cache.
module {
  // expected-error @+1 {{found no attention}}
  func.func @main(%ids: tensor<1x?xi64> {kiln.dim_names = ["", "seq"], kiln.name = "ids"}) -> tensor<1x?xi64> {
    return %ids : tensor<1x?xi64>
  }
}

// -----

// A causal mask computed from positions along the sequence: extending it
// would need to know which range counts queries and which keys.
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>]} {
  func.func @main(%ids: tensor<1x?xi64> {kiln.dim_names = ["", "seq"], kiln.name = "ids"})
      -> (tensor<1x2x?x4xf32> {kiln.name = "out"}) {
    %c1 = arith.constant 1 : index
    %seq = tensor.dim %ids, %c1 : tensor<1x?xi64>
    %table = kiln.constant dense<1.0> : tensor<16x8xf32>
    %x = kiln.gather %table[%ids], axis = 0 : tensor<16x8xf32>, tensor<1x?xi64> -> tensor<1x?x8xf32>
    %heads = kiln.reshape %x dims(%seq) : tensor<1x?x8xf32> -> tensor<1x?x2x4xf32>
    %q = kiln.transpose %heads, perm = [0, 2, 1, 3] : tensor<1x?x2x4xf32> -> tensor<1x2x?x4xf32>
    %kt = kiln.transpose %heads, perm = [0, 2, 3, 1] : tensor<1x?x2x4xf32> -> tensor<1x2x4x?xf32>
    %scores = kiln.matmul %q, %kt : tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>
    %zero = kiln.constant dense<0> : tensor<i64>
    %one = kiln.constant dense<1> : tensor<i64>
    %positions = kiln.range %zero, %one size %seq : tensor<i64>, tensor<i64> -> tensor<?xi64>
    %rows = kiln.reshape %positions dims(%seq) : tensor<?xi64> -> tensor<1x1x?x1xi64>
    // expected-error @+1 {{a mask computed from the sequence length by 'kiln.reshape' cannot be extended to a KV cache; export the decoder with past_key_values inputs}}
    %cols = kiln.reshape %positions dims(%seq) : tensor<?xi64> -> tensor<1x1x1x?xi64>
    %later = kiln.less %rows, %cols : tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>
    %fill = kiln.constant dense<0xFF800000> : tensor<f32>
    %masked = kiln.select %later, %fill, %scores : tensor<1x1x?x?xi1>, tensor<f32>, tensor<1x2x?x?xf32>
    %p = kiln.softmax %masked, axis = 3 : tensor<1x2x?x?xf32>
    %out = kiln.matmul %p, %q : tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>
    return %out : tensor<1x2x?x4xf32>
  }
}
