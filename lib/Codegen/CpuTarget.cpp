//===- CpuTarget.cpp - CPU targets and the blocks sized for them ----------===//
#include "lib/Codegen/CpuTarget.h"

#include "kiln/abi.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/bit.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <algorithm>
#include <mutex>

using namespace mlir;
using namespace kiln;

namespace {

FailureOr<const llvm::Target *> lookupTarget(const llvm::Triple &triple,
                                             Location loc) {
  // Registration writes LLVM's global target registry: once per process,
  // whichever thread compiles first.
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no code generator for " << triple.str() << ": "
                          << error;
  return target;
}

std::unique_ptr<llvm::MCSubtargetInfo>
createSubtarget(const llvm::Target &target, const llvm::Triple &triple,
                StringRef cpu, StringRef features) {
  return std::unique_ptr<llvm::MCSubtargetInfo>(
      target.createMCSubtargetInfo(triple, cpu, features));
}

/// What Kiln knows of a chip's cores: full-width vector FMAs started per
/// cycle and their latency, and cache sizes (L1 and L2 per core, L3 shared).
/// From the vendors' optimization manuals; a part may ship with other cache
/// sizes, which the host's own reading replaces.
struct ChipModel {
  StringLiteral chip;
  int64_t fmaUnits, fmaLatency, l1, l2, l3;
};

constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

// Zen 4 runs a 512-bit FMA as two 256-bit halves: one full-width FMA a
// cycle. Zen 5 and Intel's server cores have two 512-bit units.
constexpr ChipModel kChipModels[] = {
    {"znver1", 1, 5, 32 * KiB, 512 * KiB, 8 * MiB},
    {"znver2", 2, 5, 32 * KiB, 512 * KiB, 16 * MiB},
    {"znver3", 2, 4, 32 * KiB, 512 * KiB, 32 * MiB},
    {"znver4", 1, 4, 32 * KiB, 1 * MiB, 32 * MiB},
    {"znver5", 2, 4, 48 * KiB, 1 * MiB, 32 * MiB},
    {"haswell", 2, 5, 32 * KiB, 256 * KiB, 8 * MiB},
    {"broadwell", 2, 4, 32 * KiB, 256 * KiB, 8 * MiB},
    {"skylake", 2, 4, 32 * KiB, 256 * KiB, 8 * MiB},
    {"skylake-avx512", 2, 4, 32 * KiB, 1 * MiB, 32 * MiB},
    {"cascadelake", 2, 4, 32 * KiB, 1 * MiB, 32 * MiB},
    {"cooperlake", 2, 4, 32 * KiB, 1 * MiB, 32 * MiB},
    {"icelake-server", 2, 4, 48 * KiB, 1280 * KiB, 48 * MiB},
    {"icelake-client", 1, 4, 48 * KiB, 512 * KiB, 8 * MiB},
    {"tigerlake", 1, 4, 48 * KiB, 1280 * KiB, 12 * MiB},
    {"rocketlake", 1, 4, 48 * KiB, 512 * KiB, 16 * MiB},
    {"alderlake", 2, 4, 48 * KiB, 1280 * KiB, 30 * MiB},
    {"raptorlake", 2, 4, 48 * KiB, 2 * MiB, 36 * MiB},
    {"meteorlake", 2, 4, 48 * KiB, 2 * MiB, 24 * MiB},
    {"sapphirerapids", 2, 4, 48 * KiB, 2 * MiB, 105 * MiB},
    {"emeraldrapids", 2, 4, 48 * KiB, 2 * MiB, 320 * MiB},
    {"graniterapids", 2, 4, 48 * KiB, 2 * MiB, 504 * MiB},
};

/// A chip missing from the table: one FMA unit and small caches, so its
/// blocks are the conservative ones.
constexpr ChipModel kGenericModel = {"", 1, 4, 32 * KiB, 512 * KiB, 8 * MiB};

const ChipModel &lookupChipModel(StringRef chip) {
  for (const ChipModel &model : kChipModels)
    if (model.chip == chip)
      return model;
  return kGenericModel;
}

/// The size in bytes of the compiling machine's cache of `level` and
/// `type` ("Data", "Unified") from Linux's sysfs, or 0 where it is not
/// there (another system, a container hiding it).
int64_t readHostCacheSize(int64_t level, StringRef type) {
  for (int index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](StringRef name) -> std::string {
      auto buffer = llvm::MemoryBuffer::getFile(dir + "/" + name.str(),
                                                /*IsText=*/true);
      return buffer ? (*buffer)->getBuffer().trim().str() : std::string();
    };
    std::string levelText = read("level");
    if (levelText.empty())
      return 0;
    if (levelText != std::to_string(level) || read("type") != type)
      continue;
    StringRef size = read("size");
    int64_t scale = 1;
    if (size.consume_back("K"))
      scale = KiB;
    else if (size.consume_back("M"))
      scale = MiB;
    int64_t value = 0;
    if (size.getAsInteger(10, value) || value <= 0)
      return 0;
    return value * scale;
  }
  return 0;
}

