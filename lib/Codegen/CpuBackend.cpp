//===- CpuBackend.cpp - native code for the compiling machine's CPU -------===//
//
// The CPU backend lowers to the LLVM dialect (lib/Codegen/Pipeline.h),
// translates to LLVM IR, optimizes it, generates machine code in parallel
// parts, writes the weights as a separate object, and links everything
// into a shared library with lld.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/Backend.h"

#include "dialects/Kiln/IR/EntryPoints.h"
#include "dialects/Kiln/IR/Weights.h"
#include "kiln/Config.h"
#include "kiln/abi.h"
#include "lib/Codegen/CpuTarget.h"
#include "lib/Codegen/ParallelCodegen.h"
#include "lib/Codegen/ParallelDispatch.h"
#include "lib/Codegen/Pipeline.h"
#include "lib/Codegen/WeightsObject.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/Instrumentation/AddressSanitizer.h"
#include "llvm/Transforms/Instrumentation/ThreadSanitizer.h"

#include <future>

using namespace mlir;
using namespace kiln;

namespace {

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    OptLevel level, Sanitizer sanitizer) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  // Entries go into their wrappers (kiln-export-entries marks them) before
  // the interprocedural passes see a call with every input's descriptor.
  builder.registerPipelineStartEPCallback([](llvm::ModulePassManager &passes,
                                             llvm::OptimizationLevel) {
    passes.addPass(llvm::AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
  });
  if (sanitizer != Sanitizer::None) {
    // Where clang puts them: after the optimizations, which then neither
    // remove the checks nor miss what they would have simplified.
    llvm::Attribute::AttrKind attribute = sanitizer == Sanitizer::Address
                                              ? llvm::Attribute::SanitizeAddress
                                              : llvm::Attribute::SanitizeThread;
    for (llvm::Function &function : module)
      if (!function.isDeclaration())
        function.addFnAttr(attribute);
    builder.registerOptimizerLastEPCallback(
        [sanitizer](llvm::ModulePassManager &passes, llvm::OptimizationLevel,
                    llvm::ThinOrFullLTOPhase) {
          if (sanitizer == Sanitizer::Address) {
            passes.addPass(
                llvm::AddressSanitizerPass(llvm::AddressSanitizerOptions()));
            return;
          }
          passes.addPass(llvm::ModuleThreadSanitizerPass());
          passes.addPass(llvm::createModuleToFunctionPassAdaptor(
              llvm::ThreadSanitizerPass()));
        });
  }
  // LLVM's O3 multiplied machine-code time by 15 on the bundled example and
  // ran its untiled loops slower, so Kiln's -O0..-O2 use LLVM's O2 and only
  // -O3 asks for more.
  builder
      .buildPerModuleDefaultPipeline(level == OptLevel::O3
                                         ? llvm::OptimizationLevel::O3
                                         : llvm::OptimizationLevel::O2)
      .run(module, mam);
}

/// How many parts machine code is generated in: one per hardware thread, up
/// to four, and no more parts than functions.
unsigned countCodegenParts(const llvm::Module &module) {
  unsigned functions = 0;
  for (const llvm::Function &function : module)
    functions += !function.isDeclaration();
  unsigned threads = llvm::hardware_concurrency().compute_thread_count();
  return std::max(1u, std::min({threads, 4u, functions}));
}

/// Makes everything the module defines internal but the descriptor's
/// getter, so an artifact exports one symbol and LLVM may inline the rest.
/// The weights it declares are defined hidden in the weights object, so
/// they are addressed directly rather than through the GOT.
void exportDescriptorOnly(llvm::Module &module) {
  for (llvm::Function &function : module)
    if (!function.isDeclaration() &&
        function.getName() != KILN_ABI_ARTIFACT_SYMBOL)
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &global : module.globals()) {
    if (!global.isDeclaration()) {
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
      continue;
    }
    global.setVisibility(llvm::GlobalValue::HiddenVisibility);
    global.setDSOLocal(true);
  }
}

