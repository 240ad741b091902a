// RUN: kiln-opt %s -split-input-file -pass-pipeline="builtin.module(func.func(kiln-prefetch-next-panel))" | FileCheck %s

// The first 4 row tiles of each panel (a 64-float row is 4 lines of 64
// bytes) fetch one line each of the same weight row of the next panel, the
// last panel fetching itself; the peeled rows outside the row tiles fetch
// nothing.
memref.global "private" constant @panels : memref<8x768x64xf32> = dense<1.0>

// CHECK-LABEL: func.func @packed
// CHECK: %[[W:.*]] = memref.get_global @panels
// CHECK: scf.forall (%[[P:.*]]) in (8)
// CHECK: scf.for %[[R:.*]] = %c0 to %c126 step %c6
// CHECK: %[[TILE:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[TILE]], %{{.*}} : index
// CHECK: %[[LINE:.*]] = arith.muli %[[TILE]], %{{.*}} : index
// CHECK: %[[NEXT:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: scf.for %[[K:.*]] = %c0 to %c768 step %c1
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.prefetch %[[W]][%[[NEXT]], %[[K]], %[[LINE]]], read, locality<2>, data
// CHECK: vector.fma
// CHECK: scf.for %{{.*}} = %c0 to %c768 step %c1
// CHECK-NOT: memref.prefetch
// CHECK: return
func.func @packed(%a: memref<128x768xf32>, %c: memref<128x512xf32>) {
  %zero6 = arith.constant dense<0.000000e+00> : vector<6x64xf32>
  %zero2 = arith.constant dense<0.000000e+00> : vector<2x64xf32>
  %pad = ub.poison : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c64 = arith.constant 64 : index
  %c126 = arith.constant 126 : index
  %c768 = arith.constant 768 : index
  %w = memref.get_global @panels : memref<8x768x64xf32>
  scf.forall (%p) in (8) {
    %col = arith.muli %p, %c64 : index
    %panel = memref.subview %w[%p, 0, 0] [1, 768, 64] [1, 1, 1] : memref<8x768x64xf32> to memref<768x64xf32, strided<[64, 1], offset: ?>>
    %out = memref.subview %c[0, %col] [128, 64] [1, 1] : memref<128x512xf32> to memref<128x64xf32, strided<[512, 1], offset: ?>>
    scf.for %r = %c0 to %c126 step %c6 {
      %rows = memref.subview %a[%r, 0] [6, 768] [1, 1] : memref<128x768xf32> to memref<6x768xf32, strided<[768, 1], offset: ?>>
      %tile = memref.subview %out[%r, 0] [6, 64] [1, 1] : memref<128x64xf32, strided<[512, 1], offset: ?>> to memref<6x64xf32, strided<[512, 1], offset: ?>>
      %acc = scf.for %k = %c0 to %c768 step %c1 iter_args(%sum = %zero6) -> (vector<6x64xf32>) {
        %wrow = memref.subview %panel[%k, 0] [1, 64] [1, 1] : memref<768x64xf32, strided<[64, 1], offset: ?>> to memref<1x64xf32, strided<[64, 1], offset: ?>>
        %acol = memref.subview %rows[0, %k] [6, 1] [1, 1] : memref<6x768xf32, strided<[768, 1], offset: ?>> to memref<6x1xf32, strided<[768, 1], offset: ?>>
        %x = vector.transfer_read %acol[%c0, %c0], %pad {in_bounds = [true, true]} : memref<6x1xf32, strided<[768, 1], offset: ?>>, vector<6x1xf32>
        %y = vector.transfer_read %wrow[%c0, %c0], %pad {in_bounds = [true]} : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<64xf32>
        %x0 = vector.extract %x[0, 0] : f32 from vector<6x1xf32>
        %b0 = vector.broadcast %x0 : f32 to vector<64xf32>
        %s0 = vector.extract %sum[0] : vector<64xf32> from vector<6x64xf32>
        %f0 = vector.fma %b0, %y, %s0 : vector<64xf32>
        %next = vector.insert %f0, %sum [0] : vector<64xf32> into vector<6x64xf32>
        scf.yield %next : vector<6x64xf32>
      }
      vector.transfer_write %acc, %tile[%c0, %c0] {in_bounds = [true, true]} : vector<6x64xf32>, memref<6x64xf32, strided<[512, 1], offset: ?>>
    }
    %rest = memref.subview %a[126, 0] [2, 768] [1, 1] : memref<128x768xf32> to memref<2x768xf32, strided<[768, 1], offset: 96768>>
    %tail = scf.for %k = %c0 to %c768 step %c1 iter_args(%sum = %zero2) -> (vector<2x64xf32>) {
      %wrow = memref.subview %panel[%k, 0] [1, 64] [1, 1] : memref<768x64xf32, strided<[64, 1], offset: ?>> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %y = vector.transfer_read %wrow[%c0, %c0], %pad {in_bounds = [true]} : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<64xf32>
      %s0 = vector.extract %sum[0] : vector<64xf32> from vector<2x64xf32>
      %f0 = vector.fma %y, %y, %s0 : vector<64xf32>
      %next = vector.insert %f0, %sum [0] : vector<64xf32> into vector<2x64xf32>
      scf.yield %next : vector<2x64xf32>
    }
    %tailout = memref.subview %out[126, 0] [2, 64] [1, 1] : memref<128x64xf32, strided<[512, 1], offset: ?>> to memref<2x64xf32, strided<[512, 1], offset: ?>>
    vector.transfer_write %tail, %tailout[%c0, %c0] {in_bounds = [true, true]} : vector<2x64xf32>, memref<2x64xf32, strided<[512, 1], offset: ?>>
  }
  return
}

