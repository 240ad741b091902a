// RUN: kiln-opt %s | FileCheck %s
// Round trip: what kiln-opt prints, it parses back to the same module.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>)
    -> (tensor<2x3xf32>, tensor<4xi64>) {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32>
  %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: kiln.sub
  %1 = kiln.sub %0, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: kiln.mul
  %2 = kiln.mul %1, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: kiln.div
  %3 = kiln.div %2, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: kiln.pow
  %4 = kiln.pow %3, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: kiln.neg %{{.*}} : tensor<2x3xf32>
  %5 = kiln.neg %4 : tensor<2x3xf32>
  // CHECK: kiln.abs
  %6 = kiln.abs %5 : tensor<2x3xf32>
  // CHECK: kiln.relu
  %7 = kiln.relu %6 : tensor<2x3xf32>
  // CHECK: kiln.exp
  %8 = kiln.exp %7 : tensor<2x3xf32>
  // CHECK: kiln.log
  %9 = kiln.log %8 : tensor<2x3xf32>
  // CHECK: kiln.sqrt
  %10 = kiln.sqrt %9 : tensor<2x3xf32>
  // CHECK: kiln.sigmoid
  %11 = kiln.sigmoid %10 : tensor<2x3xf32>
  // CHECK: kiln.tanh
  %12 = kiln.tanh %11 : tensor<2x3xf32>
  // CHECK: kiln.erf
  %13 = kiln.erf %12 : tensor<2x3xf32>
  // CHECK: kiln.mul %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>
  %14 = kiln.mul %i, %i : tensor<4xi64>, tensor<4xi64>
  // CHECK: kiln.sin
  %15 = kiln.sin %13 : tensor<2x3xf32>
  // CHECK: kiln.cos
  %16 = kiln.cos %15 : tensor<2x3xf32>
  return %16, %14 : tensor<2x3xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @rounding_order_logic
func.func @rounding_order_logic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi64>)
    -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<4xi64>) {
  // CHECK: kiln.floor %{{.*}} : tensor<2x3xf32>
  %0 = kiln.floor %a : tensor<2x3xf32>
  // CHECK: kiln.ceil
  %1 = kiln.ceil %0 : tensor<2x3xf32>
  // CHECK: kiln.round
  %2 = kiln.round %1 : tensor<2x3xf32>
  // CHECK: kiln.min %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32>
  %3 = kiln.min %2, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: kiln.max %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>
  %4 = kiln.max %i, %i : tensor<4xi64>, tensor<4xi64>
  // CHECK: kiln.less %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3xf32>
  %5 = kiln.less %3, %b : tensor<2x3xf32>, tensor<3xf32>
  // CHECK: kiln.less_equal
  %6 = kiln.less_equal %3, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: kiln.and %{{.*}}, %{{.*}} : tensor<2x3xi1>, tensor<2x3xi1>
  %7 = kiln.and %5, %6 : tensor<2x3xi1>, tensor<2x3xi1>
  // CHECK: kiln.or
  %8 = kiln.or %7, %5 : tensor<2x3xi1>, tensor<2x3xi1>
  // CHECK: kiln.xor
  %9 = kiln.xor %8, %6 : tensor<2x3xi1>, tensor<2x3xi1>
  // CHECK: kiln.not %{{.*}} : tensor<2x3xi1>
  %10 = kiln.not %9 : tensor<2x3xi1>
  // CHECK: kiln.reduce_min %{{.*}} axes = [1] keep_dims : tensor<2x3xf32> -> tensor<2x1xf32>
  %11 = kiln.reduce_min %a axes = [1] keep_dims : tensor<2x3xf32> -> tensor<2x1xf32>
  // CHECK: kiln.reduce_prod %{{.*}} axes = [0] : tensor<4xi64> -> tensor<i64>
  %12 = kiln.reduce_prod %i axes = [0] : tensor<4xi64> -> tensor<i64>
  return %3, %10, %4 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<4xi64>
}

