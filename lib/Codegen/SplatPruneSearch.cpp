//===- SplatPruneSearch.cpp - Gaussians to prune within a budget ----------===//
#include "lib/Codegen/SplatPruneSearch.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/Weights.h"
#include "kiln/runtime.h"
#include "lib/Codegen/ArtifactRunner.h"
#include "lib/Codegen/Calibration.h"
#include "lib/Codegen/OutputFile.h"
#include "lib/Codegen/SearchCandidate.h"
#include "lib/TensorFile/TensorFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace kiln;

namespace {

constexpr llvm::StringLiteral kContributionsEntry = "splat_contributions";

/// The scene pruning works on: one projection of constant Gaussians, whose
/// splats one rasterization renders as the entry's only result, from the
/// entry's three inputs (view, intrinsics, background).
struct SplatScene {
  func::FuncOp entry;
  SplatProjectOp project;
  SplatRasterizeOp rasterize;

  /// The Gaussians' operands: positions, log scales, rotations, opacity
  /// logits, SH coefficients; row n of each is Gaussian n.
  SmallVector<OpOperand *> gaussians() {
    return {&project.getPositionsMutable(), &project.getLogScalesMutable(),
            &project.getRotationsMutable(), &project.getOpacityLogitsMutable(),
            &project.getShMutable()};
  }
  int64_t count() {
    return cast<RankedTensorType>(project.getPositions().getType())
        .getDimSize(0);
  }
};

FailureOr<SplatScene> findScene(ModuleOp module) {
  SplatScene scene;
  int projections = 0;
  for (auto func : module.getOps<func::FuncOp>())
    if (isEntryPoint(func))
      func.walk([&](SplatProjectOp project) {
        scene.entry = func;
        scene.project = project;
        ++projections;
      });
  auto fail = [&]() -> FailureOr<SplatScene> {
    return emitError(module.getLoc())
           << "splat pruning needs one Gaussian splatting scene whose "
              "Gaussians are constants, rendered by an entry whose inputs "
              "are view, intrinsics, background (and image_size with "
              "--splat-size-input): a .ply compiled without --splat-inputs";
  };
  if (projections != 1 || scene.entry.getNumResults() != 1 ||
      !scene.project->hasOneUse())
    return fail();
  unsigned cameraInputs = scene.project.getImageSize().empty() ? 3 : 4;
  if (scene.entry.getNumArguments() != cameraInputs)
    return fail();
  for (OpOperand *operand : scene.gaussians())
    if (!operand->get().getDefiningOp<ConstantOp>() ||
        !operand->get().hasOneUse())
      return fail();
  scene.rasterize =
      dyn_cast<SplatRasterizeOp>(*scene.project->getUsers().begin());
  Operation *terminator = scene.entry.getBody().front().getTerminator();
  if (!scene.rasterize || terminator->getOperand(0) != scene.rasterize)
    return fail();
  return scene;
}

/// The floats of the constant `operand` holds.
ArrayRef<float> constantFloats(OpOperand &operand) {
  auto constant = operand.get().getDefiningOp<ConstantOp>();
  std::optional<ArrayRef<char>> bytes = getRawBytes(constant.getValue());
  assert(bytes && "a scene's Gaussians are raw f32 constants");
  return {reinterpret_cast<const float *>(bytes->data()),
          bytes->size() / sizeof(float)};
}

/// A copy of `module` for the search: the entry takes the opacity logits,
/// the SH coefficients, the log scales and the rotations as its fourth to
/// seventh inputs, and a second entry (same inputs) returns each
/// Gaussian's summed blending weight.
FailureOr<OwningOpRef<ModuleOp>> buildSearchModule(ModuleOp module) {
  OwningOpRef<ModuleOp> search = module.clone();
  MLIRContext *ctx = module.getContext();
  (*search)->setAttr(kSharedWeightsAttr, UnitAttr::get(ctx));
  FailureOr<SplatScene> scene = findScene(*search);
  if (failed(scene))
    return failure();
  func::FuncOp render = scene->entry;
  Location loc = scene->project.getLoc();
  std::pair<OpOperand *, StringRef> inputs[] = {
      {&scene->project.getOpacityLogitsMutable(), "opacity_logits"},
      {&scene->project.getShMutable(), "sh"},
      {&scene->project.getLogScalesMutable(), "log_scales"},
      {&scene->project.getRotationsMutable(), "rotations"}};
  for (auto [operand, inputName] : inputs) {
    Operation *constant = operand->get().getDefiningOp();
    NamedAttribute name(StringAttr::get(ctx, kNameAttr),
                        StringAttr::get(ctx, inputName));
    unsigned index = render.getNumArguments();
    if (failed(render.insertArgument(index, operand->get().getType(),
                                     DictionaryAttr::get(ctx, {name}), loc)))
      return emitError(loc)
             << "splat pruning: cannot make " << inputName << " an input";
    operand->set(render.getArgument(index));
    constant->erase();
  }

  func::FuncOp measure = render.clone();
  measure.setName(kContributionsEntry);
  search->push_back(measure);
  SplatRasterizeOp rasterize = *measure.getOps<SplatRasterizeOp>().begin();
  auto imageType = cast<RankedTensorType>(rasterize.getImage().getType());
  int64_t width = imageType.getDimSize(1), height = imageType.getDimSize(0);
  if (std::optional<ArrayRef<int64_t>> bound = rasterize.getMaxSize()) {
    height = (*bound)[0];
    width = (*bound)[1];
  }
  OpBuilder b(rasterize);
  Value weights = SplatContributionsOp::create(
      b, loc, RankedTensorType::get({scene->count()}, Float32Type::get(ctx)),
      rasterize.getSplats(), width, height, rasterize.getImageSize(),
      rasterize.getCulling());
  measure.getBody().front().getTerminator()->setOperand(0, weights);
  rasterize.erase();
  measure.setFunctionType(
      FunctionType::get(ctx, measure.getArgumentTypes(), {weights.getType()}));
  measure.setResultAttr(0, kNameAttr, StringAttr::get(ctx, "contributions"));
  return search;
}

/// The Gaussians' attributes a candidate changes, as the search artifact's
/// run-time inputs (in its order: opacity logits, SH, log scales,
/// rotations), and the scene's own values.
struct CandidateInputs {
  std::vector<TensorPtr> tensors;
  SmallVector<ArrayRef<float>> scene;
  /// Each attribute's int8 map, fitted to the whole scene.
  std::array<SplatInt8Map, 4> int8Maps;
  int64_t gaussians = 0, coefficients = 0;