CpuModelAttr getCpuModel(MLIRContext *context, const ChipModel &model,
                         bool readHost) {
  int64_t l1 = model.l1, l2 = model.l2, l3 = model.l3;
  if (readHost) {
    if (int64_t size = readHostCacheSize(1, "Data"))
      l1 = size;
    if (int64_t size = readHostCacheSize(2, "Unified"))
      l2 = size;
    if (int64_t size = readHostCacheSize(3, "Unified"))
      l3 = size;
  }
  return CpuModelAttr::get(context, model.fmaUnits, model.fmaLatency, l1, l2,
                           l3);
}

int64_t powerOfTwoAtMost(int64_t value) {
  return value < 1 ? 1 : int64_t(llvm::bit_floor(uint64_t(value)));
}
} // namespace

FailureOr<TargetAttr> kiln::resolveCpuTarget(MLIRContext *context,
                                             StringRef cpu, Location loc) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  FailureOr<const llvm::Target *> target = lookupTarget(triple, loc);
  if (failed(target))
    return failure();
  std::string chip = cpu.str();
  llvm::SubtargetFeatures requested;
  if (cpu == "host") {
    chip = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      requested.AddFeature(feature.first(), feature.second);
  }
  // Checked on the generic CPU: LLVM warns on stderr about unknown names.
  if (!createSubtarget(**target, triple, "", "")->isCPUStringValid(chip))
    return emitError(loc) << "unknown CPU '" << chip << "' for "
                          << triple.str();
  std::unique_ptr<llvm::MCSubtargetInfo> defaults =
      createSubtarget(**target, triple, chip, "");
  std::unique_ptr<llvm::MCSubtargetInfo> actual =
      createSubtarget(**target, triple, chip, requested.getString());
  // Only the differences from the chip's defaults are recorded, each
  // explicitly, so a machine made from the attribute has exactly these.
  SmallVector<std::string> changes;
  for (const llvm::SubtargetFeatureKV &feature :
       actual->getAllProcessorFeatures()) {
    bool has = actual->getFeatureBits().test(feature.Value);
    if (has != defaults->getFeatureBits().test(feature.Value))
      changes.push_back((has ? "+" : "-") + std::string(feature.Key));
  }
  CpuModelAttr model =
      getCpuModel(context, lookupChipModel(chip), /*readHost=*/cpu == "host");
  return TargetAttr::get(context, TargetKind::Cpu, triple.str(), chip,
                         llvm::join(changes, ","), model);
}

FailureOr<std::unique_ptr<llvm::TargetMachine>>
kiln::createTargetMachine(TargetAttr target, Location loc) {
  llvm::Triple triple(target.getTriple());
  FailureOr<const llvm::Target *> llvmTarget = lookupTarget(triple, loc);
  if (failed(llvmTarget))
    return failure();
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      (*llvmTarget)->createTargetMachine(
          triple, target.getChip(), target.getFeatures(), options,
          llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return emitError(loc) << "cannot generate code for " << target;
  return machine;
}

std::string kiln::getNeededCpuFeatures(TargetAttr target) {
  llvm::Triple triple(target.getTriple());
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget || !triple.isX86())
    return "";
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget = createSubtarget(
      *llvmTarget, triple, target.getChip(), target.getFeatures());
  SmallVector<StringRef> needed;
#define KILN_CHECK_FEATURE(name)                                               \
  if (subtarget->checkFeatures("+" name))                                      \
    needed.push_back(name);
  KILN_ABI_X86_FEATURES(KILN_CHECK_FEATURE)
#undef KILN_CHECK_FEATURE
  return llvm::join(needed, ",");
}

