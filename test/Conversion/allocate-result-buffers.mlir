// RUN: kiln-opt %s -kiln-allocate-result-buffers -split-input-file | FileCheck %s

// A returned reshape of an allocation: the returned shape is allocated and
// the writers get the old shape as a view of it.
// CHECK-LABEL: func.func @expanded
// CHECK: %[[N:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x6xf32>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[N]] {{\[\[}}0, 1, 2]] : memref<1x4x6xf32> into memref<24xf32>
// CHECK: %[[OLD:.*]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [4, 6] : memref<24xf32> into memref<4x6xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[OLD]] : memref<4x6xf32>)
// CHECK: return %[[N]] : memref<1x4x6xf32>
func.func @expanded() -> memref<1x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x6xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x6xf32>)
  %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 6] : memref<4x6xf32> into memref<1x4x6xf32>
  return %r : memref<1x4x6xf32>
}

// -----

// Returned allocations, arguments and subviews are left alone.
// CHECK-LABEL: func.func @kept
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x6xf32>
// CHECK: %[[S:.*]] = memref.subview
// CHECK: return %[[A]], %arg0, %[[S]]
func.func @kept(%arg: memref<2x3xf32>) -> (memref<4x6xf32>, memref<2x3xf32>, memref<2x6xf32, strided<[6, 1]>>) {
  %a = memref.alloc() : memref<4x6xf32>
  %s = memref.subview %a[0, 0] [2, 6] [1, 1] : memref<4x6xf32> to memref<2x6xf32, strided<[6, 1]>>
  return %a, %arg, %s : memref<4x6xf32>, memref<2x3xf32>, memref<2x6xf32, strided<[6, 1]>>
}

// -----

// A buffer returned twice, directly and as a view: each later result is
// copied into its own allocation, since the caller owns each result.
// CHECK-LABEL: func.func @repeated
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[V:.*]] = memref.expand_shape %[[A]]
// CHECK: %[[C1:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK: memref.copy %[[A]], %[[C1]]
// CHECK: %[[C2:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
// CHECK: memref.copy %[[V]], %[[C2]]
// CHECK: return %[[A]], %[[C1]], %[[C2]]
func.func @repeated() -> (memref<4xf32>, memref<4xf32>, memref<2x2xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %v = memref.expand_shape %a [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  return %a, %a, %v : memref<4xf32>, memref<4xf32>, memref<2x2xf32>
}
