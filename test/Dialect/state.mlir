// RUN: kiln-opt %s | FileCheck %s
// Round trip: what kiln-opt prints, it parses back to the same module.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK: kiln.state @cache : tensor<2x8x4xf32>
// CHECK: kiln.state @step : tensor<i64> = dense<1> : tensor<i64>
kiln.state @cache : tensor<2x8x4xf32>
kiln.state @step : tensor<i64> = dense<1> : tensor<i64>

// CHECK-LABEL: func.func @decode
func.func @decode(%k: tensor<2x1x4xf32>) -> tensor<2x8x4xf32> {
  // CHECK: %[[STEP:.*]] = kiln.state_read @step : tensor<i64>
  %step = kiln.state_read @step : tensor<i64>
  // CHECK: kiln.state_update %{{.*}}, @cache, axis = 1, offset = %[[STEP]] : tensor<2x1x4xf32>, tensor<i64>
  kiln.state_update %k, @cache, axis = 1, offset = %step : tensor<2x1x4xf32>, tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %next = kiln.add %step, %one : tensor<i64>, tensor<i64>
  // CHECK: kiln.state_write %{{.*}}, @step : tensor<i64>
  kiln.state_write %next, @step : tensor<i64>
  // CHECK: kiln.state_read @cache : tensor<2x8x4xf32>
  %cache = kiln.state_read @cache : tensor<2x8x4xf32>
  return %cache : tensor<2x8x4xf32>
}
