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

// Contributions bin as the rasterization does.
// CHECK-LABEL: func.func @contributions
// CHECK: kiln.splat_contributions %arg0 width = 40 height = 30 culling = exact : tensor<11x5xf32> -> tensor<5xf32>
func.func @contributions(%splats: tensor<11x5xf32>) -> tensor<5xf32> {
  %weights = kiln.splat_contributions %splats width = 40 height = 30 : tensor<11x5xf32> -> tensor<5xf32>
  return %weights : tensor<5xf32>
}
