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
// so the loop runs over 2 panels. Per channel and pair of rows of tiles (a
// loop, not unrolled; two rows of 8 tiles fill a vector of 16) the input
// transform reads 4 padded rows per row of tiles twice (from the tiles'
// first column and two further), 16 columns each, splits them into even
// and odd columns, puts the two rows' halves side by side, and writes the
// 16 elements of the 16 tiles' B^T d B at the first row's first tile; then
// a loop of the 16 products of the [3, 2] filter transforms with the
// [2, 32] input transforms into one [16, 3, 32] tensor; then per filter
// and pair of rows of tiles two output rows each, interleaves of the 8
// tiles' even and odd output columns.
// CHECK-DAG: #[[LANE:.*]] = affine_map<(d0) -> (d0 * 8)>
// CHECK-LABEL: func.func @winograd
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: scf.forall (%[[P:.*]]) in (2) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<1x3x16x16xf32>)
// CHECK: %[[TRANSFORMS:.*]] = scf.for %[[C:.*]] = %{{.*}} to %c2{{.*}} iter_args(%{{.*}}) -> (tensor<16x2x32xf32>)
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %c4{{.*}} step %c2{{.*}} iter_args(%[[ROWS_IN:.*]] = %{{.*}}) -> (tensor<16x2x32xf32>)
// CHECK: %[[L:.*]] = affine.apply #[[LANE]](%[[R]])
// CHECK-COUNT-16: vector.transfer_read %[[PAD]]{{.*}} : tensor<1x2x18x18xf32>, vector<16xf32>
// CHECK: vector.deinterleave %{{.*}} : vector<16xf32> -> vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xf32>, vector<8xf32>
// CHECK: vector.transfer_write %{{.*}}, %[[ROWS_IN]][%c0{{.*}}, %[[C]], %[[L]]] {in_bounds = [true]} : vector<16xf32>, tensor<16x2x32xf32>
// CHECK-COUNT-15: vector.transfer_write %{{.*}}[%c{{[0-9]+}}{{.*}}, %[[C]], %[[L]]] {in_bounds = [true]} : vector<16xf32>, tensor<16x2x32xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK: scf.yield
// CHECK: %[[PRODUCTS:.*]] = scf.for %[[E:.*]] = %{{.*}} to %c16{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<16x3x32xf32>)
// CHECK: %[[INIT:.*]] = tensor.extract_slice %[[ACC]][%[[E]], 0, 0] [1, 3, 32] [1, 1, 1] : tensor<16x3x32xf32> to tensor<3x32xf32>
// CHECK: %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[INIT]] : tensor<3x32xf32>)
// CHECK: %[[U:.*]] = tensor.extract_slice %arg1[%[[E]], 0, 0] [1, 3, 2] [1, 1, 1] : tensor<16x3x2xf32> to tensor<3x2xf32>
// CHECK: %[[V:.*]] = tensor.extract_slice %[[TRANSFORMS]][%[[E]], 0, 0] [1, 2, 32] [1, 1, 1] : tensor<16x2x32xf32> to tensor<2x32xf32>
// CHECK: %[[M:.*]] = linalg.matmul ins(%[[U]], %[[V]] : tensor<3x2xf32>, tensor<2x32xf32>) outs(%[[ZEROS]] : tensor<3x32xf32>)
// CHECK: tensor.insert_slice %[[M]] into %[[ACC]][%[[E]], 0, 0] [1, 3, 32] [1, 1, 1] : tensor<3x32xf32> into tensor<16x3x32xf32>
// CHECK-NOT: linalg.matmul
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[OUT]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 3, 8, 16] [1, 1, 1, 1] : tensor<1x3x16x16xf32> to tensor<1x3x8x16xf32>
// CHECK: scf.for %[[F:.*]] = %{{.*}} to %c3{{.*}} iter_args(%{{.*}} = %[[BLOCK]]) -> (tensor<1x3x8x16xf32>)
// CHECK: scf.for %[[OR:.*]] = %{{.*}} to %c4{{.*}} step %c2{{.*}} iter_args(%{{.*}}) -> (tensor<1x3x8x16xf32>)
// CHECK: %[[OL:.*]] = affine.apply #[[LANE]](%[[OR]])
// CHECK-COUNT-16: vector.transfer_read %[[PRODUCTS]][%c{{[0-9]+}}{{.*}}, %[[F]], %[[OL]]], %{{.*}} : tensor<16x3x32xf32>, vector<16xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK: vector.interleave %{{.*}}, %{{.*}} : vector<8xf32> -> vector<16xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0{{.*}}, %[[F]], %{{.*}}, %c0{{.*}}] {in_bounds = [true]} : vector<16xf32>, tensor<1x3x8x16xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
// CHECK-COUNT-3: vector.transfer_write %{{.*}}[%c0{{.*}}, %[[F]], %{{.*}}, %c0{{.*}}] {in_bounds = [true]} : vector<16xf32>, tensor<1x3x8x16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 3, 8, 16] [1, 1, 1, 1]
func.func @winograd(%x: tensor<1x2x16x16xf32>, %u: tensor<16x3x2xf32>) -> tensor<1x3x16x16xf32> {
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x2x16x16xf32>, tensor<16x3x2xf32> -> tensor<1x3x16x16xf32>
  return %0 : tensor<1x3x16x16xf32>
}