CpuLayout kiln::getCpuLayout(TargetAttr target) {
  llvm::Triple triple(target.getTriple());
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  int64_t vectorBits = 128, registers = triple.isAArch64() ? 32 : 16;
  if (llvmTarget && triple.isX86()) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget = createSubtarget(
        *llvmTarget, triple, target.getChip(), target.getFeatures());
    if (subtarget->checkFeatures("+avx512f")) {
      vectorBits = 512;
      registers = 32;
    } else if (subtarget->checkFeatures("+avx2,+fma")) {
      vectorBits = 256;
    }
  }
  CpuModelAttr model = target.getCpuModel();
  if (!model)
    model = getCpuModel(target.getContext(), lookupChipModel(target.getChip()),
                        false);
  int64_t lanes = vectorBits / 32;

  // Register tile: rows by 2 vectors of accumulators, beside one row of
  // the weight panel and a broadcast element of the input: as many rows as
  // the registers hold, up to 8 (8 x 32 on Zen 4; on Zen 3 with 16
  // registers 5 and 6 rows of 16 tie, 4 x 16 is 8% slower, and 8 x 16 or
  // 3 x 32 spill), and never fewer accumulators than the FMAs in flight.
  // A core that retires two FMAs a cycle from two loads a cycle gets 4
  // vectors of columns where its 32 registers hold them: 6 x 64 does 2.4
  // FMAs per loaded value against 8 x 32's 1.6 (on an Emerald Rapids Xeon,
  // 197 x 3072 by 3072 x 768 at 143 GFLOP/s against 128, one thread).
  int64_t inFlight = model.getFmaUnits() * model.getFmaLatency();
  auto tileRows = [&](int64_t columnVectors) {
    int64_t rows =
        std::min<int64_t>(8, (registers - columnVectors - 1) / columnVectors);
    return std::max(rows, (inFlight + columnVectors - 1) / columnVectors);
  };
  constexpr int64_t narrowVectors = 2;
  int64_t columnVectors =
      model.getFmaUnits() >= 2 && registers >= 32 ? 4 : narrowVectors;
  int64_t registerRows = tileRows(columnVectors);
  int64_t registerCols = columnVectors * lanes;
  // Convolutions keep panels of 2 vectors whatever the tile of the other
  // products: their patches are copied and their tiles unrolled per panel,
  // and 4-vector panels made the UNet's code 5x slower to compile (16 s to
  // 82 s, in one-shot bufferization).
  int64_t patchColumns = narrowVectors * lanes;
  bool narrowTile = registerCols > patchColumns;

  // Reduction block: a [depth, registerCols] block of the weight panel in a
  // quarter of L2, so it stays there while the rows of the input pass by.
  // Zen 4's 1 MiB L2 gives 2048 (there a 512 x 1536 by 1536 x 384 product
  // took 2.57 ms against 2.80 ms in blocks of 512, and 4096-deep ones tie;
  // on the Xeon, 1024-4096 tie and 256-512 are 4-11% slower).
  int64_t cacheDepth = std::clamp<int64_t>(
      powerOfTwoAtMost(model.getL2() / 4 / (registerCols * 4)), 256, 2048);

  // Attention: 16 query rows (12 with 128-bit vectors) and blocks of 256
  // keys (128), fewer where the scores would fill more than half of L1.
  // Where a mask removes keys, blocks of 64 keys: on Zen 3, 12 heads of 4
  // half-padded sequences attended 1.8-2.2x faster than in one block (128
  // and 512 tokens), unpadded ones 2-9% slower; blocks of 32 were slower in
  // both.
  int64_t queryRows = vectorBits >= 256 ? 16 : 12;
  int64_t keyColumns =
      std::min<int64_t>(vectorBits >= 256 ? 256 : 128,
                        powerOfTwoAtMost(model.getL1() / 2 / (queryRows * 4)));
  return CpuLayout{
      vectorBits,
      registerRows,
      registerCols,
      /*narrowRows=*/narrowTile ? tileRows(narrowVectors) : 0,
      /*narrowCols=*/narrowTile ? patchColumns : 0,
      patchColumns,
      cacheDepth,
      /*threadRows=*/16 * registerRows,
      /*threadCols=*/std::max<int64_t>(64, registerCols),
      queryRows,
      keyColumns,
      /*attentionMaskedKeyColumns=*/std::min<int64_t>(64, keyColumns),
      /*dynamicGenericRows=*/16,
      /*genericVectorWidth=*/vectorBits >= 256 ? 16 : 8};
}
