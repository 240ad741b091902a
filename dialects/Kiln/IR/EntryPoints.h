//===- EntryPoints.h - what makes a function an artifact entry --*- C++ -*-===//
//
// An artifact's entry points are the module's public functions with a body;
// private functions are subroutines they share. The attributes below carry
// what the artifact describes about each entry from the importer down to the
// pass that builds its ABI wrapper (kiln-export-entries), so no pass relies
// on the position of an argument.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_IR_ENTRYPOINTS_H
#define KILN_DIALECT_KILN_IR_ENTRYPOINTS_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringRef.h"

namespace kiln {

/// Names an entry's argument or result after the ONNX value.
inline constexpr llvm::StringLiteral kNameAttr = "kiln.name";
/// Names, for each dimension of an entry's argument or result, the named
/// dimension (#kiln.dim) that gives its size, "" where the size is fixed.
inline constexpr llvm::StringLiteral kDimNamesAttr = "kiln.dim_names";
/// Marks an entry's 8-bit argument or result as ONNX uint8 (Kiln's integer
/// types are signless; unmarked, it is int8).
/// On a rank-1 int64 entry argument: the named dimension (#kiln.dim) each
/// of its elements sets, "" for none (kiln_abi_value_dim).
inline constexpr llvm::StringLiteral kDimValuesAttr = "kiln.dim_values";
inline constexpr llvm::StringLiteral kUnsignedAttr = "kiln.unsigned";
/// The module's named dimensions: an array of #kiln.dim.
inline constexpr llvm::StringLiteral kDimsAttr = "kiln.dims";
/// Marks the error status result that kiln-insert-runtime-checks adds.
inline constexpr llvm::StringLiteral kStatusAttr = "kiln.status";
/// The entry function's error messages, indexed by status code - 1.
inline constexpr llvm::StringLiteral kErrorsAttr = "kiln.errors";

/// Arguments a function receives from the call's context rather than from
/// its caller's data: marked with one of these unit attributes, found by it.
/// The session's scratch memory (`memref<Nxi8>`, N the function's frame).
inline constexpr llvm::StringLiteral kScratchAttr = "kiln.scratch";
/// The executor running parallel loops (`!llvm.ptr`).
inline constexpr llvm::StringLiteral kExecutorAttr = "kiln.executor";
/// The session's state block (`memref<Nxi8>`).
inline constexpr llvm::StringLiteral kStateAttr = "kiln.state";

/// Module attributes kiln-lower-state leaves for kiln-export-entries: the
/// bytes of the session's state block and, if any state has an initial
/// value, the block's initial contents (an i8 elements attribute).
inline constexpr llvm::StringLiteral kStateSizeAttr = "kiln.state_size";
inline constexpr llvm::StringLiteral kStateInitAttr = "kiln.state_init";

/// Module attribute the compiler leaves for kiln-export-entries on a
/// decoder with a draft entry: the tokens the draft proposes per round when
/// generation leaves the choice to the artifact (an i64).
inline constexpr llvm::StringLiteral kDraftTokensAttr = "kiln.draft_tokens";

/// Module attribute kiln-externalize-weights leaves for the compiler: the
/// weights declared external, as {name, value} dictionaries.
inline constexpr llvm::StringLiteral kWeightsAttr = "kiln.weights";

/// Whether `function` is one of the artifact's entry points.
inline bool isEntryPoint(mlir::FunctionOpInterface function) {
  return function.isPublic() && !function.isExternal();
}

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_ENTRYPOINTS_H
