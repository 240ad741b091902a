//===- SplitForBufferization.cpp - bounded alias sets for bufferization ---===//
//
// One-shot bufferization decides, for every tensor operand, whether it can
// be written in place by looking at every use of every value that may share
// its buffer. A tensor with thousands of views (a Split into 2000 outputs is
// 2000 slices of its input) makes that quadratic: 4 of the 7.5 s such a
// graph took to compile. Moving runs of operations into functions of their
// own bounds the sets, since a function's arguments start sets of their own.
//
// First, each use of an empty tensor gets one of its own. The analysis
// joins the users of one empty tensor in one set (a fill's result may be
// written where its init is), and CSE leaves one per shape for a whole
// model, so the padded copies of a chain of convolutions' feature maps made
// a set that grew with the chain, each pair of its members compared by
// solving their slices' bounds: 40 3x3 convolutions in a row took 54 s to
// compile, 41 of them in bufferization (now 7 s).
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "lib/Conversion/LinalgToCpu/FunctionSplitter.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/EquivalenceClasses.h"

namespace kiln {
#define GEN_PASS_DEF_SPLITFORBUFFERIZATIONPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Statically shaped tensors cross between parts; constants, empty tensors,
/// scalar computations and views are recomputed where they are used.
class TensorSplitPolicy : public kiln::SplitPolicy {
public:
  bool isRecomputable(Operation *op) const override {
    if (op->hasTrait<OpTrait::ConstantLike>() || isa<tensor::EmptyOp>(op))
      return true;
    // A view crossing a call is copied, so each part views what it reads
    // anew. One the entry returns is made in a part: left in the entry, the
    // views it returns would all share the input's buffer again.
    if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
            tensor::ExpandShapeOp, tensor::CastOp>(op))
      return llvm::none_of(op->getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user);
      });
    return op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
           isMemoryEffectFree(op) &&
           llvm::none_of(op->getResultTypes(), llvm::IsaPred<TensorType>);
  }
  /// A dynamic shape would need its bounds passed along; such runs stay.
  bool isPassable(Type type) const override {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor.hasStaticShape();
    return type.isIntOrIndexOrFloat();
  }
  bool isBarrier(Operation *) const override { return false; }
  /// A region here is a loop's body or a payload: cutting it would put
  /// calls in inner loops and tensors in parallel bodies' signatures.
  bool splitsRegions() const override { return false; }
};

/// Size of the largest set of tensors that may share a buffer, if every
/// operation bufferized in place: the sets one-shot analysis searches. The
/// users of one empty tensor are not joined through it: they share no data,
/// and CSE leaves one empty tensor per shape for a whole model.
int64_t getLargestAliasSet(func::FuncOp func) {
  bufferization::BufferizationOptions options;
  bufferization::AnalysisState state(options);
  llvm::EquivalenceClasses<Value> sets;
  func.walk([&](Operation *op) {
    auto bufferizable = options.dynCastBufferizableOp(op);
    if (!bufferizable)
      return;
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isa<TensorType>(operand.get().getType()) ||
          operand.get().getDefiningOp<tensor::EmptyOp>())
        continue;
      for (const bufferization::AliasingValue &alias :
           bufferizable.getAliasingValues(operand, state))
        sets.unionSets(operand.get(), alias.value);
    }
  });
  int64_t largest = 0;
  for (const auto &set : sets)
    if (set->isLeader())
      largest = std::max<int64_t>(
          largest, std::distance(sets.member_begin(*set), sets.member_end()));
  return largest;
}

/// Replaces `empty` by one empty tensor per use, each made just before the
/// operation of `empty`'s block that holds the use: its buffer's life then
/// starts there, not at the top of the function where CSE left the shared
/// one (DiT's workspace: 13.4 MB with one use left there, 4.7 MB without),
/// and none moves into a loop.
void giveEachUseItsOwn(tensor::EmptyOp empty) {
  SmallVector<OpOperand *> uses = llvm::map_to_vector(
      empty->getUses(), [](OpOperand &use) { return &use; });
  OpBuilder builder(empty->getContext());
  for (OpOperand *use : uses) {
    // A use in another block of the region stays where `empty` was.
    if (Operation *holder =
            empty->getBlock()->findAncestorOpInBlock(*use->getOwner()))
      builder.setInsertionPoint(holder);
    else
      builder.setInsertionPointAfter(empty);
    use->set(builder.clone(*empty)->getResult(0));
  }
  empty->erase();
}

struct SplitForBufferizationPass
    : kiln::impl::SplitForBufferizationPassBase<SplitForBufferizationPass> {
  using SplitForBufferizationPassBase::SplitForBufferizationPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<tensor::EmptyOp> empties;
    module.walk([&](tensor::EmptyOp empty) { empties.push_back(empty); });
    for (tensor::EmptyOp empty : empties)
      giveEachUseItsOwn(empty);
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions;
    for (auto func : module.getOps<func::FuncOp>())
      if (kiln::isEntryPoint(func) && getLargestAliasSet(func) > maxAliases)
        functions.push_back(func);
    TensorSplitPolicy policy;
    for (func::FuncOp func : functions)
      for (func::FuncOp part :
           kiln::splitFunction(func, symbols, policy, maxOps))
        part->setAttr(kiln::kBufferizationPartAttr,
                      UnitAttr::get(module.getContext()));
  }
};

} // namespace
