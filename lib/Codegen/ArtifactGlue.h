//===- ArtifactGlue.h - ABI descriptor and entry wrappers -------*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_ARTIFACTGLUE_H
#define KILN_LIB_CODEGEN_ARTIFACTGLUE_H

#include "lib/Codegen/Signature.h"

#include "llvm/IR/Module.h"

#include <string>

namespace kiln {

/// Adds to `module` (lowered with bare-pointer calling convention) what
/// include/kiln/abi.h describes: one `kiln_abi_entry_fn` wrapper per entry,
/// the signature tables and the exported `kiln_artifact_v2`. Everything else
/// defined in the module becomes internal. Returns an empty string on
/// success, otherwise what is wrong.
std::string addArtifactGlue(llvm::Module &module,
                            const std::vector<EntrySignature> &entries);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_ARTIFACTGLUE_H
