// An artifact with state and two entries that share a private function.
// stateful_test (StatefulTest.cpp) checks it against a plain C++ model.
//
// step(x: [8, 64], slot: i64) -> (y: [8, 64], calls: i64, before: [8, 64])
//   h = relu(x @ W) with W = 0.125 everywhere      (the shared @layer)
//   acc += h; y = acc                              (read, then written)
//   before = -(acc as read), computed after the write: the value read
//   must not see the write
//   cache[slot] = h[0]                             (in place, slot clamped)
//   calls += 1; return calls                       (starts at 10)
// recall(scale: f32) -> (rows: [6, 64])
//   rows = layer(cache_padded)[0:6] * scale: reads the cache only.
kiln.state @acc : tensor<8x64xf32>
kiln.state @cache : tensor<6x64xf32>
kiln.state @calls : tensor<i64> = dense<10> : tensor<i64>

func.func @step(%x: tensor<8x64xf32> {kiln.name = "x"},
                %slot: tensor<i64> {kiln.name = "slot"})
    -> (tensor<8x64xf32> {kiln.name = "y"}, tensor<i64> {kiln.name = "calls"},
        tensor<8x64xf32> {kiln.name = "before"}) {
  %h = call @layer(%x) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %acc = kiln.state_read @acc : tensor<8x64xf32>
  %sum = kiln.add %acc, %h : tensor<8x64xf32>, tensor<8x64xf32>
  kiln.state_write %sum, @acc : tensor<8x64xf32>
  %before = kiln.neg %acc : tensor<8x64xf32>
  %row = kiln.slice %h offsets = [0, 0] sizes = [1, 64] strides = [1, 1] : tensor<8x64xf32> -> tensor<1x64xf32>
  kiln.state_update %row, @cache, axis = 0, offset = %slot : tensor<1x64xf32>, tensor<i64>
  %calls = kiln.state_read @calls : tensor<i64>
  %one = kiln.constant dense<1> : tensor<i64>
  %next = kiln.add %calls, %one : tensor<i64>, tensor<i64>
  kiln.state_write %next, @calls : tensor<i64>
  return %sum, %next, %before : tensor<8x64xf32>, tensor<i64>, tensor<8x64xf32>
}

func.func @recall(%scale: tensor<f32> {kiln.name = "scale"})
    -> (tensor<6x64xf32> {kiln.name = "rows"}) {
  %cache = kiln.state_read @cache : tensor<6x64xf32>
  %zeros = kiln.constant dense<0.0> : tensor<2x64xf32>
  %padded = kiln.concat %cache, %zeros axis = 0 : tensor<6x64xf32>, tensor<2x64xf32> -> tensor<8x64xf32>
  %h = call @layer(%padded) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %top = kiln.slice %h offsets = [0, 0] sizes = [6, 64] strides = [1, 1] : tensor<8x64xf32> -> tensor<6x64xf32>
  %rows = kiln.mul %top, %scale : tensor<6x64xf32>, tensor<f32>
  return %rows : tensor<6x64xf32>
}

func.func private @layer(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %w = kiln.constant dense<0.125> : tensor<64x64xf32>
  %p = kiln.matmul %x, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %h = kiln.relu %p : tensor<8x64xf32>
  return %h : tensor<8x64xf32>
}
