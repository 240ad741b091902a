// RUN: kiln-opt %s -kiln-lower-int4-panel-products | FileCheck %s
// RUN: kiln-opt %s -kiln-lower-int4-panel-products="lanes=16 vnni=true" | FileCheck %s --check-prefix=WIDE
// RUN: kiln-opt %s -kiln-lower-int4-panel-products="lanes=16" | FileCheck %s --check-prefix=BW

// With AVX-512's 16 lanes a 16-column panel is one register: a pair of
// groups of 4 rows is one 64-byte load, blocks have 4 rows, and with VNNI
// each group's products are one vpdpbusd into the sums (else AVX512BW's
// two multiply-adds and an add). One row (a decoder step) multiplies the
// stored 4-bit values (no zero point subtracted per pair) and takes
// zero point * the block's sum of the row's bytes off each block's sums;
// those sums are computed once, before the panels.
// WIDE-LABEL: func.func @product
// WIDE: scf.if
// WIDE: %[[ROWSUMS:.*]] = memref.alloca() : memref<2xi32>
// WIDE: vector.reduction <add>
// WIDE: memref.store %{{.*}}, %[[ROWSUMS]]
// WIDE: scf.parallel
// WIDE: scf.for %[[BLOCK:[a-z0-9_]+]] = {{.*}} -> (vector<16xf32>) {
// WIDE-NOT: arith.subi %{{.*}} : vector<64xi8>
// WIDE: %[[SUMS:.*]] = scf.for {{.*}} -> (vector<16xi32>) {
// WIDE: %[[LOW:.*]] = arith.andi %{{.*}} : vector<64xi8>
// WIDE-NOT: arith.subi {{.*}} : vector<64xi8>
// WIDE: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %{{.*}}, %[[LOW]])
// WIDE: %[[ROWSUM:.*]] = memref.load %[[ROWSUMS]][%[[BLOCK]]]
// WIDE: %[[SPLAT:.*]] = vector.broadcast %[[ROWSUM]] : i32 to vector<16xi32>
// WIDE: %[[ZEROS:.*]] = arith.muli %{{.*}}, %[[SPLAT]] : vector<16xi32>
// WIDE: %[[EXACT:.*]] = arith.subi %[[SUMS]], %[[ZEROS]] : vector<16xi32>
// WIDE: arith.sitofp %[[EXACT]]
// WIDE: } else {
// WIDE: arith.ceildivui %{{.*}}, %c4
// WIDE: vector.load %{{.*}} : memref<2x2x64xi8>, vector<64xi8>
// WIDE: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// WIDE-NOT: pmadd
// WIDE: arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// WIDE-LABEL: func.func @float_rows
// WIDE: arith.sitofp %{{.*}} : vector<16xi32> to vector<16xf32>
// BW-LABEL: func.func @product
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddubs.w.512"
// BW: llvm.call_intrinsic "llvm.x86.avx512.pmaddw.d.512"
// BW-NOT: vpdpbusd