  LogicalResult create(SplatScene &splats, Location loc) {
    gaussians = splats.count();
    OpOperand *operands[] = {&splats.project.getOpacityLogitsMutable(),
                             &splats.project.getShMutable(),
                             &splats.project.getLogScalesMutable(),
                             &splats.project.getRotationsMutable()};
    for (OpOperand *operand : operands) {
      scene.push_back(constantFloats(*operand));
      SmallVector<int64_t> dims(
          cast<RankedTensorType>(operand->get().getType()).getShape());
      kiln_tensor *tensor = nullptr;
      if (kiln_tensor_create(KILN_DTYPE_F32, dims.size(), dims.data(),
                             &tensor) != KILN_OK)
        return emitError(loc) << "splat pruning: " << kiln_last_error();
      tensors.emplace_back(tensor);
    }
    coefficients = scene[1].size() / (3 * gaussians);
    for (auto [map, values] : llvm::zip(int8Maps, scene))
      map = SplatInt8Map::fit(values, values.size() / gaussians);
    return success();
  }

  /// The scene with its `pruned` least contributing Gaussians (`order`
  /// ranks them) at opacity 0, which culls them, its SH cut to `kept`
  /// coefficients (zeros add exactly nothing), and its attributes rounded
  /// as `storage` stores them: this renders what the scene compiled that
  /// way does.
  void set(ArrayRef<int64_t> order, int64_t pruned, int64_t kept,
           ArrayRef<SplatStorage> storage) {
    for (auto [tensor, values, how, map] :
         llvm::zip(tensors, scene, storage, int8Maps)) {
      float *data = static_cast<float *>(kiln_tensor_data(tensor.get()));
      int64_t columns = values.size() / gaussians;
      for (size_t i = 0; i < values.size(); ++i)
        data[i] = roundAsStored(values[i], how, map, i % columns);
    }
    auto *opacity = static_cast<float *>(kiln_tensor_data(tensors[0].get()));
    for (int64_t i = 0; i < pruned; ++i)
      opacity[order[i]] = -std::numeric_limits<float>::infinity();
    auto *sh = static_cast<float *>(kiln_tensor_data(tensors[1].get()));
    for (int64_t n = 0; n < gaussians; ++n)
      std::fill(sh + (n * coefficients + kept) * 3,
                sh + (n + 1) * coefficients * 3, 0.0f);
  }
};

/// The SH degree of `coefficients` per channel (1, 4, 9 or 16).
int64_t shDegree(int64_t coefficients) {
  return static_cast<int64_t>(std::lround(std::sqrt(double(coefficients)))) - 1;
}

/// PSNR with peak 1 of `image` against `reference`, both clamped to
/// [0, 1]; infinite where they are equal.
double psnr(const kiln_tensor *image, const kiln_tensor *reference) {
  size_t count = kiln_tensor_num_elements(reference);
  auto *x = static_cast<const float *>(kiln_tensor_const_data(image));
  auto *y = static_cast<const float *>(kiln_tensor_const_data(reference));
  double squares = 0;
  for (size_t i = 0; i < count; ++i) {
    double d = std::clamp(x[i], 0.0f, 1.0f) - std::clamp(y[i], 0.0f, 1.0f);
    squares += d * d;
  }
  if (squares == 0)
    return std::numeric_limits<double>::infinity();
  return -10 * std::log10(squares / double(count));
}

/// A PSNR for the report: JSON has no infinity, so equal images are null.
llvm::json::Value reportPsnr(double value) {
  if (std::isinf(value))
    return nullptr;
  return value;
}

} // namespace

