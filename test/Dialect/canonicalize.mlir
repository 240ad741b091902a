// RUN: kiln-opt %s -canonicalize -split-input-file | FileCheck %s

// Integer arithmetic folds with the generated code's two's-complement
// wrapping: INT64_MAX + 1, INT64_MIN - 1, 2^62 * 4, INT64_MIN / -1, 7 / 0
// (0, as the lowering defines it) and -INT64_MIN.
// CHECK-LABEL: func.func @int64_wraps
// CHECK-DAG: %[[MIN:.*]] = kiln.constant dense<-9223372036854775808> : tensor<1xi64>
// CHECK-DAG: %[[MAX:.*]] = kiln.constant dense<9223372036854775807> : tensor<1xi64>
// CHECK-DAG: %[[ZERO:.*]] = kiln.constant dense<0> : tensor<1xi64>
// CHECK-NEXT: return %[[MIN]], %[[MAX]], %[[ZERO]], %[[MIN]], %[[ZERO]], %[[MIN]] :
func.func @int64_wraps() -> (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) {
  %max = kiln.constant dense<9223372036854775807> : tensor<1xi64>
  %min = kiln.constant dense<-9223372036854775808> : tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %m1 = kiln.constant dense<-1> : tensor<1xi64>
  %big = kiln.constant dense<4611686018427387904> : tensor<1xi64>
  %four = kiln.constant dense<4> : tensor<1xi64>
  %seven = kiln.constant dense<7> : tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %0 = kiln.add %max, %one : tensor<1xi64>, tensor<1xi64>
  %1 = kiln.sub %min, %one : tensor<1xi64>, tensor<1xi64>
  %2 = kiln.mul %big, %four : tensor<1xi64>, tensor<1xi64>
  %3 = kiln.div %min, %m1 : tensor<1xi64>, tensor<1xi64>
  %4 = kiln.div %seven, %zero : tensor<1xi64>, tensor<1xi64>
  %5 = kiln.neg %min : tensor<1xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
}

// -----

// A shape computation as exporters write it (Shape, Gather, Concat, Equal,
// Where) folds to the shape it computes.
// CHECK-LABEL: func.func @shape_arithmetic
// CHECK-NEXT: %[[SHAPE:.*]] = kiln.constant dense<[2, 12, 64]> : tensor<3xi64>
// CHECK-NEXT: return %[[SHAPE]]
func.func @shape_arithmetic() -> tensor<3xi64> {
  %shape = kiln.constant dense<[2, 16, 768]> : tensor<3xi64>
  %batch = kiln.slice %shape offsets = [0] sizes = [1] strides = [1] : tensor<3xi64> -> tensor<1xi64>
  %heads = kiln.constant dense<[12, -1]> : tensor<2xi64>
  %target = kiln.concat %batch, %heads axis = 0 : tensor<1xi64>, tensor<2xi64> -> tensor<3xi64>
  %m1 = kiln.constant dense<-1> : tensor<i64>
  %is_inferred = kiln.equal %target, %m1 : tensor<3xi64>, tensor<i64>
  %depth = kiln.constant dense<64> : tensor<i64>
  %dims = kiln.broadcast %depth : tensor<i64> -> tensor<3xi64>
  %result = kiln.select %is_inferred, %dims, %target : tensor<3xi1>, tensor<3xi64>, tensor<3xi64>
  return %result : tensor<3xi64>
}

// -----

// Float arithmetic with broadcasting, a cast and data movement fold.
// CHECK-LABEL: func.func @float_and_data_movement
// CHECK-DAG: kiln.constant dense<{{\[}}[1.500000e+00, 2.500000e+00]]> : tensor<1x2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: kiln.constant dense<[3.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-NOT: kiln.{{add|transpose|cast}}
// CHECK: return
func.func @float_and_data_movement() -> (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) {
  %a = kiln.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %0 = kiln.add %a, %half : tensor<1x2xf32>, tensor<f32>
  %m = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %1 = kiln.transpose %m, perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  %i = kiln.constant dense<[3, -2]> : tensor<2xi64>
  %2 = kiln.cast %i : tensor<2xi64> -> tensor<2xf32>
  return %0, %1, %2 : tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>
}