// CHECK-LABEL: func.func @structured
func.func @structured(%a: tensor<8x2x3xf32>, %b: tensor<3x4xf32>) -> tensor<8x2xf32> {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<8x2x3xf32>, tensor<3x4xf32>
  %0 = kiln.matmul %a, %b : tensor<8x2x3xf32>, tensor<3x4xf32>
  // CHECK: kiln.softmax %{{.*}}, axis = 2 : tensor<8x2x4xf32>
  %1 = kiln.softmax %0, axis = 2 : tensor<8x2x4xf32>
  // CHECK: kiln.reduce_sum %{{.*}} axes = [2] keep_dims : tensor<8x2x4xf32> -> tensor<8x2x1xf32>
  %2 = kiln.reduce_sum %1 axes = [2] keep_dims : tensor<8x2x4xf32> -> tensor<8x2x1xf32>
  // CHECK: kiln.reduce_mean %{{.*}} axes = [2] : tensor<8x2x1xf32> -> tensor<8x2xf32>
  %3 = kiln.reduce_mean %2 axes = [2] : tensor<8x2x1xf32> -> tensor<8x2xf32>
  return %3 : tensor<8x2xf32>
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<2x3xf32>, %ids: tensor<4xi64>) -> tensor<4x4xf32> {
  // CHECK: kiln.constant dense<1.000000e+00> : tensor<2x3xf32>
  %c = kiln.constant dense<1.0> : tensor<2x3xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} axis = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  %0 = kiln.concat %x, %c axis = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  // CHECK: kiln.transpose %{{.*}}, perm = [1, 0] : tensor<4x3xf32> -> tensor<3x4xf32>
  %1 = kiln.transpose %0, perm = [1, 0] : tensor<4x3xf32> -> tensor<3x4xf32>
  // CHECK: kiln.gather %{{.*}}[%{{.*}}], axis = 1 : tensor<3x4xf32>, tensor<4xi64> -> tensor<3x4xf32>
  %2 = kiln.gather %1[%ids], axis = 1 : tensor<3x4xf32>, tensor<4xi64> -> tensor<3x4xf32>
  // CHECK: kiln.gather_elements %{{.*}}[%{{.*}}], axis = 0 : tensor<3x4xf32>, tensor<1x4xi64> -> tensor<1x4xf32>
  %rows = kiln.reshape %ids : tensor<4xi64> -> tensor<1x4xi64>
  %picked = kiln.gather_elements %2[%rows], axis = 0 : tensor<3x4xf32>, tensor<1x4xi64> -> tensor<1x4xf32>
  // CHECK: kiln.reshape %{{.*}} : tensor<3x4xf32> -> tensor<12xf32>
  %3 = kiln.reshape %2 : tensor<3x4xf32> -> tensor<12xf32>
  // CHECK: kiln.cast %{{.*}} : tensor<12xf32> -> tensor<12xi64>
  %4 = kiln.cast %3 : tensor<12xf32> -> tensor<12xi64>
  %5 = kiln.cast %4 : tensor<12xi64> -> tensor<12xf32>
  %6 = kiln.reshape %5 : tensor<12xf32> -> tensor<4x3xf32>
  %7 = kiln.matmul %6, %2 : tensor<4x3xf32>, tensor<3x4xf32>
  return %7 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @checks
// CHECK: kiln.check_index_range %arg0, %arg1, size = 100, code = 2 : tensor<2x8xi64>
func.func @checks(%ids: tensor<2x8xi64>, %s: tensor<i32>) -> tensor<i32> {
  %0 = kiln.check_index_range %ids, %s, size = 100, code = 2 : tensor<2x8xi64>
  return %0 : tensor<i32>
}

// CHECK-LABEL: func.func @select_slice_broadcast
func.func @select_slice_broadcast(%a: tensor<4x4xf32>, %b: tensor<4xi64>, %cls: tensor<1x1x8xf32>) -> (tensor<4x4xf32>, tensor<2x2xf32>, tensor<3x1x8xf32>) {
  // CHECK: kiln.equal %arg1, %arg1 : tensor<4xi64>, tensor<4xi64>
  %eq = kiln.equal %b, %b : tensor<4xi64>, tensor<4xi64>
  // CHECK: kiln.select %{{.*}}, %arg0, %{{.*}} : tensor<4xi1>, tensor<4x4xf32>, tensor<f32>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %0 = kiln.select %eq, %a, %ninf : tensor<4xi1>, tensor<4x4xf32>, tensor<f32>
  // CHECK: kiln.slice %{{.*}} offsets = [1, 0] sizes = [2, 2] strides = [1, 2] : tensor<4x4xf32> -> tensor<2x2xf32>
  %1 = kiln.slice %0 offsets = [1, 0] sizes = [2, 2] strides = [1, 2] : tensor<4x4xf32> -> tensor<2x2xf32>
  // CHECK: kiln.broadcast %arg2 : tensor<1x1x8xf32> -> tensor<3x1x8xf32>
  %2 = kiln.broadcast %cls : tensor<1x1x8xf32> -> tensor<3x1x8xf32>
  return %0, %1, %2 : tensor<4x4xf32>, tensor<2x2xf32>, tensor<3x1x8xf32>
}

