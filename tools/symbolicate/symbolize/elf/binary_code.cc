#include "symbolize/binary_code.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "symbolize/elf/cfi_slot.h"
#include "symbolize/elf/elf_file.h"

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
    // libdwfl reports the binary at its own addresses (elf/dwarf_symbolizer.cc): no bias.
    return cfi_return_slot(cfi(), vaddr, aarch64);
  }

  std::optional<std::pair<uint64_t, uint64_t>> function_range(uint64_t vaddr) override {
    // Covered by an entry at all (code between entries belongs to none of them)...
    Dwarf_CFI* table = cfi();
    Dwarf_Frame* frame = nullptr;
    if (!table || dwarf_cfi_addrframe(table, vaddr, &frame) != 0) return std::nullopt;
    std::free(frame);
    // ... which is then the one starting last at or before it: .eh_frame_hdr's sorted table of
    // entry starts (entries never overlap). The next start bounds it.
    const std::vector<uint64_t>& starts = entry_starts();
    auto next = std::upper_bound(starts.begin(), starts.end(), vaddr);
    if (next == starts.begin()) return std::nullopt;
    const uint64_t start = *(next - 1);
    return std::pair<uint64_t, uint64_t>(start, next == starts.end() ? UINT64_MAX : *next);
  }

  bool read_code(uint64_t vaddr, std::span<uint8_t> out) override {
    return read_loaded_code(elf_, vaddr, out);
  }

 private:
  // The initial locations of .eh_frame's entries, sorted: .eh_frame_hdr's search table, in the
  // encoding every linker writes (offsets from the header, 4 bytes each). Empty otherwise.
  const std::vector<uint64_t>& entry_starts() {
    if (starts_read_) return starts_;
    starts_read_ = true;
    size_t count = 0;
    if (elf_getphdrnum(elf_, &count) != 0) return starts_;
    for (size_t i = 0; i < count; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf_, static_cast<int>(i), &ph) || ph.p_type != PT_GNU_EH_FRAME) continue;
      uint8_t head[12];
      // version 1; eh_frame_ptr (any 4-byte encoding); fde_count as udata4; the table as
      // datarel|sdata4 pairs (initial location, entry).
      if (!read_loaded_code(elf_, ph.p_vaddr, head) || head[0] != 1 || head[2] != 0x03 ||
          head[3] != 0x3b || (head[1] & 0x0f) != 0x0b) {
        break;
      }
      uint32_t fdes;
      std::memcpy(&fdes, head + 8, 4);
      if (fdes == 0 || fdes > (64u << 20) / 8) break;
      std::vector<uint8_t> pairs(size_t{fdes} * 8);
      if (!read_loaded_code(elf_, ph.p_vaddr + 12, pairs)) break;
      starts_.reserve(fdes);
      for (size_t k = 0; k < fdes; ++k) {
        int32_t location;
        std::memcpy(&location, pairs.data() + k * 8, 4);
        starts_.push_back(ph.p_vaddr + static_cast<uint64_t>(static_cast<int64_t>(location)));
      }
      if (!std::is_sorted(starts_.begin(), starts_.end())) starts_.clear();
      break;
    }
    return starts_;
  }

  Dwarf_CFI* cfi() {
    if (!cfi_read_) {
      cfi_read_ = true;
      cfi_ = dwarf_getcfi_elf(elf_);  // .eh_frame (through .eh_frame_hdr's table when present)
    }
    return cfi_;
  }

  int fd_;
  Elf* elf_;
  bool cfi_read_ = false;
  Dwarf_CFI* cfi_ = nullptr;
  bool starts_read_ = false;
  std::vector<uint64_t> starts_;
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
