//===- Passes.td - kiln lowering passes --------------------*- tablegen -*-===//
#ifndef KILN_CONVERSION_PASSES
#define KILN_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalgPass : Pass<"convert-kiln-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln tensor ops to linalg, tensor, arith and math";
  let description = [{
    Rewrites every kiln op into upstream ops on tensors: elementwise ops and
    contractions become `linalg.generic` (with broadcasting folded into the
    indexing maps), reshapes become `tensor.collapse_shape` /
    `tensor.expand_shape`, concatenation becomes `tensor.insert_slice`.
    A kiln op left over is an error naming the op.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect"
  ];
}

def MemRefCopyToLinalgPass : Pass<"kiln-memref-copy-to-linalg"> {
  let summary = "Rewrite memref.copy into linalg.copy";
  let description = [{
    Bufferization copies into strided views (for instance the slices a
    concatenation writes) with `memref.copy`, whose LLVM lowering calls
    `memrefCopy` from MLIR's C runner library. Artifacts link against libc
    alone, so the copies become `linalg.copy` and then plain loops.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // KILN_CONVERSION_PASSES
