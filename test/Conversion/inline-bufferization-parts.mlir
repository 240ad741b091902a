// RUN: kiln-opt %s -split-input-file -verify-diagnostics -kiln-inline-bufferization-parts | FileCheck %s

// Bufferized parts go back where they were called, in order, with their
// arguments and results replaced by the call's; other functions stay.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: memref<4xf32>
// CHECK-NEXT: %[[V0:.*]] = memref.subview %[[X]][0] [2] [1]
// CHECK-NEXT: %[[B0:.*]] = memref.alloc() : memref<2xf32>
// CHECK-NEXT: memref.copy %[[V0]], %[[B0]]
// CHECK-NEXT: %[[V1:.*]] = memref.subview %[[X]][2] [2] [1]
// CHECK-NEXT: %[[B1:.*]] = memref.alloc() : memref<2xf32>
// CHECK-NEXT: memref.copy %[[V1]], %[[B1]]
// CHECK-NEXT: call @helper(%[[B0]])
// CHECK-NEXT: return %[[B0]], %[[B1]]
// CHECK-NOT: func.func private @main_part
// CHECK: func.func private @helper(
func.func @main(%x: memref<4xf32>) -> (memref<2xf32>, memref<2xf32>) {
  %0 = call @main_part(%x) : (memref<4xf32>) -> memref<2xf32>
  %1 = call @main_part_0(%x) : (memref<4xf32>) -> memref<2xf32>
  call @helper(%0) : (memref<2xf32>) -> ()
  return %0, %1 : memref<2xf32>, memref<2xf32>
}
func.func private @main_part(%x: memref<4xf32>) -> memref<2xf32> attributes {kiln.bufferization_part} {
  %view = memref.subview %x[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  %copy = memref.alloc() : memref<2xf32>
  memref.copy %view, %copy : memref<2xf32, strided<[1]>> to memref<2xf32>
  return %copy : memref<2xf32>
}
func.func private @main_part_0(%x: memref<4xf32>) -> memref<2xf32> attributes {kiln.bufferization_part} {
  %view = memref.subview %x[2] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 2>>
  %copy = memref.alloc() : memref<2xf32>
  memref.copy %view, %copy : memref<2xf32, strided<[1], offset: 2>> to memref<2xf32>
  return %copy : memref<2xf32>
}
func.func private @helper(%x: memref<2xf32>) {
  return
}

// -----

// A part is cut to be called once; anything else is refused.
func.func @main(%x: memref<4xf32>) {
  call @main_part(%x) : (memref<4xf32>) -> ()
  call @main_part(%x) : (memref<4xf32>) -> ()
  return
}
// expected-error @below {{a part cut for bufferization must have one block and be called once}}
func.func private @main_part(%x: memref<4xf32>) attributes {kiln.bufferization_part} {
  return
}
