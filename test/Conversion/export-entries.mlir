// RUN: kiln-opt %s -kiln-export-entries | FileCheck %s
// RUN: kiln-opt %s -kiln-export-entries=cpu-features=avx2,fma | FileCheck %s --check-prefix=FEATURES

// Arguments are told apart by their attributes, not their positions: here
// the context arguments come first and the status sits between outputs.
func.func @main(%exec: !llvm.ptr {kiln.executor},
                %arena: memref<256xi8> {kiln.scratch},
                %x: memref<2x3xf32> {kiln.name = "x"},
                %status: memref<i32> {bufferize.result, kiln.status},
                %y: memref<2x3xf32> {bufferize.result, kiln.name = "y"},
                %n: memref<i64>)
    attributes {kiln.errors = ["Gather index out of range at node 'g'"]} {
  return
}

// A private function is no entry.
func.func private @helper(%a: memref<4xf32>) {
  return
}

// The entry becomes private and always inlined (into its wrapper), its
// attributes gone.
// CHECK: func.func private @main(%{{.*}}: !llvm.ptr, %{{.*}}: memref<256xi8>, %{{.*}}: memref<2x3xf32>, %{{.*}}: memref<i32>, %{{.*}}: memref<2x3xf32>, %{{.*}}: memref<i64>) attributes {passthrough = ["alwaysinline"]} {
// CHECK-NOT: kiln.errors

// The wrapper reads kiln_abi_call's fields by index: inputs (4), outputs
// (5), scratch (2), executor (3); a buffer's data is its field 0.
// CHECK: llvm.func internal @kiln_entry.main(%[[CALL:.*]]: !llvm.ptr) -> i32
// CHECK: %[[IN_ADDR:.*]] = llvm.getelementptr %[[CALL]][0, 4] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, ptr, ptr, ptr, ptr, ptr)>
// CHECK: %[[INPUTS:.*]] = llvm.load %[[IN_ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[X_BUF:.*]] = llvm.getelementptr %[[INPUTS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr)>
// CHECK: %[[X_DATA_ADDR:.*]] = llvm.getelementptr %[[X_BUF]][0, 0]
// CHECK: %[[X_DATA:.*]] = llvm.load %[[X_DATA_ADDR]] : !llvm.ptr -> !llvm.ptr
// A row-major descriptor: sizes [2, 3], strides [3, 1].
// CHECK: %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<2x3xf32>
// The second input is rank 0.
// CHECK: %[[N_BUF:.*]] = llvm.getelementptr %[[INPUTS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, ptr)>
// CHECK: %[[N:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64)> to memref<i64>
// CHECK: llvm.getelementptr %[[CALL]][0, 5]
// CHECK: %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<2x3xf32>
// CHECK: %[[STATUS:.*]] = memref.alloca() : memref<i32>
// CHECK: llvm.getelementptr %[[CALL]][0, 2]
// CHECK: %[[ARENA:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<256xi8>
// CHECK: %[[EXEC_ADDR:.*]] = llvm.getelementptr %[[CALL]][0, 3]
// CHECK: %[[EXEC:.*]] = llvm.load %[[EXEC_ADDR]] : !llvm.ptr -> !llvm.ptr
// CHECK: call @main(%[[EXEC]], %[[ARENA]], %[[X]], %[[STATUS]], %[[Y]], %[[N]])
// CHECK: %[[CODE:.*]] = memref.load %[[STATUS]][] : memref<i32>
// CHECK: llvm.return %[[CODE]] : i32

// The descriptor: names, dims, tensor tables, the error table, the entry
// (name, wrapper, 2 inputs, 1 output, tables, 1 error, 256 bytes of
// scratch, no dimensions set by values) and the artifact (version 3, its own size and the entry's).
// CHECK-DAG: llvm.mlir.global private constant @[[MAIN:kiln.abi.[0-9]+]]("main\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("x\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}(dense<[2, 3]> : tensor<2xi64>) {{.*}} : !llvm.array<2 x i64>
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("input_1\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("y\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("Gather index out of range at node 'g'\00")
// CHECK: llvm.mlir.global private constant @[[ENTRIES:kiln.abi.[0-9]+]]() {{.*}} : !llvm.array<1 x struct<(ptr, ptr, i32, i32, ptr, ptr, i32, ptr, i64, i64, ptr)>>
// CHECK: llvm.mlir.addressof @kiln_entry.main
// CHECK: llvm.mlir.constant(256 : i64)
// CHECK: llvm.mlir.global private constant @{{.*}}("kiln {{[0-9.]+}}\00")
// CHECK-NEXT: llvm.mlir.global private constant @{{.*}}("\00")
// The features the target's code may use follow the producer.
// FEATURES: llvm.mlir.global private constant @{{.*}}("kiln {{[0-9.]+}}\00")
// FEATURES-NEXT: llvm.mlir.global private constant @{{.*}}("avx2,fma\00")
// CHECK: llvm.mlir.global private constant @[[ARTIFACT:kiln.abi.[0-9]+]]() {{.*}} : !llvm.struct<(i32, i32, i32, i32, ptr, i32, ptr, i64, ptr, ptr, ptr, ptr, i64)>
// CHECK: llvm.mlir.constant(3 : i32)
// CHECK: llvm.mlir.constant(80 : i32)
// CHECK: llvm.func @kiln_artifact_v3() -> !llvm.ptr
// CHECK: %[[ADDR:.*]] = llvm.mlir.addressof @[[ARTIFACT]]
// CHECK: llvm.return %[[ADDR]]