/// The weights kiln-externalize-weights took out of the code, written to
/// their own object on a second thread while LLVM works on the code: the
/// write is bound by page faults, LLVM by the CPU.
class WeightsWriter {
public:
  ~WeightsWriter() {
    if (pending.valid())
      llvm::consumeError(pending.get());
  }

  /// Takes the weights listed on `module` off it; false if there are none.
  bool take(ModuleOp module) {
    auto list = module->getAttrOfType<ArrayAttr>(kWeightsAttr);
    if (!list)
      return false;
    module->removeAttr(kWeightsAttr);
    for (auto entry : list.getAsRange<DictionaryAttr>()) {
      auto value = cast<ElementsAttr>(entry.get("value"));
      std::optional<ArrayRef<char>> bytes = getRawBytes(value);
      assert(bytes && "kiln-externalize-weights lists raw data only");
      weights.push_back({cast<StringAttr>(entry.get("name")).str(), *bytes});
      if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
        resources.push_back(resource);
    }
    return true;
  }

  LogicalResult start(StringRef outputPath, const llvm::Triple &triple,
                      Location loc) {
    SmallString<256> base(outputPath);
    base += ".weights.o";
    if (failed(output.create(base, loc)))
      return failure();
    pending = std::async(std::launch::async, [this, triple] {
      return writeWeightsObject(output.os(), triple, weights,
                                kWeightAlignment);
    });
    return success();
  }

  /// Waits for the object and frees the weights' blobs, which nothing in
  /// `module` refers to any more.
  LogicalResult finish(ModuleOp module, Location loc) {
    if (llvm::Error error = pending.get())
      return emitError(loc) << llvm::toString(std::move(error));
    releaseUnusedWeights(module, resources);
    weights.clear();
    return output.close(loc);
  }

  StringRef path() const { return output.path(); }

private:
  SmallVector<WeightSymbol> weights;
  SmallVector<DenseResourceElementsAttr> resources;
  OutputFile output;
  std::future<llvm::Error> pending;
};

/// Links `objectPaths` into the shared library `outputPath` with lld. An
/// artifact instrumented with a sanitizer leaves its runtime's symbols to
/// the process that loads it.
LogicalResult linkSharedLibrary(ArrayRef<StringRef> objectPaths,
                                StringRef outputPath, StringRef soname,
                                Sanitizer sanitizer, Location loc) {
  SmallVector<StringRef> args = {
      KILN_LLD_PATH,      "-shared", "-z",   "now", "-z",      "relro",
      "--hash-style=gnu", "-soname", soname, "-o",  outputPath};
  if (sanitizer == Sanitizer::None)
    args.push_back("--no-undefined");
  llvm::append_range(args, objectPaths);
  args.append({KILN_LIBM_PATH, KILN_LIBC_PATH});
  std::string error;
  int status = llvm::sys::ExecuteAndWait(KILN_LLD_PATH, args, std::nullopt, {},
                                         0, 0, &error);
  if (status != 0)
    return emitError(loc) << "linking with " << KILN_LLD_PATH << " failed"
                          << (error.empty() ? "" : ": " + error);
  return success();
}

class CpuBackend : public Backend {
public:
  explicit CpuBackend(TargetAttr target) : target(target) {}

  void buildPipeline(OpPassManager &pm,
                     const CompileOptions &options) const override {
    // Only a library links a second object; the other outputs are one file.
    buildCpuLoweringPipeline(pm, options.optLevel, getCpuLayout(target),
                             options.emit == EmitKind::Library,
                             getNeededCpuFeatures(target));
  }

  LogicalResult emit(ModuleOp module, const CompileOptions &options,
                     OutputFile &output) const override;

private:
  TargetAttr target;
};

