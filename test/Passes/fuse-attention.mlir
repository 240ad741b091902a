// RUN: kiln-opt %s -kiln-fuse-attention -split-input-file | FileCheck %s

// BERT / MiniLM (transformers' eager attention): the scores divided by
// sqrt(d), an additive padding mask.
// CHECK-LABEL: func.func @bert
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x8x4xf32>, %[[KT:.*]]: tensor<1x2x4x8xf32>, %[[V:.*]]: tensor<1x2x8x4xf32>, %[[M:.*]]: tensor<1x1x1x8xf32>)
// CHECK-NEXT: %[[O:.*]] = kiln.attention %[[Q]], %[[KT]], %[[V]] mask %[[M]] scale = 5.000000e-01 : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>, tensor<1x1x1x8xf32> -> tensor<1x2x8x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @bert(%q: tensor<1x2x8x4xf32>, %kt: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>, %m: tensor<1x1x1x8xf32>) -> tensor<1x2x8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>
  %c = kiln.constant dense<2.0> : tensor<f32>
  %d = kiln.div %s, %c : tensor<1x2x8x8xf32>, tensor<f32>
  %a = kiln.add %d, %m : tensor<1x2x8x8xf32>, tensor<1x1x1x8xf32>
  %p = kiln.softmax %a, axis = 3 : tensor<1x2x8x8xf32>
  %o = kiln.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>
  return %o : tensor<1x2x8x4xf32>
}

// -----

// GPT-2: scores times 1/sqrt(d), then Where(causal, -inf, scores).
// CHECK-LABEL: func.func @gpt2
// CHECK: kiln.attention %arg0, %arg1, %arg2 mask %arg3 scale = 1.250000e-01 mask_fill = 0xFF800000 : tensor<2x8x4xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<1x8x8xi1> -> tensor<2x8x4xf32>
// CHECK-NOT: kiln.softmax
func.func @gpt2(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x8xf32>, %v: tensor<2x8x4xf32>, %causal: tensor<1x8x8xi1>) -> tensor<2x8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<2x8x4xf32>, tensor<2x4x8xf32>
  %c = kiln.constant dense<0.125> : tensor<f32>
  %x = kiln.mul %c, %s : tensor<f32>, tensor<2x8x8xf32>
  %inf = kiln.constant dense<0xFF800000> : tensor<f32>
  %w = kiln.select %causal, %inf, %x : tensor<1x8x8xi1>, tensor<f32>, tensor<2x8x8xf32>
  %p = kiln.softmax %w, axis = 2 : tensor<2x8x8xf32>
  %o = kiln.matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// Where(keep, scores, fill): the mask the op takes is the negated condition.
// CHECK-LABEL: func.func @keep_mask
// CHECK: %[[F:.*]] = kiln.constant dense<false> : tensor<i1>
// CHECK: %[[N:.*]] = kiln.equal %arg3, %[[F]] : tensor<8x8xi1>, tensor<i1>
// CHECK: kiln.attention %arg0, %arg1, %arg2 mask %[[N]] scale = 1.000000e+00 mask_fill = -3.40282347E+38
func.func @keep_mask(%q: tensor<8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<8x4xf32>, %keep: tensor<8x8xi1>) -> tensor<8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<8x4xf32>, tensor<4x8xf32>
  %min = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %w = kiln.select %keep, %s, %min : tensor<8x8xi1>, tensor<8x8xf32>, tensor<f32>
  %p = kiln.softmax %w, axis = 1 : tensor<8x8xf32>
  %o = kiln.matmul %p, %v : tensor<8x8xf32>, tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// timm's ViT: q * scale before the product, no mask.
// CHECK-LABEL: func.func @vit
// CHECK-NEXT: %[[O:.*]] = kiln.attention %arg0, %arg1, %arg2 scale = 2.500000e-01 : tensor<1x3x5x16xf32>, tensor<1x3x16x5xf32>, tensor<1x3x5x16xf32> -> tensor<1x3x5x16xf32>
// CHECK-NEXT: return %[[O]]
func.func @vit(%q: tensor<1x3x5x16xf32>, %kt: tensor<1x3x16x5xf32>, %v: tensor<1x3x5x16xf32>) -> tensor<1x3x5x16xf32> {
  %c = kiln.constant dense<0.25> : tensor<f32>
  %qs = kiln.mul %q, %c : tensor<1x3x5x16xf32>, tensor<f32>
  %s = kiln.matmul %qs, %kt : tensor<1x3x5x16xf32>, tensor<1x3x16x5xf32>
  %p = kiln.softmax %s, axis = 3 : tensor<1x3x5x5xf32>
  %o = kiln.matmul %p, %v : tensor<1x3x5x5xf32>, tensor<1x3x5x16xf32>
  return %o : tensor<1x3x5x16xf32>
}

