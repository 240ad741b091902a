// RUN: kiln-opt %s -split-input-file -kiln-export-entries -verify-diagnostics | FileCheck %s

// A dynamic dimension is one of the module's named dimensions: the
// wrapper reads its size from the call's dims (kiln_abi_buffer field 1)
// and the signature refers to the dimension as -(k + 1); the artifact
// lists the dimensions with their ranges.
// CHECK: llvm.func internal @kiln_entry.main(%[[CALL:.*]]: !llvm.ptr) -> i32
// CHECK: %[[BUF:.*]] = llvm.getelementptr %{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr)>
// CHECK: %[[DATA_ADDR:.*]] = llvm.getelementptr %[[BUF]][0, 0]
// CHECK: %[[DIMS_ADDR:.*]] = llvm.getelementptr %[[BUF]][0, 1]
// CHECK: %[[DIMS:.*]] = llvm.load %[[DIMS_ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[SIZE_ADDR:.*]] = llvm.getelementptr %[[DIMS]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[SIZE:.*]] = llvm.load %[[SIZE_ADDR]] : !llvm.ptr -> i64
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<3 x i64>, array<3 x i64>)> to memref<1x?x384xf32>
// The input's dims [1, seq, 384] with seq the dimension #0.
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}(dense<[1, -1, 384]> : tensor<3xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[SEQ:kiln.abi.[0-9]+]]("seq\00")
// CHECK: llvm.mlir.global private constant @[[DIMS_TABLE:kiln.abi.[0-9]+]]() {{.*}} : !llvm.array<1 x struct<(ptr, i64, i64)>>
// CHECK: llvm.mlir.addressof @[[SEQ]]
// CHECK: llvm.mlir.constant(1 : i64)
// CHECK: llvm.mlir.constant(512 : i64)
// CHECK: llvm.mlir.global private constant @{{.*}}() {{.*}} : !llvm.struct<(i32, i32, i32, i32, ptr, i32, ptr, i64, ptr, ptr, ptr, ptr, i64)>
// CHECK: llvm.mlir.addressof @[[DIMS_TABLE]]
// The table went into the descriptor.
// CHECK-NOT: kiln.dims
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>]} {
  func.func @main(%x: memref<1x?x384xf32> {kiln.name = "x", kiln.dim_names = ["", "seq", ""]},
                  %y: memref<1x?x384xf32> {bufferize.result, kiln.name = "y", kiln.dim_names = ["", "seq", ""]},
                  %status: memref<i32> {bufferize.result, kiln.status}) {
    return
  }
}

// -----

// An output sized by an expression of the inputs' dimensions refers to a
// computed dimension, whose program the artifact's dim_exprs lists:
// DIM 0, CONST 2, MUL, END; the dimension the input sets has none.
// CHECK: llvm.func internal @kiln_entry.twice
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}(dense<[1, -2]> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[PROGRAM:kiln.abi.[0-9]+]](dense<[2, 0, 1, 2, 4, 0, 0, 0]> : tensor<8xi64>)
// CHECK: llvm.mlir.global private constant @[[EXPRS:kiln.abi.[0-9]+]]() {{.*}} : !llvm.array<2 x ptr>
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @[[PROGRAM]]
// CHECK: llvm.mlir.global private constant @{{.*}}() {{.*}} : !llvm.struct<(i32, i32, i32, i32, ptr, i32, ptr, i64, ptr, ptr, ptr, ptr, i64)>
// CHECK: llvm.mlir.addressof @[[EXPRS]]
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>, #kiln.dim<"seq * 2", 2, 1024, size = affine_map<()[s0] -> (s0 * 2)> of ["seq"]>]} {
  func.func @twice(%x: memref<1x?xf32> {kiln.name = "x", kiln.dim_names = ["", "seq"]},
                  %y: memref<1x?xf32> {bufferize.result, kiln.name = "y", kiln.dim_names = ["", "seq * 2"]},
                  %status: memref<i32> {bufferize.result, kiln.status}) {
    return
  }
}

// -----

// A renderer's image sides are dimensions its image_size input's elements
// set: the entry's value-dims table holds (input 1, element 0, dimension
// 0) and (input 1, element 1, dimension 1); the output refers to both.
// CHECK: llvm.func internal @kiln_entry.render
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}(dense<[-1, -2, 3]> : tensor<3xi64>)
// CHECK: llvm.mlir.global private constant @[[VALUES:kiln.abi.[0-9]+]]() {{.*}} : !llvm.array<2 x struct<(i32, i32, i64)>>
// CHECK: llvm.mlir.constant(1 : i32)
// CHECK-NEXT: llvm.mlir.constant(0 : i32)
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK: llvm.mlir.constant(1 : i32)
// CHECK-NEXT: llvm.mlir.constant(1 : i32)
// CHECK-NEXT: llvm.mlir.constant(1 : i64)
// CHECK: llvm.mlir.global private constant @{{.*}}() {{.*}} : !llvm.array<1 x struct<(ptr, ptr, i32, i32, ptr, ptr, i32, ptr, i64, i64, ptr)>>
// CHECK: llvm.mlir.constant(2 : i64)
// CHECK-NEXT: llvm.mlir.addressof @[[VALUES]]
module attributes {kiln.dims = [#kiln.dim<"height", 1, 1080>, #kiln.dim<"width", 1, 1920>]} {
  func.func @render(%view: memref<4x4xf32> {kiln.name = "view"},
                    %size: memref<2xi64> {kiln.name = "image_size", kiln.dim_values = ["height", "width"]},
                    %image: memref<?x?x3xf32> {bufferize.result, kiln.name = "image", kiln.dim_names = ["height", "width", ""]},
                    %status: memref<i32> {bufferize.result, kiln.status}) {
    return
  }
}

// -----

// The attribute belongs on a fixed-length int64 vector.
// expected-error@+2 {{input 'size' sets dimensions but is not a fixed-length int64 vector with one name per element}}
module attributes {kiln.dims = [#kiln.dim<"height", 1, 1080>]} {
  func.func @render(%size: memref<2xi32> {kiln.name = "size", kiln.dim_values = ["height", ""]},
                    %status: memref<i32> {bufferize.result, kiln.status}) {
    return
  }
}
