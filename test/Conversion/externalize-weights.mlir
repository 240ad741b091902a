// RUN: kiln-opt %s -kiln-externalize-weights=min-bytes=16 | FileCheck %s

// Constants of at least min-bytes raw bytes, dense or resource, become
// aligned public declarations listed with their values in kiln.weights;
// small constants, splats and mutable globals keep their initializers.

// CHECK-LABEL: module attributes {kiln.weights = [
// CHECK-SAME: {name = "dense_weight", value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<5xf32>}
// CHECK-SAME: {name = "resource_weight", value = dense_resource<blob> : tensor<2x2xf32>}
// CHECK-SAME: ]}
module {
  // CHECK: memref.global constant @dense_weight : memref<5xf32> {alignment = 64 : i64}
  memref.global "private" constant @dense_weight : memref<5xf32> = dense<[1.0, 2.0, 3.0, 4.0, 5.0]>
  // CHECK: memref.global constant @resource_weight : memref<2x2xf32> {alignment = 64 : i64}
  memref.global "private" constant @resource_weight : memref<2x2xf32> = dense_resource<blob>
  // CHECK: memref.global "private" constant @small : memref<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
  memref.global "private" constant @small : memref<3xf32> = dense<[1.0, 2.0, 3.0]>
  // CHECK: memref.global "private" constant @splat : memref<64xf32> = dense<0.000000e+00>
  memref.global "private" constant @splat : memref<64xf32> = dense<0.0>
  // CHECK: memref.global "private" @mutable : memref<5xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]>
  memref.global "private" @mutable : memref<5xf32> = dense<[1.0, 2.0, 3.0, 4.0, 5.0]>
}

{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
