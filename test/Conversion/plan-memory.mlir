// RUN: kiln-opt %s -kiln-plan-memory | FileCheck %s

// %a and %b are live at once and get separate places; %c starts after %a's
// last use (through a view) and takes its place. The arena is a new
// argument marked kiln.scratch; its type gives the size.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[ARENA:[a-z0-9]+]]: memref<2048xi8> {kiln.scratch})
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<2048xi8> to memref<16x16xf32>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%c1024{{.*}}][] : memref<2048xi8> to memref<16x16xf32>
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<2048xi8> to memref<256xf32>
// CHECK-NOT: memref.dealloc
// The loop's buffer, dead at the end of each iteration, is placed when
// nothing else is live.
// CHECK: scf.for
// CHECK: memref.view %[[ARENA]][%c0{{.*}}][] : memref<2048xi8> to memref<4xf32>
func.func @main(%in: memref<16x16xf32>, %out: memref<16x16xf32>, %big: memref<256xf32>) {
  %a = memref.alloc() : memref<16x16xf32>
  memref.copy %in, %a : memref<16x16xf32> to memref<16x16xf32>
  %b = memref.alloc() : memref<16x16xf32>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<16x16xf32> into memref<256xf32>
  %back = memref.expand_shape %flat [[0, 1]] output_shape [16, 16] : memref<256xf32> into memref<16x16xf32>
  memref.copy %back, %b : memref<16x16xf32> to memref<16x16xf32>
  memref.dealloc %a : memref<16x16xf32>
  %c = memref.alloc() : memref<256xf32>
  memref.copy %big, %c : memref<256xf32> to memref<256xf32>
  memref.copy %b, %out : memref<16x16xf32> to memref<16x16xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %t = memref.alloc() : memref<4xf32>
    memref.dealloc %t : memref<4xf32>
  }
  return
}

// Loop bodies and branches are planned as frames of their own, at the
// place of the loop or scf.if: a sequential loop's iterations reuse its
// buffers, an scf.if's branches share theirs. %keep, live across the loop,
// keeps its own place, after the loop's frame (the largest, placed first).
// A buffer the body yields to the next iteration, and
// the buffers of parallel iterations, stay on the heap.
// CHECK-LABEL: func.func @loops
// CHECK-SAME: %[[LARENA:[a-z0-9]+]]: memref<192xi8> {kiln.scratch})
// CHECK: memref.view %[[LARENA]][%c128{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK: scf.for
// CHECK: memref.view %[[LARENA]][%c0{{.*}}][] : memref<192xi8> to memref<32xf32>
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: scf.if
// CHECK: memref.view %[[LARENA]][%c0{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK: } else {
// CHECK: memref.view %[[LARENA]][%c0{{.*}}][] : memref<192xi8> to memref<8xf32>
// CHECK: scf.forall
// CHECK: memref.alloc() : memref<4xf32>
func.func @loops(%in: memref<8xf32>, %out: memref<8xf32>, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %keep = memref.alloc() : memref<16xf32>
  %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %in) -> (memref<8xf32>) {
    %scratch = memref.alloc() : memref<32xf32>
    %sub = memref.subview %scratch[0] [8] [1] : memref<32xf32> to memref<8xf32, strided<[1]>>
    memref.copy %x, %sub : memref<8xf32> to memref<8xf32, strided<[1]>>
    %next = memref.alloc() : memref<8xf32>
    memref.copy %sub, %next : memref<8xf32, strided<[1]>> to memref<8xf32>
    scf.yield %next : memref<8xf32>
  }
  scf.if %flag {
    %a = memref.alloc() : memref<16xf32>
    memref.copy %a, %keep : memref<16xf32> to memref<16xf32>
  } else {
    %b = memref.alloc() : memref<8xf32>
    memref.copy %b, %out : memref<8xf32> to memref<8xf32>
  }
  scf.forall (%j) in (2) {
    %t = memref.alloc() : memref<4xf32>
    memref.copy %t, %t : memref<4xf32> to memref<4xf32>
  }
  memref.copy %keep, %keep : memref<16xf32> to memref<16xf32>
  memref.copy %last, %out : memref<8xf32> to memref<8xf32>
  return
}

