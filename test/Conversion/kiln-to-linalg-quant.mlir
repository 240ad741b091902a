// RUN: kiln-opt %s -convert-kiln-to-linalg -split-input-file | FileCheck %s

// Quantize: divide, round half to even, add the zero point, saturate to
// the unsigned range, convert; the scale and zero point read per column.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @quantize_per_axis
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[COL]], #[[ID]]]
// CHECK: arith.divf
// CHECK-NEXT: math.roundeven
// CHECK-NEXT: arith.uitofp %{{.*}} : i8 to f32
// CHECK-NEXT: arith.addf
// CHECK-DAG: arith.constant 0.000000e+00 : f32
// CHECK-DAG: arith.constant 2.550000e+02 : f32
// CHECK: arith.maxnumf
// CHECK-NEXT: arith.minnumf
// CHECK-NEXT: arith.fptoui %{{.*}} : f32 to i8
func.func @quantize_per_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %zp: tensor<3xi8>) -> tensor<2x3xi8> {
  %q = kiln.quantize %x, %s, %zp axis = 1 {result_unsigned} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xi8> -> tensor<2x3xi8>
  return %q : tensor<2x3xi8>
}

// -----

// Signed: saturate to [-128, 127].
// CHECK-LABEL: func.func @quantize_signed
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK-DAG: arith.constant -1.280000e+02 : f32
// CHECK-DAG: arith.constant 1.270000e+02 : f32
// CHECK: arith.fptosi %{{.*}} : f32 to i8
func.func @quantize_signed(%x: tensor<4xf32>, %s: tensor<f32>, %zp: tensor<i8>) -> tensor<4xi8> {
  %q = kiln.quantize %x, %s, %zp : tensor<4xf32>, tensor<f32>, tensor<i8> -> tensor<4xi8>
  return %q : tensor<4xi8>
}

// -----

// Dequantize: the difference in i32, then one multiply.
// CHECK-LABEL: func.func @dequantize
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT: arith.extui %{{.*}} : i8 to i32
// CHECK-NEXT: arith.subi
// CHECK-NEXT: arith.sitofp %{{.*}} : i32 to f32
// CHECK-NEXT: arith.mulf
func.func @dequantize(%q: tensor<4xi8>, %s: tensor<f32>, %zp: tensor<i8>) -> tensor<4xf32> {
  %d = kiln.dequantize %q, %s, %zp {input_unsigned} : tensor<4xi8>, tensor<f32>, tensor<i8> -> tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// The range comes from two reductions starting at 0 (so it includes 0);
// the scale and zero point are computed once, on scalars.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.minnumf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.maxnumf
// CHECK: %[[RANGE:.*]] = arith.subf
// CHECK: %[[SCALE:.*]] = arith.divf %[[RANGE]]
// CHECK: tensor.from_elements %[[SCALE]] : tensor<f32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK: math.roundeven
func.func @dynamic(%x: tensor<4x3xf32>) -> (tensor<4x3xi8>, tensor<f32>, tensor<i8>) {
  %q, %s, %zp = kiln.dynamic_quantize %x : tensor<4x3xf32> -> tensor<4x3xi8>, tensor<f32>, tensor<i8>
  return %q, %s, %zp : tensor<4x3xi8>, tensor<f32>, tensor<i8>
}

// -----

// Each operand widens by its own signedness, less its zero point; the
// product is an i32 linalg.matmul.
// CHECK-LABEL: func.func @product
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.subi
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.subi
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xi32>, tensor<3x2xi32>)
func.func @product(%a: tensor<4x3xi8>, %b: tensor<3x2xi8>, %azp: tensor<i8>, %bzp: tensor<2xi8>) -> tensor<4x2xi32> {
  %p = kiln.matmul_integer %a, %b, %azp, %bzp {lhs_unsigned} : tensor<4x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<2xi8> -> tensor<4x2xi32>
  return %p : tensor<4x2xi32>
}

// -----

// Casts between the float types and from unsigned bytes.
// CHECK-LABEL: func.func @casts
// CHECK: arith.uitofp %{{.*}} : i8 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.fptoui %{{.*}} : f32 to i8
func.func @casts(%x: tensor<4xi8>, %h: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xi8>) {
  %f = kiln.cast %x {input_unsigned} : tensor<4xi8> -> tensor<4xf32>
  %b = kiln.cast %f : tensor<4xf32> -> tensor<4xbf16>
  %g = kiln.cast %h : tensor<4xf16> -> tensor<4xf32>
  %u = kiln.cast %g {result_unsigned} : tensor<4xf32> -> tensor<4xi8>
  return %b, %u : tensor<4xbf16>, tensor<4xi8>
}

// -----

