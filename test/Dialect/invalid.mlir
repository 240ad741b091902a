// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @bad_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes 'tensor<2x3xf32>' and 'tensor<4xf32>' are not broadcast-compatible}}
  %0 = kiln.add %a, %b : tensor<2x3xf32>, tensor<4xf32>
  return
}

// -----

func.func @mixed_element_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = "kiln.add"(%a, %b) : (tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @wrong_result_type(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "kiln.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @exp_of_integers(%a: tensor<3xi64>) {
  // expected-error @+1 {{must be ranked tensor of 32-bit float or 64-bit float values}}
  %0 = kiln.exp %a : tensor<3xi64>
  return
}

// -----

func.func @unranked(%a: tensor<*xf32>) {
  // expected-error @+1 {{must be ranked tensor}}
  %0 = "kiln.relu"(%a) : (tensor<*xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{matmul contraction sizes differ: 3 vs 4}}
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x4xf32>) {
  // expected-error @+1 {{matmul batch dimensions do not broadcast}}
  %0 = kiln.matmul %a, %b : tensor<2x2x3xf32>, tensor<3x3x4xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.softmax %a, axis = 2 : tensor<2x3xf32>
  return
}

// -----

func.func @reduce_unsorted(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axes must be sorted and unique}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.reduce_sum %a axes = [1, 0] : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_axis_range(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{reduction axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.reduce_mean %a axes = [2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{cannot reshape 6 elements into 'tensor<7xf32>'}}
  %0 = kiln.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @transpose_perm(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{perm is not a permutation of [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.transpose %a, perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{concat inputs differ in dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<2x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{gather axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather %a[%i], axis = 2 : tensor<2x3xf32>, tensor<2xi64> -> tensor<2x3xf32>
  return
}

// -----

func.func @gather_elements_rank(%a: tensor<2x3xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{gather_elements indices have rank 1 but data has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather_elements %a[%i], axis = 0 : tensor<2x3xf32>, tensor<2xi64> -> tensor<2xf32>
  return
}

// -----

func.func @gather_float_indices(%a: tensor<2x3xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{must be ranked tensor of 64-bit signless integer values}}
  %0 = "kiln.gather"(%a, %i) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = kiln.cast %a : tensor<2x3xf32> -> tensor<6xi64>
  return
}

// -----

func.func @check_code_zero(%ids: tensor<2xi64>, %s: tensor<i32>) {
  // expected-error @+1 {{code must be positive; 0 means success}}
  %0 = kiln.check_index_range %ids, %s, size = 4, code = 0 : tensor<2xi64>
  return
}

// -----

func.func @equal_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{operands have different element types}}
  %0 = kiln.equal %a, %b : tensor<3xf32>, tensor<3xi64>
  return
}

// -----

func.func @select_condition(%c: tensor<3xf32>, %a: tensor<3xf32>) {
  // expected-error @+1 {{must be ranked tensor of 1-bit signless integer values}}
  %0 = "kiln.select"(%c, %a, %a) : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @slice_out_of_bounds(%a: tensor<4xf32>) {
  // expected-error @+2 {{dimension 0 reads past the input's size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.slice %a offsets = [2] sizes = [2] strides = [2] : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @broadcast_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{input dimension 0 of size 2 does not broadcast to 4}}
  %0 = kiln.broadcast %a : tensor<2x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{scale and bias must broadcast to the normalized dimensions}}
  %0 = kiln.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @group_norm_groups(%x: tensor<2x6x4x4xf32>, %g: tensor<6xf32>) {
  // expected-error @+1 {{6 channels do not split into 4 groups}}
  %0 = kiln.group_norm %x, %g, %g groups = 4 epsilon = 1.0e-05 : tensor<2x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @group_norm_scale(%x: tensor<2x6x4x4xf32>, %g: tensor<6x1x1xf32>) {
  // expected-error @+1 {{scale and bias must hold one value per channel, [6]}}
  %0 = kiln.group_norm %x, %g, %g groups = 3 epsilon = 1.0e-05 : tensor<2x6x4x4xf32>, tensor<6x1x1xf32>, tensor<6x1x1xf32>
  return
}

// -----

func.func @group_norm_channels(%x: tensor<2x?x4xf32>, %g: tensor<6xf32>) {
  // expected-error @+1 {{input must be [N, C, spatial...] with a static C}}
  %0 = kiln.group_norm %x, %g, %g groups = 3 epsilon = 1.0e-05 : tensor<2x?x4xf32>, tensor<6xf32>, tensor<6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{input has 3 channels but the filter expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv2d %x, %w strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] groups = 1 : tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @packed_matmul_columns(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>) {
  // expected-error @+1 {{result has 4 columns, which 3 panels of 2 don't hold with less than a panel of padding}}
  %0 = kiln.packed_matmul %x, %w : tensor<4x3xf32>, tensor<3x3x2xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @packed_matmul_depth(%x: tensor<4x5xf32>, %w: tensor<3x3x2xf32>) {
  // expected-error @+1 {{lhs has 5 columns but the panels have 3 rows}}
  %0 = kiln.packed_matmul %x, %w : tensor<4x5xf32>, tensor<3x3x2xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @packed_matmul_bias(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{bias must be 'tensor<3x2xf32>', the panels of the result's columns}}
  %0 = kiln.packed_matmul %x, %w bias %b : tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<5xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @packed_matmul_activation(%x: tensor<4x3xf32>, %w: tensor<1x3x2xf32>) {
  // expected-error @+2 {{expected ::kiln::Activation to be one of: gelu_erf, gelu_tanh}}
  // expected-error @+1 {{failed to parse Kiln_ActivationAttr parameter 'value'}}
  %0 = kiln.packed_matmul %x, %w activation relu6 : tensor<4x3xf32>, tensor<1x3x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @attention_depth(%q: tensor<4x8xf32>, %kt: tensor<7x4xf32>, %v: tensor<4x3xf32>) {
  // expected-error @+1 {{query rows have 8 elements but key_t has 7 rows}}
  %0 = kiln.attention %q, %kt, %v scale = 1.0 : tensor<4x8xf32>, tensor<7x4xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x8xf32>, %kt: tensor<3x8x4xf32>, %v: tensor<2x4x3xf32>) {
  // expected-error @+1 {{query, key_t, value and result must have the same batch dimensions}}
  %0 = kiln.attention %q, %kt, %v scale = 1.0 : tensor<2x4x8xf32>, tensor<3x8x4xf32>, tensor<2x4x3xf32> -> tensor<2x4x3xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>, %m: tensor<5xf32>) {
  // expected-error @+1 {{mask 'tensor<5xf32>' does not broadcast to the scores' shape}}
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @attention_bool_mask_fill(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>, %m: tensor<4x4xi1>) {
  // expected-error @+1 {{an i1 mask takes a mask_fill and an f32 mask none}}
  %0 = kiln.attention %q, %kt, %v mask %m scale = 1.0 : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32>, tensor<4x4xi1> -> tensor<4x3xf32>
  return
}

// -----

func.func @packed_matmul_residual(%x: tensor<4x3xf32>, %w: tensor<3x3x2xf32>, %r: tensor<1x5xf32>) {
  // expected-error @+1 {{failed to verify that the residual has the result's type}}
  %0 = "kiln.packed_matmul"(%x, %w, %r) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (tensor<4x3xf32>, tensor<3x3x2xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @attention_seq_first_rank(%q: tensor<4x8xf32>, %kt: tensor<8x4xf32>, %v: tensor<4x3xf32>) {
  // expected-error @+1 {{sequence-first operands need a heads dimension (rank 3 or more)}}
  %0 = kiln.attention %q, %kt, %v scale = 1.0 {query_seq_first} : tensor<4x8xf32>, tensor<8x4xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @attention_seq_first_shape(%q: tensor<1x2x6x8xf32>, %kt: tensor<1x2x8x6xf32>, %v: tensor<1x2x6x3xf32>) {
  // expected-error @+1 {{query, key_t, value and result must have the same batch dimensions}}
  %0 = kiln.attention %q, %kt, %v scale = 1.0 {query_seq_first} : tensor<1x2x6x8xf32>, tensor<1x2x8x6xf32>, tensor<1x2x6x3xf32> -> tensor<1x2x6x3xf32>
  return
}

// -----

// expected-error @+1 {{initial value has type 'tensor<2xf32>', not the state's 'tensor<3xf32>'}}
kiln.state @s : tensor<3xf32> = dense<[1.0, 2.0]> : tensor<2xf32>

// -----

func.func @read_unknown_state() -> tensor<3xf32> {
  // expected-error @+1 {{names no kiln.state: @missing}}
  %0 = kiln.state_read @missing : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

kiln.state @s : tensor<3xf32>
func.func @read_wrong_type() -> tensor<4xf32> {
  // expected-error @+1 {{reads 'tensor<4xf32>' from state of type 'tensor<3xf32>'}}
  %0 = kiln.state_read @s : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

kiln.state @s : tensor<3xf32>
func.func @write_wrong_type(%v: tensor<3xi64>) {
  // expected-error @+1 {{writes 'tensor<3xi64>' to state of type 'tensor<3xf32>'}}
  kiln.state_write %v, @s : tensor<3xi64>
  return
}

// -----

kiln.state @cache : tensor<2x8x4xf32>
func.func @update_too_wide(%k: tensor<2x1x5xf32>, %at: tensor<i64>) {
  // expected-error @+1 {{update of type 'tensor<2x1x5xf32>' doesn't fit state of type 'tensor<2x8x4xf32>' along axis 2}}
  kiln.state_update %k, @cache, axis = 1, offset = %at : tensor<2x1x5xf32>, tensor<i64>
  return
}

// -----

kiln.state @cache : tensor<2x8x4xf32>
func.func @update_bad_axis(%k: tensor<2x1x4xf32>, %at: tensor<i64>) {
  // expected-error @+1 {{axis 3 is out of range for rank 3}}
  kiln.state_update %k, @cache, axis = 3, offset = %at : tensor<2x1x4xf32>, tensor<i64>
  return
}

// -----

kiln.state @cache : tensor<2x8x4xf32>
func.func @update_offset_rank(%k: tensor<2x1x4xf32>, %at: tensor<1xi64>) {
  // expected-error @+1 {{offset must be a 0-d tensor}}
  kiln.state_update %k, @cache, axis = 1, offset = %at : tensor<2x1x4xf32>, tensor<1xi64>
  return
}

// -----

func.func @state_inside_function() {
  // expected-error @+1 {{expects parent op 'builtin.module'}}
  kiln.state @inner : tensor<3xf32>
  return
}

// -----

func.func @reshape_missing_dims(%h: tensor<1x?x384xf32>) {
  // expected-error @+1 {{takes one size per dynamic result dimension: 1, got 0}}
  %0 = kiln.reshape %h : tensor<1x?x384xf32> -> tensor<1x?x12x32xf32>
  return
}

// -----

func.func @range_without_size(%a: tensor<i64>, %b: tensor<i64>) {
  // expected-error @+1 {{takes a size exactly when the result's length is dynamic}}
  %0 = kiln.range %a, %b : tensor<i64>, tensor<i64> -> tensor<?xi64>
  return
}

// -----

func.func @range_vector_start(%a: tensor<2xi64>, %b: tensor<i64>) {
  // expected-error @+1 {{start and delta must be scalars (0-d)}}
  %0 = kiln.range %a, %b : tensor<2xi64>, tensor<i64> -> tensor<4xi64>
  return
}

// -----

// expected-error @+1 {{dimension 'seq' has the range 5..2; it needs 0 <= min <= max}}
func.func @bad_dim() attributes {kiln.dims = [#kiln.dim<"seq", 5, 2>]} {
  return
}

// -----

// expected-error @+2 {{a CPU model needs at least one FMA unit and a latency of at least one cycle}}
// expected-error @+1 {{failed to parse Kiln_TargetAttr parameter 'cpu_model'}}
func.func private @no_fma_units() attributes {kiln.target = #kiln.target<cpu, "x86_64-pc-linux-gnu", "znver4" sized for <fma_units = 0, fma_latency = 4, l1 = 32768, l2 = 1048576, l3 = 0>>}

// -----

func.func @quantize_axis_without_per_axis_scale(%x: tensor<2x3xf32>, %s: tensor<f32>, %zp: tensor<i8>) {
  // expected-error @+1 {{has an axis but a per-tensor (0-D) scale}}
  %0 = kiln.quantize %x, %s, %zp axis = 1 : tensor<2x3xf32>, tensor<f32>, tensor<i8> -> tensor<2x3xi8>
  return
}

// -----

func.func @quantize_scales_per_wrong_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %zp: tensor<3xi8>) {
  // expected-error @+1 {{has 3 scales for the 2 indices of axis 0}}
  %0 = kiln.quantize %x, %s, %zp axis = 0 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xi8>
  return
}

// -----

func.func @quantize_scale_and_zero_point_differ(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %zp: tensor<i8>) {
  // expected-error @+1 {{scale 'tensor<3xf32>' and zero point 'tensor<i8>' must have one shape}}
  %0 = kiln.quantize %x, %s, %zp axis = 1 : tensor<2x3xf32>, tensor<3xf32>, tensor<i8> -> tensor<2x3xi8>
  return
}

// -----

func.func @dequantize_zero_point_type(%q: tensor<4xi32>, %s: tensor<f32>, %zp: tensor<i8>) {
  // expected-error @+1 {{zero point must have the input's element type}}
  %0 = kiln.dequantize %q, %s, %zp : tensor<4xi32>, tensor<f32>, tensor<i8> -> tensor<4xf32>
  return
}

// -----

func.func @dequantize_blocked_scale_shape(%q: tensor<40x6xi8>, %s: tensor<4x6xf32>, %zp: tensor<4x6xi8>) {
  // expected-error @+1 {{blocked scale 'tensor<4x6xf32>' does not match input 'tensor<40x6xi8>' in blocks of 8 along axis 0}}
  %0 = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 : tensor<40x6xi8>, tensor<4x6xf32>, tensor<4x6xi8> -> tensor<40x6xf32>
  return
}

// -----

func.func @dequantize_blocked_without_axis(%q: tensor<16x6xi8>, %s: tensor<2x6xf32>, %zp: tensor<2x6xi8>) {
  // expected-error @+1 {{blocked quantization needs an axis in [0, 2)}}
  %0 = kiln.dequantize %q, %s, %zp block_size = 8 : tensor<16x6xi8>, tensor<2x6xf32>, tensor<2x6xi8> -> tensor<16x6xf32>
  return
}

// -----

func.func @dequantize_blocked_zero_point_shape(%q: tensor<16x6xi8>, %s: tensor<2x6xf32>, %zp: tensor<6xi8>) {
  // expected-error @+1 {{scale and zero point must have one shape}}
  %0 = kiln.dequantize %q, %s, %zp axis = 0 block_size = 8 : tensor<16x6xi8>, tensor<2x6xf32>, tensor<6xi8> -> tensor<16x6xf32>
  return
}

// -----

func.func @matmul_integer_row_zero_points(%a: tensor<4x3xi8>, %b: tensor<3x2xi8>, %azp: tensor<4xi8>, %bzp: tensor<i8>) {
  // expected-error @+1 {{lhs zero point 'tensor<4xi8>' does not broadcast to 'tensor<4x3xi8>'}}
  %0 = kiln.matmul_integer %a, %b, %azp, %bzp : tensor<4x3xi8>, tensor<3x2xi8>, tensor<4xi8>, tensor<i8> -> tensor<4x2xi32>
  return
}

// -----

func.func @matmul_integer_result_shape(%a: tensor<4x3xi8>, %b: tensor<3x2xi8>, %zp: tensor<i8>) {
  // expected-error @+1 {{result type 'tensor<4x3xi32>' is not the product's 'tensor<4x2xi32>'}}
  %0 = kiln.matmul_integer %a, %b, %zp, %zp : tensor<4x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<i8> -> tensor<4x3xi32>
  return
}

// -----

func.func @cast_unsigned_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{input_unsigned needs an integer input}}
  %0 = kiln.cast %x {input_unsigned} : tensor<4xf32> -> tensor<4xi8>
  return
}

// -----

func.func @quantized_matmul_depth(%x: tensor<2x72xf32>, %w: tensor<5x17x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>) {
  // expected-error @+1 {{input has 72 columns but the weights hold 17 groups of 4 rows}}
  %0 = kiln.quantized_matmul %x, %w, %s, %c : tensor<2x72xf32>, tensor<5x17x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x70xf32>
  return
}

// -----

func.func @quantized_matmul_columns(%x: tensor<2x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>) {
  // expected-error @+1 {{result 'tensor<2x60xf32>' must have the input's rows and between 65 and 80 columns}}
  %0 = kiln.quantized_matmul %x, %w, %s, %c : tensor<2x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x60xf32>
  return
}

// -----

func.func @int4_matmul_blocks(%x: tensor<2x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x5x16xf32>, %c: tensor<80xf32>) {
  // expected-error @+1 {{scales 'tensor<5x5x16xf32>' must be [5, blocks, 16] with blocks dividing 96 rows into multiples of 8}}
  %0 = kiln.int4_matmul %x, %w, %s, %c : tensor<2x72xf32>, tensor<5x12x16x4xi8>, tensor<5x5x16xf32>, tensor<80xf32> -> tensor<2x70xf32>
  return
}

// -----

func.func @int4_matmul_depth(%x: tensor<2x60xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>) {
  // expected-error @+1 {{input has 60 columns but the weights hold 96 rows in blocks of 32}}
  %0 = kiln.int4_matmul %x, %w, %s, %c : tensor<2x60xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x70xf32>
  return
}

// -----

func.func @int4_matmul_sums(%x: tensor<2x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<70xf32>) {
  // expected-error @+1 {{column sums must have one entry per padded column (80)}}
  %0 = kiln.int4_matmul %x, %w, %s, %c : tensor<2x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<70xf32> -> tensor<2x70xf32>
  return
}

// -----

func.func @int4_matmul_zero_points(%x: tensor<2x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>, %z: tensor<5x3xi8>) {
  // expected-error @+1 {{zero points 'tensor<5x3xi8>' must have the scales' shape}}
  %0 = kiln.int4_matmul %x, %w, %s, %c zero_points(%z : tensor<5x3xi8>) : tensor<2x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x70xf32>
  return
}

// -----

func.func @quantized_matmul_static_half(%x: tensor<2x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>) {
  // expected-error @+1 {{takes a static input scale and zero point together}}
  %0 = "kiln.quantized_matmul"(%x, %w, %s, %c, %xs) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>}> : (tensor<2x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32>, tensor<f32>) -> tensor<2x70xf32>
  return
}

// -----

func.func @quantized_matmul_smooth_dynamic(%x: tensor<2x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %f: tensor<72xf32>) {
  // expected-error @+1 {{smooths only a static input quantization}}
  %0 = "kiln.quantized_matmul"(%x, %w, %s, %c, %f) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 1>}> : (tensor<2x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32>, tensor<72xf32>) -> tensor<2x70xf32>
  return
}

// -----

func.func @quantized_matmul_smooth_length(%x: tensor<2x72xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>, %xzp: tensor<i8>, %f: tensor<64xf32>) {
  // expected-error @+1 {{smoothing has 64 factors for an input of 72 columns}}
  %0 = kiln.quantized_matmul %x, %w, %s, %c static(%xs, %xzp : tensor<f32>, tensor<i8>) smooth(%f : tensor<64xf32>) : tensor<2x72xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x70xf32>
  return
}

// -----

func.func @dynamic_slice_static_result(%x: tensor<16x4xf32>, %o: index, %s: index) {
  // expected-error @+1 {{sliced dimension 0 must be dynamic}}
  %0 = kiln.dynamic_slice %x axes = [0] offsets(%o) sizes(%s) : tensor<16x4xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @dynamic_slice_repeated_axis(%x: tensor<16x4xf32>, %o: index, %s: index) {
  // expected-error @+1 {{axis 0 is out of range or repeated}}
  %0 = kiln.dynamic_slice %x axes = [0, 0] offsets(%o, %o) sizes(%s, %s) : tensor<16x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @dynamic_slice_changed_dim(%x: tensor<16x4xf32>, %o: index, %s: index) {
  // expected-error @+1 {{dimension 1 is not sliced and must keep the input's size}}
  %0 = kiln.dynamic_slice %x axes = [0] offsets(%o) sizes(%s) : tensor<16x4xf32> -> tensor<?x2xf32>
  return
}

// -----

func.func @sample_coefficient_rows(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{needs [2, 5] update coefficients, one row per step; has 'tensor<1x5xf32>'}}
  %s = kiln.sample ddim %n noise_scale = 1.0 timesteps = dense<[999.0, 499.0]> : tensor<2xf32> coefficients = dense<1.0> : tensor<1x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    kiln.yield %x : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

func.func @sample_region_arguments(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{region takes the latent ('tensor<1x4xf32>'), the step's timestep (tensor<f32>), its index and the carried values}}
  %s = kiln.sample euler %n noise_scale = 1.0 timesteps = dense<[999.0]> : tensor<1xf32> coefficients = dense<1.0> : tensor<1x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<1xf32>, %i: index):
    kiln.yield %x : tensor<1x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

func.func @sample_yield_type(%n: tensor<1x4xf32>) -> tensor<1x4xf32> {
  // expected-error @+1 {{region yields 'tensor<2x4xf32>', not the latent's 'tensor<1x4xf32>'}}
  %s = kiln.sample dpmpp_2m %n noise_scale = 1.0 timesteps = dense<[999.0]> : tensor<1xf32> coefficients = dense<1.0> : tensor<1x5xf32> : tensor<1x4xf32> {
  ^bb0(%x: tensor<1x4xf32>, %t: tensor<f32>, %i: index):
    %b = kiln.concat %x, %x axis = 0 : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<2x4xf32>
    kiln.yield %b : tensor<2x4xf32>
  }
  return %s : tensor<1x4xf32>
}

// -----

func.func @winograd_transform_shape(%x: tensor<1x3x8x8xf32>, %u: tensor<9x4x3xf32>) {
  // expected-error @+1 {{filter transform must be [16, F, 3] or [36, F, 3], got 'tensor<9x4x3xf32>'}}
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x3x8x8xf32>, tensor<9x4x3xf32> -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @winograd_result_shape(%x: tensor<1x3x8x8xf32>, %u: tensor<16x4x3xf32>) {
  // expected-error @+1 {{result must be 'tensor<1x4x6x6xf32>'}}
  %0 = kiln.winograd_conv2d %x, %u pads = [0, 0, 0, 0] : tensor<1x3x8x8xf32>, tensor<16x4x3xf32> -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @winograd_odd_output(%x: tensor<1x3x7x8xf32>, %u: tensor<16x4x3xf32>) {
  // expected-error @+1 {{output height and width must be positive multiples of the tile side 2, got 7x8}}
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x3x7x8xf32>, tensor<16x4x3xf32> -> tensor<1x4x7x8xf32>
  return
}

// -----

func.func @winograd_pads(%x: tensor<1x3x8x8xf32>, %u: tensor<16x4x3xf32>) {
  // expected-error @+1 {{pads must be 4 values, none negative}}
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1] : tensor<1x3x8x8xf32>, tensor<16x4x3xf32> -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @pool_window_too_large(%x: tensor<1x3x4x4xf32>) {
  // expected-error @+2 {{the window is larger than the padded input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pool max %x kernel = [5, 5] strides = [1, 1] dilations = [1, 1] pads = [0, 0, 0, 0] : tensor<1x3x4x4xf32> -> tensor<1x3x1x1xf32>
  return
}

// -----

func.func @pool_dynamic_spatial_ceil(%x: tensor<1x3x?xf32>) {
  // expected-error @+2 {{a ceil_mode pool needs static spatial dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pool max %x kernel = [2] strides = [1] dilations = [1] pads = [0, 0] ceil_mode : tensor<1x3x?xf32> -> tensor<1x3x?xf32>
  return
}

// -----

func.func @unsigned_float_div(%a: tensor<2xf32>) {
  // expected-error @+1 {{is_unsigned needs integer operands}}
  %0 = kiln.div %a, %a {is_unsigned} : tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @scatter_reduction_on_bools(%d: tensor<4xi1>, %i: tensor<2xi64>, %u: tensor<2xi1>) {
  // expected-error @+1 {{reduction add needs f32, f64, i32 or i64 elements, not 'i1'}}
  %0 = kiln.scatter_elements %d[%i] = %u, axis = 0, reduction = add : tensor<4xi1>, tensor<2xi64>, tensor<2xi1>
  return
}

// -----

func.func @scatter_nd_updates_shape(%d: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+1 {{updates must have shape indices.shape[:-1] + data.shape[k:]}}
  %0 = kiln.scatter_nd %d[%i] = %u, reduction = none : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>
  return
}

// -----

func.func @gather_nd_too_deep(%d: tensor<3x4xf32>, %i: tensor<2x3xi64>) {
  // expected-error @+2 {{gather_nd index tuples must have a static length of at most the data's rank less batch_dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather_nd %d[%i], batch_dims = 0 : tensor<3x4xf32>, tensor<2x3xi64> -> tensor<2xf32>
  return
}

// -----

func.func @token_match_too_many(%m: tensor<1x9x4xf32>) {
  // expected-error @+1 {{can merge 0 to 4 of 9 tokens with 1 protected, not 5}}
  %d, %k = kiln.token_match %m merged = 5 protected = 1 : tensor<1x9x4xf32> -> tensor<1x9xi64>, tensor<1x4xi64>
  return
}

// -----

func.func @token_match_kept(%m: tensor<1x9x4xf32>) {
  // expected-error @+1 {{kept must be [1, 7]}}
  %d, %k = kiln.token_match %m merged = 2 protected = 1 : tensor<1x9x4xf32> -> tensor<1x9xi64>, tensor<1x6xi64>
  return
}

// -----

func.func @token_match_bias(%m: tensor<2x9x4xf32>, %b: tensor<1x9xf32>) {
  // expected-error @+1 {{key_bias must be [2, 9]}}
  %d, %k = kiln.token_match %m bias %b merged = 2 protected = 1 : tensor<2x9x4xf32>, tensor<1x9xf32> -> tensor<2x9xi64>, tensor<2x7xi64>
  return
}

// -----

func.func @token_select_too_many(%i: tensor<1x9xf32>, %b: tensor<1x9xf32>) {
  // expected-error @+1 {{keeps 1 protected and 7 other tokens, which with 2 fused slot(s) must be at most 9}}
  %d, %k = kiln.token_select %i bias %b kept = 7 protected = 1 : tensor<1x9xf32>, tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x10xi64>
  return
}

// -----

func.func @token_select_kept(%i: tensor<1x9xf32>) {
  // expected-error @+1 {{kept_tokens must be [1, 6]}}
  %d, %k = kiln.token_select %i kept = 4 protected = 1 : tensor<1x9xf32> -> tensor<1x9xi64>, tensor<1x5xi64>
  return
}

// -----

func.func @token_merge_width(%x: tensor<1x9x8xf32>, %s: tensor<1x9xf32>, %d: tensor<1x9xi64>) {
  // expected-error @+1 {{result must be [1, M, 8] with M <= 9}}
  %m, %ms = kiln.token_merge %x, %s, %d : tensor<1x9x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x7x4xf32>, tensor<1x7xf32>
  return
}

// -----

func.func @token_merge_dynamic(%x: tensor<1x?x8xf32>, %s: tensor<1x9xf32>, %d: tensor<1x9xi64>) {
  // expected-error @+1 {{input must be a static tensor of rank 3, not 'tensor<1x?x8xf32>'}}
  %m, %ms = kiln.token_merge %x, %s, %d : tensor<1x?x8xf32>, tensor<1x9xf32>, tensor<1x9xi64> -> tensor<1x7x8xf32>, tensor<1x7xf32>
  return
}

// -----

func.func @token_unmerge_shape(%x: tensor<1x7x8xf32>, %d: tensor<1x9xi64>) {
  // expected-error @+1 {{result must be [1, 9, 8]}}
  %u = kiln.token_unmerge %x, %d : tensor<1x7x8xf32>, tensor<1x9xi64> -> tensor<1x7x8xf32>
  return
}

// -----

func.func @splat_project_sh(%p: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                            %sh: tensor<5x5x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) {
  // expected-error @+1 {{sh must be [N, K, 3] with K = 1, 4, 9 or 16 (SH degree 0-3), not 'tensor<5x5x3xf32>'}}
  %0 = kiln.splat_project %p, %p, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x5x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return
}

// -----

func.func @splat_project_count(%p: tensor<5x3xf32>, %r: tensor<6x4xf32>, %o: tensor<5xf32>,
                               %sh: tensor<5x1x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) {
  // expected-error @+1 {{rotations must be tensor<5x4xf32>, not 'tensor<6x4xf32>'}}
  %0 = kiln.splat_project %p, %p, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<6x4xf32>, tensor<5xf32>, tensor<5x1x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return
}

// -----

func.func @splat_project_size(%p: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                              %sh: tensor<5x1x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) {
  // expected-error @+1 {{image sides must be 1 to 16384 pixels, not 1000000}}
  %0 = kiln.splat_project %p, %p, %r, %o, %sh, %view, %k width = 1000000 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x1x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return
}

// -----

func.func @splat_rasterize_image(%s: tensor<11x5xf32>, %bg: tensor<3xf32>) {
  // expected-error @+1 {{image must be a static [H, W, 3] tensor, not 'tensor<30x40x4xf32>'}}
  %0 = kiln.splat_rasterize %s, %bg : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x4xf32>
  return
}

// -----

func.func @splat_project_int8_map(%p: tensor<5x3xf32>, %s: tensor<5x3xi8>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                                  %sh: tensor<5x1x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) {
  // expected-error @+1 {{int8_scales and int8_offsets need one value per column of the int8 attributes, 3}}
  %0 = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 {int8_scales = array<f32: 1.0, 1.0>, int8_offsets = array<f32: 0.0, 0.0>} : tensor<5x3xf32>, tensor<5x3xi8>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x1x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return
}

// -----

func.func @splat_rasterize_sized_static(%s: tensor<11x5xf32>, %bg: tensor<3xf32>, %h: index, %w: index) {
  // expected-error @+1 {{image must be a [?, ?, 3] tensor, not 'tensor<30x40x3xf32>'}}
  %0 = kiln.splat_rasterize %s, %bg size(%h, %w) max_size = [30, 40] : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  return
}

// -----

func.func @splat_rasterize_dynamic_unsized(%s: tensor<11x5xf32>, %bg: tensor<3xf32>) {
  // expected-error @+1 {{image must be a static [H, W, 3] tensor, not 'tensor<?x?x3xf32>'}}
  %0 = kiln.splat_rasterize %s, %bg : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
  return
}

// -----

func.func @splat_rasterize_size_one_side(%s: tensor<11x5xf32>, %bg: tensor<3xf32>, %h: index) {
  // expected-error @+1 {{size and max_size take a height and a width}}
  %0 = kiln.splat_rasterize %s, %bg size(%h) max_size = [30, 40] : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
  return
}

// -----

func.func @splat_rasterize_bound(%s: tensor<11x5xf32>, %bg: tensor<3xf32>, %h: index, %w: index) {
  // expected-error @+1 {{image sides must be 1 to 16384 pixels, not 20000}}
  %0 = kiln.splat_rasterize %s, %bg size(%h, %w) max_size = [30, 20000] : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
  return
}

// -----

func.func @splat_rasterize_splats(%s: tensor<10x5xf32>, %bg: tensor<3xf32>) {
  // expected-error @+1 {{splats must be a static [11, N] tensor, not 'tensor<10x5xf32>'}}
  %0 = kiln.splat_rasterize %s, %bg : tensor<10x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  return
}

// -----

func.func @splat_contributions_count(%splats: tensor<11x5xf32>) {
  // expected-error @+1 {{contributions must be tensor<5xf32>, not 'tensor<6xf32>'}}
  %0 = kiln.splat_contributions %splats width = 40 height = 30 : tensor<11x5xf32> -> tensor<6xf32>
  return
}

// -----

func.func @splat_contributions_size(%splats: tensor<11x5xf32>) {
  // expected-error @+1 {{image sides must be 1 to 16384 pixels, not 0}}
  %0 = kiln.splat_contributions %splats width = 40 height = 0 : tensor<11x5xf32> -> tensor<5xf32>
  return
}