// A callee's frame is a buffer of its caller, live during the call: the
// caller's own 1024-byte buffer can't share it while it is still used after
// the call, and the callee gets a view at the place reserved for it.
// CHECK-LABEL: func.func @caller
// CHECK-SAME: %[[CARENA:[a-z0-9]+]]: memref<1088xi8> {kiln.scratch})
// CHECK: %[[T:.*]] = memref.view %[[CARENA]][%c0{{.*}}][] : memref<1088xi8> to memref<16x16xf32>
// CHECK: %[[FRAME:.*]] = memref.view %[[CARENA]][%c1024{{.*}}][] : memref<1088xi8> to memref<64xi8>
// CHECK: call @callee(%[[T]], %[[FRAME]])
// CHECK-LABEL: func.func private @callee
// CHECK-SAME: %{{.*}}: memref<64xi8> {kiln.scratch})
// A function without buffers takes no arena.
// CHECK-LABEL: func.func @no_buffers(%{{[a-z0-9]+}}: memref<4xf32>) {
func.func @caller(%in: memref<16x16xf32>, %out: memref<16x16xf32>) {
  %t = memref.alloc() : memref<16x16xf32>
  memref.copy %in, %t : memref<16x16xf32> to memref<16x16xf32>
  call @callee(%t) : (memref<16x16xf32>) -> ()
  memref.copy %t, %out : memref<16x16xf32> to memref<16x16xf32>
  return
}

func.func private @callee(%buf: memref<16x16xf32>) {
  %s = memref.alloc() : memref<4x4xf32>
  %c0 = arith.constant 0 : index
  %x = memref.load %buf[%c0, %c0] : memref<16x16xf32>
  memref.store %x, %s[%c0, %c0] : memref<4x4xf32>
  return
}

func.func @no_buffers(%in: memref<4xf32>) {
  return
}

// A buffer of dynamic size takes the place of its largest: 512 rows of
// 384 floats, bounded through affine.min (kiln-bind-dimensions); it is
// viewed with its run-time size. A size without a bound stays on the heap.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: %[[DARENA:[a-z0-9]+]]: memref<786432xi8> {kiln.scratch})
// CHECK: %[[ROWS:.*]] = affine.min
// CHECK: memref.view %[[DARENA]][%{{.*}}][%[[ROWS]]] : memref<786432xi8> to memref<?x384xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
#clamp = affine_map<(d0) -> (d0, 512)>
func.func @dynamic(%ids: memref<1x?xi64>, %n: index) {
  %c1 = arith.constant 1 : index
  %raw = memref.dim %ids, %c1 : memref<1x?xi64>
  %rows = affine.min #clamp(%raw)
  %a = memref.alloc(%rows) : memref<?x384xf32>
  %unbounded = memref.alloc(%n) : memref<?xf32>
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  memref.store %f, %a[%c0, %c0] : memref<?x384xf32>
  memref.store %f, %unbounded[%c0] : memref<?xf32>
  memref.dealloc %unbounded : memref<?xf32>
  return
}

// Largest buffers are placed first. %short and %long are both live at the
// first copy, %wide from the third on, beside %long: taken in program
// order, %short and %long would fill bytes 0-128 and %wide, live with
// %long, would start at 128 (256 bytes); largest first, %wide takes 0-128,
// %short shares its place (their lives don't meet) and %long goes after
// (192 bytes).
// CHECK-LABEL: func.func @largest_first
// CHECK-SAME: %[[SARENA:[a-z0-9]+]]: memref<192xi8> {kiln.scratch})
// CHECK: memref.view %[[SARENA]][%c0{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK: memref.view %[[SARENA]][%c128{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK: memref.view %[[SARENA]][%c0{{.*}}][] : memref<192xi8> to memref<32xf32>
func.func @largest_first(%in: memref<16xf32>, %wide_in: memref<32xf32>, %out: memref<16xf32>, %wide_out: memref<32xf32>) {
  %short = memref.alloc() : memref<16xf32>
  %long = memref.alloc() : memref<16xf32>
  memref.copy %in, %short : memref<16xf32> to memref<16xf32>
  memref.copy %short, %long : memref<16xf32> to memref<16xf32>
  %wide = memref.alloc() : memref<32xf32>
  memref.copy %wide_in, %wide : memref<32xf32> to memref<32xf32>
  memref.copy %wide, %wide_out : memref<32xf32> to memref<32xf32>
  memref.copy %long, %out : memref<16xf32> to memref<16xf32>
  return
}
