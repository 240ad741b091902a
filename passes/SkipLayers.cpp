//===- SkipLayers.cpp - drop whole blocks of a pre-LN transformer ---------===//
#include "passes/Passes.h"
#include "passes/ResidualStream.h"

#include "dialects/Kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

namespace kiln {
#define GEN_PASS_DEF_SKIPLAYERSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// Erases the ops of `func` that nothing uses and that have no effects.
void eraseDeadOps(func::FuncOp func) {
  IRRewriter rewriter(func.getContext());
  (void)runRegionDCE(rewriter, func.getBody());
}

/// The state `op` writes, if it writes any.
std::optional<StringRef> writtenState(Operation *op) {
  if (auto update = dyn_cast<StateUpdateOp>(op))
    return update.getState();
  if (auto write = dyn_cast<StateWriteOp>(op))
    return write.getState();
  return std::nullopt;
}

/// Erases `write`, first moving its overflow check (if it has one) to
/// another update under `scope` that stays: one to different state.
void eraseWrite(Operation *write, Operation *scope) {
  if (Attribute check = write->getAttr(kOverflowErrorAttr)) {
    StateUpdateOp kept;
    scope->walk([&](StateUpdateOp other) {
      if (!kept && other != write && other.getState() != writtenState(write))
        kept = other;
    });
    if (kept)
      kept->setAttr(kOverflowErrorAttr, check);
  }
  write->erase();
}

/// Removes state that no function reads any more (a skipped layer's keys
/// and values) with every write to it.
void removeUnreadState(ModuleOp module) {
  for (StateOp state : llvm::make_early_inc_range(module.getOps<StateOp>())) {
    std::optional<SymbolTable::UseRange> uses = state.getSymbolUses(module);
    if (!uses || llvm::any_of(*uses, [](const SymbolTable::SymbolUse &use) {
          return isa<StateReadOp>(use.getUser());
        }))
      continue;
    for (const SymbolTable::SymbolUse &use : *uses)
      eraseWrite(use.getUser(), module);
    state.erase();
  }
}

/// Erases `func`'s writes to state that `func` does not read.
void eraseWritesNotRead(func::FuncOp func) {
  llvm::StringSet<> read;
  func.walk([&](StateReadOp op) { read.insert(op.getState()); });
  SmallVector<Operation *> unread;
  func.walk([&](Operation *op) {
    if (std::optional<StringRef> state = writtenState(op))
      if (!read.contains(*state))
        unread.push_back(op);
  });
  for (Operation *write : unread)
    eraseWrite(write, func);
}

/// Sends each skipped block's input on to where its output went, in
/// `func`, and erases what only the skipped blocks used.
LogicalResult skipBlocks(func::FuncOp func, SmallVector<int64_t> skipped) {
  FailureOr<SmallVector<Value>> stream = findResidualStream(
      func.getFunctionBody(), func.getLoc(), "cannot skip layers");
  if (failed(stream))
    return failure();
  int64_t blocks = static_cast<int64_t>(stream->size()) - 1;
  // Later blocks first: skipping block k sends its input on to block
  // k + 1's users, which must not have been redirected to a block that is
  // gone.
  llvm::sort(skipped, std::greater<int64_t>());
  skipped.erase(llvm::unique(skipped), skipped.end());
  if (static_cast<int64_t>(skipped.size()) >= blocks)
    return emitError(func.getLoc())
           << "cannot skip " << skipped.size() << " layers of " << blocks
           << ": at least one must stay";
  for (int64_t k : skipped) {
    if (k < 0 || k >= blocks)
      return emitError(func.getLoc())
             << "cannot skip layer " << k << ": the model has " << blocks
             << " (numbered from 0)";
    (*stream)[k + 1].replaceAllUsesWith((*stream)[k]);
  }
  eraseDeadOps(func);
  return success();
}

} // namespace

FailureOr<int64_t> kiln::countSkippableBlocks(FunctionOpInterface func) {
  FailureOr<SmallVector<Value>> stream = findResidualStream(
      func.getFunctionBody(), func.getLoc(), "cannot skip layers");
  if (failed(stream))
    return failure();
  return static_cast<int64_t>(stream->size()) - 1;
}

namespace {

struct SkipLayersPass : kiln::impl::SkipLayersPassBase<SkipLayersPass> {
  using SkipLayersPassBase::SkipLayersPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<int64_t> skipped(layers.begin(), layers.end());
    if (skipped.empty() && draftEntry.empty())
      return;
    // The entries that run the model (a decoder's truncate has no layers).
    SmallVector<func::FuncOp> models;
    for (auto func : module.getOps<func::FuncOp>())
      if (isEntryPoint(func) && !func.getBody().getOps<LayerNormOp>().empty())
        models.push_back(func);
    if (models.empty()) {
      emitError(module.getLoc())
          << (draftEntry.empty() ? "cannot skip layers"
                                 : "cannot add a draft entry")
          << ": no entry point has layer norms";
      return signalPassFailure();
    }
    if (!draftEntry.empty())
      return addDraft(module, models, skipped);
    for (func::FuncOp func : models)
      if (failed(skipBlocks(func, skipped)))
        return signalPassFailure();
    removeUnreadState(module);
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        eraseDeadOps(func);
  }

  void addDraft(ModuleOp module, ArrayRef<func::FuncOp> models,
                ArrayRef<int64_t> skipped) {
    if (models.size() != 1) {
      emitError(module.getLoc())
          << "cannot add a draft entry: " << models.size()
          << " entry points run the model, expected one";
      return signalPassFailure();
    }
    if (SymbolTable::lookupSymbolIn(module, draftEntry)) {
      emitError(module.getLoc())
          << "cannot add the draft entry '" << draftEntry
          << "': the module already has a symbol of that name";
      return signalPassFailure();
    }
    func::FuncOp draft = cast<func::FuncOp>(models.front()->clone());
    draft.setSymName(draftEntry);
    module.getBody()->getOperations().insertAfter(models.front()->getIterator(),
                                                  draft);
    // A draft with every block (one quantized later) is the copy as is.
    if (!skipped.empty() &&
        failed(skipBlocks(draft, SmallVector<int64_t>(skipped))))
      return signalPassFailure();
    eraseWritesNotRead(draft);
    eraseDeadOps(draft);
  }
};

} // namespace