FailureOr<SplatPruneChoice>
kiln::chooseSplatPruning(ModuleOp module, const CompileOptions &options) {
  Location loc = module.getLoc();
  FailureOr<SplatScene> scene = findScene(module);
  if (failed(scene))
    return failure();
  int64_t gaussians = scene->count();
  FailureOr<std::vector<std::vector<std::string>>> sets = findCalibrationSets(
      options.calibrationDir, scene->entry.getNumArguments(), loc);
  if (failed(sets))
    return failure();
  if (sets->size() < 2)
    return emitError(loc) << "splat pruning: --calibration holds "
                          << sets->size()
                          << " camera view; it needs at least two, to rank "
                             "the Gaussians on some and check the budget on "
                             "others";
  FailureOr<OwningOpRef<ModuleOp>> search = buildSearchModule(module);
  if (failed(search))
    return failure();

  SmallString<256> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("kiln-splat-prune", "so", path))
    return emitError(loc) << "splat pruning: cannot create a temporary "
                             "file: "
                          << ec.message();
  TemporaryFileRemover remover(path);
  if (failed(compileCandidate(**search, candidateOptions(options, path))))
    return failure();
  FailureOr<ArtifactRunner> renderer = ArtifactRunner::open(
      path, scene->entry.getName(), "the scene with run-time attributes", loc);
  FailureOr<ArtifactRunner> measurer = ArtifactRunner::open(
      path, kContributionsEntry, "the scene's contributions", loc);
  if (failed(renderer) || failed(measurer))
    return failure();

  // Each view's camera inputs; the candidate's attributes follow them.
  std::vector<std::vector<TensorPtr>> views;
  for (const std::vector<std::string> &files : *sets) {
    views.emplace_back();
    for (const std::string &file : files) {
      std::string name, error;
      views.back().push_back(readTensorFile(file, name, error));
      if (!views.back().back())
        return emitError(loc) << "splat pruning: calibration input '" << file
                              << "': " << error;
    }
  }
  CandidateInputs candidate;
  if (failed(candidate.create(*scene, loc)))
    return failure();
  int64_t coefficients = candidate.coefficients;
  std::vector<int64_t> order(gaussians);
  auto run = [&](ArtifactRunner &runner,
                 size_t view) -> FailureOr<std::vector<TensorPtr>> {
    std::vector<const kiln_tensor *> inputs;
    for (const TensorPtr &input : views[view])
      inputs.push_back(input.get());
    for (const TensorPtr &input : candidate.tensors)
      inputs.push_back(input.get());
    return runner.run(inputs,
                      llvm::sys::path::parent_path((*sets)[view].front()));
  };

  // Rank on the even views, with every Gaussian; render the odd ones.
  std::array<SplatStorage, 4> storage = {
      SplatStorage::Float32, SplatStorage::Float32, SplatStorage::Float32,
      SplatStorage::Float32};
  candidate.set(order, 0, coefficients, storage);
  std::vector<double> contribution(gaussians, 0);
  std::vector<TensorPtr> references;
  llvm::json::Array rankingViews, heldOutViews;
  for (size_t view = 0; view < views.size(); ++view) {
    std::string folder =
        llvm::sys::path::parent_path((*sets)[view].front()).str();
    bool ranking = view % 2 == 0;
    FailureOr<std::vector<TensorPtr>> outputs =
        run(ranking ? *measurer : *renderer, view);
    if (failed(outputs))
      return failure();
    if (ranking) {
      auto *weights = static_cast<const float *>(
          kiln_tensor_const_data(outputs->front().get()));
      for (int64_t n = 0; n < gaussians; ++n)
        contribution[n] += weights[n];
      rankingViews.push_back(folder);
    } else {
      references.push_back(std::move(outputs->front()));
      heldOutViews.push_back(folder);
    }
  }
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return contribution[x] < contribution[y];
  });
  int64_t unseen =
      llvm::count_if(contribution, [](double c) { return c == 0; });

  // The least PSNR over the held-out views of a candidate.
  llvm::json::Array tried;
  auto storageReport = [](ArrayRef<SplatStorage> stored) {
    llvm::json::Object names;
    for (auto [attribute, how] : llvm::zip(kSplatAttributes, stored))
      names[attribute] = getSplatStorageName(how);
    return names;
  };
  auto measure = [&](int64_t percent, int64_t kept,
                     ArrayRef<SplatStorage> stored) -> FailureOr<double> {
    int64_t pruned = gaussians * percent / 100;
    candidate.set(order, pruned, kept, stored);
    double least = std::numeric_limits<double>::infinity();
    llvm::json::Array perView;
    for (size_t h = 0; h < references.size(); ++h) {
      FailureOr<std::vector<TensorPtr>> outputs = run(*renderer, 2 * h + 1);
      if (failed(outputs))
        return failure();
      double value = psnr(outputs->front().get(), references[h].get());
      least = std::min(least, value);
      perView.push_back(reportPsnr(value));
    }
    tried.push_back(llvm::json::Object{{"pruned_percent", percent},
                                       {"pruned", pruned},
                                       {"sh_degree", shDegree(kept)},
                                       {"storage", storageReport(stored)},
                                       {"psnr_min", reportPsnr(least)},
                                       {"psnr", std::move(perView)}});
    return least;
  };
  // The lowest SH degree within the budget, if asked, before pruning.
  int64_t keptCoefficients = coefficients;
  double keptPsnr = std::numeric_limits<double>::infinity();
  if (options.reduceSplatShDegree) {
    for (int64_t degree = shDegree(coefficients) - 1; degree >= 0; --degree) {
      int64_t fewer = (degree + 1) * (degree + 1);
      FailureOr<double> least = measure(0, fewer, storage);
      if (failed(least))
        return failure();
      if (*least < options.qualityBudget)
        break;
      keptCoefficients = fewer;
      keptPsnr = *least;
    }
  }
  // Int8 attributes, one after the other, the largest first, if asked
  // and within the budget; then float16 for the rest, if asked and within
  // the budget; before pruning.
  auto tryStorage = [&](ArrayRef<SplatStorage> trial) -> FailureOr<bool> {
    FailureOr<double> least = measure(0, keptCoefficients, trial);
    if (failed(least))
      return failure();
    if (*least < options.qualityBudget)
      return false;
    llvm::copy(trial, storage.begin());
    keptPsnr = *least;
    return true;
  };
  if (options.int8SplatAttributes)
    for (int64_t attribute : {1, 0, 3, 2}) {
      std::array<SplatStorage, 4> trial = storage;
      trial[attribute] = SplatStorage::Int8;
      if (failed(tryStorage(trial)))
        return failure();
    }
  bool half = false;
  if (options.halfSplatAttributes &&
      llvm::is_contained(storage, SplatStorage::Float32)) {
    std::array<SplatStorage, 4> trial = storage;
    for (SplatStorage &how : trial)
      if (how == SplatStorage::Float32)
        how = SplatStorage::Float16;
    FailureOr<bool> kept = tryStorage(trial);
    if (failed(kept))
      return failure();
    half = *kept;
  }
  // Bisection between 0% (the scene itself) and 100% (nothing left).
  int64_t kept = 0, broken = 100;
  while (broken - kept > 1) {
    int64_t middle = (kept + broken) / 2;
    FailureOr<double> least = measure(middle, keptCoefficients, storage);
    if (failed(least))
      return failure();
    if (*least >= options.qualityBudget) {
      kept = middle;
      keptPsnr = *least;
    } else {
      broken = middle;
    }
  }

  SplatPruneChoice choice;
  choice.shCoefficients = keptCoefficients;
  choice.storage = storage;
  choice.int8Maps = candidate.int8Maps;
  choice.keep.assign(gaussians, true);
  int64_t pruned = gaussians * kept / 100;
  for (int64_t i = 0; i < pruned; ++i)
    choice.keep[order[i]] = false;
  llvm::json::Array prunedIndices;
  for (int64_t n = 0; n < gaussians; ++n)
    if (!choice.keep[n])
      prunedIndices.push_back(n);
  choice.report =
      llvm::json::Object{{"metric", "psnr"},
                         {"quality_budget", options.qualityBudget},
                         {"gaussians", gaussians},
                         {"ranking_views", std::move(rankingViews)},
                         {"held_out_views", std::move(heldOutViews)},
                         {"unseen_in_ranking_views", unseen},
                         {"tried", std::move(tried)},
                         {"pruned_percent", kept},
                         {"pruned", pruned},
                         {"kept", gaussians - pruned},
                         {"sh_degree_given", shDegree(coefficients)},
                         {"sh_degree", shDegree(keptCoefficients)},
                         {"half_attributes", half},
                         {"storage", storageReport(storage)},
                         {"psnr_min", reportPsnr(keptPsnr)},
                         {"pruned_indices", std::move(prunedIndices)}};
  return choice;
}

