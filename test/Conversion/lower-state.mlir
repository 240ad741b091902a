// RUN: kiln-opt %s -kiln-lower-state | FileCheck %s

// States are laid out at 64-byte alignment in declaration order: @cache at
// 0 (2*8*4*4 = 256 bytes), @step at 256, @flags (bytes) at 320. The block's
// initial contents exist because @step has an initial value.
// CHECK: module attributes {kiln.state_init = dense<"0x{{0+}}0700000000000000{{0+}}"> : tensor<323xi8>, kiln.state_size = 323 : i64}
// CHECK-NOT: kiln.state @
kiln.state @cache : tensor<2x8x4xf32>
kiln.state @step : tensor<i64> = dense<7> : tensor<i64>
kiln.state @flags : tensor<3xi1>

// The update writes only its slice, at the clamped offset; the read after
// it is the state's own memory, not a copy; the read of @step is copied
// because @step is written after it.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: %[[BLOCK:[a-z0-9]+]]: memref<323xi8> {kiln.state})
// CHECK: %[[STEP_VIEW:.*]] = memref.view %[[BLOCK]][%c256{{.*}}][] : memref<323xi8> to memref<i64>
// CHECK: %[[STEP:.*]] = bufferization.to_tensor %[[STEP_VIEW]] restrict : memref<i64> to tensor<i64>
// CHECK: %[[STEP_COPY:.*]] = linalg.copy ins(%[[STEP]] : tensor<i64>)
// CHECK: %[[CACHE_VIEW:.*]] = memref.view %[[BLOCK]][%c0{{.*}}][] : memref<323xi8> to memref<2x8x4xf32>
// CHECK: %[[AT:.*]] = tensor.extract %[[STEP_COPY]][] : tensor<i64>
// CHECK: %[[LOW:.*]] = arith.maxsi %[[AT]], %c0_i64
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %c7_i64
// CHECK: %[[INDEX:.*]] = arith.index_cast %[[CLAMPED]] : i64 to index
// CHECK: %[[SLICE:.*]] = memref.subview %[[CACHE_VIEW]][0, %[[INDEX]], 0] [2, 1, 4] [1, 1, 1]
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[SLICE]]
// CHECK: kiln.add %[[STEP_COPY]]
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %{{.*}} : (tensor<i64>, memref<i64>)
// CHECK: %[[CACHE:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<2x8x4xf32> to tensor<2x8x4xf32>
// CHECK-NOT: linalg.copy
// CHECK: return %[[CACHE]]
func.func @decode(%k: tensor<2x1x4xf32>) -> tensor<2x8x4xf32> {
  %step = kiln.state_read @step : tensor<i64>
  kiln.state_update %k, @cache, axis = 1, offset = %step : tensor<2x1x4xf32>, tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %next = kiln.add %step, %one : tensor<i64>, tensor<i64>
  kiln.state_write %next, @step : tensor<i64>
  %cache = kiln.state_read @cache : tensor<2x8x4xf32>
  return %cache : tensor<2x8x4xf32>
}

// A private function gets the block from its callers.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: %[[EBLOCK:[a-z0-9]+]]: memref<323xi8> {kiln.state})
// CHECK: call @read_flags(%[[EBLOCK]])
// CHECK-LABEL: func.func private @read_flags
// CHECK-SAME: memref<323xi8> {kiln.state}
// CHECK: memref.view %{{.*}}[%c320{{.*}}][] : memref<323xi8> to memref<3xi1>
func.func @entry() -> tensor<3xi1> {
  %f = call @read_flags() : () -> tensor<3xi1>
  return %f : tensor<3xi1>
}

func.func private @read_flags() -> tensor<3xi1> {
  %f = kiln.state_read @flags : tensor<3xi1>
  return %f : tensor<3xi1>
}

// A function without state gets no block.
// CHECK-LABEL: func.func @stateless(%{{[a-z0-9]+}}: tensor<2xf32>) -> tensor<2xf32>
func.func @stateless(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
