// RUN: kiln-opt %s -kiln-bind-dimensions | FileCheck %s

// Each named dimension is read once, from the first argument that has it,
// and clamped to its maximum (the module's #kiln.dim); every read of an
// argument's named dimension, from either argument, uses that value.
// CHECK: #[[CLAMP:.*]] = affine_map<(d0) -> (d0, 512)>
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[IDS:[a-z0-9]+]]: tensor<1x?xi64>
// CHECK: %[[RAW:.*]] = tensor.dim %[[IDS]], %{{.*}} : tensor<1x?xi64>
// CHECK: %[[SEQ:.*]] = affine.min #[[CLAMP]](%[[RAW]])
// CHECK-NOT: tensor.dim
// CHECK: tensor.empty(%[[SEQ]], %[[SEQ]])
// CHECK: return %[[SEQ]]
// A function without named dimensions is left alone.
// CHECK-LABEL: func.func @static_only
// CHECK-NOT: affine.min
module attributes {kiln.dims = [#kiln.dim<"seq", 1, 512>]} {
  func.func @main(%ids: tensor<1x?xi64> {kiln.dim_names = ["", "seq"]},
                  %mask: tensor<1x?xi64> {kiln.dim_names = ["", "seq"]}) -> index {
    %c1 = arith.constant 1 : index
    %a = tensor.dim %ids, %c1 : tensor<1x?xi64>
    %b = tensor.dim %mask, %c1 : tensor<1x?xi64>
    %e = tensor.empty(%a, %b) : tensor<?x?xf32>
    return %b : index
  }

  func.func @static_only(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