// CHECK-LABEL: func.func @dynamic_slice
func.func @dynamic_slice(%bias: tensor<1x1x16x16xf32>, %past: index, %seq: index, %total: index) -> tensor<1x1x?x?xf32> {
  // CHECK: kiln.dynamic_slice %arg0 axes = [2, 3] offsets(%arg1, %{{.*}}) sizes(%arg2, %arg3) : tensor<1x1x16x16xf32> -> tensor<1x1x?x?xf32>
  %c0 = arith.constant 0 : index
  %0 = kiln.dynamic_slice %bias axes = [2, 3] offsets(%past, %c0) sizes(%seq, %total) : tensor<1x1x16x16xf32> -> tensor<1x1x?x?xf32>
  return %0 : tensor<1x1x?x?xf32>
}

// CHECK-LABEL: func.func @composites
func.func @composites(%x: tensor<1x16x64xf32>, %g: tensor<64xf32>, %img: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %c: tensor<4xf32>) -> (tensor<1x16x64xf32>, tensor<1x6x4x4xf32>) {
  // CHECK: kiln.layer_norm %arg0, %arg1, %arg1 axis = 2 epsilon = 9.99999974E-6 : tensor<1x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  %0 = kiln.layer_norm %x, %g, %g axis = 2 epsilon = 1.0e-05 : tensor<1x16x64xf32>, tensor<64xf32>, tensor<64xf32>
  // CHECK: kiln.group_norm %arg2, %arg4, %arg4 groups = 2 epsilon = 9.99999974E-6 : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
  %n = kiln.group_norm %img, %c, %c groups = 2 epsilon = 1.0e-05 : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK: kiln.conv2d %arg2, %arg3 strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 2 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x4x4xf32>
  %1 = kiln.conv2d %img, %w strides = [2, 2] dilations = [1, 1] pads = [1, 1, 1, 1] groups = 2 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x4x4xf32>
  return %0, %1 : tensor<1x16x64xf32>, tensor<1x6x4x4xf32>
}

// CHECK-LABEL: func.func @winograd_conv2d
func.func @winograd_conv2d(%x: tensor<2x3x8x7xf32>, %u: tensor<16x4x3xf32>) -> tensor<2x4x8x6xf32> {
  // CHECK: kiln.winograd_conv2d %arg0, %arg1 pads = [1, 0, 1, 1] : tensor<2x3x8x7xf32>, tensor<16x4x3xf32> -> tensor<2x4x8x6xf32>
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 0, 1, 1] : tensor<2x3x8x7xf32>, tensor<16x4x3xf32> -> tensor<2x4x8x6xf32>
  return %0 : tensor<2x4x8x6xf32>
}

// CHECK-LABEL: func.func @packed_matmul
func.func @packed_matmul(%x: tensor<1x4x3xf32>, %w: tensor<3x3x2xf32>) -> tensor<1x4x5xf32> {
  // CHECK: kiln.packed_matmul %arg0, %arg1 : tensor<1x4x3xf32>, tensor<3x3x2xf32> -> tensor<1x4x5xf32>
  %0 = kiln.packed_matmul %x, %w : tensor<1x4x3xf32>, tensor<3x3x2xf32> -> tensor<1x4x5xf32>
  return %0 : tensor<1x4x5xf32>
}

