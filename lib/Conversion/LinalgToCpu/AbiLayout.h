//===- AbiLayout.h - kiln/abi.h's structures as the compiler builds them -*- C++ -*-===//
//
// Generated code reads kiln_abi_call and writes the descriptor structures of
// kiln/abi.h. Their LLVM types are built from the field lists below, whose
// kinds and offsets come from the C header itself (decltype, offsetof); the
// static_asserts check that LLVM's natural struct layout puts every field
// where the C compiler does. A field added to the header and not here fails
// the size check.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_CONVERSION_LINALGTOCPU_ABILAYOUT_H
#define KILN_LIB_CONVERSION_LINALGTOCPU_ABILAYOUT_H

#include "kiln/abi.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstddef>
#include <type_traits>

namespace kiln::abi {

/// Alignment of every buffer a call passes and of those placed in them.
inline constexpr int64_t kAlignment = KILN_ABI_ALIGNMENT;

enum class FieldKind { I32, I64, Ptr };

struct Field {
  FieldKind kind;
  size_t offset;
};

template <typename T> constexpr FieldKind getFieldKind() {
  if constexpr (std::is_pointer_v<T>) {
    static_assert(sizeof(T) == 8, "Kiln targets 64-bit pointers");
    return FieldKind::Ptr;
  } else {
    static_assert(std::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8),
                  "ABI fields are 32- or 64-bit integers or pointers");
    return sizeof(T) == 4 ? FieldKind::I32 : FieldKind::I64;
  }
}

constexpr size_t getFieldSize(FieldKind kind) {
  return kind == FieldKind::I32 ? 4 : 8;
}

/// Whether fields laid out one after another at their natural alignment
/// (LLVM's rule for non-packed structs) land at the C offsets and size.
template <size_t N>
constexpr bool hasNaturalLayout(const Field (&fields)[N], size_t size) {
  size_t offset = 0, alignment = 1;
  for (const Field &field : fields) {
    size_t fieldSize = getFieldSize(field.kind);
    offset = (offset + fieldSize - 1) / fieldSize * fieldSize;
    if (field.offset != offset)
      return false;
    offset += fieldSize;
    alignment = fieldSize > alignment ? fieldSize : alignment;
  }
  return (offset + alignment - 1) / alignment * alignment == size;
}

/// The position of the field at `offset` (for GEPs and insertvalue).
template <size_t N>
constexpr unsigned getFieldIndex(const Field (&fields)[N], size_t offset) {
  for (unsigned i = 0; i < N; ++i)
    if (fields[i].offset == offset)
      return i;
  return N;
}

#define KILN_ABI_FIELD(Struct, name)                                           \
  ::kiln::abi::Field {                                                         \
    ::kiln::abi::getFieldKind<decltype(Struct::name)>(), offsetof(Struct, name) \
  }
/// The index of field `name` of `Struct` in its field list `fields`.
#define KILN_ABI_INDEX(fields, Struct, name)                                   \
  ::kiln::abi::getFieldIndex(fields, offsetof(Struct, name))