// -----

// A gather of constants folds, negative indices counting from the end (as
// a Slice with a negative step imports); an index out of range is left to
// the lowering, which clamps it.
// CHECK-LABEL: func.func @gather
// CHECK-DAG: kiln.constant dense<{{\[}}[3, 2], [6, 5]]> : tensor<2x2xi64>
// CHECK: %[[OUT:.*]] = kiln.gather
// CHECK-SAME: tensor<2x3xi64>, tensor<1xi64> -> tensor<2x1xi64>
// CHECK: return %{{.*}}, %[[OUT]]
func.func @gather() -> (tensor<2x2xi64>, tensor<2x1xi64>) {
  %data = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %down = kiln.constant dense<[-1, 1]> : tensor<2xi64>
  %0 = kiln.gather %data[%down], axis = 1 : tensor<2x3xi64>, tensor<2xi64> -> tensor<2x2xi64>
  %outside = kiln.constant dense<[3]> : tensor<1xi64>
  %1 = kiln.gather %data[%outside], axis = 1 : tensor<2x3xi64>, tensor<1xi64> -> tensor<2x1xi64>
  return %0, %1 : tensor<2x2xi64>, tensor<2x1xi64>
}

// -----

// A commutative op takes its constant on the right, so fusion patterns
// see one operand order.
// CHECK-LABEL: func.func @constant_to_the_right
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[C:.*]] = kiln.constant
// CHECK: %[[SUM:.*]] = kiln.add %[[X]], %[[C]]
// CHECK: kiln.mul %[[SUM]], %[[C]]
func.func @constant_to_the_right(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = kiln.constant dense<2.0> : tensor<8xf32>
  %0 = kiln.add %c, %x : tensor<8xf32>, tensor<4x8xf32>
  %1 = kiln.mul %c, %0 : tensor<8xf32>, tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Identities fold to their input: an identity transpose, a cast to the
// same type, a reshape of a reshape.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[X]], %[[X]], %[[R]]
func.func @identities(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>) {
  %0 = kiln.transpose %x, perm = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = kiln.cast %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = kiln.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %3 = kiln.reshape %2 : tensor<3x2xf32> -> tensor<6xf32>
  return %0, %1, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>
}

// -----

// A transpose of a transpose is one transpose, or none when they cancel
// (a KV cache stored keys-transposed, read back and transposed again).
// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %[[X]], perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[X]], %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %0 = kiln.transpose %x, perm = [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %1 = kiln.transpose %0, perm = [0, 2, 1] : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  %2 = kiln.transpose %0, perm = [1, 0, 2] : tensor<2x4x3xf32> -> tensor<4x2x3xf32>
  return %1, %2 : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// Results over 4096 elements are kiln-fold-constants' decision, and ops
// with a run-time operand stay.
// CHECK-LABEL: func.func @not_folded
// CHECK: kiln.broadcast
// CHECK: kiln.add
func.func @not_folded(%x: tensor<2xi64>) -> (tensor<64x128xf32>, tensor<2xi64>) {
  %one = kiln.constant dense<1.0> : tensor<f32>
  %0 = kiln.broadcast %one : tensor<f32> -> tensor<64x128xf32>
  %c = kiln.constant dense<1> : tensor<2xi64>
  %1 = kiln.add %x, %c : tensor<2xi64>, tensor<2xi64>
  return %0, %1 : tensor<64x128xf32>, tensor<2xi64>
}

// -----

// The shape arithmetic of ONNX's function bodies (Attention's expanded form)
// folds: comparisons, logic, remainders (0 for a divisor of 0, as the
// lowering defines it) and min/max; an unsigned remainder stays.
// CHECK-LABEL: func.func @shape_logic
// CHECK-DAG: %[[TRUE:.*]] = kiln.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: %[[REM:.*]] = kiln.constant dense<[1, 0]> : tensor<2xi64>
// CHECK-DAG: %[[MAX:.*]] = kiln.constant dense<[4, 3]> : tensor<2xi64>
// CHECK: %[[UNSIGNED:.*]] = kiln.rem %{{.*}}, %{{.*}} {is_unsigned}
// CHECK: return %[[TRUE]], %[[REM]], %[[MAX]], %[[UNSIGNED]] :
func.func @shape_logic() -> (tensor<2xi1>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %a = kiln.constant dense<[4, 3]> : tensor<2xi64>
  %b = kiln.constant dense<[3, 0]> : tensor<2xi64>
  %less = kiln.less %b, %a : tensor<2xi64>, tensor<2xi64>
  %le = kiln.less_equal %a, %b : tensor<2xi64>, tensor<2xi64>
  %not = kiln.not %le : tensor<2xi1>
  %and = kiln.and %less, %not : tensor<2xi1>, tensor<2xi1>
  %eq = kiln.equal %a, %b : tensor<2xi64>, tensor<2xi64>
  %xor = kiln.xor %and, %eq : tensor<2xi1>, tensor<2xi1>
  %first = kiln.constant dense<[true, false]> : tensor<2xi1>
  %or = kiln.or %xor, %xor : tensor<2xi1>, tensor<2xi1>
  %pick = kiln.and %or, %first : tensor<2xi1>, tensor<2xi1>
  %rem = kiln.rem %a, %b : tensor<2xi64>, tensor<2xi64>
  %max = kiln.max %a, %b : tensor<2xi64>, tensor<2xi64>
  %urem = kiln.rem %a, %b {is_unsigned} : tensor<2xi64>, tensor<2xi64>
  return %pick, %rem, %max, %urem : tensor<2xi1>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
}

// -----

// Multiplying or dividing by a splat of ones and adding or subtracting a
// splat of zeros pass the other operand through (a GroupNorm's export
// multiplies by ones and adds zeros after its InstanceNormalization), on
// either side of the commutative ops.
// CHECK-LABEL: func.func @identity_operands
// CHECK-SAME: (%[[X:.*]]: tensor<2x32x8xf32>, %[[N:.*]]: tensor<4xi64>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[N]], %[[N]] :
func.func @identity_operands(%x: tensor<2x32x8xf32>, %n: tensor<4xi64>) -> (tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<4xi64>, tensor<4xi64>) {
  %ones = kiln.constant dense<1.0> : tensor<32x1xf32>
  %zeros = kiln.constant dense<0.0> : tensor<32x1xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %int_one = kiln.constant dense<1> : tensor<4xi64>
  %int_zero = kiln.constant dense<0> : tensor<i64>
  %0 = kiln.mul %x, %ones : tensor<2x32x8xf32>, tensor<32x1xf32>
  %1 = kiln.add %zeros, %x : tensor<32x1xf32>, tensor<2x32x8xf32>
  %2 = kiln.sub %x, %zeros : tensor<2x32x8xf32>, tensor<32x1xf32>
  %3 = kiln.div %x, %one : tensor<2x32x8xf32>, tensor<f32>
  %4 = kiln.mul %one, %x : tensor<f32>, tensor<2x32x8xf32>
  %5 = kiln.mul %n, %int_one : tensor<4xi64>, tensor<4xi64>
  %6 = kiln.add %n, %int_zero : tensor<4xi64>, tensor<i64>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>, tensor<4xi64>, tensor<4xi64>
}

// -----

// Not where broadcasting widens the other operand, the splat is not the
// identity (x * 0, 0 - x), or a constant is not a splat.
// CHECK-LABEL: func.func @not_identity_operands
// CHECK-COUNT-4: kiln.
// CHECK-COUNT-4: kiln.{{mul|sub}}
// CHECK: return
func.func @not_identity_operands(%x: tensor<32x1xf32>, %y: tensor<2xf32>) -> (tensor<2x32x8xf32>, tensor<32x1xf32>, tensor<32x1xf32>, tensor<2xf32>) {
  %ones = kiln.constant dense<1.0> : tensor<2x32x8xf32>
  %zeros = kiln.constant dense<0.0> : tensor<32x1xf32>
  %mixed = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %minus_zero = kiln.constant dense<-0.0> : tensor<32x1xf32>
  %0 = kiln.mul %x, %ones : tensor<32x1xf32>, tensor<2x32x8xf32>
  %1 = kiln.mul %x, %zeros : tensor<32x1xf32>, tensor<32x1xf32>
  %2 = kiln.sub %minus_zero, %x : tensor<32x1xf32>, tensor<32x1xf32>
  %3 = kiln.mul %y, %mixed : tensor<2xf32>, tensor<2xf32>
  return %0, %1, %2, %3 : tensor<2x32x8xf32>, tensor<32x1xf32>, tensor<32x1xf32>, tensor<2xf32>
}

// -----

// A gather at one constant index is a slice without that axis; one of a
// transpose gathers from the transpose's input and transposes the rest (the
// heads split of a fused q/k/v projection: each part moves once).
// CHECK-LABEL: func.func @gather_constant_index
// CHECK: %[[Q:.*]] = kiln.slice %arg0 offsets = [0, 0, 0, 0, 0] sizes = [2, 4, 1, 3, 8] strides = [1, 1, 1, 1, 1] : tensor<2x4x3x3x8xf32> -> tensor<2x4x1x3x8xf32>
// CHECK: %[[QR:.*]] = kiln.reshape %[[Q]] : tensor<2x4x1x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK: %[[QT:.*]] = kiln.transpose %[[QR]], perm = [0, 2, 1, 3] : tensor<2x4x3x8xf32> -> tensor<2x3x4x8xf32>
// CHECK: %[[V:.*]] = kiln.slice %arg0 offsets = [0, 0, 2, 0, 0] sizes = [2, 4, 1, 3, 8]
// CHECK: %[[W:.*]] = kiln.slice %arg1 offsets = [0, 4] sizes = [3, 1] strides = [1, 1] : tensor<3x5xf32> -> tensor<3x1xf32>
// CHECK: %[[WR:.*]] = kiln.reshape %[[W]] : tensor<3x1xf32> -> tensor<3xf32>
// CHECK-NOT: kiln.gather
// CHECK: return %[[QT]], %{{.*}}, %[[WR]]
func.func @gather_constant_index(%qkv: tensor<2x4x3x3x8xf32>, %w: tensor<3x5xf32>) -> (tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<3xf32>) {
  %zero = kiln.constant dense<0> : tensor<i64>
  %two = kiln.constant dense<2> : tensor<i64>
  %last = kiln.constant dense<-1> : tensor<i64>
  %t = kiln.transpose %qkv, perm = [2, 0, 3, 1, 4] : tensor<2x4x3x3x8xf32> -> tensor<3x2x3x4x8xf32>
  %q = kiln.gather %t[%zero], axis = 0 : tensor<3x2x3x4x8xf32>, tensor<i64> -> tensor<2x3x4x8xf32>
  %v = kiln.gather %t[%two], axis = 0 : tensor<3x2x3x4x8xf32>, tensor<i64> -> tensor<2x3x4x8xf32>
  %c = kiln.gather %w[%last], axis = 1 : tensor<3x5xf32>, tensor<i64> -> tensor<3xf32>
  return %q, %v, %c : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>, tensor<3xf32>
}

// -----

// Indices out of range, computed at run time, or more than one stay
// gathers.
// CHECK-LABEL: func.func @gather_not_constant_index
// CHECK-COUNT-3: kiln.gather
// CHECK-NOT: kiln.slice
func.func @gather_not_constant_index(%w: tensor<3x5xf32>, %i: tensor<i64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3x2xf32>) {
  %five = kiln.constant dense<5> : tensor<i64>
  %pair = kiln.constant dense<[0, 1]> : tensor<2xi64>
  %a = kiln.gather %w[%five], axis = 1 : tensor<3x5xf32>, tensor<i64> -> tensor<3xf32>
  %b = kiln.gather %w[%i], axis = 1 : tensor<3x5xf32>, tensor<i64> -> tensor<3xf32>
  %c = kiln.gather %w[%pair], axis = 1 : tensor<3x5xf32>, tensor<2xi64> -> tensor<3x2xf32>
  return %a, %b, %c : tensor<3xf32>, tensor<3xf32>, tensor<3x2xf32>
}