// CHECK-LABEL: func.func @packed_matmul_bias
func.func @packed_matmul_bias(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>, %b: tensor<3x2xf32>) -> tensor<4x5xf32> {
  // CHECK: kiln.packed_matmul %arg0, %arg1 bias %arg2 : tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<3x2xf32> -> tensor<4x5xf32>
  %0 = kiln.packed_matmul %x, %w bias %b : tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<3x2xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x6xf32>, %v: tensor<2x6x3xf32>, %m: tensor<1x6xf32>) -> tensor<2x4x3xf32> {
  // CHECK: kiln.attention %arg0, %arg1, %arg2 mask %arg3 scale = 5.000000e-01 : tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x3xf32>, tensor<1x6xf32> -> tensor<2x4x3xf32>
  %0 = kiln.attention %q, %kt, %v mask %m scale = 0.5 : tensor<2x4x8xf32>, tensor<2x8x6xf32>, tensor<2x6x3xf32>, tensor<1x6xf32> -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// CHECK-LABEL: func.func @attention_bool_mask
func.func @attention_bool_mask(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>, %m: tensor<4x4xi1>) -> tensor<4x3xf32> {
  // CHECK: kiln.attention %arg0, %arg1, %arg2 mask %arg3 scale = 1.000000e+00 mask_fill = 0xFF800000 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x4xi1> -> tensor<4x3xf32>
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 mask_fill = 0xFF800000 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x4xi1> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @packed_matmul_residual
func.func @packed_matmul_residual(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>, %b: tensor<3x2xf32>, %r: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // CHECK: kiln.packed_matmul %arg0, %arg1 bias %arg2 activation gelu_erf residual %arg3 : tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<3x2xf32> -> tensor<4x5xf32>
  %0 = kiln.packed_matmul %x, %w bias %b activation gelu_erf residual %r : tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<3x2xf32> -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// CHECK-LABEL: func.func @attention_seq_first
func.func @attention_seq_first(%q: tensor<1x6x2x8xf32>, %kt: tensor<1x2x8x6xf32>, %v: tensor<1x6x2x3xf32>) -> tensor<1x6x2x3xf32> {
  // CHECK: kiln.attention %arg0, %arg1, %arg2 scale = 1.000000e+00 {query_seq_first, result_seq_first, value_seq_first} : tensor<1x6x2x8xf32>, tensor<1x2x8x6xf32>, tensor<1x6x2x3xf32> -> tensor<1x6x2x3xf32>
  %0 = kiln.attention %q, %kt, %v scale = 1.0 {query_seq_first, value_seq_first, result_seq_first} : tensor<1x6x2x8xf32>, tensor<1x2x8x6xf32>, tensor<1x6x2x3xf32> -> tensor<1x6x2x3xf32>
  return %0 : tensor<1x6x2x3xf32>
}

// Dynamic dimensions: sizes of the dynamic result dimensions come as
// operands where the operands' types don't give them.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>]}
func.func @dynamic(%ids: tensor<1x?xi64>, %h: tensor<1x?x384xf32>, %seq: index)
    -> (tensor<1x?x12x32xf32>, tensor<?xi64>, tensor<1x?xi64>, tensor<1x?x384xf32>)
    attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>]} {
  // CHECK: kiln.reshape %{{.*}} dims(%{{.*}}) : tensor<1x?x384xf32> -> tensor<1x?x12x32xf32>
  %0 = kiln.reshape %h dims(%seq) : tensor<1x?x384xf32> -> tensor<1x?x12x32xf32>
  %zero = kiln.constant dense<0> : tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  // CHECK: kiln.range %{{.*}}, %{{.*}} size %{{.*}} : tensor<i64>, tensor<i64> -> tensor<?xi64>
  %1 = kiln.range %zero, %one size %seq : tensor<i64>, tensor<i64> -> tensor<?xi64>
  // CHECK: kiln.broadcast %{{.*}} dims(%{{.*}}) : tensor<i64> -> tensor<1x?xi64>
  %2 = kiln.broadcast %zero dims(%seq) : tensor<i64> -> tensor<1x?xi64>
  // Inferred types keep dynamic dimensions.
  // CHECK: kiln.add %{{.*}}, %{{.*}} : tensor<1x?x384xf32>, tensor<384xf32>
  %bias = kiln.constant dense<1.0> : tensor<384xf32>
  %3 = kiln.add %h, %bias : tensor<1x?x384xf32>, tensor<384xf32>
  return %0, %1, %2, %3 : tensor<1x?x12x32xf32>, tensor<?xi64>, tensor<1x?xi64>, tensor<1x?x384xf32>
}

// CHECK-LABEL: func.func @sample
// CHECK: %[[S:.*]] = kiln.sample dpmpp_2m %arg0 noise_scale = 1.000000e+00 timesteps = dense<[9.990000e+02, 4.990000e+02]> : tensor<2xf32> coefficients = dense<{{.*}}> : tensor<2x5xf32> : tensor<1x4xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x4xf32>, %[[T:.*]]: tensor<f32>, %{{.*}}: index):
// CHECK-NEXT: %[[E:.*]] = kiln.mul %[[X]], %[[T]]
// CHECK-NEXT: kiln.yield %[[E]] : tensor<1x4xf32>
// CHECK: return %[[S]]
func.func @sample(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %s = kiln.sample dpmpp_2m %n noise_scale = 1.0 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<[[1.0, 2.0, 0.0, 3.0, 4.0], [1.0, 2.0, 0.5, 3.0, 4.0]]> : tensor<2x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %e = kiln.mul %x, %t : tensor<1x4xf32>, tensor<f32>
    kiln.yield %e : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// CHECK-LABEL: func.func @pool
// CHECK: kiln.pool max %arg0 kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
// CHECK: kiln.pool average %arg0 kernel = [3, 3] strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] ceil_mode count_include_pad : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32>
func.func @pool(%x: tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>) {
  %0 = kiln.pool max %x kernel = [2, 2] strides = [2, 2] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
  %1 = kiln.pool average %x kernel = [3, 3] strides = [1, 1] dilations = [1, 1] pads = [1, 1, 1, 1] ceil_mode count_include_pad : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32>
  return %0, %1 : tensor<1x3x4x4xf32>, tensor<1x3x8x8xf32>
}

// CHECK-LABEL: func.func @remainder
// CHECK: kiln.rem %arg0, %arg1 : tensor<4xi64>, tensor<i64>
func.func @remainder(%a: tensor<4xi64>, %b: tensor<i64>) -> tensor<4xi64> {
  %0 = kiln.rem %a, %b : tensor<4xi64>, tensor<i64>
  return %0 : tensor<4xi64>
}

// CHECK-LABEL: func.func @unsigned_and_wide
// CHECK: kiln.div %arg0, %arg1 {is_unsigned} : tensor<4xi64>, tensor<i64>
// CHECK: kiln.rem %arg0, %arg1 {is_unsigned} : tensor<4xi64>, tensor<i64>
// CHECK: kiln.shift_left %arg0, %arg1 : tensor<4xi64>, tensor<i64>
// CHECK: kiln.shift_right %arg0, %arg1 : tensor<4xi64>, tensor<i64>
// CHECK: kiln.exp %arg2 : tensor<3xf64>
func.func @unsigned_and_wide(%a: tensor<4xi64>, %b: tensor<i64>, %x: tensor<3xf64>)
    -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<3xf64>) {
  %0 = kiln.div %a, %b {is_unsigned} : tensor<4xi64>, tensor<i64>
  %1 = kiln.rem %a, %b {is_unsigned} : tensor<4xi64>, tensor<i64>
  %2 = kiln.shift_left %a, %b : tensor<4xi64>, tensor<i64>
  %3 = kiln.shift_right %a, %b : tensor<4xi64>, tensor<i64>
  %4 = kiln.exp %x : tensor<3xf64>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<3xf64>
}

// CHECK-LABEL: func.func @indexed
// CHECK: kiln.scatter_elements %arg0[%arg1] = %arg2, axis = 1, reduction = max : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
// CHECK: kiln.scatter_nd %arg0[%arg3] = %arg4, reduction = none : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>
// CHECK: kiln.gather_nd %arg0[%arg5], batch_dims = 0 : tensor<3x4xf32>, tensor<5x2xi64> -> tensor<5xf32>
func.func @indexed(%data: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>,
                   %rows: tensor<2x1xi64>, %r: tensor<2x4xf32>, %pick: tensor<5x2xi64>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<5xf32>) {
  %0 = kiln.scatter_elements %data[%i] = %u, axis = 1, reduction = max : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
  %1 = kiln.scatter_nd %data[%rows] = %r, reduction = none : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>
  %2 = kiln.gather_nd %data[%pick], batch_dims = 0 : tensor<3x4xf32>, tensor<5x2xi64> -> tensor<5xf32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<5xf32>
}

// CHECK-LABEL: func.func @tokens
// CHECK: %[[D:.*]], %{{.*}} = kiln.token_match %arg0 bias %arg2 merged = 2 protected = 1 : tensor<1x9x4xf32>, tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x7xi64>
// CHECK: %[[M:.*]], %{{.*}} = kiln.token_merge %arg3, %arg1, %[[D]] : tensor<1x9x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x7x8xf32>, tensor<1x7xf32>
// CHECK: kiln.token_unmerge %[[M]], %[[D]] : tensor<1x7x8xf32>, tensor<1x9xi64> -> tensor<1x9x8xf32>
func.func @tokens(%metric: tensor<1x9x4xf32>, %sizes: tensor<1x9xf32>, %bias: tensor<1x9xf32>,
                  %x: tensor<1x9x8xf32>) -> tensor<1x9x8xf32> {
  %d, %k = kiln.token_match %metric bias %bias merged = 2 protected = 1 : tensor<1x9x4xf32>, tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x7xi64>
  %m, %s = kiln.token_merge %x, %sizes, %d : tensor<1x9x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x7x8xf32>, tensor<1x7xf32>
  %u = kiln.token_unmerge %m, %d : tensor<1x7x8xf32>, tensor<1x9xi64> -> tensor<1x9x8xf32>
  return %u : tensor<1x9x8xf32>
}

// CHECK-LABEL: func.func @token_select
// CHECK: kiln.token_select %arg0 kept = 5 protected = 1 : tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x7xi64>
// CHECK: kiln.token_select %arg0 bias %arg1 kept = 4 protected = 0 : tensor<1x9xf32>, tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x6xi64>
func.func @token_select(%importance: tensor<1x9xf32>, %bias: tensor<1x9xf32>) -> (tensor<1x9xi64>, tensor<1x9xi64>) {
  %d, %k = kiln.token_select %importance kept = 5 protected = 1 : tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x7xi64>
  %d2, %k2 = kiln.token_select %importance bias %bias kept = 4 protected = 0 : tensor<1x9xf32>, tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x6xi64>
  return %d, %d2 : tensor<1x9xi64>, tensor<1x9xi64>
}

// CHECK-LABEL: func.func @splatting
// CHECK: %[[S:.*]] = kiln.splat_project %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
// CHECK: kiln.splat_rasterize %[[S]], %arg7 : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
// CHECK: kiln.splat_contributions %[[S]] width = 40 height = 30 culling = exact : tensor<11x5xf32> -> tensor<5xf32>
func.func @splatting(%p: tensor<5x3xf32>, %s: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                     %sh: tensor<5x16x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>,
                     %bg: tensor<3xf32>) -> tensor<30x40x3xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  %image = kiln.splat_rasterize %splats, %bg : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  %weights = kiln.splat_contributions %splats width = 40 height = 30 culling = exact : tensor<11x5xf32> -> tensor<5xf32>
  return %image : tensor<30x40x3xf32>
}

