//===- KilnDialect.h - kiln dialect -----------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_KILNDIALECT_H
#define KILN_DIALECT_KILN_IR_KILNDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "dialects/Kiln/IR/KilnDialect.h.inc"
#include "dialects/Kiln/IR/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kiln/IR/KilnAttributes.h.inc"

namespace kiln {

/// Module attribute holding the module's #kiln.target.
inline constexpr llvm::StringLiteral kTargetAttr = "kiln.target";

/// The target of `op`'s module (or of `op`, a module), null if it has none.
TargetAttr getTarget(mlir::Operation *op);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_KILNDIALECT_H
