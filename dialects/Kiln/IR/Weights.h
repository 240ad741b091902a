//===- Weights.h - large constants as resource blobs ------------*- C++ -*-===//
//
// A model's weights are most of its bytes. Held as DenseElementsAttr they
// are uniqued in the context and never freed, and every rewrite of one
// (a transpose folded, a packing) adds a copy that lives as long as the
// compiler: GPT-2-small took 3.0 GiB to compile. Constants of
// kResourceBytes or more are instead `dense_resource` blobs: imported
// without a copy, released as soon as nothing uses them, and streamed into
// the artifact (lib/Codegen/WeightsObject.h) instead of through LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILN_IR_WEIGHTS_H
#define KILN_DIALECT_KILN_IR_WEIGHTS_H

#include "kiln/abi.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/PatternMatch.h"

#include <memory>
#include <optional>
#include <string>

namespace kiln {

/// Constants at least this large are resource blobs.
inline constexpr int64_t kResourceBytes = int64_t(1) << 16;
/// Alignment of the blobs Kiln allocates, as of every buffer generated code
/// reads.
inline constexpr size_t kWeightAlignment = KILN_ABI_ALIGNMENT;

/// The bytes of `elements` in row-major order (f32 and i64 as in memory,
/// i1 not supported), for non-splat dense and resource elements.
std::optional<llvm::ArrayRef<char>> getRawBytes(mlir::ElementsAttr elements);

/// Bytes per element of `type` in a raw buffer, 0 for i1 and others.
int64_t getElementBytes(mlir::Type type);

/// Elements of `type` whose bytes `fill` writes (size: the type's element
/// count times getElementBytes): a resource blob when large, a dense
/// attribute otherwise.
mlir::ElementsAttr
createElements(mlir::RankedTensorType type,
               llvm::function_ref<void(llvm::MutableArrayRef<char>)> fill);

/// Elements of `type` holding the bytes `data` owns, which the attribute
/// takes over without a copy when they are large.
mlir::ElementsAttr createElements(mlir::RankedTensorType type,
                                  std::unique_ptr<std::string> data);

/// Marks a module whose weights' blobs another module shares (a copy
/// compiled on the side, as calibration's float model): it frees none.
inline constexpr llvm::StringLiteral kSharedWeightsAttr = "kiln.shared_weights";

/// Frees the blobs of those `candidates` that no operation under `root`
/// refers to any more (a weight replaced by its packed form), unless
/// `root`'s module is marked kSharedWeightsAttr.
void releaseUnusedWeights(mlir::Operation *root,
                          llvm::ArrayRef<mlir::DenseResourceElementsAttr> candidates);

/// Erases `constant`, the operation holding the weight `value`, if nothing
/// uses it any more, and frees the weight's blob unless another operation
/// refers to it: a rewrite that replaced a weight (packed, transposed)
/// lets it go at once.
void eraseIfUnused(mlir::RewriterBase &rewriter, mlir::Operation *constant,
                   mlir::ElementsAttr value);

} // namespace kiln

#endif // KILN_DIALECT_KILN_IR_WEIGHTS_H
