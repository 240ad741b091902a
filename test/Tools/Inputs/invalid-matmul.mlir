// Input for kiln-compile.test: a module the verifier rejects.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return %0 : tensor<2x5xf32>
}
