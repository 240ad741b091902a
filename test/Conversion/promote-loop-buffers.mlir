// RUN: kiln-opt %s -kiln-promote-loop-buffers="max-bytes=4096" -split-input-file | FileCheck %s

// Scratch of one iteration, even inside a sequential loop, moves to the
// stack at the start of the parallel body, inside an alloca scope.
// CHECK-LABEL: func.func @scratch
// CHECK: scf.forall
// CHECK-NEXT: memref.alloca_scope {
// CHECK-NEXT:   %[[ROW:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT:   %[[BLOCK:.*]] = memref.alloca() {alignment = 64 : i64} : memref<16x16xf32>
// CHECK:        scf.for
// CHECK-NOT:      memref.alloc()
// CHECK:          linalg.fill ins(%{{.*}} : f32) outs(%[[BLOCK]] : memref<16x16xf32>)
// CHECK:          memref.subview %[[ROW]]
// CHECK:        memref.copy %[[ROW]]
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @scratch(%out: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) in (8) {
    %row = memref.alloc() : memref<16xf32>
    linalg.fill ins(%zero : f32) outs(%row : memref<16xf32>)
    scf.for %j = %c0 to %c4 step %c1 {
      %block = memref.alloc() : memref<16x16xf32>
      linalg.fill ins(%zero : f32) outs(%block : memref<16x16xf32>)
      %half = memref.subview %row[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
      linalg.fill ins(%zero : f32) outs(%half : memref<8xf32, strided<[1]>>)
    }
    %dst = memref.subview %out[%i, 0] [1, 16] [1, 1] : memref<8x16xf32> to memref<16xf32, strided<[1], offset: ?>>
    memref.copy %row, %dst : memref<16xf32> to memref<16xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

// Left alone: a buffer carried to the next iteration of a sequential loop,
// one larger than max-bytes, and one outside any parallel loop.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: memref.alloca
// CHECK: memref.alloc() : memref<32x32xf32>
// CHECK: scf.forall
// CHECK-NOT: memref.alloca
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: memref.alloc() : memref<64x64xf32>
func.func @kept(%init: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %outside = memref.alloc() : memref<32x32xf32>
  linalg.fill ins(%zero : f32) outs(%outside : memref<32x32xf32>)
  scf.forall (%i) in (8) {
    %r = scf.for %j = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (memref<4xf32>) {
      %next = memref.alloc() : memref<4xf32>
      memref.copy %acc, %next : memref<4xf32> to memref<4xf32>
      scf.yield %next : memref<4xf32>
    }
    %large = memref.alloc() : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%large : memref<64x64xf32>)
  }
  return
}
