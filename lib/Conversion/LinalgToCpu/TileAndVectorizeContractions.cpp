//===- TileAndVectorizeContractions.cpp - register-blocked matmuls --------===//
//
// The schedule is a transform-dialect script, so each step is an upstream,
// tested transformation and the same script can be tried with kiln-opt
// --transform-interpreter.
//
//===----------------------------------------------------------------------===//
#include "lib/Conversion/Passes.h"

#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

namespace kiln {
#define GEN_PASS_DEF_TILEANDVECTORIZECONTRACTIONSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The sequences that tile one kind of product, their names ending in {0}:
/// {1}: the reduction depth of a cache block; {2}: the register tile sizes
/// (M, N, K); {3}: the (M, N) sizes of the blocks threads share, for products
/// not already in a parallel loop; {4}: the register tile sizes with no
/// reduction tiling (M, N, 0); {5}: the (M, N) register tile of a product of
/// one row. Inside a thread's block, loops run over reduction blocks, then
/// column blocks, then row blocks, so a block of B stays in L1 while every
/// row block of A passes by. The register loops over rows and columns are
/// peeled where they don't divide evenly, so every register block but the
/// last row and column of blocks has a static shape and vectorizes without
/// masks. A product whose whole reduction is one cache block gets the op that
/// initializes its output (a fill, a bias) fused into its register loops
/// instead: its accumulators then start from that tile in registers, and the
/// output is written once rather than initialized in memory, read back and
/// written again. That fusion also clones the loop computing the product's
/// input (the previous product's parallel loop) into the register loops,
/// unused; it is erased at once, since every later product's fusion would
/// copy it again, and the loops peeled after would double it: compile time
/// and memory grew 4x per layer of a chain of products (8 layers: 102 s and
/// 4 GB).
constexpr const char *kTileSequencesTemplate = R"mlir(
  transform.named_sequence @tile_registers{0}(
      %op: !transform.any_op {{transform.consumed}) {{
    %block, %kl = transform.structured.tile_using_for %op tile_sizes [0, 0, {1}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %regs, %rl:3 = transform.structured.tile_using_for %block tile_sizes [{2}]
        interchange = [1, 0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%rl#1) : (!transform.any_op) -> ()
    transform.include @peel failures(suppress) (%rl#0) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @tile_row_registers{0}(
      %op: !transform.any_op {{transform.consumed}) {{
    %regs, %rl:3 = transform.structured.tile_using_for %op tile_sizes [{5}, 1]
        interchange = [1, 0, 2]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%rl#0) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @tile_row_registers_from_init{0}(
      %op: !transform.any_op {{transform.consumed}) {{
    %func = transform.get_parent_op %op {{op_name = "func.func"}
        : (!transform.any_op) -> !transform.any_op
    %regs, %rl:2 = transform.structured.fuse %op tile_sizes [{5}, 0]
        interchange [1, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.apply_dce to %func : !transform.any_op
    %steps, %kl = transform.structured.tile_using_for %regs
        tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%rl#0) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @tile_registers_from_init{0}(
      %op: !transform.any_op {{transform.consumed}) {{
    %func = transform.get_parent_op %op {{op_name = "func.func"}
        : (!transform.any_op) -> !transform.any_op
    %regs, %rl:2 = transform.structured.fuse %op tile_sizes [{4}]
        interchange [1, 0]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op,
                                  !transform.any_op)
    transform.apply_dce to %func : !transform.any_op
    %steps, %kl = transform.structured.tile_using_for %regs
        tile_sizes [0, 0, 1]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%rl#1) : (!transform.any_op) -> ()
    transform.include @peel failures(suppress) (%rl#0) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @tile_shared_matmul{0}(
      %op: !transform.any_op {{transform.consumed}) {{
    %chunk, %forall = transform.structured.tile_using_forall %op tile_sizes [{3}]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @tile_registers{0} failures(propagate) (%chunk)
        : (!transform.any_op) -> ()
    transform.yield
  }
)mlir";

/// The steps of @__transform_main that tile the products marked for one
/// kind ({0}: the kind's sequence and marker suffix).
constexpr const char *kTileKindTemplate = R"mlir(
    %shared{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.thread_blocks{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    %nested{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.in_parallel_loop{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %shared{0} : !transform.any_op {{
    ^bb0(%mm: !transform.any_op):
      transform.include @tile_shared_matmul{0} failures(propagate) (%mm)
          : (!transform.any_op) -> ()
    }
    transform.foreach %nested{0} : !transform.any_op {{
    ^bb0(%mm: !transform.any_op):
      transform.include @tile_registers{0} failures(propagate) (%mm)
          : (!transform.any_op) -> ()
    }
    %rows{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.row_in_parallel_loop{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %rows{0} : !transform.any_op {{
    ^bb0(%mm: !transform.any_op):
      transform.include @tile_row_registers{0} failures(propagate) (%mm)
          : (!transform.any_op) -> ()
    }
    %rows_from_init{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.row_init_in_registers{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %rows_from_init{0} : !transform.any_op {{
    ^bb0(%mm: !transform.any_op):
      transform.include @tile_row_registers_from_init{0} failures(propagate) (%mm)
          : (!transform.any_op) -> ()
    }
    %from_init{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.init_in_registers{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %from_init{0} : !transform.any_op {{
    ^bb0(%mm: !transform.any_op):
      transform.include @tile_registers_from_init{0} failures(propagate) (%mm)
          : (!transform.any_op) -> ()
    }
)mlir";

/// The steps that vectorize the register blocks of one kind's products
/// ({0}: the kind's marker suffix; {1}: its register tile sizes (M, N, K)).
constexpr const char *kVectorizeKindTemplate = R"mlir(
    %static_blocks{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.in_parallel_loop{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %static_blocks{0} : !transform.any_op
    %row_blocks{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.row_in_parallel_loop{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %row_blocks{0} : !transform.any_op
    %init_blocks{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.init_in_registers{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %init_blocks{0} : !transform.any_op
    %row_init_blocks{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.row_init_in_registers{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %row_init_blocks{0} : !transform.any_op
    %blocks{0} = transform.structured.match ops{{["linalg.matmul"]}
        attributes {{kiln.thread_blocks{0}} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %blocks{0} vector_sizes [{1}] : !transform.any_op
)mlir";

/// The script around the kinds' sequences ({0}), tiling steps ({1}) and
/// vectorizing steps ({2}). Canonicalization between the two folds the
/// peeled blocks' sizes to constants, so they vectorize without masks.
constexpr const char *kScheduleTemplate = R"mlir(
module attributes {{transform.with_named_sequence} {
  transform.named_sequence @peel(%loop: !transform.any_op {{transform.readonly}) {{
    %for = transform.cast %loop : !transform.any_op to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %for
        : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @vectorize_init(
      %op: !transform.any_op {{transform.consumed}) {{
    transform.structured.vectorize %op : !transform.any_op
    transform.yield
  }
{0}
  transform.named_sequence @__transform_main(
      %root: !transform.any_op {{transform.readonly}) {{
{1}
    %funcs = transform.structured.match ops{{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.canonicalization
    } : !transform.any_op
{2}
    %init_tiles = transform.structured.match
        ops{{["linalg.fill", "linalg.generic"]}
        attributes {{kiln.register_init} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %init_tiles : !transform.any_op {{
    ^bb0(%init: !transform.any_op):
      transform.include @vectorize_init failures(suppress) (%init)
          : (!transform.any_op) -> ()
    }
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.foreach %funcs : !transform.any_op {{
    ^bb0(%func: !transform.any_op):
      transform.apply_cse to %func : !transform.any_op
    }
    %loops = transform.structured.match ops{{["scf.for"]} in %root
        : (!transform.any_op) -> !transform.any_op
    transform.foreach %loops : !transform.any_op {{
    ^bb0(%loop: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %loop : !transform.any_op
    }
    transform.apply_patterns to %funcs {{
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
)mlir";

/// Markers the schedule matches, so each product is tiled once, by the
/// sequence it was marked for; a kind's markers end in its suffix.
constexpr StringLiteral kSharedMarker = "kiln.thread_blocks";
constexpr StringLiteral kNestedMarker = "kiln.in_parallel_loop";
constexpr StringLiteral kFromInitMarker = "kiln.init_in_registers";
/// The same two for products of one row (a decoder step's attention).
constexpr StringLiteral kRowNestedMarker = "kiln.row_in_parallel_loop";
constexpr StringLiteral kRowFromInitMarker = "kiln.row_init_in_registers";
/// An init fused into its product's register loops.
constexpr StringLiteral kInitMarker = "kiln.register_init";

/// Products are tiled by one of two register tiles: the wide one, and where
/// the layout has it, a narrow one for products whose output columns are not
/// a multiple of the wide tile's: convolution patches, narrow attention
/// heads, ragged attention blocks. The wide tile would leave them partly
/// empty, and its masked remainders are slow: a ViT-shaped encoder whose
/// merged tokens leave blocks of 53 keys ran 2x slower with 6 x 64 tiles on
/// them than with 8 x 32. (Packed weights always come in whole panels.)
constexpr StringLiteral kWideSuffix = "";
constexpr StringLiteral kNarrowSuffix = "_narrow";

/// Whether `op` multiplies a single row: its register tile is then that row
/// by `kRowTileRegisters` times as many columns as its kind's tile, so that
/// enough independent accumulators hide the FMA latency of the chain along
/// the reduction (one row of an 8 x 32 tile is 2 AVX-512 registers, each
/// waiting on its previous FMA).
bool isSingleRow(linalg::MatmulOp op) {
  return cast<ShapedType>(op.getInputs()[0].getType()).getDimSize(0) == 1;
}
constexpr int64_t kRowTileRegisters = 4;

/// Whether `op` is one of a batch (inside a parallel loop) and its whole
/// reduction is one cache block.
bool reducesInOneBlock(linalg::MatmulOp op, int64_t cacheDepth) {
  auto lhsType = cast<ShapedType>(op.getInputs()[0].getType());
  return op->getParentOfType<scf::ForallOp>() && !lhsType.isDynamicDim(1) &&
         lhsType.getDimSize(1) <= cacheDepth;
}

/// The op that initializes the product's output, when it can be computed
/// tile by tile in the product's register loops: a fill or an elementwise
/// op (a broadcast bias) that writes a new tensor and whose every use is the
/// output of such a product, so that once fused nothing needs it in memory.
Operation *registerInit(linalg::MatmulOp op, int64_t cacheDepth) {
  Value init = op.getOutputs()[0];
  Operation *producer = init.getDefiningOp();
  if (!producer)
    return nullptr;
  if (auto generic = dyn_cast<linalg::GenericOp>(producer)) {
    if (generic.getNumLoops() != generic.getNumParallelLoops() ||
        generic->getNumResults() != 1)
      return nullptr;
  } else if (!isa<linalg::FillOp>(producer)) {
    return nullptr;
  }
  // An init that updates a tensor in place (an accumulator rescaled in a
  // loop) has to stay where it is.
  if (!cast<DestinationStyleOpInterface>(producer)
           .getDpsInitOperand(0)
           ->get()
           .getDefiningOp<tensor::EmptyOp>())
    return nullptr;
  for (OpOperand &use : init.getUses()) {
    auto user = dyn_cast<linalg::MatmulOp>(use.getOwner());
    if (!user || use.getOperandNumber() != 2 ||
        !reducesInOneBlock(user, cacheDepth))
      return nullptr;
  }
  return producer;
}

struct TileAndVectorizeContractionsPass
    : kiln::impl::TileAndVectorizeContractionsPassBase<
          TileAndVectorizeContractionsPass> {
  using TileAndVectorizeContractionsPassBase::
      TileAndVectorizeContractionsPassBase;

  LogicalResult initialize(MLIRContext *context) override {
    if (registerRows <= 0 || registerCols <= 0 || narrowRows < 0 ||
        narrowCols < 0 || (narrowCols > 0) != (narrowRows > 0) ||
        narrowCols >= registerCols)
      return emitError(UnknownLoc::get(context))
             << getArgument()
             << ": register tiles must be positive and narrow-cols, if set, "
                "below register-cols";
    std::string sequences, tiling, vectorizing;
    auto addKind = [&](StringRef suffix, int64_t rows, int64_t cols) {
      std::string registers = llvm::formatv("{0}, {1}", rows, cols).str();
      sequences += llvm::formatv(
          kTileSequencesTemplate, suffix, cacheDepth, registers + ", 1",
          llvm::formatv("{0}, {1}", threadRows,
                        std::max<int64_t>(threadCols, cols))
              .str(),
          registers + ", 0",
          llvm::formatv("1, {0}", kRowTileRegisters * cols).str());
      tiling += llvm::formatv(kTileKindTemplate, suffix);
      vectorizing +=
          llvm::formatv(kVectorizeKindTemplate, suffix, registers + ", 1");
    };
    addKind(kWideSuffix, registerRows, registerCols);
    if (narrowCols > 0)
      addKind(kNarrowSuffix, narrowRows, narrowCols);
    std::string source =
        llvm::formatv(kScheduleTemplate, sequences, tiling, vectorizing);
    schedule = std::make_shared<OwningOpRef<ModuleOp>>(
        parseSourceString<ModuleOp>(source, context));
    return success(static_cast<bool>(*schedule));
  }

  /// The kind whose tile `op` is tiled by.
  StringRef kindOf(linalg::MatmulOp op) const {
    auto outputType = cast<ShapedType>(op.getOutputs()[0].getType());
    bool wide =
        narrowCols == 0 || (!outputType.isDynamicDim(1) &&
                            outputType.getDimSize(1) % registerCols == 0);
    return wide ? kWideSuffix : kNarrowSuffix;
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    auto mark = [&](Operation *op, StringRef marker, StringRef suffix) {
      op->setAttr((marker + suffix).str(), UnitAttr::get(ctx));
    };
    // A product inside a parallel loop (one of a batch) already has threads
    // enough; blocks for threads inside it would only leave ragged edges.
    getOperation()->walk([&](linalg::MatmulOp op) {
      StringRef suffix = kindOf(op);
      bool nested = op->getParentOfType<scf::ForallOp>() != nullptr;
      bool row = nested && isSingleRow(op);
      if (Operation *init = registerInit(op, cacheDepth)) {
        mark(op, row ? kRowFromInitMarker : kFromInitMarker, suffix);
        init->setAttr(kInitMarker, UnitAttr::get(ctx));
        return;
      }
      mark(op,
           row ? kRowNestedMarker : (nested ? kNestedMarker : kSharedMarker),
           suffix);
    });
    ModuleOp script = schedule->get();
    Operation *entry = transform::detail::findTransformEntryPoint(
        getOperation(), script, "__transform_main");
    if (!entry ||
        failed(transform::applyTransformNamedSequence(
            getOperation(), entry, script, transform::TransformOptions())))
      signalPassFailure();
    getOperation()->walk([](Operation *op) {
      for (StringRef suffix : {kWideSuffix, kNarrowSuffix})
        for (StringRef marker : {kNestedMarker, kSharedMarker, kFromInitMarker,
                                 kRowNestedMarker, kRowFromInitMarker})
          op->removeAttr((marker + suffix).str());
      op->removeAttr(kInitMarker);
    });
  }

  /// Parsed once per pass pipeline and shared by the pass's clones.
  std::shared_ptr<OwningOpRef<ModuleOp>> schedule;
};

} // namespace
