//===- ParallelCodegen.cpp - machine code on several threads --------------===//
//
// An LLVMContext is not thread-safe, so each part travels to its thread as
// bitcode and is read back into a context of its own there.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/ParallelCodegen.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <future>

using namespace llvm;

Error kiln::writeObject(Module &module, TargetMachine &machine,
                        raw_pwrite_stream &os) {
  legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr, CodeGenFileType::ObjectFile))
    return createStringError("the code generator cannot emit an object file");
  pm.run(module);
  return Error::success();
}

Error kiln::writeObjectsInParallel(
    Module &module, ArrayRef<std::unique_ptr<TargetMachine>> machines,
    ArrayRef<raw_pwrite_stream *> outputs) {
  assert(machines.size() == outputs.size() && "one machine per output");
  if (outputs.size() == 1)
    return writeObject(module, *machines.front(), *outputs.front());

  SmallVector<SmallVector<char, 0>> parts;
  SplitModule(module, outputs.size(), [&](std::unique_ptr<Module> part) {
    raw_svector_ostream os(parts.emplace_back());
    WriteBitcodeToFile(*part, os);
  });
  assert(parts.size() == outputs.size() && "SplitModule makes N parts");

  SmallVector<std::future<Error>> pending;
  for (auto [bitcode, machine, os] : llvm::zip_equal(parts, machines, outputs))
    pending.push_back(std::async(
        std::launch::async,
        [&bitcode = bitcode, &machine = *machine, os = os]() -> Error {
          LLVMContext context;
          Expected<std::unique_ptr<Module>> part = parseBitcodeFile(
              MemoryBufferRef(StringRef(bitcode.data(), bitcode.size()),
                              "part"),
              context);
          if (!part)
            return part.takeError();
          return writeObject(**part, machine, *os);
        }));
  Error result = Error::success();
  for (std::future<Error> &part : pending)
    result = joinErrors(std::move(result), part.get());
  return result;
}