inline constexpr Field kDimFields[] = {
    KILN_ABI_FIELD(kiln_abi_dim, name),
    KILN_ABI_FIELD(kiln_abi_dim, min),
    KILN_ABI_FIELD(kiln_abi_dim, max),
};
inline constexpr Field kTensorFields[] = {
    KILN_ABI_FIELD(kiln_abi_tensor, name),
    KILN_ABI_FIELD(kiln_abi_tensor, dtype),
    KILN_ABI_FIELD(kiln_abi_tensor, rank),
    KILN_ABI_FIELD(kiln_abi_tensor, dims),
};
inline constexpr Field kExecutorFields[] = {
    KILN_ABI_FIELD(kiln_abi_executor, parallel_for),
};
inline constexpr Field kBufferFields[] = {
    KILN_ABI_FIELD(kiln_abi_buffer, data),
    KILN_ABI_FIELD(kiln_abi_buffer, dims),
};
inline constexpr Field kCallFields[] = {
    KILN_ABI_FIELD(kiln_abi_call, size),
    KILN_ABI_FIELD(kiln_abi_call, state),
    KILN_ABI_FIELD(kiln_abi_call, scratch),
    KILN_ABI_FIELD(kiln_abi_call, executor),
    KILN_ABI_FIELD(kiln_abi_call, inputs),
    KILN_ABI_FIELD(kiln_abi_call, outputs),
};
inline constexpr Field kEntryFields[] = {
    KILN_ABI_FIELD(kiln_abi_entry, name),
    KILN_ABI_FIELD(kiln_abi_entry, fn),
    KILN_ABI_FIELD(kiln_abi_entry, num_inputs),
    KILN_ABI_FIELD(kiln_abi_entry, num_outputs),
    KILN_ABI_FIELD(kiln_abi_entry, inputs),
    KILN_ABI_FIELD(kiln_abi_entry, outputs),
    KILN_ABI_FIELD(kiln_abi_entry, num_errors),
    KILN_ABI_FIELD(kiln_abi_entry, errors),
    KILN_ABI_FIELD(kiln_abi_entry, scratch_size),
    KILN_ABI_FIELD(kiln_abi_entry, num_value_dims),
    KILN_ABI_FIELD(kiln_abi_entry, value_dims),
};
inline constexpr Field kValueDimFields[] = {
    KILN_ABI_FIELD(kiln_abi_value_dim, input),
    KILN_ABI_FIELD(kiln_abi_value_dim, element),
    KILN_ABI_FIELD(kiln_abi_value_dim, dim),
};
inline constexpr Field kArtifactFields[] = {
    KILN_ABI_FIELD(kiln_abi_artifact, abi_version),
    KILN_ABI_FIELD(kiln_abi_artifact, size),
    KILN_ABI_FIELD(kiln_abi_artifact, entry_size),
    KILN_ABI_FIELD(kiln_abi_artifact, num_entries),
    KILN_ABI_FIELD(kiln_abi_artifact, entries),
    KILN_ABI_FIELD(kiln_abi_artifact, num_dims),
    KILN_ABI_FIELD(kiln_abi_artifact, dims),
    KILN_ABI_FIELD(kiln_abi_artifact, state_size),
    KILN_ABI_FIELD(kiln_abi_artifact, state_init),
    KILN_ABI_FIELD(kiln_abi_artifact, producer),
    KILN_ABI_FIELD(kiln_abi_artifact, cpu_features),
    KILN_ABI_FIELD(kiln_abi_artifact, dim_exprs),
    KILN_ABI_FIELD(kiln_abi_artifact, draft_tokens),
};

static_assert(hasNaturalLayout(kDimFields, sizeof(kiln_abi_dim)));
static_assert(hasNaturalLayout(kTensorFields, sizeof(kiln_abi_tensor)));
static_assert(hasNaturalLayout(kExecutorFields, sizeof(kiln_abi_executor)));
static_assert(hasNaturalLayout(kBufferFields, sizeof(kiln_abi_buffer)));
static_assert(hasNaturalLayout(kCallFields, sizeof(kiln_abi_call)));
static_assert(hasNaturalLayout(kEntryFields, sizeof(kiln_abi_entry)));
static_assert(hasNaturalLayout(kValueDimFields, sizeof(kiln_abi_value_dim)));
static_assert(hasNaturalLayout(kArtifactFields, sizeof(kiln_abi_artifact)));
static_assert(KILN_ABI_INDEX(kArtifactFields, kiln_abi_artifact,
                             abi_version) == 0,
              "the version must stay where every version can read it");

/// The LLVM dialect struct type of a field list.
template <size_t N>
mlir::LLVM::LLVMStructType getStructType(mlir::MLIRContext *context,
                                         const Field (&fields)[N]) {
  llvm::SmallVector<mlir::Type, N> types;
  for (const Field &field : fields) {
    switch (field.kind) {
    case FieldKind::I32:
      types.push_back(mlir::IntegerType::get(context, 32));
      break;
    case FieldKind::I64:
      types.push_back(mlir::IntegerType::get(context, 64));
      break;
    case FieldKind::Ptr:
      types.push_back(mlir::LLVM::LLVMPointerType::get(context));
      break;
    }
  }
  return mlir::LLVM::LLVMStructType::getLiteral(context, types);
}

} // namespace kiln::abi

#endif // KILN_LIB_CONVERSION_LINALGTOCPU_ABILAYOUT_H
