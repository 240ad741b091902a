// RUN: kiln-opt %s -split-input-file -kiln-build-kv-cache=max-context=16 -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-build-kv-cache="max-context=16 int8=true" -verify-diagnostics | FileCheck %s --check-prefix=INT8

// A one-layer with-past decoder (keys only): the past input becomes the
// filled prefix of a state, the present output an in-place update, and
// attention reads the prefix including the new positions. The keys are
// read transposed, so the state holds them so ([..., depth, positions]):
// the new positions are transposed on their way in, and the prefix read
// back is transposed to the graph's layout, which the graph's transpose
// cancels (canonicalization folds the pair).
// CHECK: module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>]}
// CHECK-DAG: kiln.state @kv_cache.0.key : tensor<1x2x4x16xf32>
// CHECK-DAG: kiln.state @kv_cache.length : tensor<i64>
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X:.*]]: tensor<1x?x4xf32> {kiln.dim_names = ["", "seq", ""], kiln.name = "x"})
// CHECK-SAME: -> (tensor<1x2x?x?xf32> {kiln.dim_names = ["", "", "seq", "seq + past_seq"], kiln.name = "scores"})
// CHECK: %[[LENGTH:.*]] = kiln.state_read @kv_cache.length : tensor<i64>
// CHECK: %[[FILLED:.*]] = affine.min
// CHECK: kiln.reshape %[[X]]
// CHECK: %[[K:.*]] = kiln.concat
// CHECK: %[[NEW:.*]] = tensor.dim %[[K]], %c2
// CHECK: %[[KT:.*]] = kiln.transpose %[[K]], perm = [0, 1, 3, 2] : tensor<1x2x?x4xf32> -> tensor<1x2x4x?xf32>
// CHECK: kiln.state_update %[[KT]], @kv_cache.0.key, axis = 3, offset = %[[LENGTH]] {kiln.overflow_error = "the context would exceed the KV cache's 16 positions (--max-context); reset the session to start a new sequence"}
// CHECK: %[[TOTAL:.*]] = arith.addi %[[FILLED]], %[[NEW]]
// CHECK: %[[CACHE:.*]] = kiln.state_read @kv_cache.0.key : tensor<1x2x4x16xf32>
// CHECK: %[[KEYS_T:.*]] = kiln.dynamic_slice %[[CACHE]] axes = [3] offsets(%c0) sizes(%[[TOTAL]]) : tensor<1x2x4x16xf32> -> tensor<1x2x4x?xf32>
// CHECK: %[[KEYS:.*]] = kiln.transpose %[[KEYS_T]], perm = [0, 1, 3, 2] : tensor<1x2x4x?xf32> -> tensor<1x2x?x4xf32>
// CHECK: %[[AGAIN:.*]] = kiln.transpose %[[KEYS]], perm = [0, 1, 3, 2]
// CHECK: kiln.matmul %{{.*}}, %[[AGAIN]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[FILLED]], %[[NEW]]
// CHECK: %[[STORED:.*]] = tensor.from_elements
// CHECK: kiln.state_write %[[STORED]], @kv_cache.length
// CHECK: return %{{.*}} : tensor<1x2x?x?xf32>
// truncate keeps min(length, filled), at least 0, and returns it.
// CHECK-LABEL: func.func @truncate(
// CHECK-SAME: %[[ASKED:.*]]: tensor<i64> {kiln.name = "length"}) -> (tensor<i64> {kiln.name = "length"})
// CHECK: %[[WANT:.*]] = tensor.extract %[[ASKED]][]
// CHECK: %[[HAVE:.*]] = tensor.extract %{{.*}}[]
// CHECK: %[[FEWER:.*]] = arith.minsi %[[WANT]], %[[HAVE]]
// CHECK: %[[KEPT:.*]] = arith.maxsi %[[FEWER]], %c0_i64
// CHECK: %[[STORED:.*]] = tensor.from_elements %[[KEPT]]
// CHECK: kiln.state_write %[[STORED]], @kv_cache.length
// CHECK: return %[[STORED]]
// With int8, each head and position is stored as int8 with its largest
// magnitude over 127 as scale, and read back dequantized.
// INT8-DAG: kiln.state @kv_cache.0.key : tensor<1x2x16x4xi8>
// INT8-DAG: kiln.state @kv_cache.0.key.scale : tensor<1x2x16x1xf32>
// INT8-LABEL: func.func @decode(
// INT8: %[[K:.*]] = kiln.concat
// INT8: %[[ABS:.*]] = kiln.abs %[[K]] : tensor<1x2x?x4xf32>
// INT8: %[[MAX:.*]] = kiln.reduce_max %[[ABS]] axes = [3] keep_dims : tensor<1x2x?x4xf32> -> tensor<1x2x?x1xf32>
// INT8: %[[BIASED:.*]] = kiln.add %[[MAX]]
// INT8: %[[SCALE:.*]] = kiln.div %[[BIASED]]
// INT8: %[[Q:.*]] = kiln.quantize %[[K]], %[[SCALE]], %{{.*}} axis = 3 block_size = 4 : tensor<1x2x?x4xf32>, tensor<1x2x?x1xf32>, tensor<1x2x?x1xi8> -> tensor<1x2x?x4xi8>
// INT8: kiln.state_update %[[Q]], @kv_cache.0.key, axis = 2, offset = %{{.*}} {kiln.overflow_error
// INT8: kiln.state_update %[[SCALE]], @kv_cache.0.key.scale, axis = 2
// INT8: %[[VALUES:.*]] = kiln.dynamic_slice %{{.*}} axes = [2] offsets(%c0) sizes(%[[TOTAL:.*]]) : tensor<1x2x16x4xi8> -> tensor<1x2x?x4xi8>
// INT8: %[[SCALES:.*]] = kiln.dynamic_slice %{{.*}} axes = [2] offsets(%c0) sizes(%[[TOTAL]]) : tensor<1x2x16x1xf32> -> tensor<1x2x?x1xf32>
// INT8: %[[KEYS:.*]] = kiln.dequantize %[[VALUES]], %[[SCALES]], %{{.*}} axis = 3 block_size = 4 : tensor<1x2x?x4xi8>, tensor<1x2x?x1xf32>, tensor<1x2x?x1xi8> -> tensor<1x2x?x4xf32>
// INT8: kiln.transpose %[[KEYS]]
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 8>, #kiln.dim<"past_seq", 0, 16>]} {
  func.func @main(%x: tensor<1x?x4xf32> {kiln.dim_names = ["", "seq", ""], kiln.name = "x"},
                  %past: tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "past_seq", ""], kiln.name = "past_key_values.0.key"})
      -> (tensor<1x2x?x?xf32> {kiln.dim_names = ["", "", "seq", "seq + past_seq"], kiln.name = "scores"},
          tensor<1x2x?x4xf32> {kiln.dim_names = ["", "", "seq + past_seq", ""], kiln.name = "present.0.key"}) {
    %c1 = arith.constant 1 : index
    %seq = tensor.dim %x, %c1 : tensor<1x?x4xf32>
    %k = kiln.reshape %x dims(%seq) : tensor<1x?x4xf32> -> tensor<1x2x?x2xf32>
    %k4 = kiln.concat %k, %k axis = 3 : tensor<1x2x?x2xf32>, tensor<1x2x?x2xf32> -> tensor<1x2x?x4xf32>
    %keys = kiln.concat %past, %k4 axis = 2 : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32> -> tensor<1x2x?x4xf32>
    %t = kiln.transpose %keys, perm = [0, 1, 3, 2] : tensor<1x2x?x4xf32> -> tensor<1x2x4x?xf32>
    %scores = kiln.matmul %k4, %t : tensor<1x2x?x4xf32>, tensor<1x2x4x?xf32>
    return %scores, %keys : tensor<1x2x?x?xf32>, tensor<1x2x?x4xf32>
  }
}

// -----

// expected-error @+1 {{no input named past_key_values.N.key or .value}}
func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{input 'past_key_values.0.key' has type 'tensor<?x2x?x4xf32>'; the KV cache holds one sequence: fix its batch dimension to 1 (--dim NAME=1)}}
func.func @main(%past: tensor<?x2x?x4xf32> {kiln.name = "past_key_values.0.key"})
    -> (tensor<?x2x?x4xf32> {kiln.name = "present.0.key"}) {
  return %past : tensor<?x2x?x4xf32>
}

// -----

// expected-error @+1 {{output 'present.0.key' is not input 'past_key_values.0.key' with the new positions appended (a Concat along axis 2)}}
func.func @main(%past: tensor<1x2x?x4xf32> {kiln.name = "past_key_values.0.key"})
    -> (tensor<1x2x?x4xf32> {kiln.name = "present.0.key"}) {
  %0 = kiln.neg %past : tensor<1x2x?x4xf32>
  return %0 : tensor<1x2x?x4xf32>
}
