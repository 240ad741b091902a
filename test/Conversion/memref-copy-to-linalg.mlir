// RUN: kiln-opt %s -kiln-memref-copy-to-linalg | FileCheck %s

// CHECK-LABEL: func.func @strided_copy
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<2x3xf32>) outs(%{{.*}} : memref<2x3xf32, strided<[5, 1], offset: 2>>)
func.func @strided_copy(%src: memref<2x3xf32>, %dst: memref<2x5xf32>) {
  %view = memref.subview %dst[0, 2] [2, 3] [1, 1] : memref<2x5xf32> to memref<2x3xf32, strided<[5, 1], offset: 2>>
  memref.copy %src, %view : memref<2x3xf32> to memref<2x3xf32, strided<[5, 1], offset: 2>>
  return
}
