//===- CpuTarget.h - CPU targets and the blocks sized for them --*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_CPUTARGET_H
#define KILN_LIB_CODEGEN_CPUTARGET_H

#include "dialects/Kiln/IR/KilnDialect.h"

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>

namespace kiln {

/// The target for LLVM CPU `cpu` on the compiling machine's triple; "host"
/// is the compiling machine itself, with the features and cache sizes it
/// really has. The target carries the CPU model its kernels are sized for:
/// Kiln's table entry for the chip (a generic one for a chip not in it),
/// with the host's own cache sizes for "host". An unknown CPU name is an
/// error naming it.
mlir::FailureOr<TargetAttr> resolveCpuTarget(mlir::MLIRContext *context,
                                             llvm::StringRef cpu,
                                             mlir::Location loc);

/// A machine generating code for exactly `target`'s chip and features.
mlir::FailureOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(TargetAttr target, mlir::Location loc);

/// The block sizes of the CPU lowering for one target: what decides how
/// weights are laid out and loops tiled. Each is the option of the pass
/// named beside it. They follow from the target's vector width and register
/// count (its features) and its `#kiln.cpu_model` (FMA units and latency,
/// cache sizes), by the rules getCpuLayout states.
struct CpuLayout {
  /// Widest vector register, in bits.
  int64_t vectorBits;
  /// Output block of one register tile of a matrix product: rows by
  /// columns (kiln-tile-and-vectorize-contractions register-rows and
  /// register-cols); the columns are also the width of the packed weight
  /// panels (kiln-pack-weights panel-width).
  int64_t registerRows, registerCols;
  /// Register tile of products whose output columns are not a multiple of
  /// `registerCols` (kiln-tile-and-vectorize-contractions narrow-rows and
  /// narrow-cols), where the tile above is wider; both 0 where it is not.
  int64_t narrowRows, narrowCols;
  /// Pixels per panel of a convolution's patches, the columns of its
  /// products (convert-kiln-to-linalg patch-columns, kiln-winograd-convolutions
  /// panel-width).
  int64_t patchColumns;
  /// Reduction depth of a cache block (cache-depth).
  int64_t cacheDepth;
  /// Output block one thread computes at a time (thread-rows, thread-cols).
  int64_t threadRows, threadCols;
  /// Attention blocks: query rows, and keys scored at a time
  /// (convert-kiln-to-linalg attention-query-rows, attention-key-columns),
  /// and where a mask removes keys, the keys a block skips or scores
  /// (attention-masked-key-columns).
  int64_t attentionQueryRows, attentionKeyColumns, attentionMaskedKeyColumns;
  /// Static tile of other ops along a dynamic dimension
  /// (kiln-tile-dynamic-dims generic-rows; products use registerRows).
  int64_t dynamicGenericRows;
  /// Innermost elements per vectorized block of other ops
  /// (kiln-vectorize-generics vector-width).
  int64_t genericVectorWidth;
};

/// The layout for `target`, a CPU target.
CpuLayout getCpuLayout(TargetAttr target);

/// The features of KILN_ABI_X86_FEATURES (kiln/abi.h) that `target` has,
/// comma-separated: what code generated for it may use, and so what the
/// runtime checks the CPU for before running it. Empty for other
/// architectures.
std::string getNeededCpuFeatures(TargetAttr target);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_CPUTARGET_H
