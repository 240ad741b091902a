//===- ParallelDispatch.h - calls into the runtime's executor ---*- C++ -*-===//
#ifndef KILN_LIB_CODEGEN_PARALLELDISPATCH_H
#define KILN_LIB_CODEGEN_PARALLELDISPATCH_H

#include "llvm/IR/Module.h"

#include <string>

namespace kiln {

/// Replaces each call of a declaration `kiln.parallel_for.<body>(executor,
/// count, captures...)` (made by kiln-outline-parallel-loops) with a call of
/// the executor's `parallel_for`: the captures are stored in a closure on
/// the caller's stack and a `void(closure, begin, end)` task loads them and
/// calls `<body>(begin, end, captures...)`. Returns an empty string on
/// success, otherwise what is wrong.
std::string lowerParallelDispatch(llvm::Module &module);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_PARALLELDISPATCH_H
