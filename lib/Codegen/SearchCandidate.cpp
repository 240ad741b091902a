//===- SearchCandidate.cpp - compile one candidate of a search ------------===//
#include "lib/Codegen/SearchCandidate.h"

#include "dialects/Kiln/IR/Weights.h"

#include "llvm/Support/Path.h"

using namespace mlir;
using namespace kiln;

CompileOptions kiln::candidateOptions(const CompileOptions &options,
                                      StringRef path) {
  CompileOptions candidate = options;
  candidate.emit = EmitKind::Library;
  candidate.outputPath = path.str();
  candidate.libraryName = llvm::sys::path::filename(path).str();
  candidate.calibrationDir.clear();
  candidate.qualityBudget = 0;
  candidate.qualityMetric = QualityMetric::Relative;
  candidate.quantizationReportPath.clear();
  candidate.chooseSkipLayers = false;
  candidate.skipLayersReportPath.clear();
  candidate.chooseDraft = false;
  candidate.draftReportPath.clear();
  if (candidate.diffusion)
    candidate.diffusion->chooseCache = false;
  candidate.cacheReportPath.clear();
  candidate.accelerate = Acceleration::None;
  candidate.accelerateReportPath.clear();
  candidate.reduceSplatShDegree = false;
  candidate.halfSplatAttributes = false;
  candidate.int8SplatAttributes = false;
  candidate.configurePassManager = nullptr;
  candidate.timing = nullptr;
  return candidate;
}

LogicalResult kiln::compileCandidate(ModuleOp module,
                                     const CompileOptions &candidate) {
  OwningOpRef<ModuleOp> clone = module.clone();
  // The clone's weights are the module's: compiling it must not release
  // them.
  (*clone)->setAttr(kSharedWeightsAttr, UnitAttr::get(module.getContext()));
  return compileModule(*clone, candidate);
}
