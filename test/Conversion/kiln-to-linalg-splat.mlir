// RUN: kiln-opt %s -convert-kiln-to-linalg | FileCheck %s

// kiln.splat_project: one parallel generic over the 5 Gaussians, its 11
// fields each a result of their own, stacked as the rows of the splats.
// CHECK-LABEL: func.func @splatting
// CHECK: %[[FIELDS:.*]]:11 = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: math.ceil
// CHECK: tensor.insert_slice %[[FIELDS]]#0 into %{{.*}}[0, 0] [1, 5] [1, 1] : tensor<5xf32> into tensor<11x5xf32>
// CHECK: tensor.insert_slice %[[FIELDS]]#10 into %{{.*}}[10, 0] [1, 5] [1, 1] : tensor<5xf32> into tensor<11x5xf32>
// kiln.splat_rasterize: the visible splats compacted with their depths'
// bits as keys, counting the keys' four 8-bit digits in the same loop (4
// copies of 4 histograms of 256, splat n counting into copy n mod 4); then
// four radix-sort passes (prefix sums of the pass's histograms, added up
// over the copies, and a scatter of indices and keys).
// CHECK: %[[VISIBLE:.*]]:4 = scf.for {{.*}} -> (tensor<5xi32>, tensor<5xi32>, index, tensor<4096xi32>)
// CHECK: %[[KEY:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[COPY:.*]] = arith.andi %{{.*}}, %c3{{.*}} : index
// CHECK: arith.shrui %[[KEY]], %c0_i32
// CHECK: arith.shrui %[[KEY]], %c8_i32
// CHECK: arith.shrui %[[KEY]], %c16_i32
// CHECK: arith.shrui %[[KEY]], %c24_i32
// CHECK: scf.for {{.*}} -> (tensor<256xi32>, i32)
// CHECK-COUNT-4: tensor.extract %[[VISIBLE]]#3
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[VISIBLE]]#2 {{.*}} -> (tensor<5xi32>, tensor<5xi32>, tensor<256xi32>)
// CHECK: arith.shrui %{{.*}}, %c0_i32
// CHECK: scf.for {{.*}} -> (tensor<256xi32>, i32)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[VISIBLE]]#2 {{.*}} -> (tensor<5xi32>, tensor<5xi32>, tensor<256xi32>)
// CHECK: arith.shrui %{{.*}}, %c8_i32
// CHECK: arith.shrui %{{.*}}, %c16_i32
// CHECK: arith.shrui %{{.*}}, %c24_i32
// Each splat's fields as a record of 16 floats (a cache line), in
// parallel over chunks of splats; then the records gathered into depth
// order, each fetching the record 16 splats further on (or the last),
// with each splat's tile rectangle (columns and rows, begin and end).
// CHECK: %[[UNSORTED:.*]] = scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<5x16xf32>)
// CHECK: vector.from_elements {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} {in_bounds = [true]} : vector<16xf32>, tensor<?x16xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, 0] [%{{.*}}, 16] [1, 1] : tensor<?x16xf32> into tensor<5x16xf32>
// CHECK: %[[UNSORTED_BUFFER:.*]] = bufferization.to_buffer %[[UNSORTED]] read_only
// CHECK: %[[SORTED:.*]]:5 = scf.forall (%{{.*}}) in (1) shared_outs({{.*}}) -> (tensor<5x16xf32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>)
// CHECK: arith.minui %{{.*}}, %c4{{.*}} : index
// CHECK: memref.prefetch %[[UNSORTED_BUFFER]][%{{.*}}, %c0{{.*}}], read, locality<3>, data : memref<5x16xf32>
// CHECK: vector.transfer_read %[[UNSORTED]][%{{.*}}, %c0{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5x16xf32>, vector<16xf32>
// CHECK-NOT: math.log
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%{{.*}}] [1] : tensor<?xi32> into tensor<5xi32>
// Binning over the 3 x 2 tiles of 40 x 30 pixels, in parallel over bands
// of tile rows (2 here). First each band's list of the visible splats (at
// most 5) its rows meet, in depth order, built in parallel over chunks of
// the sorted splats (1 here): each chunk's counts per band; where each
// chunk's run of each band starts, with each band's count, and their
// offsets; each chunk's list, band after band, as one slice of the lists.
// Then each band walks its runs chunk by chunk (each bounded by the
// chunk's 4096): counts per tile of the band, the tiles' ranges, then each
// splat's position written into the band's ranges of the tiles of its
// 3-sigma square, in depth order.
// CHECK: %[[WALK:.*]] = affine.min #{{.*}}()[%[[VISIBLE]]#2]
// CHECK: %[[COUNTS:.*]] = scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<16xi32>)
// CHECK: arith.maxui %[[WALK]], %{{.*}} : index
// CHECK: scf.for {{.*}} -> (tensor<16xi32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [16] [1] : tensor<16xi32> into tensor<16xi32>
// CHECK: %[[RUNS:.*]]:3 = scf.for {{.*}} -> (tensor<16xi32>, tensor<16xi32>, i32)
// CHECK: tensor.extract %[[COUNTS]]
// CHECK: scf.for {{.*}} -> (tensor<17xi32>, i32)
// CHECK: %[[LISTS:.*]] = scf.forall (%{{.*}}) in (1) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xi32>)
// CHECK: scf.for {{.*}} -> (tensor<?xi32>, tensor<16xi32>)
// CHECK: tensor.extract %[[RUNS]]#0
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%{{.*}}] [1] : tensor<?xi32> into tensor<?xi32>
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<6xi32>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}} {{.*}} -> (index, tensor<?xi32>)
// CHECK: %[[LENGTH:.*]] = affine.min #{{.*}}()[%{{.*}}]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LENGTH]] {{.*}} -> (index, tensor<?xi32>)
// CHECK: tensor.extract %[[LISTS]]
// CHECK: scf.if %{{.*}} -> (tensor<?xi32>)
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%{{.*}}] [1] : tensor<?xi32> into tensor<6xi32>
// CHECK: scf.for {{.*}} -> (tensor<7xi32>, i32)
// CHECK: scf.forall (%{{.*}}) in (2) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xi32>)
// CHECK: %[[LENGTH2:.*]] = affine.min #{{.*}}()[%{{.*}}]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LENGTH2]] {{.*}} -> (index, tensor<?xi32>, tensor<?xi32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%{{.*}}] [1] : tensor<?xi32> into tensor<?xi32>
// Blending: tiles in parallel, each walking its splats while a row of the
// tile is live, fetching the record of the splat 8 ahead (or the last)
// and reading its own as one vector; each splat over its rows (all 16
// under square culling), each row 16 pixels as vectors read from and
// written to the tile's planes (transmittance, colour, ended). Pixels of
// the padding (rows from 30, columns from 40) start ended.
// CHECK: %[[PADDED:.*]] = scf.forall (%{{.*}}) in (6) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<3x32x48xf32>)
// CHECK: arith.cmpf olt, %{{.*}}, %cst{{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} -> (tensor<5x16x16xf32>)
// CHECK: arith.minui
// CHECK: %[[BUFFER:.*]] = bufferization.to_buffer %[[SORTED]]#0 read_only : tensor<5x16xf32> to memref<5x16xf32>
// CHECK: scf.while {{.*}} : (index, tensor<5x16x16xf32>, index)
// CHECK: %[[AHEAD:.*]] = arith.minui %{{.*}}, %{{.*}} : index
// CHECK: %[[AHEAD_ENTRY:.*]] = tensor.extract %{{.*}}[%[[AHEAD]]]
// CHECK: memref.prefetch %[[BUFFER]][%{{.*}}, %c0{{.*}}], read, locality<3>, data : memref<5x16xf32>
// CHECK: vector.transfer_read %[[SORTED]]#0[%{{.*}}, %c0{{.*}}], %{{.*}} {in_bounds = [true]} : tensor<5x16xf32>, vector<16xf32>
// CHECK-NOT: math.ceil
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} {{.*}} -> (tensor<5x16x16xf32>, index, f32)
// CHECK: vector.transfer_read %{{.*}}[%c4{{.*}}, %{{.*}}, %c0{{.*}}]
// CHECK: vector.reduction <or>, %{{.*}} : vector<16xi1> into i1
// CHECK: scf.if %{{.*}} -> (tensor<5x16x16xf32>, index, f32)
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: vector.transfer_write
// The pixels: colour + T background.
// CHECK: scf.for {{.*}} -> (tensor<3x16x16xf32>)
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %{{.*}}, %{{.*}}] [3, 16, 16] [1, 1, 1]
// The padded channel-major image cropped and transposed to [H, W, 3].
// CHECK: %[[CROPPED:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 0] [3, 30, 40] [1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[CROPPED]] : tensor<3x30x40xf32>) outs(%{{.*}} : tensor<30x40x3xf32>)
func.func @splatting(%p: tensor<5x3xf32>, %s: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xf32>,
                     %sh: tensor<5x16x3xf32>, %view: tensor<4x4xf32>, %k: tensor<4xf32>,
                     %bg: tensor<3xf32>) -> tensor<30x40x3xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xf32>, tensor<5x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  %image = kiln.splat_rasterize %splats, %bg : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  return %image : tensor<30x40x3xf32>
}

