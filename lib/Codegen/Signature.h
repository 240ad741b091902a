//===- Signature.h - the inputs and outputs of an entry point ---*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_SIGNATURE_H
#define KILN_LIB_CODEGEN_SIGNATURE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace kiln {

struct TensorSignature {
  std::string name;
  int32_t dtype; // kiln_dtype
  std::vector<int64_t> dims;
};

/// One public function of the module, as the artifact describes it.
struct EntrySignature {
  std::string name;
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  /// Messages for the non-zero codes of the function's `kiln.status`
  /// result (always its last), which is not one of `outputs`.
  std::vector<std::string> errors;
  /// Bytes of the scratch arena the lowered function takes last; known
  /// after lowering (kiln-plan-memory).
  uint64_t scratchSize = 0;
};

/// Describes every public `func.func` of `module` after the graph passes
/// (so each has its status result), then drops the attributes it read.
/// Emits an error for a signature the artifact ABI can't express.
mlir::FailureOr<std::vector<EntrySignature>>
collectEntrySignatures(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_SIGNATURE_H
