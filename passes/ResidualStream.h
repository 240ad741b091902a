//===- ResidualStream.h - the blocks of a pre-LN transformer ----*- C++ -*-===//
//
// Finds where each block of a pre-LN transformer (or DiT) starts and ends:
// the passes that drop blocks (kiln-skip-layers) or reuse their output
// across sampling steps (kiln-cache-block-residuals) act on this stream.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_RESIDUALSTREAM_H
#define KILN_PASSES_RESIDUALSTREAM_H

#include "mlir/IR/Region.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace kiln {

/// The residual stream of the pre-LN blocks in `region`, or why it has
/// none (as findResidualStream describes it).
llvm::Expected<llvm::SmallVector<mlir::Value>>
matchResidualStream(mlir::Region &region);

/// The residual stream of the pre-LN blocks in `region`: stream[k] enters
/// block k (and is normalized by its first layer norm); stream[k + 1]
/// leaves it. Block k is `h = stream[k] + attention(ln1(stream[k]))`, then
/// `stream[k + 1] = h + mlp(ln2(h))` (DiT's gated, modulated branches
/// included); the last stream value feeds the final layer norm. Fails with
/// an error at `loc` that starts with `what` ("cannot skip layers").
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
findResidualStream(mlir::Region &region, mlir::Location loc,
                   llvm::StringRef what);

} // namespace kiln

#endif // KILN_PASSES_RESIDUALSTREAM_H