// Exact culling: the depth order's gather computes each splat's reach (2
// ln(255 opacity), with a margin) and the rows of pixels its reach ellipse
// spans, into the record's slots 11-13; the rectangles are the reach
// ellipse's boxes. The count's pass fetches the records 16 splats ahead in
// its band's list, reads each splat's conic and reach from its record,
// tests each of its tiles and keeps the results as bits of an i32 per
// listed splat, which the second pass reads (reading the record and
// testing again only past 32 tiles), and each splat blends the rows of the
// tile its ellipse spans.
// CHECK-LABEL: func.func @exact
// CHECK: %[[SORTED:.*]]:5 = scf.forall {{.*}} -> (tensor<5x16xf32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>, tensor<5xi32>)
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: vector.insert %{{.*}}, %{{.*}} [11] : f32 into vector<16xf32>
// CHECK: vector.insert %{{.*}}, %{{.*}} [12] : f32 into vector<16xf32>
// CHECK: vector.insert %{{.*}}, %{{.*}} [13] : f32 into vector<16xf32>
// CHECK: %[[RECORDS:.*]] = bufferization.to_buffer %[[SORTED]]#0 read_only
// CHECK: %[[COUNTED:.*]]:2 = scf.forall {{.*}} -> (tensor<6xi32>, tensor<?xi32>)
// CHECK: memref.prefetch %[[RECORDS]]
// CHECK: scf.if %{{.*}} -> (tensor<?xi32>, i32)
// CHECK: tensor.extract %[[SORTED]]#0[%{{.*}}, %c13] : tensor<5x16xf32>
// CHECK: scf.if %{{.*}} -> (tensor<?xi32>, i32)
// CHECK: arith.shli %c1_i32{{.*}} : i32
// CHECK: scf.forall {{.*}} -> (tensor<?xi32>)
// CHECK: tensor.extract %[[COUNTED]]#1
// CHECK-NOT: memref.prefetch
// CHECK: scf.if %{{.*}} -> (tensor<?xi32>, tensor<?xi32>)
// CHECK: %[[PASSED:.*]] = scf.if %{{.*}} -> (i1)
// CHECK: arith.shrui
// CHECK: } else {
// CHECK: tensor.extract %[[SORTED]]#0[%{{.*}}, %c13] : tensor<5x16xf32>
// CHECK: scf.if %[[PASSED]] -> (tensor<?xi32>, tensor<?xi32>)
// CHECK: scf.while
// CHECK: math.ceil
// CHECK: math.floor
// CHECK: scf.if %{{.*}} -> (tensor<5x16x16xf32>, index, f32)
// CHECK: math.exp %{{.*}} : vector<16xf32>
func.func @exact(%splats: tensor<11x5xf32>, %bg: tensor<3xf32>) -> tensor<30x40x3xf32> {
  %image = kiln.splat_rasterize %splats, %bg culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  return %image : tensor<30x40x3xf32>
}

