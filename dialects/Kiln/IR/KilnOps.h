//===- KilnOps.h - kiln dialect ops -----------------------------*- C++ -*-===//
#ifndef KILN_DIALECT_KILN_IR_KILNOPS_H
#define KILN_DIALECT_KILN_IR_KILNOPS_H

#include "dialects/Kiln/IR/KilnDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {

/// What the state ops read and write: the session's state, kept in order
/// against each other and against calls.
struct StateResource : mlir::SideEffects::Resource::Base<StateResource> {
  llvm::StringRef getName() final { return "kiln.state"; }
};

/// The largest image side the splatting ops render: far above any display,
/// small enough that pixel coordinates and tile counts stay exact in f32
/// and i32.
inline constexpr int64_t kMaxSplatImageSide = 16384;

/// Lets every kiln op compute its result's sizes from its operands'
/// (ReifyRankedShapedTypeOpInterface); the dialect does this when loaded.
void registerShapeReification(mlir::MLIRContext &context);

/// Result type of an ONNX multidirectional broadcast of `lhs` and `rhs`.
llvm::LogicalResult
inferBroadcastResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                         mlir::Type rhs,
                         llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of comparing `lhs` with `rhs` (same element type) after an
/// ONNX multidirectional broadcast: booleans.
llvm::LogicalResult
inferComparisonResultType(mlir::MLIRContext *ctx,
                          std::optional<mlir::Location> loc, mlir::Type lhs,
                          mlir::Type rhs,
                          llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of reducing `axes` of `input`, keeping them as 1s or not.
llvm::LogicalResult
inferReduceResultType(std::optional<mlir::Location> loc, mlir::Type input,
                      llvm::ArrayRef<int64_t> axes, bool keepDims,
                      llvm::SmallVectorImpl<mlir::Type> &types);

/// Result type of ONNX MatMul of `lhs` and `rhs` (numpy semantics), with
/// elements of `elementType`.
llvm::LogicalResult
inferMatMulResultType(std::optional<mlir::Location> loc, mlir::Type lhs,
                      mlir::Type rhs, mlir::Type elementType,
                      llvm::SmallVectorImpl<mlir::Type> &types);

} // namespace kiln

#define GET_OP_CLASSES
#include "dialects/Kiln/IR/KilnOps.h.inc"

#endif // KILN_DIALECT_KILN_IR_KILNOPS_H