// -----

// A reduction in cache blocks reads rows at the block's offset plus the
// step; panels that are not constant weights (a convolution's patches,
// computed each call) are left alone.
memref.global "private" constant @deep : memref<4x4096x64xf32> = dense<1.0>

// CHECK-LABEL: func.func @blocked
// CHECK: scf.for %[[KB:.*]] = %c0 to %c4096 step %c2048
// CHECK: scf.for %[[K:.*]] = %c0 to %c2048 step %c1
// CHECK: %[[D:.*]] = arith.addi %[[K]], %[[KB]] : index
// CHECK: memref.prefetch %{{.*}}[%{{.*}}, %[[D]], %{{.*}}]
// CHECK-LABEL: func.func @patches
// CHECK-NOT: memref.prefetch
func.func @blocked(%a: memref<12x4096xf32>, %c: memref<12x64xf32>, %p: index) {
  %pad = ub.poison : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c2048 = arith.constant 2048 : index
  %c4096 = arith.constant 4096 : index
  %w = memref.get_global @deep : memref<4x4096x64xf32>
  %panel = memref.subview %w[%p, 0, 0] [1, 4096, 64] [1, 1, 1] : memref<4x4096x64xf32> to memref<4096x64xf32, strided<[64, 1], offset: ?>>
  scf.for %kb = %c0 to %c4096 step %c2048 {
    %block = memref.subview %panel[%kb, 0] [2048, 64] [1, 1] : memref<4096x64xf32, strided<[64, 1], offset: ?>> to memref<2048x64xf32, strided<[64, 1], offset: ?>>
    scf.for %r = %c0 to %c12 step %c6 {
      %tile = memref.subview %c[%r, 0] [1, 64] [1, 1] : memref<12x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %init = vector.transfer_read %tile[%c0, %c0], %pad {in_bounds = [true]} : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<64xf32>
      %acc = scf.for %k = %c0 to %c2048 step %c1 iter_args(%sum = %init) -> (vector<64xf32>) {
        %wrow = memref.subview %block[%k, 0] [1, 64] [1, 1] : memref<2048x64xf32, strided<[64, 1], offset: ?>> to memref<1x64xf32, strided<[64, 1], offset: ?>>
        %y = vector.transfer_read %wrow[%c0, %c0], %pad {in_bounds = [true]} : memref<1x64xf32, strided<[64, 1], offset: ?>>, vector<64xf32>
        %f = vector.fma %y, %y, %sum : vector<64xf32>
        scf.yield %f : vector<64xf32>
      }
      vector.transfer_write %acc, %tile[%c0, %c0] {in_bounds = [true]} : vector<64xf32>, memref<1x64xf32, strided<[64, 1], offset: ?>>
    }
  }
  return
}

func.func @patches(%patches: memref<4x72x32xf32>, %c: memref<12x32xf32>, %p: index) {
  %pad = ub.poison : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c12 = arith.constant 12 : index
  %c72 = arith.constant 72 : index
  %panel = memref.subview %patches[%p, 0, 0] [1, 72, 32] [1, 1, 1] : memref<4x72x32xf32> to memref<72x32xf32, strided<[32, 1], offset: ?>>
  scf.for %r = %c0 to %c12 step %c6 {
    %tile = memref.subview %c[%r, 0] [1, 32] [1, 1] : memref<12x32xf32> to memref<1x32xf32, strided<[32, 1], offset: ?>>
    %init = vector.transfer_read %tile[%c0, %c0], %pad {in_bounds = [true]} : memref<1x32xf32, strided<[32, 1], offset: ?>>, vector<32xf32>
    %acc = scf.for %k = %c0 to %c72 step %c1 iter_args(%sum = %init) -> (vector<32xf32>) {
      %prow = memref.subview %panel[%k, 0] [1, 32] [1, 1] : memref<72x32xf32, strided<[32, 1], offset: ?>> to memref<1x32xf32, strided<[32, 1], offset: ?>>
      %y = vector.transfer_read %prow[%c0, %c0], %pad {in_bounds = [true]} : memref<1x32xf32, strided<[32, 1], offset: ?>>, vector<32xf32>
      %f = vector.fma %y, %y, %sum : vector<32xf32>
      scf.yield %f : vector<32xf32>
    }
    vector.transfer_write %acc, %tile[%c0, %c0] {in_bounds = [true]} : vector<32xf32>, memref<1x32xf32, strided<[32, 1], offset: ?>>
  }
  return
}
