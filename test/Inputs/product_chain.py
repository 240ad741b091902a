"""Prints a function of N chained products for kiln-tile-and-vectorize-contractions.

  product_chain.py N

Each product is a parallel loop over two 32-column weight panels, as
kiln.packed_matmul lowers, whose input is the previous product's result: a
chain like an MLP's layers without their activations. The 10 rows leave a
ragged last block of register rows, which is peeled.
"""
import sys

LOOP = """\
  %r{layer} = scf.forall (%i) in (2) shared_outs(%o = %out) -> (tensor<10x64xf32>) {{
    %panel = tensor.extract_slice %w[%i, 0, 0] [1, 64, 32] [1, 1, 1] : tensor<2x64x32xf32> to tensor<64x32xf32>
    %e = tensor.empty() : tensor<10x32xf32>
    %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<10x32xf32>) -> tensor<10x32xf32>
    %p = linalg.matmul ins({input}, %panel : tensor<10x64xf32>, tensor<64x32xf32>) outs(%zeros : tensor<10x32xf32>) -> tensor<10x32xf32>
    %column = arith.muli %i, %c32 : index
    scf.forall.in_parallel {{
      tensor.parallel_insert_slice %p into %o[0, %column] [10, 32] [1, 1] : tensor<10x32xf32> into tensor<10x64xf32>
    }}
  }}"""


def main():
    layers = int(sys.argv[1])
    lines = [
        "func.func @chain(%x: tensor<10x64xf32>, %w: tensor<2x64x32xf32>)"
        " -> tensor<10x64xf32> {",
        "  %zero = arith.constant 0.0 : f32",
        "  %c32 = arith.constant 32 : index",
        "  %out = tensor.empty() : tensor<10x64xf32>",
    ]
    value = "%x"
    for layer in range(layers):
        lines.append(LOOP.format(layer=layer, input=value))
        value = f"%r{layer}"
    lines += [f"  return {value} : tensor<10x64xf32>", "}"]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