// kiln.splat_contributions bins and walks as the rasterization does; each
// tile writes its pairs' weights (a row's 16 pixels summed) into its range
// of the pairs, and a serial loop adds them up per splat in pair order.
// CHECK-LABEL: func.func @contributions
// CHECK: %[[ORDER:.*]]:4 = scf.for {{.*}} -> (tensor<5xi32>, tensor<5xi32>, index, tensor<4096xi32>)
// CHECK: scf.for {{.*}} -> (tensor<7xi32>, i32)
// CHECK: %[[WEIGHTS:.*]] = scf.forall (%{{.*}}) in (6) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xf32>)
// CHECK: linalg.fill {{.*}} -> tensor<?xf32>
// CHECK: scf.while {{.*}} : (index, tensor<5x16x16xf32>, index, tensor<?xf32>)
// CHECK: vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}] : tensor<?xf32>
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}] [%{{.*}}] [1] : tensor<?xf32> into tensor<?xf32>
// CHECK: %[[SUMS:.*]] = scf.for {{.*}} -> (tensor<5xf32>)
// CHECK: tensor.extract %[[WEIGHTS]]
// CHECK: return %[[SUMS]] : tensor<5xf32>
func.func @contributions(%splats: tensor<11x5xf32>) -> tensor<5xf32> {
  %weights = kiln.splat_contributions %splats width = 40 height = 30 : tensor<11x5xf32> -> tensor<5xf32>
  return %weights : tensor<5xf32>
}

