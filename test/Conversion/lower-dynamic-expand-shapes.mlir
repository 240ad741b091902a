// RUN: kiln-opt %s -kiln-lower-dynamic-expand-shapes -split-input-file | FileCheck %s
// RUN: kiln-opt %s -kiln-lower-dynamic-expand-shapes -expand-strided-metadata -split-input-file | FileCheck %s --check-prefix=EXPANDED

// A BERT mask's [batch * seq] -> [batch, 1, 1, seq]: one group, two
// dynamic sizes. Row-major strides from the output shape: seq for the
// first three dims (1 * 1 * seq, 1 * seq, seq), the source's for the last.
// CHECK-LABEL: func.func @mask
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %arg0
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%arg1, 1, 1, %arg2], strides: [%arg2, %arg2, %arg2, 1] : memref<i64> to memref<?x1x1x?xi64>
// CHECK-NOT: memref.expand_shape
// EXPANDED-LABEL: func.func @mask
// EXPANDED-NOT: memref.expand_shape
func.func @mask(%m: memref<?xi64>, %batch: index, %seq: index) -> memref<?x1x1x?xi64> {
  %e = memref.expand_shape %m [[0, 1, 2, 3]] output_shape [%batch, 1, 1, %seq] : memref<?xi64> into memref<?x1x1x?xi64>
  return %e : memref<?x1x1x?xi64>
}

// -----

// Two groups of a strided source: the second group's innermost dim keeps
// the source's column stride (2), the next 2 * 4 and the outer 8 * %c.
// CHECK-LABEL: func.func @strided
// CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %arg0
// CHECK: %[[R:.*]] = arith.muli %arg3, %c8 : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFFSET]]], sizes: [%arg1, %arg2, %arg3, 4], strides: [%{{.*}}, %[[R]], 8, 2]
func.func @strided(%m: memref<?x?xf32, strided<[?, 2], offset: ?>>, %a: index, %b: index, %c: index) -> memref<?x?x?x4xf32, strided<[?, ?, 8, 2], offset: ?>> {
  %e = memref.expand_shape %m [[0], [1, 2, 3]] output_shape [%a, %b, %c, 4] : memref<?x?xf32, strided<[?, 2], offset: ?>> into memref<?x?x?x4xf32, strided<[?, ?, 8, 2], offset: ?>>
  return %e : memref<?x?x?x4xf32, strided<[?, ?, 8, 2], offset: ?>>
}

// -----

// One dynamic size per group: left to expand-strided-metadata.
// CHECK-LABEL: func.func @single
// CHECK: memref.expand_shape
func.func @single(%m: memref<?x384xf32>, %seq: index) -> memref<1x?x384xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [1, %seq, 384] : memref<?x384xf32> into memref<1x?x384xf32>
  return %e : memref<1x?x384xf32>
}
