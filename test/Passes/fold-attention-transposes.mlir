// RUN: kiln-opt %s -kiln-fold-attention-transposes -split-input-file | FileCheck %s

// BERT's heads split of query and value, and the merge of the result: all
// three transposes go; the keys' stays.
// CHECK-LABEL: func.func @split_and_merge
// CHECK: %[[KT:.*]] = kiln.transpose %arg1, perm = [0, 2, 3, 1]
// CHECK-NEXT: %[[O:.*]] = kiln.attention %arg0, %[[KT]], %arg2 scale = 5.000000e-01 {query_seq_first, result_seq_first, value_seq_first} : tensor<2x8x3x4xf32>, tensor<2x3x4x8xf32>, tensor<2x8x3x4xf32> -> tensor<2x8x3x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @split_and_merge(%q0: tensor<2x8x3x4xf32>, %k0: tensor<2x8x3x4xf32>, %v0: tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32> {
  %q = kiln.transpose %q0, perm = [0, 2, 1, 3] : tensor<2x8x3x4xf32> -> tensor<2x3x8x4xf32>
  %kt = kiln.transpose %k0, perm = [0, 2, 3, 1] : tensor<2x8x3x4xf32> -> tensor<2x3x4x8xf32>
  %v = kiln.transpose %v0, perm = [0, 2, 1, 3] : tensor<2x8x3x4xf32> -> tensor<2x3x8x4xf32>
  %a = kiln.attention %q, %kt, %v scale = 0.5 : tensor<2x3x8x4xf32>, tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32> -> tensor<2x3x8x4xf32>
  %o = kiln.transpose %a, perm = [0, 2, 1, 3] : tensor<2x3x8x4xf32> -> tensor<2x8x3x4xf32>
  return %o : tensor<2x8x3x4xf32>
}

// -----

// A query transposed another way, a value that isn't a transpose, and a
// result used twice keep their layouts.
// CHECK-LABEL: func.func @partly
// CHECK: %[[Q:.*]] = kiln.transpose %arg0, perm = [0, 1, 3, 2]
// CHECK: %[[A:.*]] = kiln.attention %[[Q]], %arg1, %arg2 scale = 1.000000e+00 : tensor<2x3x8x4xf32>
// CHECK: kiln.transpose %[[A]], perm = [0, 2, 1, 3]
func.func @partly(%q0: tensor<2x3x4x8xf32>, %kt: tensor<2x3x4x8xf32>, %v: tensor<2x3x8x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x3x8x4xf32>) {
  %q = kiln.transpose %q0, perm = [0, 1, 3, 2] : tensor<2x3x4x8xf32> -> tensor<2x3x8x4xf32>
  %a = kiln.attention %q, %kt, %v scale = 1.0 : tensor<2x3x8x4xf32>, tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32> -> tensor<2x3x8x4xf32>
  %o = kiln.transpose %a, perm = [0, 2, 1, 3] : tensor<2x3x8x4xf32> -> tensor<2x8x3x4xf32>
  return %o, %a : tensor<2x8x3x4xf32>, tensor<2x3x8x4xf32>
}

// -----

// The value's heads split alone (ViT's query and keys come from one 5-D
// transpose, which this pass leaves); a transpose with other users stays for
// them.
// CHECK-LABEL: func.func @value_only
// CHECK: %[[V:.*]] = kiln.transpose %arg2
// CHECK: kiln.attention %arg0, %arg1, %arg2 scale = 1.000000e+00 {value_seq_first} : tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>, tensor<1x5x2x4xf32> -> tensor<1x2x5x4xf32>
// CHECK: return {{.*}}, %[[V]]
func.func @value_only(%q: tensor<1x2x5x4xf32>, %kt: tensor<1x2x4x5xf32>, %v0: tensor<1x5x2x4xf32>) -> (tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) {
  %v = kiln.transpose %v0, perm = [0, 2, 1, 3] : tensor<1x5x2x4xf32> -> tensor<1x2x5x4xf32>
  %a = kiln.attention %q, %kt, %v scale = 1.0 : tensor<1x2x5x4xf32>, tensor<1x2x4x5xf32>, tensor<1x2x5x4xf32> -> tensor<1x2x5x4xf32>
  return %a, %v : tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>
}