// -----

// F(4x4, 3x3) (a [36, F, C] filter transform): 32x32 outputs are 8x8
// tiles of 4x4, four rows of tiles per panel of 32, so 2 panels. The input
// is padded with two more zero columns on the right, since a row's last
// tiles read their phases from 4 columns further on. Per channel and pair
// of rows of tiles, 6 padded rows per row of tiles are read twice (from
// the tiles' first column and 4 further), 32 columns each, and split into
// their 4 phases (column modulo 4) by two levels of deinterleaves; B^T d B
// takes multiply-adds for its coefficients 4, -5, -4 and +-2. 36 products;
// per filter and pair of rows of tiles, 4 output rows each, interleaves of
// 4 phases.
// CHECK-LABEL: func.func @large_tiles
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 3]
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<1x3x32x32xf32>)
// CHECK: scf.for {{.*}} -> (tensor<36x2x32xf32>)
// CHECK-COUNT-24: vector.transfer_read %[[PAD]]{{.*}} : tensor<1x2x34x36xf32>, vector<32xf32>
// CHECK: vector.deinterleave %{{.*}} : vector<32xf32> -> vector<16xf32>
// CHECK: vector.deinterleave %{{.*}} : vector<16xf32> -> vector<8xf32>
// CHECK: math.fma
// CHECK-COUNT-36: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<36x2x32xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.for {{.*}} to %c36{{.*}} -> (tensor<36x3x32xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<2x32xf32>)
// CHECK: tensor.extract_slice {{.*}} [1, 3, 16, 32] [1, 1, 1, 1] : tensor<1x3x32x32xf32> to tensor<1x3x16x32xf32>
// CHECK-COUNT-36: vector.transfer_read {{.*}} : tensor<36x3x32xf32>, vector<16xf32>
// CHECK: vector.interleave %{{.*}} : vector<8xf32> -> vector<16xf32>
// CHECK: vector.interleave %{{.*}} : vector<8xf32> -> vector<16xf32>
// CHECK: vector.interleave %{{.*}} : vector<16xf32> -> vector<32xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<32xf32>, tensor<1x3x16x32xf32>
// CHECK-COUNT-7: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<32xf32>, tensor<1x3x16x32xf32>
// CHECK-NOT: vector.transfer_write
func.func @large_tiles(%x: tensor<1x2x32x32xf32>, %u: tensor<36x3x2xf32>) -> tensor<1x3x32x32xf32> {
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<1x2x32x32xf32>, tensor<36x3x2xf32> -> tensor<1x3x32x32xf32>
  return %0 : tensor<1x3x32x32xf32>
}

// -----

// 8x8 outputs are 4x4 tiles of 2x2 per image, which don't fill a panel of
// 32: panels of 16 tiles instead (one image each, so two threads share the
// work), with [2, 16] input transforms and products [3, 2] x [2, 16]; four
// rows of 4 tiles per step fill the transforms' vectors.
// CHECK-LABEL: func.func @half_panels
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}}) -> (tensor<2x3x8x8xf32>)
// CHECK: scf.for {{.*}} -> (tensor<16x2x16xf32>)
// CHECK: scf.for {{.*}} to %c4{{.*}} step %c4{{.*}} iter_args
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<16x2x16xf32>
// CHECK: scf.for {{.*}} to %c16{{.*}} -> (tensor<16x3x16xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x2xf32>, tensor<2x16xf32>) outs(%{{.*}} : tensor<3x16xf32>)
func.func @half_panels(%x: tensor<2x2x8x8xf32>, %u: tensor<16x3x2xf32>) -> tensor<2x3x8x8xf32> {
  %0 = kiln.winograd_conv2d %x, %u pads = [1, 1, 1, 1] : tensor<2x2x8x8xf32>, tensor<16x3x2xf32> -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}