// -----

// torch.onnx's scaled_dot_product_attention: Q and K^T each times
// sqrt(scale), then an additive mask.
// CHECK-LABEL: func.func @sdpa
// CHECK: kiln.attention %arg0, %arg1, %arg2 mask %arg3 scale = 0.124999993 : tensor<1x2x6x64xf32>, tensor<1x2x64x6xf32>, tensor<1x2x6x64xf32>, tensor<6x6xf32> -> tensor<1x2x6x64xf32>
// CHECK-NOT: kiln.mul
func.func @sdpa(%q: tensor<1x2x6x64xf32>, %kt: tensor<1x2x64x6xf32>, %v: tensor<1x2x6x64xf32>, %m: tensor<6x6xf32>) -> tensor<1x2x6x64xf32> {
  %r = kiln.constant dense<0.353553385> : tensor<f32>
  %qs = kiln.mul %q, %r : tensor<1x2x6x64xf32>, tensor<f32>
  %ks = kiln.mul %kt, %r : tensor<1x2x64x6xf32>, tensor<f32>
  %s = kiln.matmul %qs, %ks : tensor<1x2x6x64xf32>, tensor<1x2x64x6xf32>
  %a = kiln.add %s, %m : tensor<1x2x6x6xf32>, tensor<6x6xf32>
  %p = kiln.softmax %a, axis = 3 : tensor<1x2x6x6xf32>
  %o = kiln.matmul %p, %v : tensor<1x2x6x6xf32>, tensor<1x2x6x64xf32>
  return %o : tensor<1x2x6x64xf32>
}

// -----

// The probabilities are also a graph output: nothing is fused.
// CHECK-LABEL: func.func @probabilities_used
// CHECK-NOT: kiln.attention
// CHECK: kiln.softmax
func.func @probabilities_used(%q: tensor<8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x8xf32>) {
  %s = kiln.matmul %q, %kt : tensor<8x4xf32>, tensor<4x8xf32>
  %p = kiln.softmax %s, axis = 1 : tensor<8x8xf32>
  %o = kiln.matmul %p, %v : tensor<8x8xf32>, tensor<8x4xf32>
  return %o, %p : tensor<8x4xf32>, tensor<8x8xf32>
}

// -----

// A softmax over another axis is not attention.
// CHECK-LABEL: func.func @softmax_axis
// CHECK-NOT: kiln.attention
func.func @softmax_axis(%q: tensor<8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<8x4xf32>, tensor<4x8xf32>
  %p = kiln.softmax %s, axis = 0 : tensor<8x8xf32>
  %o = kiln.matmul %p, %v : tensor<8x8xf32>, tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

// Keys shared by all heads (a broadcast batch) stay separate products.
// CHECK-LABEL: func.func @broadcast_keys
// CHECK-NOT: kiln.attention
func.func @broadcast_keys(%q: tensor<2x8x4xf32>, %kt: tensor<4x8xf32>, %v: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<2x8x4xf32>, tensor<4x8xf32>
  %p = kiln.softmax %s, axis = 2 : tensor<2x8x8xf32>
  %o = kiln.matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// No keys: nothing to fuse.
// CHECK-LABEL: func.func @no_keys
// CHECK-NOT: kiln.attention
func.func @no_keys(%q: tensor<8x4xf32>, %kt: tensor<4x0xf32>, %v: tensor<0x4xf32>) -> tensor<8x4xf32> {
  %s = kiln.matmul %q, %kt : tensor<8x4xf32>, tensor<4x0xf32>
  %p = kiln.softmax %s, axis = 1 : tensor<8x0xf32>
  %o = kiln.matmul %p, %v : tensor<8x0xf32>, tensor<0x4xf32>
  return %o : tensor<8x4xf32>
}
