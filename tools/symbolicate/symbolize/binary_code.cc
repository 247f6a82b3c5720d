#include "symbolize/binary_code.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "symbolize/cfi_slot.h"
#include "symbolize/elf_file.h"

namespace inprof::symbolicate {

bool read_loaded_code(Elf* elf, uint64_t vaddr, std::span<uint8_t> out) {
  size_t count = 0;
  if (out.empty() || !elf || elf_getphdrnum(elf, &count) != 0) return false;
  size_t file_size = 0;
  const char* file = elf_rawfile(elf, &file_size);
  if (!file) return false;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > ph.p_filesz ||
        out.size() > ph.p_filesz - (vaddr - ph.p_vaddr)) {
      continue;
    }
    const uint64_t offset = ph.p_offset + (vaddr - ph.p_vaddr);
    if (offset > file_size || out.size() > file_size - offset) return false;
    std::memcpy(out.data(), file + offset, out.size());
    return true;
  }
  return false;
}
namespace {

class ElfBinaryCode final : public BinaryCode {
 public:
  ElfBinaryCode(int fd, Elf* elf) : fd_(fd), elf_(elf) {}
  ~ElfBinaryCode() override {
    if (cfi_) dwarf_cfi_end(cfi_);
    elf_end(elf_);
    ::close(fd_);
  }

  std::optional<std::optional<unsigned>> return_address_slot(uint64_t vaddr,
                                                             bool aarch64) override {
    if (!cfi_read_) {
      cfi_read_ = true;
      cfi_ = dwarf_getcfi_elf(elf_);  // .eh_frame (through .eh_frame_hdr's table when present)
    }
    // libdwfl reports the binary at its own addresses (module_symbolizer.cc): no bias.
    return cfi_return_slot(cfi_, vaddr, aarch64);
  }

  bool read_code(uint64_t vaddr, std::span<uint8_t> out) override {
    return read_loaded_code(elf_, vaddr, out);
  }

 private:
  int fd_;
  Elf* elf_;
  bool cfi_read_ = false;
  Dwarf_CFI* cfi_ = nullptr;
};

}  // namespace

std::unique_ptr<BinaryCode> BinaryCode::open(const ModuleFiles& files) {
  if (files.binary.empty() || files.macho) return nullptr;
  std::string why;
  const int fd = open_regular_file(files.binary, &why);
  if (fd < 0) return nullptr;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  GElf_Ehdr ehdr;
  size_t phnum = 0;
  bool loads = false;
  if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &ehdr) &&
      (ehdr.e_type == ET_EXEC || ehdr.e_type == ET_DYN) && elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum && !loads; ++i) {
      GElf_Phdr ph;
      loads = gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD;
    }
  }
  if (!loads) {  // not what libdwfl would report as the module: leave it to the reader
    if (elf) elf_end(elf);
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<ElfBinaryCode>(fd, elf);
}

}  // namespace inprof::symbolicate
