//===- Compiler.cpp - from a kiln module to an artifact on disk -----------===//
#include "lib/Codegen/Compiler.h"

#include "dialects/Kiln/IR/KilnDialect.h"
#include "kiln/Config.h"
#include "kiln/abi.h"
#include "lib/Codegen/ParallelDispatch.h"
#include "lib/Codegen/Pipeline.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
using namespace kiln;

namespace {

/// A file created next to the final output and renamed onto it by commit();
/// removed if the compile fails before that.
class PendingOutput {
public:
  ~PendingOutput() {
    if (!tempPath.empty())
      llvm::sys::fs::remove(tempPath);
  }

  LogicalResult create(StringRef finalPath, Location loc) {
    this->finalPath = finalPath.str();
    SmallString<256> model(finalPath);
    model += ".tmp-%%%%%%";
    int fd;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueFile(model, fd, tempPath))
      return emitError(loc)
             << "cannot write '" << finalPath << "': " << ec.message();
    stream = std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
    return success();
  }

  llvm::raw_fd_ostream &os() { return *stream; }
  StringRef path() const { return tempPath; }

  /// Flushes and closes the file; an error names the final path.
  LogicalResult close(Location loc) {
    if (closed)
      return success();
    closed = true;
    stream->close();
    if (!stream->has_error())
      return success();
    std::error_code ec = stream->error();
    stream->clear_error();
    return emitError(loc) << "cannot write '" << finalPath
                          << "': " << ec.message();
  }

  LogicalResult commit(Location loc) {
    if (failed(close(loc)))
      return failure();
    if (std::error_code ec = llvm::sys::fs::rename(tempPath, finalPath))
      return emitError(loc)
             << "cannot write '" << finalPath << "': " << ec.message();
    tempPath.clear();
    return success();
  }

private:
  std::string finalPath;
  SmallString<256> tempPath;
  std::unique_ptr<llvm::raw_fd_ostream> stream;
  bool closed = false;
};

/// Writes text through `print` to the output (or stdout for "-").
LogicalResult writeText(StringRef path, Location loc,
                        function_ref<void(llvm::raw_ostream &)> print) {
  if (path == "-") {
    print(llvm::outs());
    return success();
  }
  PendingOutput output;
  if (failed(output.create(path, loc)))
    return failure();
  print(output.os());
  return output.commit(loc);
}

FailureOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(StringRef cpuName, Location loc) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no code generator for " << triple.str() << ": "
                          << error;
  std::string cpu = cpuName.str();
  llvm::SubtargetFeatures features;
  if (cpuName == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features.AddFeature(feature.first(), feature.second);
  }
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features.getString(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return emitError(loc) << "cannot generate code for CPU '" << cpu << "'";
  return machine;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    OptLevel level) {
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
  // LLVM's O3 multiplied machine-code time by 15 on the bundled example and
  // ran its untiled loops slower, so Kiln's -O0..-O2 use LLVM's O2 and only
  // -O3 asks for more.
  builder
      .buildPerModuleDefaultPipeline(level == OptLevel::O3
                                         ? llvm::OptimizationLevel::O3
                                         : llvm::OptimizationLevel::O2)
      .run(module, mam);
}

LogicalResult writeObject(llvm::Module &module, llvm::TargetMachine &machine,
                          llvm::raw_pwrite_stream &os, Location loc) {
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return emitError(loc) << "the code generator cannot emit an object file";
  pm.run(module);
  return success();
}

/// Makes everything the module defines internal but the descriptor's
/// getter, so an artifact exports one symbol and LLVM may inline the rest.
void exportDescriptorOnly(llvm::Module &module) {
  for (llvm::Function &function : module)
    if (!function.isDeclaration() &&
        function.getName() != KILN_ABI_ARTIFACT_SYMBOL)
      function.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &global : module.globals())
    if (!global.isDeclaration())
      global.setLinkage(llvm::GlobalValue::InternalLinkage);
}

/// Links `objectPath` into the shared library `outputPath` with lld; the
/// library's soname is the file name of `finalPath`.
LogicalResult linkSharedLibrary(StringRef objectPath, StringRef outputPath,
                                StringRef finalPath, Location loc) {
  std::string soname = llvm::sys::path::filename(finalPath).str();
  SmallVector<StringRef> args = {KILN_LLD_PATH,
                                 "-shared",
                                 "--no-undefined",
                                 "-z",
                                 "now",
                                 "-z",
                                 "relro",
                                 "--hash-style=gnu",
                                 "-soname",
                                 soname,
                                 "-o",
                                 outputPath,
                                 objectPath,
                                 KILN_LIBM_PATH,
                                 KILN_LIBC_PATH};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(KILN_LLD_PATH, args, std::nullopt, {},
                                         0, 0, &error);
  if (status != 0)
    return emitError(loc) << "linking with " << KILN_LLD_PATH << " failed"
                          << (error.empty() ? "" : ": " + error);
  return success();
}

} // namespace

void kiln::registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registry.insert<KilnDialect>();
}

LogicalResult kiln::compileModule(ModuleOp module,
                                  const CompileOptions &options) {
  Location loc = module.getLoc();
  if (options.emit == EmitKind::Mlir)
    return writeText(options.outputPath, loc,
                     [&](llvm::raw_ostream &os) { module.print(os); });

  TimingScope noTiming;
  TimingScope &timing = options.timing ? *options.timing : noTiming;
  auto runPipeline = [&](StringRef name,
                         LogicalResult (*build)(OpPassManager &, OptLevel)) {
    PassManager pm(module.getContext());
    if (options.configurePassManager &&
        failed(options.configurePassManager(pm)))
      return failure();
    if (failed(build(pm, options.optLevel)))
      return LogicalResult(emitError(loc)
                           << "internal error: invalid pipeline");
    TimingScope scope = timing.nest(name);
    pm.enableTiming(scope);
    return pm.run(module);
  };
  if (failed(runPipeline("Graph passes", buildGraphPipeline)) ||
      failed(
          runPipeline("Lower to the LLVM dialect", buildCpuLoweringPipeline)))
    return failure();

  llvm::LLVMContext llvmContext;
  TimingScope translation = timing.nest("Translate to LLVM IR");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  FailureOr<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(options.targetCpu, loc);
  if (failed(machine))
    return failure();
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
    optimizeModule(*llvmModule, **machine, options.optLevel);
  }

  if (options.emit == EmitKind::Llvm)
    return writeText(options.outputPath, loc, [&](llvm::raw_ostream &os) {
      llvmModule->print(os, nullptr);
    });

  TimingScope codegen = timing.nest("Generate machine code");
  if (options.emit == EmitKind::Object) {
    PendingOutput output;
    if (failed(output.create(options.outputPath, loc)) ||
        failed(writeObject(*llvmModule, **machine, output.os(), loc)))
      return failure();
    return output.commit(loc);
  }

  // lld writes the library itself; reserving its temporary name first also
  // reports an unwritable output before the object is made.
  PendingOutput library, object;
  if (failed(library.create(options.outputPath, loc)) ||
      failed(library.close(loc)))
    return failure();
  SmallString<256> objectBase(options.outputPath);
  objectBase += ".o";
  if (failed(object.create(objectBase, loc)) ||
      failed(writeObject(*llvmModule, **machine, object.os(), loc)) ||
      failed(object.close(loc)))
    return failure();
  codegen.stop();
  TimingScope linking = timing.nest("Link with lld");
  if (failed(linkSharedLibrary(object.path(), library.path(),
                               options.outputPath, loc)))
    return failure();
  return library.commit(loc);
}
