//===- TokenReduction.h - fewer tokens after an attention -------*- C++ -*-===//
//
// What token merging (kiln-merge-tokens) and token pruning
// (kiln-prune-tokens) share: finding where a block's residual stream can
// shrink, and shrinking it. Each pass only decides which tokens share a
// slot (a destination per token); the stream is then averaged into its
// slots by size, the sizes and the padding mask follow, later attentions
// add log(size) + mask to their scores, and every op downstream is retyped
// to the new token count or given its tokens back through
// kiln.token_unmerge.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_TOKENREDUCTION_H
#define KILN_PASSES_TOKENREDUCTION_H

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/IR/Builders.h"

namespace kiln {

/// The token set after the reductions so far.
struct TokenSet {
  int64_t tokens = 0;
  /// Each token's size, [B, N]; null while every size is 1.
  mlir::Value sizes;
  /// The padding mask the attentions add to each key, [B, N]; null without.
  mlir::Value keyMask;
  /// What the attentions now add to their scores: log(sizes) + keyMask as
  /// [B, 1, 1, N]; null before the first reduction (the original mask
  /// stays).
  mlir::Value scoreBias;
};

/// Whether every one of `attentions` adds the same mask (the one the token
/// set starts from); warns, with `what`, where not.
bool sameMasks(llvm::ArrayRef<AttentionOp> attentions, llvm::StringRef what);

/// The points of a transformer block that reductions act on.
struct BlockPoints {
  /// What the attention's projections read: the normalized (pre-LN,
  /// maybe adaLN-modulated) or plain (post-LN) stream, [B, N, C].
  mlir::Value branchInput;
  /// The add that puts the attention's output back on the stream.
  AddOp residualAdd;
  /// Where the stream can shrink for the rest of the model: the residual
  /// add (pre-LN) or the norm after it (post-LN); null where neither is.
  mlir::Value stream;
};

/// An attention branch whose tokens can be merged around the attention
/// alone (ToMe-SD), the stream keeping every token.
struct ReducibleBranch {
  /// The branch's input, [B, N, C].
  mlir::Value input;
  /// Reads the branch's output back at N tokens.
  AddOp residualAdd;
  /// The attention's padding mask, [B, N]; null without.
  mlir::Value keyMask;
  int64_t batch = 0;
  int64_t tokens = 0;
};

/// A block whose tokens can be reduced after its attention.
struct ReducibleBlock {
  /// The residual stream where the tokens are reduced, [B, N, C].
  mlir::Value stream;
  int64_t batch = 0;
  int64_t tokens = 0;
};

/// Finds where the block of `attention` reduces its tokens (pre-LN: the add
/// that puts the attention's output back on the stream; post-LN: the layer
/// norm after that add) and starts `set` there: sizes of 1 and the key mask
/// on the first reduction. Fails with a warning, the block left as it is,
/// where the block has another shape or a mask other than one f32 row of
/// key biases per batch entry. `what` names the pass in the warning
/// ("tokens not merged").
mlir::FailureOr<ReducibleBlock> prepareBlock(mlir::OpBuilder &b,
                                             AttentionOp attention,
                                             TokenSet &set,
                                             llvm::StringRef what);

/// The keys of `attention` averaged over heads, [B, N, D].
mlir::Value getKeyMetric(mlir::OpBuilder &b, AttentionOp attention);

/// Averages `block.stream` into `slots` slots by size (token n goes to
/// `destination[b, n]`, `kept[b, s]` says whose key mask slot s takes),
/// updates `set`, and retypes what reads the stream downstream. Fails
/// (with an error) only where an op downstream reads the tokens on an axis
/// that cannot be unmerged.
mlir::LogicalResult reduceTokens(mlir::OpBuilder &b, mlir::Location loc,
                                 const ReducibleBlock &block,
                                 mlir::Value destination, mlir::Value kept,
                                 int64_t slots, TokenSet &set);

/// Finds the branch of `attention` (see ReducibleBranch) and builds its key
/// mask, the builder then right before the branch's first reader. Fails with a
/// warning, the branch left as it is, where the block has another shape.
mlir::FailureOr<ReducibleBranch>
prepareBranch(mlir::OpBuilder &b, AttentionOp attention, llvm::StringRef what);

/// Merges the branch's input into `slots` slots by `destination` (`kept`
/// says whose key mask each slot takes), runs the branch on them (its
/// attention adding log(size) + mask to its scores) and unmerges its
/// output where the residual add reads it.
mlir::LogicalResult reduceBranch(mlir::OpBuilder &b, mlir::Location loc,
                                 const ReducibleBranch &branch,
                                 mlir::Value destination, mlir::Value kept,
                                 int64_t slots);

} // namespace kiln

#endif // KILN_PASSES_TOKENREDUCTION_H