// Int8 log scales: a scale and an offset per column.
// CHECK-LABEL: func.func @splatting_int8
// CHECK: kiln.splat_project {{.*}} width = 40 height = 30 {int8_offsets = array<f32: 0.000000e+00, 1.000000e+00, 2.000000e+00>, int8_scales = array<f32: 1.250000e-01, 2.500000e-01, 5.000000e-01>} : tensor<5x3xf32>, tensor<5x3xi8>
func.func @splatting_int8(%p: tensor<5x3xf32>, %s: tensor<5x3xi8>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                          %sh: tensor<5x16x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) -> tensor<11x5xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 {int8_scales = array<f32: 0.125, 0.25, 0.5>, int8_offsets = array<f32: 0.0, 1.0, 2.0>} : tensor<5x3xf32>, tensor<5x3xi8>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return %splats : tensor<11x5xf32>
}

// An image sized at run time, within 40 x 30.
// CHECK-LABEL: func.func @splatting_sized
// CHECK: %[[S:.*]] = kiln.splat_project %arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6 width = 40 height = 30 size(%arg8, %arg9) : tensor<5x3xf32>
// CHECK: kiln.splat_rasterize %[[S]], %arg7 size(%arg8, %arg9) max_size = [30, 40] culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
// CHECK: kiln.splat_contributions %[[S]] width = 40 height = 30 size(%arg8, %arg9) : tensor<11x5xf32> -> tensor<5xf32>
func.func @splatting_sized(%p: tensor<5x3xf32>, %s: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                           %sh: tensor<5x16x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>,
                           %bg: tensor<3xf32>, %h: index, %w: index) -> tensor<?x?x3xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 size(%h, %w) : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  %image = kiln.splat_rasterize %splats, %bg size(%h, %w) max_size = [30, 40] culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
  %weights = kiln.splat_contributions %splats width = 40 height = 30 size(%h, %w) : tensor<11x5xf32> -> tensor<5xf32>
  return %image : tensor<?x?x3xf32>
}
