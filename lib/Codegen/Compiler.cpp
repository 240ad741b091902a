//===- Compiler.cpp - from a kiln module to an artifact on disk -----------===//
#include "kiln/compiler.hpp"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnDialect.h"
#include "lib/Codegen/Backend.h"
#include "lib/Codegen/CacheSearch.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/CpuTarget.h"
#include "lib/Codegen/DraftSearch.h"
#include "lib/Codegen/LayerSkipSearch.h"
#include "lib/Codegen/ModelError.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/Pipeline.h"
#include "lib/Codegen/QuantizationReport.h"
#include "lib/Codegen/SplatPruneSearch.h"
#include "lib/Codegen/TokenReductionSearch.h"
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace mlir;
using namespace kiln;

void kiln::registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<KilnDialect>();
}

/// The self-speculative draft's entry, which the runtime's generation
/// loop looks up by name.
static constexpr llvm::StringLiteral kDraftEntry = "draft";

/// Quantizes the products of the draft entry only: `decode` verifies the
/// draft's tokens in the model's own precision.
static LogicalResult quantizeDraft(ModuleOp module, Quantization kind,
                                   TimingScope &timing) {
  auto draft = module.lookupSymbol<func::FuncOp>(kDraftEntry);
  assert(draft && "kiln-skip-layers made no draft entry");
  PassManager pm(module.getContext(), func::FuncOp::getOperationName());
  if (kind == Quantization::Int4Weight)
    pm.addPass(createQuantizeInt4WeightPass());
  else
    pm.addPass(createQuantizeInt8DynamicPass());
  TimingScope scope = timing.nest("Draft quantization");
  pm.enableTiming(scope);
  return pm.run(draft);
}

/// Every dynamic dimension of an entry's outputs must be one of the
/// module's dimensions, set by the inputs or computed from them, which the
/// runtime can check and size.
static LogicalResult verifyEntryDimensions(ModuleOp module) {
  llvm::StringSet<> known;
  if (auto dims = module->getAttrOfType<ArrayAttr>(kDimsAttr))
    for (auto dim : dims.getAsRange<DimAttr>())
      known.insert(dim.getName());
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!isEntryPoint(func))
      continue;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto names = func.getResultAttrOfType<ArrayAttr>(i, kDimNamesAttr);
      if (!names)
        continue;
      for (auto [d, name] : llvm::enumerate(names.getAsValueRange<StringAttr>()))
        if (!name.empty() && !known.contains(name)) {
          auto output = func.getResultAttrOfType<StringAttr>(i, kNameAttr);
          return emitError(func.getLoc())
                 << "graph output '" << (output ? output.getValue() : "")
                 << "' dimension " << d << " has the size " << name
                 << ", which is no dimension of the module";
        }
    }
  }
  return success();
}