LogicalResult kiln::pruneSplats(ModuleOp module,
                                const SplatPruneChoice &choice) {
  const std::vector<bool> &keep = choice.keep;
  FailureOr<SplatScene> scene = findScene(module);
  if (failed(scene))
    return failure();
  int64_t gaussians = scene->count();
  assert(static_cast<int64_t>(keep.size()) == gaussians &&
         "a keep flag per Gaussian");
  int64_t kept = llvm::count(keep, true);
  MLIRContext *ctx = module.getContext();
  IRRewriter rewriter(ctx);
  SplatProjectOp project = scene->project;
  // The search's index of each operand's attribute; positions have none.
  llvm::DenseMap<OpOperand *, int64_t> attributeOf = {
      {&project.getOpacityLogitsMutable(), 0},
      {&project.getShMutable(), 1},
      {&project.getLogScalesMutable(), 2},
      {&project.getRotationsMutable(), 3}};
  SmallVector<float> int8Scales, int8Offsets;
  for (OpOperand *operand : scene->gaussians()) {
    auto constant = operand->get().getDefiningOp<ConstantOp>();
    ElementsAttr value = constant.getValue();
    auto type = cast<RankedTensorType>(value.getType());
    ArrayRef<float> floats = constantFloats(*operand);
    int64_t rowFloats = floats.size() / gaussians;
    // The SH coefficients of the kept degree lead each Gaussian's row.
    int64_t keptFloats = rowFloats;
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = kept;
    if (operand == &scene->project.getShMutable()) {
      keptFloats = rowFloats / shape[1] * choice.shCoefficients;
      shape[1] = choice.shCoefficients;
    }
    // Positions stay float32: float16 would move a mean by up to 1/2048
    // of its distance from the origin.
    auto attribute = attributeOf.find(operand);
    SplatStorage storage = attribute == attributeOf.end()
                               ? SplatStorage::Float32
                               : choice.storage[attribute->second];
    const SplatInt8Map *map = nullptr;
    Type element = type.getElementType();
    if (storage == SplatStorage::Float16)
      element = Float16Type::get(ctx);
    if (storage == SplatStorage::Int8) {
      element = IntegerType::get(ctx, 8);
      map = &choice.int8Maps[attribute->second];
      int8Scales.append(map->scales.begin(), map->scales.begin() + keptFloats);
      int8Offsets.append(map->offsets.begin(),
                         map->offsets.begin() + keptFloats);
    }
    ElementsAttr pruned = createElements(
        RankedTensorType::get(shape, element), [&](MutableArrayRef<char> out) {
          auto *halfs = reinterpret_cast<_Float16 *>(out.data());
          auto *singles = reinterpret_cast<float *>(out.data());
          auto *codes = reinterpret_cast<int8_t *>(out.data());
          int64_t next = 0;
          for (int64_t n = 0; n < gaussians; ++n) {
            if (!keep[n])
              continue;
            for (int64_t i = 0; i < keptFloats; ++i, ++next) {
              float x = floats[n * rowFloats + i];
              if (storage == SplatStorage::Float16)
                halfs[next] = static_cast<_Float16>(x);
              else if (storage == SplatStorage::Int8)
                codes[next] = map->quantize(x, i);
              else
                singles[next] = x;
            }
          }
        });
    rewriter.setInsertionPoint(constant);
    operand->set(ConstantOp::create(rewriter, constant.getLoc(), pruned));
    eraseIfUnused(rewriter, constant, value);
  }
  if (!int8Scales.empty()) {
    project.setInt8ScalesAttr(DenseF32ArrayAttr::get(ctx, int8Scales));
    project.setInt8OffsetsAttr(DenseF32ArrayAttr::get(ctx, int8Offsets));
  }
  project.getSplats().setType(
      RankedTensorType::get({11, kept}, Float32Type::get(ctx)));
  return success();
}
