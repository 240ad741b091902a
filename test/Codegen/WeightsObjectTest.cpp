//===- WeightsObjectTest.cpp - the weights object, read back by LLVM ------===//
//
// The object is written by hand, so it is read back with LLVM's own ELF
// reader: every weight a hidden global object symbol of its size, aligned,
// in a read-only allocated section, holding its bytes.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/WeightsObject.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace llvm;

namespace {

struct Symbol {
  uint64_t address, size;
  uint8_t binding, type, visibility;
  std::string section;
  std::string bytes;
};

std::map<std::string, Symbol> readSymbols(const std::string &objectBytes,
                                          uint16_t machine) {
  std::unique_ptr<MemoryBuffer> buffer =
      MemoryBuffer::getMemBuffer(objectBytes, "weights.o", false);
  Expected<std::unique_ptr<object::ObjectFile>> file =
      object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!file) {
    ADD_FAILURE() << toString(file.takeError());
    return {};
  }
  auto *elf = dyn_cast<object::ELF64LEObjectFile>(file->get());
  if (!elf) {
    ADD_FAILURE() << "not a 64-bit little-endian ELF object";
    return {};
  }
  EXPECT_EQ(elf->getELFFile().getHeader().e_machine, machine);
  EXPECT_EQ(elf->getELFFile().getHeader().e_type, ELF::ET_REL);
  std::map<std::string, Symbol> symbols;
  for (const object::ELFSymbolRef &symbol : elf->symbols()) {
    Symbol info;
    info.address = cantFail(symbol.getAddress());
    info.size = symbol.getSize();
    info.binding = symbol.getBinding();
    info.type = symbol.getELFType();
    info.visibility = symbol.getOther() & 3;
    object::section_iterator section = cantFail(symbol.getSection());
    EXPECT_NE(section, elf->section_end());
    info.section = cantFail(section->getName()).str();
    EXPECT_EQ(object::ELFSectionRef(*section).getType(), ELF::SHT_PROGBITS);
    EXPECT_FALSE(object::ELFSectionRef(*section).getFlags() &
                 ELF::SHF_WRITE);
    EXPECT_TRUE(object::ELFSectionRef(*section).getFlags() & ELF::SHF_ALLOC);
    StringRef contents = cantFail(section->getContents());
    uint64_t offset = info.address - section->getAddress();
    EXPECT_LE(offset + info.size, contents.size());
    info.bytes = contents.substr(offset, info.size).str();
    symbols[cantFail(symbol.getName()).str()] = info;
  }
  return symbols;
}

TEST(WeightsObject, DefinesEachWeightAlignedHiddenAndReadOnly) {
  std::string odd(5, 'a'), large(100000, '\0'), one(1, 'z');
  for (size_t i = 0; i < large.size(); ++i)
    large[i] = static_cast<char>(i * 7 + 3);
  std::vector<kiln::WeightSymbol> weights = {
      {"odd_sized", ArrayRef<char>(odd.data(), odd.size())},
      {"__constant_large", ArrayRef<char>(large.data(), large.size())},
      {"one", ArrayRef<char>(one.data(), one.size())},
  };
  for (auto [triple, machine] :
       {std::pair<const char *, uint16_t>{"x86_64-unknown-linux-gnu",
                                          ELF::EM_X86_64},
        {"aarch64-unknown-linux-gnu", ELF::EM_AARCH64}}) {
    SCOPED_TRACE(triple);
    std::string object;
    raw_string_ostream os(object);
    ASSERT_FALSE(errorToBool(
        kiln::writeWeightsObject(os, Triple(triple), weights, 64)));
    std::map<std::string, Symbol> symbols = readSymbols(object, machine);
    ASSERT_EQ(symbols.size(), weights.size());
    for (const kiln::WeightSymbol &weight : weights) {
      SCOPED_TRACE(weight.name);
      ASSERT_EQ(symbols.count(weight.name), 1u);
      const Symbol &symbol = symbols[weight.name];
      EXPECT_EQ(symbol.size, weight.bytes.size());
      EXPECT_EQ(symbol.address % 64, 0u);
      EXPECT_EQ(symbol.binding, ELF::STB_GLOBAL);
      EXPECT_EQ(symbol.type, ELF::STT_OBJECT);
      EXPECT_EQ(symbol.visibility, ELF::STV_HIDDEN);
      EXPECT_EQ(symbol.section, ".rodata");
      EXPECT_EQ(symbol.bytes,
                std::string(weight.bytes.begin(), weight.bytes.end()));
    }
  }
}

TEST(WeightsObject, RefusesTargetsItCannotWrite) {
  std::string bytes(4, 'x');
  std::vector<kiln::WeightSymbol> weights = {
      {"w", ArrayRef<char>(bytes.data(), bytes.size())}};
  for (const char *triple :
       {"riscv64-unknown-linux-gnu", "x86_64-apple-darwin",
        "i686-unknown-linux-gnu"}) {
    std::string object;
    raw_string_ostream os(object);
    Error error = kiln::writeWeightsObject(os, Triple(triple), weights, 64);
    ASSERT_TRUE(static_cast<bool>(error)) << triple;
    EXPECT_NE(toString(std::move(error)).find(triple), std::string::npos);
    EXPECT_TRUE(object.empty()) << triple;
  }
}

} // namespace