// Attributes stored as float16 widen inside the projection's generic.
// CHECK-LABEL: func.func @half_attributes
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf16>, tensor<5xf16>, tensor<5xf16>
// CHECK-COUNT-3: arith.extf %{{.*}} : f16 to f32
func.func @half_attributes(%p: tensor<5x3xf32>, %s: tensor<5x3xf16>, %r: tensor<5x4xf16>, %o: tensor<5xf16>,
                           %sh: tensor<5x1x3xf16>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) -> tensor<11x5xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<5x3xf32>, tensor<5x3xf16>, tensor<5x4xf16>, tensor<5xf16>, tensor<5x1x3xf16>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return %splats : tensor<11x5xf32>
}

// Attributes stored as int8 read as fma(q, scale, offset) of their
// column's map inside the generic: here the opacity (scale 0.5, offset -1)
// and the SH's three columns.
// CHECK-LABEL: func.func @int8_attributes
// CHECK: linalg.generic {{.*}} ins({{.*}} : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xi8>, tensor<5xi8>, tensor<5xi8>, tensor<5xi8>)
// CHECK: %[[Q:.*]] = arith.sitofp %{{.*}} : i8 to f32
// CHECK: math.fma %[[Q]], %cst{{.*}}, %cst{{.*}} : f32
// CHECK-COUNT-3: arith.sitofp %{{.*}} : i8 to f32
func.func @int8_attributes(%p: tensor<5x3xf32>, %s: tensor<5x3xf32>, %r: tensor<5x4xf32>, %o: tensor<5xi8>,
                           %sh: tensor<5x1x3xi8>, %view: tensor<4x4xf32>, %k: tensor<4xf32>) -> tensor<11x5xf32> {
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 {int8_scales = array<f32: 0.5, 0.25, 0.25, 0.25>, int8_offsets = array<f32: -1.0, 0.0, 0.0, 0.0>} : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x4xf32>, tensor<5xi8>, tensor<5x1x3xi8>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x5xf32>
  return %splats : tensor<11x5xf32>
}

