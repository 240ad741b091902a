// RUN: kiln-opt %s -kiln-scope-loop-allocas | FileCheck %s

// A sequential loop whose body allocates on the stack releases it at the
// end of each iteration; a loop without allocas is left alone.
// CHECK-LABEL: func.func @main
// CHECK: scf.for
// CHECK-NEXT: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT: memref.alloca() : memref<16x256xf32>
// CHECK: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK-NEXT: }
// CHECK: scf.parallel
// CHECK-NEXT: llvm.intr.stacksave
// CHECK: llvm.intr.stackrestore
// CHECK: scf.for
// CHECK-NOT: llvm.intr.stacksave
// CHECK: return
func.func @main(%n: index, %out: memref<16x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %scores = memref.alloca() : memref<16x256xf32>
    memref.store %f, %scores[%c0, %c0] : memref<16x256xf32>
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %row = memref.alloca() : memref<256xf32>
    memref.store %f, %row[%c0] : memref<256xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %out[%c0, %i] : memref<16x256xf32>
  }
  return
}
