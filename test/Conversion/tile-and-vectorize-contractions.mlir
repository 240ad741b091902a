// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="thread-rows=16 thread-cols=64" | FileCheck %s
// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="thread-rows=8 thread-cols=32" | FileCheck %s --check-prefix=THREADS
// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="cache-depth=32" | FileCheck %s --check-prefix=DEEP
// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="register-rows=6 register-cols=64 narrow-rows=8 narrow-cols=32" | FileCheck %s --check-prefix=WIDE
// RUN: not kiln-opt %s -kiln-tile-and-vectorize-contractions="register-cols=32 narrow-rows=8 narrow-cols=32" 2>&1 | FileCheck %s --check-prefix=BAD

// Threads share output blocks of thread-rows x thread-cols (one block here,
// four with 8x32 blocks); inside one, columns in blocks of 32 outside rows in blocks of 8; the 8x32
// accumulator stays in vector registers across the reduction loop, which
// does one broadcast-FMA per row.
// CHECK-LABEL: func.func @even
// THREADS-LABEL: func.func @even
// THREADS: scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// THREADS: vector.fma
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<8x32xf32>)
// CHECK-NOT: vector.mask
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.yield {{.*}} : vector<8x32xf32>
// CHECK: vector.transfer_write
func.func @even(%a: tensor<16x8xf32>, %b: tensor<8x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}

// Blocks that don't divide are peeled: full blocks run unmasked, only the
// remainders read through masks.
// CHECK-LABEL: func.func @ragged
// CHECK: vector.transfer_read {{.*}} {in_bounds = [true, true]} : tensor<8x32xf32>, vector<8x32xf32>
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0], %{{.*}}, %{{.*}} {in_bounds = [true, true]} : tensor<2x1xf32>, vector<8x1xf32>
func.func @ragged(%a: tensor<10x8xf32>, %b: tensor<8x40xf32>, %c: tensor<10x40xf32>) -> tensor<10x40xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<10x8xf32>, tensor<8x40xf32>) outs(%c : tensor<10x40xf32>) -> tensor<10x40xf32>
  return %0 : tensor<10x40xf32>
}

// A product in a parallel loop whose reduction fits one cache block starts
// its accumulators from its output's init, fused tile by tile: zeros for a
// fill, the bias row for a broadcast; neither is written to memory first.
// CHECK-LABEL: func.func @zero_init
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK-NOT: vector.transfer_read {{.*}} vector<8x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[ZERO]]) -> (vector<8x32xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: vector.transfer_write
func.func @zero_init(%a: tensor<16x64xf32>, %b: tensor<2x64x32xf32>) -> tensor<2x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %out = tensor.empty() : tensor<2x16x32xf32>
  %0 = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<2x16x32xf32>) {
    %bi = tensor.extract_slice %b[%i, 0, 0] [1, 64, 32] [1, 1, 1] : tensor<2x64x32xf32> to tensor<64x32xf32>
    %e = tensor.empty() : tensor<16x32xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
    %p = linalg.matmul ins(%a, %bi : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f : tensor<16x32xf32>) -> tensor<16x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[%i, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<16x32xf32> into tensor<2x16x32xf32>
    }
  }
  return %0 : tensor<2x16x32xf32>
}

