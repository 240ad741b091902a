//===- WeightsObject.cpp - weights straight into an object file -----------===//
//
// The object: the ELF header, one .rodata section holding every weight at
// an aligned offset, a symbol table with one global hidden object symbol
// per weight, its string table, the section names, and the section headers.
// No relocations: it is data only.
//
//===----------------------------------------------------------------------===//
#include "lib/Codegen/WeightsObject.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

using namespace llvm;

namespace {

enum Section : uint16_t { Null, RoData, SymTab, StrTab, ShStrTab, Count };

template <typename T> void writeStruct(raw_ostream &os, const T &value) {
  os.write(reinterpret_cast<const char *>(&value), sizeof(T));
}

void writePadding(raw_ostream &os, uint64_t &offset, uint64_t alignment) {
  uint64_t aligned = alignTo(offset, alignment);
  os.write_zeros(aligned - offset);
  offset = aligned;
}

} // namespace

Error kiln::writeWeightsObject(raw_ostream &os, const Triple &triple,
                               ArrayRef<WeightSymbol> weights,
                               uint64_t alignment) {
  uint16_t machine;
  if (triple.getArch() == Triple::x86_64)
    machine = ELF::EM_X86_64;
  else if (triple.getArch() == Triple::aarch64)
    machine = ELF::EM_AARCH64;
  else
    return createStringError("writing weights for " + triple.str() +
                             " is not supported (x86-64 and AArch64 are)");
  if (!triple.isOSBinFormatELF())
    return createStringError("artifacts for " + triple.str() +
                             " are not ELF shared libraries");

  // Offsets: the header, the data, then the tables and section headers.
  uint64_t dataStart = alignTo(sizeof(ELF::Elf64_Ehdr), alignment);
  SmallVector<uint64_t> offsets;
  uint64_t dataSize = 0;
  std::string strtab(1, '\0');
  SmallVector<uint32_t> nameOffsets;
  for (const WeightSymbol &weight : weights) {
    dataSize = alignTo(dataSize, alignment);
    offsets.push_back(dataSize);
    dataSize += weight.bytes.size();
    nameOffsets.push_back(strtab.size());
    strtab += weight.name;
    strtab.push_back('\0');
  }
  const char shstrtab[] = "\0.rodata\0.symtab\0.strtab\0.shstrtab";
  const uint32_t shName[Count] = {0, 1, 9, 17, 25};
  uint64_t symtabStart = alignTo(dataStart + dataSize, 8);
  uint64_t symtabSize = (weights.size() + 1) * sizeof(ELF::Elf64_Sym);
  uint64_t strtabStart = symtabStart + symtabSize;
  uint64_t shstrtabStart = strtabStart + strtab.size();
  uint64_t headersStart = alignTo(shstrtabStart + sizeof(shstrtab), 8);

  ELF::Elf64_Ehdr header;
  std::memset(&header, 0, sizeof(header));
  std::memcpy(header.e_ident, ELF::ElfMagic, 4);
  header.e_ident[ELF::EI_CLASS] = ELF::ELFCLASS64;
  header.e_ident[ELF::EI_DATA] = ELF::ELFDATA2LSB;
  header.e_ident[ELF::EI_VERSION] = ELF::EV_CURRENT;
  header.e_ident[ELF::EI_OSABI] = ELF::ELFOSABI_NONE;
  header.e_type = ELF::ET_REL;
  header.e_machine = machine;
  header.e_version = ELF::EV_CURRENT;
  header.e_shoff = headersStart;
  header.e_ehsize = sizeof(ELF::Elf64_Ehdr);
  header.e_shentsize = sizeof(ELF::Elf64_Shdr);
  header.e_shnum = Count;
  header.e_shstrndx = ShStrTab;
  uint64_t offset = 0;
  writeStruct(os, header);
  offset += sizeof(header);

  writePadding(os, offset, alignment);
  for (const WeightSymbol &weight : weights) {
    writePadding(os, offset, alignment);
    os.write(weight.bytes.data(), weight.bytes.size());
    offset += weight.bytes.size();
  }

  writePadding(os, offset, 8);
  ELF::Elf64_Sym symbol;
  std::memset(&symbol, 0, sizeof(symbol));
  writeStruct(os, symbol);
  for (auto [i, weight] : llvm::enumerate(weights)) {
    symbol.st_name = nameOffsets[i];
    symbol.setBindingAndType(ELF::STB_GLOBAL, ELF::STT_OBJECT);
    symbol.st_other = ELF::STV_HIDDEN;
    symbol.st_shndx = RoData;
    symbol.st_value = offsets[i];
    symbol.st_size = weight.bytes.size();
    writeStruct(os, symbol);
  }
  os.write(strtab.data(), strtab.size());
  os.write(shstrtab, sizeof(shstrtab));
  offset = shstrtabStart + sizeof(shstrtab);
  writePadding(os, offset, 8);

  auto section = [&](Section index, uint32_t type, uint64_t flags,
                     uint64_t start, uint64_t size, uint32_t link,
                     uint32_t info, uint64_t align, uint64_t entsize) {
    ELF::Elf64_Shdr shdr;
    std::memset(&shdr, 0, sizeof(shdr));
    shdr.sh_name = shName[index];
    shdr.sh_type = type;
    shdr.sh_flags = flags;
    shdr.sh_offset = start;
    shdr.sh_size = size;
    shdr.sh_link = link;
    shdr.sh_info = info;
    shdr.sh_addralign = align;
    shdr.sh_entsize = entsize;
    writeStruct(os, shdr);
  };
  section(Null, ELF::SHT_NULL, 0, 0, 0, 0, 0, 0, 0);
  section(RoData, ELF::SHT_PROGBITS, ELF::SHF_ALLOC, dataStart, dataSize, 0, 0,
          alignment, 0);
  // sh_info: the index of the first global symbol (all but the null one).
  section(SymTab, ELF::SHT_SYMTAB, 0, symtabStart, symtabSize, StrTab, 1, 8,
          sizeof(ELF::Elf64_Sym));
  section(StrTab, ELF::SHT_STRTAB, 0, strtabStart, strtab.size(), 0, 0, 1, 0);
  section(ShStrTab, ELF::SHT_STRTAB, 0, shstrtabStart, sizeof(shstrtab), 0, 0,
          1, 0);
  return Error::success();
}
