// RUN: kiln-opt %s -kiln-lower-int8-panel-products | FileCheck %s

// 6 rows in blocks of 4 (the second block reads row 5 for its last two
// rows and stores only rows 4 and 5), 2 panels of 16 columns (the outer
// loop, so consecutive blocks share a panel in cache): two
// registers of 8 int32 sums per row, kept through the 3 groups of 4.
// CHECK-LABEL: func.func @product
// CHECK: %[[W:.*]] = memref.collapse_shape %arg1 {{\[\[}}0], [1], [2, 3]] : memref<2x3x16x4xi8> into memref<2x3x64xi8>
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0{{.*}} : memref<6x3x4xi8>
// CHECK: %[[LAST:.*]] = arith.subi %[[ROWS]], %c1
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[ROWS]], %c4
// CHECK: scf.parallel (%[[P:.*]], %[[RB:.*]]) = ({{.*}}) to (%c2{{.*}}, %[[BLOCKS]]) step
// CHECK: arith.minsi %{{.*}}, %[[LAST]]
// CHECK: %[[SUMS:.*]]:8 = scf.for %[[G:.*]] = {{.*}} iter_args({{.*}}) -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>)
// CHECK: vector.load %[[W]][%[[P]], %[[G]], %{{.*}}] : memref<2x3x64xi8>, vector<32xi8>
// CHECK: vector.load %[[W]][%[[P]], %[[G]], %{{.*}}] : memref<2x3x64xi8>, vector<32xi8>
// CHECK: vector.load %arg0[%{{.*}}, %[[G]], %{{.*}}] : memref<6x3x4xi8>, vector<4xi8>
// CHECK: vector.broadcast %{{.*}} : i32 to vector<8xi32>
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"
// CHECK: llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"
// CHECK: arith.addi %{{.*}} : vector<8xi32>
// CHECK: arith.cmpi slt, %{{.*}}, %[[ROWS]]
// CHECK: scf.if
// CHECK: vector.store %[[SUMS]]#0, %arg2[%{{.*}}, %[[P]], %{{.*}}] : memref<6x2x16xi32>, vector<8xi32>
// CHECK: vector.store %[[SUMS]]#1, %arg2
// CHECK-NOT: linalg.generic
#q = affine_map<(r, p, j, g, u) -> (r, g, u)>
#w = affine_map<(r, p, j, g, u) -> (p, g, j, u)>
#acc = affine_map<(r, p, j, g, u) -> (r, p, j)>
func.func @product(%q: memref<6x3x4xi8>, %w: memref<2x3x16x4xi8>, %acc: memref<6x2x16xi32>) {
  linalg.generic {indexing_maps = [#q, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%q, %w : memref<6x3x4xi8>, memref<2x3x16x4xi8>) outs(%acc : memref<6x2x16xi32>) attrs = {kiln.int8_panel_product} {
  ^bb0(%a: i8, %b: i8, %c: i32):
    %0 = arith.extui %a : i8 to i32
    %1 = arith.extsi %b : i8 to i32
    %2 = arith.muli %0, %1 : i32
    %3 = arith.addi %c, %2 : i32
    linalg.yield %3 : i32
  }
  return
}

// Any number of rows (a sequence length): the blocks are counted at run
// time.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0{{.*}} : memref<?x3x4xi8>
// CHECK: arith.ceildivui %[[N]], %c4
// CHECK: scf.parallel
func.func @dynamic_rows(%q: memref<?x3x4xi8>, %w: memref<2x3x16x4xi8>, %acc: memref<?x2x16xi32>) {
  linalg.generic {indexing_maps = [#q, #w, #acc], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%q, %w : memref<?x3x4xi8>, memref<2x3x16x4xi8>) outs(%acc : memref<?x2x16xi32>) attrs = {kiln.int8_panel_product} {
  ^bb0(%a: i8, %b: i8, %c: i32):
    %0 = arith.extui %a : i8 to i32
    %1 = arith.extsi %b : i8 to i32
    %2 = arith.muli %0, %1 : i32
    %3 = arith.addi %c, %2 : i32
    linalg.yield %3 : i32
  }
  return
}
