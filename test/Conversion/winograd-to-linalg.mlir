// RUN: kiln-opt %s -convert-kiln-to-linalg="patch-columns=32" -split-input-file | FileCheck %s

// 64 tiles per row of tiles are two panels of 32: panel p holds half of
// row of tiles p / 2 (image p / 4, row p / 2 % 2 in it), from tile 0 or 32,
// whose outputs are from column 0 or 64.
// CHECK-DAG: #[[IMAGE:.*]] = affine_map<(d0) -> ((d0 floordiv 2) floordiv 2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0) -> ((d0 floordiv 2) mod 2)>
// CHECK-DAG: #[[TILE:.*]] = affine_map<(d0) -> ((d0 mod 2) * 32)>
// CHECK-DAG: #[[COLUMN:.*]] = affine_map<(d0) -> ((d0 mod 2) * 64)>
// CHECK-LABEL: func.func @panels_per_row
// CHECK: scf.forall (%[[P:.*]]) in (4) shared_outs
// CHECK: %[[N:.*]] = affine.apply #[[IMAGE]](%[[P]])
// CHECK: affine.apply #[[ROW]](%[[P]])
// CHECK: affine.apply #[[TILE]](%[[P]])
// CHECK: vector.transfer_read {{.*}} : tensor<1x1x6x130xf32>, vector<64xf32>
// CHECK: %[[X:.*]] = affine.apply #[[COLUMN]](%[[P]])
// CHECK: tensor.extract_slice %{{.*}}[%[[N]], 0, %{{.*}}, %[[X]]] [1, 2, 2, 64] [1, 1, 1, 1] : tensor<1x2x4x128xf32> to tensor<1x2x2x64xf32>
func.func @panels_per_row(%x: tensor<1x1x4x128xf32>, %u: tensor<16x2x1xf32>) -> tensor<1x2x4x128xf32> {
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x1x4x128xf32>, tensor<16x2x1xf32> -> tensor<1x2x4x128xf32>
  return %0 : tensor<1x2x4x128xf32>
}

// -----

// 16x16 outputs are 8x8 tiles: a panel of 32 tiles holds 4 rows of tiles,
// so the loop runs over 2 panels. Per channel and row of tiles the input
// transform reads 4 padded rows twice (from the tiles' first column and
// two further), 16 columns each, splits them into even and odd columns,
// and writes the 16 elements of the 8 tiles' B^T d B; then 16 products of
// the [3, 2] filter transforms with the [2, 32] input transforms; then per
// filter and row of tiles two output rows, interleaves of the 8 tiles'
// even and odd output columns.
// CHECK-LABEL: func.func @winograd
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: scf.forall (%[[P:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x3x16x16xf32>)
// CHECK: %[[TRANSFORMS:.*]] = scf.for %[[C:.*]] = %{{.*}} iter_args(%{{.*}}) -> (tensor<16x2x32xf32>)
// CHECK-COUNT-8: vector.transfer_read %[[PAD]]{{.*}} : tensor<1x2x18x18xf32>, vector<16xf32>
// CHECK: vector.deinterleave %{{.*}} : vector<16xf32> -> vector<8xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0{{.*}}, %[[C]], %c0{{.*}}] {in_bounds = [true]} : vector<8xf32>, tensor<16x2x32xf32>
// CHECK: vector.transfer_write %{{.*}}[%c8{{.*}}, %[[C]], %c8{{.*}}] {in_bounds = [true]} : vector<8xf32>, tensor<16x2x32xf32>
// CHECK: scf.yield
// CHECK: %[[U15:.*]] = tensor.extract_slice %arg1[15, 0, 0] [1, 3, 2] [1, 1, 1] : tensor<16x3x2xf32> to tensor<3x2xf32>
// CHECK: %[[V15:.*]] = tensor.extract_slice %[[TRANSFORMS]][15, 0, 0] [1, 2, 32] [1, 1, 1] : tensor<16x2x32xf32> to tensor<2x32xf32>
// CHECK: linalg.matmul ins(%[[U15]], %[[V15]] : tensor<3x2xf32>, tensor<2x32xf32>)
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[OUT]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 3, 8, 16] [1, 1, 1, 1] : tensor<1x3x16x16xf32> to tensor<1x3x8x16xf32>
// CHECK: scf.for %[[F:.*]] = %{{.*}} iter_args(%{{.*}} = %[[BLOCK]]) -> (tensor<1x3x8x16xf32>)
// CHECK-COUNT-16: vector.transfer_read %{{.*}}[%[[F]], %c0{{.*}}], %{{.*}} : tensor<3x32xf32>, vector<8xf32>
// CHECK: vector.interleave %{{.*}}, %{{.*}} : vector<8xf32> -> vector<16xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0{{.*}}, %[[F]], %c7{{.*}}, %c0{{.*}}] {in_bounds = [true]} : vector<16xf32>, tensor<1x3x8x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 3, 8, 16] [1, 1, 1, 1]
func.func @winograd(%x: tensor<1x2x16x16xf32>, %u: tensor<16x3x2xf32>) -> tensor<1x3x16x16xf32> {
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x2x16x16xf32>, tensor<16x3x2xf32> -> tensor<1x3x16x16xf32>
  return %0 : tensor<1x3x16x16xf32>
}