// An image sized at run time, at most 40 x 30: the layout is the bound's
// (3 x 2 tiles, the padded image 48 x 32), the sizes are clamped to it,
// the bands, the tiles' ranges and the blended tiles are the run-time
// image's rows of tiles (affine in the sizes, or clamped, so that the
// parallel loops' outlining sees their width), and the crop is to the
// run-time size.
// CHECK-LABEL: func.func @sized
// CHECK: %[[W:.*]] = affine.min #{{.*}}()[%arg3]
// CHECK: %[[H:.*]] = affine.min #{{.*}}()[%arg2]
// CHECK: %[[ROWS:.*]] = affine.apply #{{.*}}()[%[[H]]]
// CHECK: %[[BAND_ROWS:.*]] = affine.apply #{{.*}}()[%[[ROWS]]]
// CHECK: %[[QUOTIENT:.*]] = arith.ceildivui %[[ROWS]], %[[BAND_ROWS]] : index
// CHECK: %[[BANDS:.*]] = affine.min #{{.*}}()[%[[QUOTIENT]]]
// CHECK: scf.forall (%{{.*}}) in (%[[BANDS]]) shared_outs(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<6xi32>, tensor<?xi32>)
// CHECK: %[[SCAN:.*]]:2 = scf.for %{{.*}} = %c0{{.*}} to %[[TILES:.*]] step %{{.*}} -> (tensor<7xi32>, i32)
// CHECK: tensor.insert %[[SCAN]]#1 into %[[SCAN]]#0[%[[TILES]]] : tensor<7xi32>
// CHECK: scf.forall (%{{.*}}) in (%[[BANDS]]) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<?xi32>)
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<3x32x48xf32>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [3, %[[H]], %[[W]]] [1, 1, 1] : tensor<3x32x48xf32> to tensor<3x?x?xf32>
// CHECK: tensor.empty(%[[H]], %[[W]]) : tensor<?x?x3xf32>
func.func @sized(%splats: tensor<11x5xf32>, %bg: tensor<3xf32>, %h: index, %w: index) -> tensor<?x?x3xf32> {
  %image = kiln.splat_rasterize %splats, %bg size(%h, %w) max_size = [30, 40] culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
  return %image : tensor<?x?x3xf32>
}

// A constant attribute's columns are the rows of its transpose, made at
// compile time, so the projection reads each as whole vectors: positions
// [[1, 2, 3], [4, 5, 6]] give rows [1, 4], [2, 5], [3, 6]. A run-time
// attribute keeps strided columns of its [N, C] tensor.
// CHECK-LABEL: func.func @constant_attributes
// CHECK: %[[ROWS:.*]] = arith.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK: tensor.extract_slice %[[ROWS]][0, 0] [1, 2] [1, 1] : tensor<3x2xf32> to tensor<2xf32>
// CHECK: tensor.extract_slice %[[ROWS]][2, 0] [1, 2] [1, 1] : tensor<3x2xf32> to tensor<2xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [2, 1] [1, 1] : tensor<2x3xf32> to tensor<2xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, {{.*}}) outs(
func.func @constant_attributes(%s: tensor<2x3xf32>, %r: tensor<2x4xf32>, %o: tensor<2xf32>, %sh: tensor<2x1x3xf32>,
                               %view: tensor<4x4xf32>, %k: tensor<4xf32>) -> tensor<11x2xf32> {
  %p = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %splats = kiln.splat_project %p, %s, %r, %o, %sh, %view, %k width = 40 height = 30 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2x1x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x2xf32>
  return %splats : tensor<11x2xf32>
}
