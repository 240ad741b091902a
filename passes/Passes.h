//===- Passes.h - graph passes on the kiln dialect --------------*- C++ -*-===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

/// Marks the status result that kiln-insert-runtime-checks adds.
inline constexpr llvm::StringLiteral kStatusAttr = "kiln.status";
/// The entry function's error messages, indexed by status code - 1.
inline constexpr llvm::StringLiteral kErrorsAttr = "kiln.errors";

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