// CHECK-LABEL: func.func @bias_init
// CHECK-NOT: linalg.generic
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK: %[[ROW:.*]] = vector.transfer_read %{{.*}} : tensor<32xf32>, vector<32xf32>
// CHECK: %[[BIAS:.*]] = vector.broadcast %[[ROW]] : vector<32xf32> to vector<8x32xf32>
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %[[BIAS]]) -> (vector<8x32xf32>)
func.func @bias_init(%a: tensor<16x64xf32>, %b: tensor<2x64x32xf32>, %bias: tensor<2x32xf32>) -> tensor<2x16x32xf32> {
  %out = tensor.empty() : tensor<2x16x32xf32>
  %0 = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<2x16x32xf32>) {
    %bi = tensor.extract_slice %b[%i, 0, 0] [1, 64, 32] [1, 1, 1] : tensor<2x64x32xf32> to tensor<64x32xf32>
    %row = tensor.extract_slice %bias[%i, 0] [1, 32] [1, 1] : tensor<2x32xf32> to tensor<32xf32>
    %e = tensor.empty() : tensor<16x32xf32>
    %init = linalg.generic {indexing_maps = [affine_map<(m, n) -> (n)>, affine_map<(m, n) -> (m, n)>], iterator_types = ["parallel", "parallel"]} ins(%row : tensor<32xf32>) outs(%e : tensor<16x32xf32>) {
    ^bb0(%in: f32, %unused: f32):
      linalg.yield %in : f32
    } -> tensor<16x32xf32>
    %p = linalg.matmul ins(%a, %bi : tensor<16x64xf32>, tensor<64x32xf32>) outs(%init : tensor<16x32xf32>) -> tensor<16x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[%i, 0, 0] [1, 16, 32] [1, 1, 1] : tensor<16x32xf32> into tensor<2x16x32xf32>
    }
  }
  return %0 : tensor<2x16x32xf32>
}

// A reduction deeper than a cache block is blocked outside the register
// loops, so each block reads and writes the output: its init stays in memory.
// DEEP-LABEL: func.func @zero_init
// DEEP: linalg.fill
// DEEP: vector.transfer_read {{.*}} : tensor<8x32xf32>, vector<8x32xf32>

// A product of one row in a parallel loop (a decoder step's attention) takes
// register tiles of that row by 4 x register-cols columns: with 32 columns,
// each accumulator register would wait on its own previous FMA all along
// the reduction.
// CHECK-LABEL: func.func @one_row
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c128
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<1x128xf32>)
// CHECK: vector.fma {{.*}} : vector<128xf32>
func.func @one_row(%a: tensor<1x64xf32>, %b: tensor<2x64x256xf32>) -> tensor<2x1x256xf32> {
  %zero = arith.constant 0.0 : f32
  %out = tensor.empty() : tensor<2x1x256xf32>
  %0 = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<2x1x256xf32>) {
    %bi = tensor.extract_slice %b[%i, 0, 0] [1, 64, 256] [1, 1, 1] : tensor<2x64x256xf32> to tensor<64x256xf32>
    %e = tensor.empty() : tensor<1x256xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x256xf32>) -> tensor<1x256xf32>
    %p = linalg.matmul ins(%a, %bi : tensor<1x64xf32>, tensor<64x256xf32>) outs(%f : tensor<1x256xf32>) -> tensor<1x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[%i, 0, 0] [1, 1, 256] [1, 1, 1] : tensor<1x256xf32> into tensor<2x1x256xf32>
    }
  }
  return %0 : tensor<2x1x256xf32>
}

// With a wide tile and a narrow one, products whose columns are a multiple
// of the wide tile's take it (6 rows of 64 here, the last 4 of the 16 rows
// peeled); the others keep the narrow one rather than half-filling 64-column
// tiles or masking them: the 40 columns of @ragged, the 32 of @zero_init.
// WIDE-LABEL: func.func @even
// WIDE: scf.for %{{.*}} = %c0 to %c12 step %c6
// WIDE: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<6x64xf32>)
// WIDE-COUNT-6: vector.fma {{.*}} : vector<64xf32>
// WIDE-NOT: vector<8x32xf32>
// WIDE-LABEL: func.func @ragged
// WIDE: vector<8x32xf32>
// WIDE-NOT: vector<6x64xf32>
// WIDE-LABEL: func.func @zero_init
// WIDE: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// WIDE-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// WIDE-NOT: vector<6x64xf32>
// WIDE-LABEL: func.func @bias_init

// BAD: narrow-cols, if set, below register-cols
