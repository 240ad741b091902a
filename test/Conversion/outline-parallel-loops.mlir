// RUN: kiln-opt %s -kiln-outline-parallel-loops="min-work=1000" | FileCheck %s

// The two leading dimensions (4 x 64) become one range of 256 iterations;
// the innermost stays a loop. The view and subview are recomputed in the
// body, so only the function's own buffers cross the call.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[IN:[a-z0-9]+]]: memref<4x64x32xf32>, %[[OUT:[a-z0-9]+]]: memref<4x64x32xf32>, %[[ARENA:[a-z0-9]+]]: memref<8192xi8>, %[[EXEC:[a-z0-9]+]]: !llvm.ptr {kiln.executor})
// CHECK: %[[COUNT:.*]] = arith.constant 256 : index
// CHECK: call @kiln.parallel_for.main_parallel(%[[EXEC]], %[[COUNT]], %[[IN]], %[[OUT]], %[[ARENA]])
// CHECK-SAME: : (!llvm.ptr, index, memref<4x64x32xf32>, memref<4x64x32xf32>, memref<8192xi8>) -> ()
// The small loop stays where it is.
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// A loop with a reduction stays too.
// CHECK: scf.parallel {{.*}} init
// CHECK: return

// A buffer of dynamic shape crosses the call like any other (its sizes are
// in its descriptor).
// CHECK: func.func @dynamic(%[[DIN:.*]]: memref<?x32xf32>, %[[DOUT:.*]]: memref<64x32xf32>, %[[DEXEC:.*]]: !llvm.ptr {kiln.executor})
// CHECK: call @kiln.parallel_for.dynamic_parallel(%[[DEXEC]], %{{.*}}, %[[DIN]], %[[DOUT]])

// A run-time count with no known bound (blocks of a sequence of any
// length, a quotient) is shared too: the executor gets the count.
// CHECK: func.func @quotient(%[[QIN:.*]]: memref<?x256xf32>, %[[QEXEC:.*]]: !llvm.ptr {kiln.executor})
// CHECK: %[[ROWS:.*]] = memref.dim %[[QIN]], %c0
// CHECK: %[[BLOCKS:.*]] = arith.divui %[[ROWS]], %c4
// CHECK: %[[QCOUNT:.*]] = arith.ceildivui %{{.*}}, %c1
// CHECK: call @kiln.parallel_for.quotient_parallel(%[[QEXEC]], %[[QCOUNT]], %[[QIN]])

// A buffer with another layout can't be passed: that loop stays, and the
// function needs no executor.
// CHECK: func.func @strided(%{{.*}}: memref<64x32xf32, strided<[64, 1]>>, %{{.*}}: memref<64x32xf32>) {
// CHECK-NOT: call
// CHECK: scf.parallel

// A private function with a parallel loop takes the executor from its
// caller, which takes it from the call.
// CHECK: func.func @caller(%[[CIN:.*]]: memref<64x32xf32>, %[[CEXEC:.*]]: !llvm.ptr {kiln.executor})
// CHECK: call @helper(%[[CIN]], %[[CEXEC]])
// CHECK: func.func private @helper(%{{.*}}: memref<64x32xf32>, %[[HEXEC:.*]]: !llvm.ptr {kiln.executor})
// CHECK: call @kiln.parallel_for.helper_parallel(%[[HEXEC]],

// CHECK: func.func private @main_parallel(%[[BEGIN:[a-z0-9]+]]: index, %[[END:[a-z0-9]+]]: index, %[[BIN:[a-z0-9]+]]: memref<4x64x32xf32>, %[[BOUT:[a-z0-9]+]]: memref<4x64x32xf32>, %[[BARENA:[a-z0-9]+]]: memref<8192xi8>)
// CHECK-DAG: %[[VIEW:.*]] = memref.view %[[BARENA]]
// CHECK-DAG: %[[SUB:.*]] = memref.subview %[[BIN]][1, 0, 0]
// CHECK: scf.for %[[FLAT:.*]] = %[[BEGIN]] to %[[END]]
// CHECK: %[[J:.*]] = arith.remui %[[FLAT]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %[[FLAT]], %{{.*}} : index
// CHECK: scf.parallel (%[[K:.*]]) =
// CHECK: memref.load %[[SUB]]
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK: func.func private @kiln.parallel_for.main_parallel(!llvm.ptr, index, memref<4x64x32xf32>, memref<4x64x32xf32>, memref<8192xi8>)

func.func @main(%in: memref<4x64x32xf32>, %out: memref<4x64x32xf32>, %scratch: memref<8192xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %tmp = memref.view %scratch[%c0][] : memref<8192xi8> to memref<64x32xf32>
  %sub = memref.subview %in[1, 0, 0] [1, 64, 32] [1, 1, 1] : memref<4x64x32xf32> to memref<64x32xf32, strided<[32, 1], offset: 2048>>
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c4, %c64, %c32) step (%c1, %c1, %c1) {
    %x = memref.load %in[%i, %j, %k] : memref<4x64x32xf32>
    %y = memref.load %sub[%j, %k] : memref<64x32xf32, strided<[32, 1], offset: 2048>>
    %s = arith.addf %x, %y : f32
    %t = arith.mulf %s, %two : f32
    memref.store %t, %tmp[%j, %k] : memref<64x32xf32>
    memref.store %t, %out[%i, %j, %k] : memref<4x64x32xf32>
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %two, %out[%i, %c0, %c0] : memref<4x64x32xf32>
  }
  %zero = arith.constant 0.0 : f32
  %sum = scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) init (%zero) -> f32 {
    %x = memref.load %in[%c0, %i, %j] : memref<4x64x32xf32>
    scf.reduce(%x : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  memref.store %sum, %out[%c0, %c0, %c0] : memref<4x64x32xf32>
  return
}

func.func @dynamic(%in: memref<?x32xf32>, %out: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<?x32xf32>
    memref.store %x, %out[%i, %j] : memref<64x32xf32>
  }
  return
}

func.func @quotient(%in: memref<?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %rows = memref.dim %in, %c0 : memref<?x256xf32>
  %blocks = arith.divui %rows, %c4 : index
  scf.parallel (%b) = (%c0) to (%blocks) step (%c1) {
    %first = arith.muli %b, %c4 : index
    scf.for %i = %c0 to %c4 step %c1 {
      %row = arith.addi %first, %i : index
      scf.for %j = %c0 to %c256 step %c1 {
        %x = memref.load %in[%row, %j] : memref<?x256xf32>
        %y = arith.addf %x, %x : f32
        memref.store %y, %in[%row, %j] : memref<?x256xf32>
      }
    }
  }
  return
}

func.func @strided(%in: memref<64x32xf32, strided<[64, 1]>>, %out: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<64x32xf32, strided<[64, 1]>>
    memref.store %x, %out[%i, %j] : memref<64x32xf32>
  }
  return
}

func.func @caller(%in: memref<64x32xf32>) {
  call @helper(%in) : (memref<64x32xf32>) -> ()
  return
}

func.func private @helper(%buf: memref<64x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c32) step (%c1, %c1) {
    %x = memref.load %buf[%i, %j] : memref<64x32xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %buf[%i, %j] : memref<64x32xf32>
  }
  return
}

