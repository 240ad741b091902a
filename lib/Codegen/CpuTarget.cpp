//===- CpuTarget.cpp - CPU targets and the blocks sized for them ----------===//
#include "lib/Codegen/CpuTarget.h"

#include "kiln/abi.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

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
  return TargetAttr::get(context, TargetKind::Cpu, triple.str(), chip,
                         llvm::join(changes, ","));
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
  int64_t vectorBits = 128;
  if (llvmTarget && triple.isX86()) {
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget = createSubtarget(
        *llvmTarget, triple, target.getChip(), target.getFeatures());
    if (subtarget->checkFeatures("+avx512f"))
      vectorBits = 512;
    else if (subtarget->checkFeatures("+avx2,+fma"))
      vectorBits = 256;
  }
  // AVX-512: an 8 x 32 block of accumulators is 16 of its 32 registers,
  // tuned on Zen 4 and Ice Lake. Reductions up to 2048 deep run unblocked,
  // their accumulators started from the output's init: on Zen 5 a 512 x 1536
  // by 1536 x 384 product took 2.57 ms so against 2.80 ms in blocks of 512
  // (the panel of B streams from L2 well), and 4096-deep ones tie.
  // Where a mask removes keys, blocks of 64 keys: on Zen 3, 12 heads of 4
  // half-padded sequences attended 1.8-2.2x faster than in one block (128
  // and 512 tokens), unpadded ones 2-9% slower; blocks of 32 were slower in
  // both.
  if (vectorBits >= 512)
    return CpuLayout{vectorBits,
                     /*registerRows=*/8,
                     /*registerCols=*/32,
                     /*cacheDepth=*/2048,
                     /*threadRows=*/128,
                     /*threadCols=*/64,
                     /*attentionQueryRows=*/16,
                     /*attentionKeyColumns=*/256,
                     /*attentionMaskedKeyColumns=*/64,
                     /*dynamicGenericRows=*/16,
                     /*genericVectorWidth=*/16};
  // AVX2 has 16 registers: 6 x 16 is 12 accumulators, two rows of the
  // weight panel and a broadcast. (AVX-512's 8 x 32 needed 32 and spilled:
  // MiniLM ran 2.7x slower on Zen 3.) Measured on Zen 3: 5 and 6 rows of
  // 16 tie, 4 x 16 is 8% slower, 8 x 16 and 3 x 32 spill; cache depth and
  // thread blocks within noise.
  if (vectorBits == 256)
    return CpuLayout{vectorBits,
                     /*registerRows=*/6,
                     /*registerCols=*/16,
                     /*cacheDepth=*/512,
                     /*threadRows=*/96,
                     /*threadCols=*/64,
                     /*attentionQueryRows=*/16,
                     /*attentionKeyColumns=*/256,
                     /*attentionMaskedKeyColumns=*/64,
                     /*dynamicGenericRows=*/16,
                     /*genericVectorWidth=*/16};
  // 128-bit vectors (SSE, NEON): a 6 x 8 block of accumulators is 12 of
  // SSE's 16 registers. Chosen for correctness and register pressure, not
  // tuned on such a machine.
  return CpuLayout{vectorBits,
                   /*registerRows=*/6,
                   /*registerCols=*/8,
                   /*cacheDepth=*/256,
                   /*threadRows=*/96,
                   /*threadCols=*/32,
                   /*attentionQueryRows=*/12,
                   /*attentionKeyColumns=*/128,
                   /*attentionMaskedKeyColumns=*/64,
                   /*dynamicGenericRows=*/16,
                   /*genericVectorWidth=*/8};
}