LogicalResult CpuBackend::emit(ModuleOp module, const CompileOptions &options,
                               OutputFile &output) const {
  Location loc = module.getLoc();
  TimingScope noTiming;
  TimingScope &timing = options.timing ? *options.timing : noTiming;
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(target, loc);
  if (failed(machine))
    return failure();
  WeightsWriter weights;
  if (weights.take(module) &&
      failed(weights.start(options.outputPath, (*machine)->getTargetTriple(),
                           loc)))
    return failure();

  llvm::LLVMContext llvmContext;
  TimingScope translation = timing.nest("Translate to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  std::string dispatchError = lowerParallelDispatch(*llvmModule);
  if (!dispatchError.empty())
    return emitError(loc) << "internal error: " << dispatchError;
  exportDescriptorOnly(*llvmModule);
  std::string verifyMessage;
  llvm::raw_string_ostream verifyStream(verifyMessage);
  if (llvm::verifyModule(*llvmModule, &verifyStream))
    return emitError(loc) << "internal error: invalid LLVM IR: "
                          << verifyMessage;
  translation.stop();
  {
    TimingScope optimization = timing.nest("Optimize LLVM IR");
    optimizeModule(*llvmModule, **machine, options.optLevel, options.sanitizer);
  }

  if (options.emit == EmitKind::Llvm) {
    llvmModule->print(output.os(), nullptr);
    return success();
  }
  TimingScope codegen = timing.nest("Generate machine code");
  if (options.emit == EmitKind::Object) {
    if (llvm::Error error = writeObject(*llvmModule, **machine, output.os()))
      return emitError(loc) << llvm::toString(std::move(error));
    return success();
  }

  unsigned parts = countCodegenParts(*llvmModule);
  SmallVector<std::unique_ptr<llvm::TargetMachine>> machines;
  SmallVector<std::unique_ptr<OutputFile>> objectFiles;
  SmallVector<llvm::raw_pwrite_stream *> streams;
  machines.push_back(std::move(*machine));
  SmallString<256> objectBase(options.outputPath);
  objectBase += ".o";
  for (unsigned part = 0; part < parts; ++part) {
    if (part > 0) {
      machine = createTargetMachine(target, loc);
      if (failed(machine))
        return failure();
      machines.push_back(std::move(*machine));
    }
    auto &object = objectFiles.emplace_back(std::make_unique<OutputFile>());
    if (failed(object->create(objectBase, loc)))
      return failure();
    streams.push_back(&object->os());
  }
  if (llvm::Error error =
          writeObjectsInParallel(*llvmModule, machines, streams))
    return emitError(loc) << llvm::toString(std::move(error));
  SmallVector<StringRef, 4> objects;
  for (auto &object : objectFiles) {
    if (failed(object->close(loc)))
      return failure();
    objects.push_back(object->path());
  }
  codegen.stop();
  if (!weights.path().empty()) {
    TimingScope waiting = timing.nest("Finish writing weights");
    if (failed(weights.finish(module, loc)))
      return failure();
    objects.push_back(weights.path());
  }
  // lld writes the library itself, onto the output's temporary file.
  if (failed(output.close(loc)))
    return failure();
  TimingScope linking = timing.nest("Link with lld");
  std::string soname = options.libraryName.empty()
                           ? llvm::sys::path::filename(options.outputPath).str()
                           : options.libraryName;
  return linkSharedLibrary(objects, output.path(), soname, options.sanitizer,
                           loc);
}

} // namespace

std::unique_ptr<Backend> kiln::createCpuBackend(TargetAttr target) {
  return std::make_unique<CpuBackend>(target);
}

FailureOr<std::unique_ptr<Backend>> kiln::createBackend(TargetAttr target,
                                                        Location loc) {
  switch (target.getKind()) {
  case TargetKind::Cpu:
    return createCpuBackend(target);
  case TargetKind::Cuda:
    break;
  }
  return emitError(loc) << "Kiln has no backend for " << target
                        << " yet; CPU targets are supported";
}
