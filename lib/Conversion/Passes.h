//===- Passes.h - kiln lowering passes --------------------------*- C++ -*-===//
#ifndef KILN_LIB_CONVERSION_PASSES_H
#define KILN_LIB_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

/// Marks the linalg.generic that kiln.quantized_matmul's lowering makes for
/// its integer product (uint8 rows times int8 weight panels), which
/// kiln-lower-int8-panel-products replaces with a register-blocked kernel.
inline constexpr llvm::StringLiteral kInt8PanelProductAttr =
    "kiln.int8_panel_product";
/// Marks the generic of a lowered kiln.int4_matmul that computes its
/// block-scaled product (uint8 rows times packed 4-bit weight panels), which
/// kiln-lower-int4-panel-products replaces with a register-blocked kernel.
inline constexpr llvm::StringLiteral kInt4PanelProductAttr =
    "kiln.int4_panel_product";

#define GEN_PASS_DECL
#include "lib/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Conversion/Passes.h.inc"

} // namespace kiln

#endif // KILN_LIB_CONVERSION_PASSES_H