LogicalResult kiln::compileModule(ModuleOp module,
                                  const CompileOptions &options) {
  Location loc = module.getLoc();

  if (options.emit == EmitKind::Library && options.outputPath == "-")
    return emitError(loc) << "a shared library cannot be written to stdout";
  // Reserved first, so an unwritable output fails before any work.
  OutputFile output;
  if (failed(output.create(options.outputPath, loc)))
    return failure();
  // Changes to the signature come first: the text form shows them too.
  // The blocks to skip: given, or chosen by measuring them.
  std::vector<int64_t> skipLayers = options.skipLayers;
  OutputFile skipReport;
  if (options.chooseSkipLayers) {
    if (options.maxContext <= 0 || options.calibrationDir.empty() ||
        !(options.qualityBudget > 0) || !options.skipLayers.empty() ||
        !options.draftSkipLayers.empty() ||
        options.quantization != Quantization::None)
      return emitError(loc)
             << "choosing the layers to skip needs --max-context, "
                "--calibration token sequences and a --quality-budget, and "
                "takes no --skip-layers, --draft-skip-layers or --quantize";
    if (!options.skipLayersReportPath.empty() &&
        failed(skipReport.create(options.skipLayersReportPath, loc)))
      return failure();
    FailureOr<LayerSkipChoice> choice = chooseSkippedLayers(module, options);
    if (failed(choice))
      return failure();
    skipLayers = choice->skipped;
    if (!options.skipLayersReportPath.empty())
      skipReport.os() << llvm::formatv(
                             "{0:2}", llvm::json::Value(std::move(choice->report)))
                      << "\n";
  }
  // Token merging and pruning: given, or chosen by measuring candidates.
  TokenReduction reduction{options.mergeTokens, options.mergeSchedule,
                           options.pruneKeepRate, options.pruneBlocks};
  OutputFile accelerateReport;
  bool cosineBudget = options.qualityMetric == QualityMetric::Cosine;
  bool tokenSearch = options.accelerate == Acceleration::TokenMerge ||
                     options.accelerate == Acceleration::TokenPrune;
  if (cosineBudget && !tokenSearch)
    return emitError(loc) << "a cosine quality budget applies to the token "
                             "merging and pruning searches (--accelerate)";
  if (tokenSearch) {
    if (options.calibrationDir.empty() || !cosineBudget ||
        !(options.qualityBudget > 0) || options.mergeTokens != 0 ||
        !options.mergeTokensPerBlock.empty() || options.pruneKeepRate != 1.0 ||
        !options.pruneBlocks.empty() || !options.pruneKeepPerBlock.empty())
      return emitError(loc) << "choosing the tokens to merge or prune needs "
                               "--calibration inputs and a --quality-budget "
                               "cos=C, and takes no --merge-tokens*, "
                               "--prune-tokens* or --prune-blocks";
    if (!options.accelerateReportPath.empty() &&
        failed(accelerateReport.create(options.accelerateReportPath, loc)))
      return failure();
    FailureOr<TokenReductionChoice> choice =
        chooseTokenReduction(module, options);
    if (failed(choice))
      return failure();
    reduction = choice->chosen;
    if (!options.accelerateReportPath.empty())
      accelerateReport.os()
          << llvm::formatv("{0:2}",
                           llvm::json::Value(std::move(choice->report)))
          << "\n";
  }
  // A splatting scene's Gaussians, pruned within the budget.
  if ((options.reduceSplatShDegree || options.halfSplatAttributes ||
       options.int8SplatAttributes) &&
      options.accelerate != Acceleration::SplatPrune)
    return emitError(loc) << "lowering the SH degree and float16 or int8 "
                             "attributes within the budget are part of "
                             "splat pruning (--accelerate=splat-prune)";
  if (options.accelerate == Acceleration::SplatPrune) {
    if (options.calibrationDir.empty() ||
        options.qualityMetric != QualityMetric::Psnr ||
        !(options.qualityBudget > 0))
      return emitError(loc) << "pruning Gaussians needs --calibration camera "
                               "views and a --quality-budget psnr=DB";
    if (!options.accelerateReportPath.empty() &&
        failed(accelerateReport.create(options.accelerateReportPath, loc)))
      return failure();
    FailureOr<SplatPruneChoice> choice = chooseSplatPruning(module, options);
    if (failed(choice) || failed(pruneSplats(module, *choice)))
      return failure();
    if (!options.accelerateReportPath.empty())
      accelerateReport.os()
          << llvm::formatv("{0:2}",
                           llvm::json::Value(std::move(choice->report)))
          << "\n";
  }
  // The draft: given, or chosen by measuring candidates.
  std::vector<int64_t> draftSkipLayers = options.draftSkipLayers;
  Quantization draftQuantization = options.draftQuantization;
  int64_t draftTokens = options.draftTokens;
  OutputFile draftReport;
  if (options.chooseDraft) {
    if (options.maxContext <= 0 || options.calibrationDir.empty() ||
        !options.skipLayers.empty() || options.chooseSkipLayers ||
        !options.draftSkipLayers.empty() ||
        options.draftQuantization != Quantization::None ||
        options.draftTokens != 0 || options.quantization != Quantization::None)
      return emitError(loc)
             << "choosing the draft needs --max-context and --calibration "
                "token sequences, and takes no --skip-layers, "
                "--choose-skip-layers, --draft-skip-layers, --draft-quantize, "
                "--draft-tokens or --quantize";
    if (!options.draftReportPath.empty() &&
        failed(draftReport.create(options.draftReportPath, loc)))
      return failure();
    FailureOr<DraftChoice> choice = chooseDraft(module, options);
    if (failed(choice))
      return failure();
    draftSkipLayers = choice->skipped;
    draftQuantization = choice->quantization;
    draftTokens = choice->tokens;
    if (!options.draftReportPath.empty())
      draftReport.os() << llvm::formatv("{0:2}", llvm::json::Value(
                                                     std::move(choice->report)))
                       << "\n";
  }
  bool draft =
      !draftSkipLayers.empty() || draftQuantization != Quantization::None;
  if (draft && (options.maxContext <= 0 || !options.skipLayers.empty()))
    return emitError(loc) << "a draft entry needs --max-context, and "
                             "--skip-layers together with it is not "
                             "supported";
  if (draftTokens < 0 || (draftTokens > 0 && !draft))
    return emitError(loc) << "--draft-tokens sets how many tokens a draft "
                             "entry proposes: it needs --draft-skip-layers "
                             "or --draft-quantize, and a count from 0";
  if (draftQuantization == Quantization::Int8Static)
    return emitError(loc) << "a draft is quantized int8-dynamic or "
                             "int4-weight: int8-static's calibration runs "
                             "the model's inputs, not token sequences";
  if (options.maxContext > 0 || !skipLayers.empty()) {
    PassManager pm(module.getContext());
    if (options.maxContext > 0) {
      pm.addPass(createExposePastKeysValuesPass({options.maxContext}));
      pm.addPass(createBuildKvCachePass(
          {options.maxContext, options.kvCache == KvCacheType::Int8}));
    }
    if (!skipLayers.empty()) {
      SkipLayersPassOptions skip;
      skip.layers.assign(skipLayers.begin(), skipLayers.end());
      pm.addPass(createSkipLayersPass(skip));
    }
    if (draft) {
      SkipLayersPassOptions draftSkip;
      draftSkip.layers.assign(draftSkipLayers.begin(), draftSkipLayers.end());
      draftSkip.draftEntry = kDraftEntry;
      pm.addPass(createSkipLayersPass(draftSkip));
    }
    if (failed(pm.run(module)))
      return failure();
    if (draftTokens > 0)
      module->setAttr(
          kDraftTokensAttr,
          IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                           draftTokens));
  }
  bool psnrBudget = options.qualityMetric == QualityMetric::Psnr;
  if (psnrBudget && !(options.diffusion && options.diffusion->chooseCache) &&
      options.accelerate != Acceleration::SplatPrune)
    return emitError(loc) << "a PSNR quality budget applies to the "
                             "diffusion cache search (--choose-cache) and "
                             "splat pruning (--accelerate=splat-prune)";
  OutputFile cacheReport;
  if (options.diffusion) {
    if (options.maxContext > 0 || !skipLayers.empty() || draft)
      return emitError(loc) << "a diffusion pipeline takes no decoder "
                               "options (--max-context, --skip-layers, "
                               "--draft-skip-layers, --draft-quantize)";
    DiffusionOptions diffusion = *options.diffusion;
    if (diffusion.chooseCache) {
      if (options.calibrationDir.empty() || !psnrBudget ||
          diffusion.cacheInterval != 1 || diffusion.cacheThreshold > 0 ||
          diffusion.cacheForecast != 0 ||
          options.quantization != Quantization::None)
        return emitError(loc)
               << "choosing the cache needs --calibration noise (and labels) "
                  "and a --quality-budget psnr=DB, and takes no "
                  "--cache-interval, --cache-threshold, --cache-forecast or "
                  "--quantize";
      if (!options.cacheReportPath.empty() &&
          failed(cacheReport.create(options.cacheReportPath, loc)))
        return failure();
      FailureOr<CacheChoice> choice = chooseSampleCache(module, options);
      if (failed(choice))
        return failure();
      diffusion.cacheInterval = choice->interval;
      diffusion.cacheFirst = choice->first;
      diffusion.cacheLast = choice->last;
      diffusion.cacheForecast = choice->forecast;
      diffusion.cacheThreshold = choice->threshold;
      if (!options.cacheReportPath.empty())
        cacheReport.os() << llvm::formatv(
                                "{0:2}",
                                llvm::json::Value(std::move(choice->report)))
                         << "\n";
    }
    PassManager pm(module.getContext());
    CaptureSamplerPassOptions sampler;
    sampler.sampler = diffusion.sampler == SamplerKind::Euler ? Sampler::Euler
                      : diffusion.sampler == SamplerKind::DpmSolver2M
                          ? Sampler::DpmSolver2M
                          : Sampler::Ddim;
    sampler.steps = diffusion.steps;
    sampler.cfgScale = diffusion.cfgScale;
    sampler.nullLabel = diffusion.nullLabel;
    pm.addPass(createCaptureSamplerPass(sampler));
    if (diffusion.cacheInterval > 1 || diffusion.cacheThreshold > 0) {
      FailureOr<CacheKind> kind = denoiserCacheKind(module, diffusion);
      if (failed(kind))
        return failure();
      if (*kind == CacheKind::BlockResiduals)
        pm.addPass(createCacheBlockResidualsPass(
            {diffusion.cacheInterval, diffusion.cacheFirst,
             diffusion.cacheLast, diffusion.cacheThreshold,
             diffusion.cacheForecast}));
      else
        pm.addPass(createCacheDeepFeaturesPass(
            {diffusion.cacheInterval, /*branch=*/0, diffusion.cacheForecast}));
    }
    if (failed(pm.run(module)))
      return failure();
  }
  if (failed(verifyEntryDimensions(module)))
    return failure();
  if (options.emit == EmitKind::Mlir) {
    module.print(output.os());
    if (!options.skipLayersReportPath.empty() &&
        failed(skipReport.commit(loc)))
      return failure();
    if (!options.draftReportPath.empty() && failed(draftReport.commit(loc)))
      return failure();
    if (!options.cacheReportPath.empty() && failed(cacheReport.commit(loc)))
      return failure();
    if (!options.accelerateReportPath.empty() &&
        failed(accelerateReport.commit(loc)))
      return failure();
    return output.commit(loc);
  }

  // A module may name its target (kiln-dialect input); otherwise it is
  // the CPU the options name.
  TargetAttr target = getTarget(module);
  if (!target) {
    FailureOr<TargetAttr> resolved =
        resolveCpuTarget(module.getContext(), options.targetCpu, loc);
    if (failed(resolved))
      return failure();
    target = *resolved;
    module->setAttr(kTargetAttr, target);
  }
  FailureOr<std::unique_ptr<Backend>> backend = createBackend(target, loc);
  if (failed(backend))
    return failure();

  TimingScope noTiming;
  TimingScope &timing = options.timing ? *options.timing : noTiming;
  auto runPipeline = [&](StringRef name,
                         function_ref<void(OpPassManager &)> build) {
    PassManager pm(module.getContext());
    if (options.configurePassManager &&
        failed(options.configurePassManager(pm)))
      return failure();
    build(pm);
    TimingScope scope = timing.nest(name);
    pm.enableTiming(scope);
    return pm.run(module);
  };
  // The report is written with the output, so a failed compile leaves
  // neither.
  OutputFile report;
  if (!options.quantizationReportPath.empty() &&
      failed(report.create(options.quantizationReportPath, loc)))
    return failure();
  if (failed(runPipeline("Graph passes", [&](OpPassManager &pm) {
        buildGraphPipeline(pm, options.optLevel, options.exactSplatCulling);
      })))
    return failure();
  bool merging = reduction.mergeTokens > 0 ||
                 llvm::any_of(options.mergeTokensPerBlock,
                              [](int64_t r) { return r > 0; });
  if (merging) {
    if (options.optLevel < OptLevel::O2)
      return emitError(loc) << "token merging needs -O2 or -O3: it merges "
                               "around the fused attention";
    if (options.maxContext > 0)
      return emitError(loc) << "token merging applies to encoders and "
                               "denoisers, not with --max-context";
    if (options.diffusion && (options.diffusion->cacheInterval > 1 ||
                              options.diffusion->cacheThreshold > 0 ||
                              options.diffusion->chooseCache))
      return emitError(loc) << "token merging does not combine with a "
                               "sampler's caching";
    if (reduction.mergeTokens < 0 ||
        llvm::any_of(options.mergeTokensPerBlock,
                     [](int64_t r) { return r < 0; }))
      return emitError(loc) << "tokens to merge must not be negative";
    MergeTokensPassOptions merge;
    merge.tokens = reduction.mergeTokens;
    merge.schedule = reduction.mergeSchedule == TokenMergeSchedule::Decreasing
                         ? MergeSchedule::Decreasing
                         : MergeSchedule::Constant;
    merge.perBlock.assign(options.mergeTokensPerBlock.begin(),
                          options.mergeTokensPerBlock.end());
    merge.scope = options.mergeScope == TokenMergeScope::Attention
                      ? MergeScope::Attention
                      : MergeScope::Model;
    if (failed(runPipeline("Token merging", [&](OpPassManager &pm) {
          pm.addNestedPass<func::FuncOp>(createMergeTokensPass(merge));
        })))
      return failure();
  }
  bool pruning =
      reduction.pruneKeepRate != 1.0 || !options.pruneKeepPerBlock.empty();
  if (pruning) {
    if (options.optLevel < OptLevel::O2)
      return emitError(loc) << "token pruning needs -O2 or -O3: it prunes "
                               "around the fused attention";
    if (options.maxContext > 0 || options.diffusion || merging)
      return emitError(loc) << "token pruning applies to encoders, not with "
                               "--max-context, --pipeline=diffusion or "
                               "token merging";
    if (!(reduction.pruneKeepRate > 0 && reduction.pruneKeepRate <= 1))
      return emitError(loc) << "the share of tokens pruning keeps must be in "
                               "(0, 1], not "
                            << reduction.pruneKeepRate;
    if (llvm::any_of(reduction.pruneBlocks, [](int64_t k) { return k < 0; }))
      return emitError(loc) << "pruning blocks are numbered from 0";
    PruneTokensPassOptions prune;
    prune.keepRate = reduction.pruneKeepRate;
    prune.blocks.assign(reduction.pruneBlocks.begin(),
                        reduction.pruneBlocks.end());
    prune.perBlock.assign(options.pruneKeepPerBlock.begin(),
                          options.pruneKeepPerBlock.end());
    prune.importance = options.pruneImportance == TokenImportance::KeyNorm
                           ? PruneImportance::KeyNorm
                           : PruneImportance::ClassAttention;
    if (failed(runPipeline("Token pruning", [&](OpPassManager &pm) {
          pm.addNestedPass<func::FuncOp>(createPruneTokensPass(prune));
        })))
      return failure();
  }
  CalibrationReference reference;
  // The searches' calibration inputs are token sequences or noise, not the
  // model's inputs.
  if (!options.calibrationDir.empty() && !options.chooseSkipLayers &&
      !options.chooseDraft && options.accelerate == Acceleration::None &&
      !(options.diffusion && options.diffusion->chooseCache)) {
    TimingScope scope = timing.nest("Calibration");
    if (failed(calibrateProducts(module, options, reference)))
      return failure();
  }
  // The draft's own precision first: the model's quantization, if any,
  // then takes the products the draft's left in float.
  if (draftQuantization != Quantization::None &&
      failed(quantizeDraft(module, draftQuantization, timing)))
    return failure();
  if (failed(runPipeline("Quantization", [&](OpPassManager &pm) {
        buildQuantizationPipeline(pm, options.quantization);
      })))
    return failure();
  std::optional<llvm::json::Object> described;
  if (!options.quantizationReportPath.empty())
    described = describeQuantization(module);
  if (failed(runPipeline("Lower for the target", [&](OpPassManager &pm) {
        (*backend)->buildPipeline(pm, options);
      })) ||
      failed((*backend)->emit(module, options, output)))
    return failure();
  if (described) {
    // What the whole model loses: the library just written, run on the
    // calibration inputs against the float model's outputs.
    if (!reference.inputFiles.empty() && options.emit == EmitKind::Library) {
      TimingScope scope = timing.nest("Model error");
      FailureOr<llvm::json::Object> model;
      if (failed(output.close(loc)) ||
          failed(model = measureModelError(output.path(), reference, loc)))
        return failure();
      (*described)["model"] = std::move(*model);
    }
    report.os() << renderQuantizationReport(std::move(*described));
    if (failed(report.commit(loc)))
      return failure();
  }
  if (!options.skipLayersReportPath.empty() && failed(skipReport.commit(loc)))
    return failure();
  if (!options.draftReportPath.empty() && failed(draftReport.commit(loc)))
    return failure();
  if (!options.cacheReportPath.empty() && failed(cacheReport.commit(loc)))
    return failure();
  if (!options.accelerateReportPath.empty() &&
      failed(accelerateReport.commit(loc)))
    return failure();
  return output.commit(loc);
}
