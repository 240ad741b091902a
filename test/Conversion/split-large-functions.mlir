// RUN: kiln-opt %s -split-input-file -kiln-split-large-functions=max-ops=4 | FileCheck %s

// Runs of at most four operations move into private noinline functions,
// called in their place. Constants are recomputed in each part that uses
// them; the stack buffer stays in the entry's frame and is passed; a value
// a later part needs is returned (%v1), one only the part itself needs is
// not (%v0).
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4xf32>
// CHECK-NEXT: %[[STACK:.*]] = memref.alloca() : memref<4xf32>
// CHECK-NEXT: %[[V1:.*]] = call @main_part(%[[X]], %[[STACK]]) : (memref<4xf32>, memref<4xf32>) -> f32
// CHECK-NEXT: call @main_part_0(%[[X]], %[[Y]], %[[V1]]) : (memref<4xf32>, memref<4xf32>, f32) -> ()
// CHECK-NEXT: return
// CHECK: func.func private @main_part(%[[PX:.*]]: memref<4xf32>, %[[PS:.*]]: memref<4xf32>) -> f32 attributes {passthrough = ["noinline"]}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[A:.*]] = memref.load %[[PX]][%[[C0]]]
// CHECK-NEXT: %[[A2:.*]] = arith.mulf %[[A]], %[[TWO]]
// CHECK-NEXT: memref.store %[[A2]], %[[PS]][%[[C0]]]
// CHECK-NEXT: %[[B:.*]] = memref.load %[[PX]][%[[C1]]]
// CHECK-NEXT: %[[B2:.*]] = arith.mulf %[[B]], %[[TWO]]
// CHECK-NEXT: memref.store %[[B2]], %[[PS]][%[[C1]]]
// CHECK-NEXT: return %[[B]] : f32
// CHECK: func.func private @main_part_0(%[[QX:.*]]: memref<4xf32>, %[[QY:.*]]: memref<4xf32>, %[[QB:.*]]: f32) attributes {passthrough = ["noinline"]}
// CHECK: %[[C:.*]] = memref.load %[[QX]]
// CHECK-NEXT: memref.store %[[C]], %[[QY]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[QB]], %[[C]]
// CHECK-NEXT: memref.store %[[SUM]], %[[QY]]
// CHECK-NEXT: return
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %f = arith.constant 2.0 : f32
  %stack = memref.alloca() : memref<4xf32>
  %v0 = memref.load %x[%c0] : memref<4xf32>
  %m0 = arith.mulf %v0, %f : f32
  memref.store %m0, %stack[%c0] : memref<4xf32>
  %v1 = memref.load %x[%c1] : memref<4xf32>
  %m1 = arith.mulf %v1, %f : f32
  memref.store %m1, %stack[%c1] : memref<4xf32>
  %v2 = memref.load %x[%c2] : memref<4xf32>
  memref.store %v2, %y[%c2] : memref<4xf32>
  %s = arith.addf %v1, %v2 : f32
  memref.store %s, %y[%c0] : memref<4xf32>
  return
}

// -----

// A loop larger than the limit has its body split; the induction variable
// and a view the body uses are passed, the view recomputed from its source.
// CHECK-LABEL: func.func @loop(
// CHECK-SAME: %[[X:.*]]: memref<8x4xf32>
// CHECK: scf.for %[[I:.*]] =
// CHECK-NEXT: func.call @loop_part(%[[X]], %[[I]]) : (memref<8x4xf32>, index) -> ()
// CHECK-NEXT: func.call @loop_part_0(%[[X]], %[[I]]) : (memref<8x4xf32>, index) -> ()
// CHECK-NEXT: }
// CHECK: func.func private @loop_part(%[[PX:.*]]: memref<8x4xf32>, %[[PI:.*]]: index)
// CHECK: memref.subview %[[PX]][%[[PI]], 0] [1, 4] [1, 1]
// CHECK: func.func private @loop_part_0(
func.func @loop(%x: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %row = memref.subview %x[%i, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    %a = memref.load %row[%c0, %c0] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    memref.store %a, %row[%c0, %c1] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    %b = memref.load %row[%c0, %c1] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    memref.store %b, %row[%c0, %c2] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    %c = memref.load %row[%c0, %c2] : memref<1x4xf32, strided<[4, 1], offset: ?>>
    memref.store %c, %row[%c0, %c0] : memref<1x4xf32, strided<[4, 1], offset: ?>>
  }
  return
}

// -----

// Kernels (private functions) and entries within the limit stay whole.
// CHECK-LABEL: func.func private @kernel(
// CHECK-NOT: call
// CHECK: return
// CHECK-LABEL: func.func @small(
// CHECK-NEXT: call @kernel
// CHECK-NEXT: return
// CHECK-NOT: func.func
func.func private @kernel(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %x[%c0] : memref<4xf32>
  memref.store %a, %x[%c1] : memref<4xf32>
  %b = memref.load %x[%c1] : memref<4xf32>
  memref.store %b, %x[%c0] : memref<4xf32>
  %c = memref.load %x[%c0] : memref<4xf32>
  memref.store %c, %x[%c1] : memref<4xf32>
  return
}

func.func @small(%x: memref<4xf32>) {
  call @kernel(%x) : (memref<4xf32>) -> ()
  return
}