// kiln.quantized_matmul: row ranges, row scales and zero points, the rows
// as uint8 padded to groups of 4, the marked integer product over
// (row, panel, column, group, lane), and the epilogue on the real columns.
// CHECK-LABEL: func.func @quantized_product
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.minnumf
// CHECK: arith.maxnumf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.fptoui %{{.*}} : f32 to i8
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [10, 70] [1, 1] : tensor<10x70xi8> into tensor<10x72xi8>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<10x18x4xi8>, tensor<5x18x16x4xi8>) outs(%{{.*}} : tensor<10x5x16xi32>)
// CHECK-SAME: attrs = {kiln.int8_panel_product}
// CHECK: arith.extui
// CHECK: arith.extsi
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [10, 70] [1, 1] : tensor<10x80xi32> to tensor<10x70xi32>
// CHECK: arith.sitofp
func.func @quantized_product(%x: tensor<2x5x70xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c : tensor<2x5x70xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// -----

// kiln.int4_matmul: the rows quantized as for kiln.quantized_matmul, padded
// to whole blocks (72 to 96), then the marked product over (row, panel,
// column, block, pair, half, lane) on views with one dimension per loop:
// the half picks the low or high 4 bits of the byte, minus 8; each
// product is scaled by its block's scale and summed in float. The
// epilogue subtracts the zero point's share and scales by the row's scale.
// CHECK-LABEL: func.func @int4_product
// CHECK: arith.fptoui %{{.*}} : f32 to i8
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [10, 72] [1, 1] : tensor<10x72xi8> into tensor<10x96xi8>
// CHECK: tensor.expand_shape {{.*}} into tensor<10x3x4x2x4xi8>
// CHECK: tensor.expand_shape {{.*}} into tensor<5x3x4x16x4xi8>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction", "reduction"]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<10x3x4x2x4xi8>, tensor<5x3x4x16x4xi8>, tensor<5x3x16xf32>) outs(%{{.*}} : tensor<10x5x16xf32>)
// CHECK-SAME: attrs = {kiln.int4_panel_product}
// CHECK: linalg.index 5
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: arith.subi
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.extract_slice %{{.*}}[0, 0] [10, 70] [1, 1] : tensor<10x80xf32> to tensor<10x70xf32>
// CHECK: arith.sitofp
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @int4_product(%x: tensor<2x5x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>) -> tensor<2x5x70xf32> {
  %y = kiln.int4_matmul %x, %w, %s, %c : tensor<2x5x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// -----

// With zero points: read like the scales, each 4-bit value less its
// block's zero point rather than 8.
// CHECK-LABEL: func.func @int4_product_zero_points
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %arg4 : tensor<10x3x4x2x4xi8>, tensor<5x3x4x16x4xi8>, tensor<5x3x16xf32>, tensor<5x3x16xi8>) outs(%{{.*}} : tensor<10x5x16xf32>)
// CHECK-SAME: attrs = {kiln.int4_panel_product}
// CHECK: ^bb0(%{{.*}}: i8, %{{.*}}: i8, %{{.*}}: f32, %[[Z:.*]]: i8, %{{.*}}: f32):
// CHECK: %[[N:.*]] = arith.andi
// CHECK: %[[ZW:.*]] = arith.extsi %[[Z]] : i8 to i32
// CHECK: %[[U:.*]] = arith.extui %[[N]] : i8 to i32
// CHECK: arith.subi %[[U]], %[[ZW]] : i32
func.func @int4_product_zero_points(%x: tensor<2x5x72xf32>, %w: tensor<5x12x16x4xi8>, %s: tensor<5x3x16xf32>, %c: tensor<80xf32>, %z: tensor<5x3x16xi8>) -> tensor<2x5x70xf32> {
  %y = kiln.int4_matmul %x, %w, %s, %c zero_points(%z : tensor<5x3x16xi8>) : tensor<2x5x72xf32>, tensor<5x12x16x4xi8>, tensor<5x3x16xf32>, tensor<80xf32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// -----

// A static input quantization: no row ranges; the given scale and zero
// point read as 0-D operands by every row (no per-row copies), and the
// rows divided by the scale as QuantizeLinear does.
// CHECK-LABEL: func.func @static_quantized_product
// CHECK-NOT: arith.minnumf
// CHECK: %[[Z:.*]] = tensor.extract %arg5[] : tensor<i8>
// CHECK: %[[ZW:.*]] = arith.extui %[[Z]] : i8 to i32
// CHECK: %[[ZT:.*]] = tensor.from_elements %[[ZW]] : tensor<i32>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg4, %[[ZT]] : tensor<10x70xf32>, tensor<f32>, tensor<i32>)
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK: attrs = {kiln.int8_panel_product}
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ZT]], %arg4, %{{.*}}, %{{.*}} : tensor<10x70xi32>, tensor<i32>, tensor<f32>, tensor<70xf32>, tensor<70xi32>)
func.func @static_quantized_product(%x: tensor<2x5x70xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>, %xzp: tensor<i8>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c static(%xs, %xzp : tensor<f32>, tensor<i8>) : tensor<2x5x70xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}

// -----

// With smoothing: each column's divisor is the scale times its factor.
// CHECK-LABEL: func.func @smoothed_quantized_product
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg4, %{{.*}}, %arg6 : tensor<10x70xf32>, tensor<f32>, tensor<i32>, tensor<70xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: i32, %[[F:.*]]: f32, %{{.*}}: i8):
// CHECK: %[[D:.*]] = arith.mulf %[[S]], %[[F]] : f32
// CHECK: arith.divf %[[X]], %[[D]] : f32
func.func @smoothed_quantized_product(%x: tensor<2x5x70xf32>, %w: tensor<5x18x16x4xi8>, %s: tensor<80xf32>, %c: tensor<80xi32>, %xs: tensor<f32>, %xzp: tensor<i8>, %f: tensor<70xf32>) -> tensor<2x5x70xf32> {
  %y = kiln.quantized_matmul %x, %w, %s, %c static(%xs, %xzp : tensor<f32>, tensor<i8>) smooth(%f : tensor<70xf32>) : tensor<2x5x70xf32>, tensor<5x18x16x4xi8>, tensor<80xf32>, tensor<80xi32> -> tensor<2x5x70xf32>
  return %y : tensor<2x5x70xf32>
}
