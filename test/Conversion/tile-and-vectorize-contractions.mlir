// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="thread-rows=16 thread-cols=64" | FileCheck %s
// RUN: kiln-opt %s -kiln-tile-and-vectorize-contractions="thread-rows=8 thread-cols=32" | FileCheck %s --check-prefix=THREADS

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
