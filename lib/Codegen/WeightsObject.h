//===- WeightsObject.h - weights straight into an object file ---*- C++ -*-===//
//
// LLVM emits a constant array element by element: GPT-2-small's 650 MB of
// weights took 16 of its 28 s of compile time as LLVM constants, and held
// two more copies in memory. Kiln instead declares each large constant
// external in the code (kiln-externalize-weights) and defines them all in a
// second, data-only object written here, a tensor's bytes copied from its
// blob to the file and nowhere else; lld links both into the artifact.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CODEGEN_WEIGHTSOBJECT_H
#define KILN_LIB_CODEGEN_WEIGHTSOBJECT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <string>

namespace kiln {

struct WeightSymbol {
  std::string name;
  llvm::ArrayRef<char> bytes;
};

/// Writes an ELF relocatable object for `triple` (64-bit little-endian)
/// defining each weight as a hidden, read-only symbol aligned to
/// `alignment` bytes.
llvm::Error writeWeightsObject(llvm::raw_ostream &os, const llvm::Triple &triple,
                               llvm::ArrayRef<WeightSymbol> weights,
                               uint64_t alignment);

} // namespace kiln

#endif // KILN_LIB_CODEGEN_WEIGHTSOBJECT_H
