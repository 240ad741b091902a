//===- KilnDialect.h - kiln dialect -----------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_KILNDIALECT_H
#define KILN_DIALECT_KILN_IR_KILNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Kiln/IR/KilnDialect.h.inc"

#endif // KILN_DIALECT_KILN_IR_KILNDIALECT_H