// 3 rows, 2 panels of 16 columns, 2 blocks of 8 rows of weights (one pair
// of groups of 4 each). One row (a decoder step) takes a kernel of its
// own; otherwise blocks of 2 rows (the second block reads row 2 twice and
// stores it once). In a block of rows, int32 sums run through the block's
// pairs, the low 4 bits of each weight byte then the high, made signed by
// subtracting 8; at the end of each block of weights they are converted
// and multiplied by the panel's scales for that block (loaded as the block
// starts) into float sums.
// CHECK-LABEL: func.func @product
// CHECK: %[[W:.*]] = memref.collapse_shape %arg1 {{\[\[}}0], [1, 2], [3, 4]] : memref<2x2x1x16x4xi8> into memref<2x2x64xi8>
// CHECK: %[[Q:.*]] = memref.collapse_shape %arg0 {{\[\[}}0], [1, 2, 3], [4]] : memref<3x2x1x2x4xi8> into memref<3x4x4xi8>
// CHECK: %[[ROWS:.*]] = memref.dim %[[Q]], %c0
// CHECK: %[[ONE:.*]] = arith.cmpi eq, %[[ROWS]], %c1
// CHECK: scf.if %[[ONE]] {
// CHECK: scf.parallel
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK: } else {
// CHECK: arith.ceildivui %[[ROWS]], %c2
// CHECK: scf.parallel (%[[P:.*]], %{{.*}}) = ({{.*}}) to (%c2{{.*}}, %{{.*}}) step
// CHECK: %[[TOTALS:.*]]:4 = scf.for %[[B:.*]] = {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.load %arg2[%[[P]], %[[B]], %{{.*}}] : memref<2x2x16xf32>, vector<8xf32>
// CHECK: %[[SUMS:.*]]:4 = scf.for {{.*}} -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>)
// CHECK: vector.load %[[W]][%[[P]], %{{.*}}, %{{.*}}] : memref<2x2x64xi8>, vector<32xi8>
// CHECK: arith.andi %{{.*}} : vector<32xi8>
// CHECK: arith.subi %{{.*}} : vector<32xi8>
// CHECK: vector.load %[[Q]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<3x4x4xi8>, vector<4xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK: arith.shrui %{{.*}} : vector<16xi16>
// CHECK: arith.sitofp %[[SUMS]]#0 : vector<8xi32> to vector<8xf32>
// CHECK: vector.fma
// CHECK: scf.if
// CHECK: vector.store %[[TOTALS]]#0, %arg3[%{{.*}}, %[[P]], %{{.*}}] : memref<3x2x16xf32>, vector<8xf32>
// CHECK-NOT: linalg.generic
#q = affine_map<(r, p, j, b, g, h, u) -> (r, b, g, h, u)>
#w = affine_map<(r, p, j, b, g, h, u) -> (p, b, g, j, u)>
#s = affine_map<(r, p, j, b, g, h, u) -> (p, b, j)>
#acc = affine_map<(r, p, j, b, g, h, u) -> (r, p, j)>
func.func @product(%q: memref<3x2x1x2x4xi8>, %w: memref<2x2x1x16x4xi8>, %s: memref<2x2x16xf32>, %acc: memref<3x2x16xf32>) {
  linalg.generic {indexing_maps = [#q, #w, #s, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%q, %w, %s : memref<3x2x1x2x4xi8>, memref<2x2x1x16x4xi8>, memref<2x2x16xf32>) outs(%acc : memref<3x2x16xf32>) attrs = {kiln.int4_panel_product} {
  ^bb0(%a: i8, %b: i8, %scale: f32, %c: f32):
    %h = linalg.index 5 : index
    %c0 = arith.constant 0 : index
    %high = arith.cmpi ne, %h, %c0 : index
    %c4 = arith.constant 4 : i8
    %shifted = arith.shrui %b, %c4 : i8
    %byte = arith.select %high, %shifted, %b : i8
    %c15 = arith.constant 15 : i8
    %nibble = arith.andi %byte, %c15 : i8
    %wide = arith.extui %nibble : i8 to i32
    %c8 = arith.constant 8 : i32
    %weight = arith.subi %wide, %c8 : i32
    %row = arith.extui %a : i8 to i32
    %product = arith.muli %row, %weight : i32
    %real = arith.sitofp %product : i32 to f32
    %scaled = arith.mulf %real, %scale : f32
    %sum = arith.addf %c, %scaled : f32
    linalg.yield %sum : f32
  }
  return
}

// Float rows (kiln.int4_matmul {float_input}): the rows stay f32, one
// dimension of padded K. Each pair's bytes are unpacked as above, then
// each lane's byte of every 32-bit column is sign-extended in place
// (shifted left by 24, 16 or 8 unless it is the top byte, then
// arithmetically right by 24) and converted. One row multiplies them with
// its broadcast float and scales each block's sums at the block's end.
// More rows: each panel is dequantized and scaled once into a [K, 16]
// buffer, then multiplied with blocks of 6 rows in float.
// CHECK-LABEL: func.func @float_rows
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[\[}}0], [1, 2, 3, 4]] : memref<5x2x1x2x4xf32> into memref<5x16xf32>
// CHECK: scf.if
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK: %[[BLOCK:.*]]:2 = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK: arith.shli %{{.*}} : vector<8xi32>
// CHECK: arith.shrsi %{{.*}} : vector<8xi32>
// CHECK: arith.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT: arith.mulf
// CHECK: memref.load %[[X]]
// CHECK: vector.fma
// CHECK: vector.fma %[[BLOCK]]#0
// CHECK: } else {
// CHECK: scf.parallel (%[[P:.*]]) =
// CHECK: %[[BUF:.*]] = memref.alloca() : memref<16x16xf32>
// CHECK: arith.sitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK: arith.mulf %{{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[BUF]]
// CHECK: scf.for {{.*}} step %c6
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: vector.load %[[BUF]]
// CHECK-COUNT-6: memref.load %[[X]]
// CHECK-NOT: llvm.call_intrinsic
// CHECK-NOT: linalg.generic
#xf = affine_map<(r, p, j, b, g, h, u) -> (r, b, g, h, u)>
func.func @float_rows(%x: memref<5x2x1x2x4xf32>, %w: memref<2x2x1x16x4xi8>, %s: memref<2x2x16xf32>, %acc: memref<5x2x16xf32>) {
  linalg.generic {indexing_maps = [#xf, #w, #s, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]} ins(%x, %w, %s : memref<5x2x1x2x4xf32>, memref<2x2x1x16x4xi8>, memref<2x2x16xf32>) outs(%acc : memref<5x2x16xf32>) attrs = {kiln.int4_panel_product} {
  ^bb0(%a: f32, %b: i8, %scale: f32, %c: f32):
    %h = linalg.index 5 : index
    %c0 = arith.constant 0 : index
    %high = arith.cmpi ne, %h, %c0 : index
    %c4 = arith.constant 4 : i8
    %shifted = arith.shrui %b, %c4 : i8
    %byte = arith.select %high, %shifted, %b : i8
    %c15 = arith.constant 15 : i8
    %nibble = arith.andi %byte, %c15 : i8
    %wide = arith.extui %nibble : i8 to i32
    %c8 = arith.constant 8 : i32
    %weight = arith.subi %wide, %c8 : i32
    %real = arith.sitofp %weight : i32 to f32
    %scaled = arith.mulf %real, %scale : f32
    %product = arith.mulf %a, %scaled : f32
    %sum = arith.addf %c, %product : f32
    linalg.yield %sum : f32
  }
  return
}
