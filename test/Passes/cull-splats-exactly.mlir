// RUN: kiln-opt %s -kiln-cull-splats-exactly | FileCheck %s

// Every rasterization switches to exact culling; one that has it keeps it.
// CHECK-LABEL: func.func @render
// CHECK: kiln.splat_rasterize %arg0, %arg1 culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
// CHECK: kiln.splat_rasterize %arg0, %arg1 culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<16x16x3xf32>
func.func @render(%splats: tensor<11x5xf32>, %bg: tensor<3xf32>) -> (tensor<30x40x3xf32>, tensor<16x16x3xf32>) {
  %a = kiln.splat_rasterize %splats, %bg : tensor<11x5xf32>, tensor<3xf32> -> tensor<30x40x3xf32>
  %b = kiln.splat_rasterize %splats, %bg culling = exact : tensor<11x5xf32>, tensor<3xf32> -> tensor<16x16x3xf32>
  return %a, %b : tensor<30x40x3xf32>, tensor<16x16x3xf32>
}
