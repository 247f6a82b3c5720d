#include "symbolize/macho/macho_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "symbolize/elf/elf_file.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace {

// Mach-O format constants (<mach-o/loader.h>, <mach-o/fat.h>, <mach-o/nlist.h>).
constexpr uint32_t kMagic64 = 0xfeedfacf;
constexpr uint32_t kCigam64 = 0xcffaedfe;   // big-endian 64-bit: not read
constexpr uint32_t kFatMagic = 0xcafebabe;  // stored big-endian
constexpr uint32_t kFatMagic64 = 0xcafebabf;
constexpr uint32_t kCpuX86_64 = 0x01000007;
constexpr uint32_t kCpuArm64 = 0x0100000c;
constexpr uint32_t kLcSymtab = 0x2;
constexpr uint32_t kLcSegment64 = 0x19;
constexpr uint32_t kLcUuid = 0x1b;
constexpr size_t kHeaderSize = 32;
constexpr size_t kSegmentSize = 72;
constexpr size_t kSectionSize = 80;
constexpr size_t kNlistSize = 16;
constexpr uint8_t kNStab = 0xe0;
constexpr uint8_t kNTypeMask = 0x0e;
constexpr uint8_t kNSect = 0x0e;
constexpr uint8_t kNExt = 0x01;
constexpr uint32_t kSectionTypeMask = 0xff;
constexpr uint32_t kZeroFill = 0x1, kGbZeroFill = 0xc, kThreadLocalZeroFill = 0x12;
constexpr uint32_t kPureInstructions = 0x80000000u, kSomeInstructions = 0x400;
// A fat file lists a handful of slices; Java class files share its magic with a version >= 45.
constexpr uint32_t kMaxFatArchs = 32;

// Bounded little- and big-endian reads: out-of-range reads fail instead of reading past `data`.
class Bytes {
 public:
  explicit Bytes(std::span<const uint8_t> data) : data_(data) {}
  size_t size() const { return data_.size(); }
  bool has(uint64_t offset, uint64_t length) const {
    return offset <= data_.size() && length <= data_.size() - offset;
  }
  uint32_t u32(uint64_t offset, bool big = false) const {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint32_t b = data_[offset + (big ? i : 3 - i)];
      v = (v << 8) | b;
    }
    return v;
  }
  uint64_t u64(uint64_t offset, bool big = false) const {
    uint64_t hi = u32(offset + (big ? 0 : 4), big), lo = u32(offset + (big ? 4 : 0), big);
    return (hi << 32) | lo;
  }
  uint16_t u16(uint64_t offset) const {
    return static_cast<uint16_t>(data_[offset] | (data_[offset + 1] << 8));
  }
  uint8_t u8(uint64_t offset) const { return data_[offset]; }
  // A fixed-size name field (segname, sectname): up to its first NUL, anything unprintable as
  // '?' (the names go into one-line messages).
  std::string name(uint64_t offset, size_t length) const {
    const char* p = reinterpret_cast<const char*>(data_.data() + offset);
    std::string s(p, strnlen(p, length));
    for (char& c : s) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    return s;
  }
  std::span<const uint8_t> sub(uint64_t offset, uint64_t length) const {
    return data_.subspan(offset, length);
  }

 private:
  std::span<const uint8_t> data_;
};

const char* arch_of_cpu(uint32_t cpu) {
  if (cpu == kCpuX86_64) return "x86_64";
  if (cpu == kCpuArm64) return "aarch64";
  return nullptr;
}

// The slice [offset, offset + size) of a fat file for `arch`.
bool find_slice(const Bytes& file, std::string_view arch, uint64_t* offset, uint64_t* size,
                std::string* why) {
  const bool wide = file.u32(0, true) == kFatMagic64;
  const size_t entry = wide ? 32 : 20;
  const uint32_t count = file.u32(4, true);
  if (count == 0 || count > kMaxFatArchs) {
    *why = "not a Mach-O universal file (" + std::to_string(count) + " architectures)";
    return false;
  }
  if (!file.has(8, uint64_t{count} * entry)) {
    *why = "truncated Mach-O universal file (its architecture table)";
    return false;
  }
  std::string listed;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t at = 8 + uint64_t{i} * entry;
    const char* name = arch_of_cpu(file.u32(at, true));
    listed += listed.empty() ? "" : ", ";
    listed += name ? name : hex_u64(file.u32(at, true));
    if (!name || (!arch.empty() && arch != name)) continue;
    *offset = wide ? file.u64(at + 8, true) : file.u32(at + 8, true);
    *size = wide ? file.u64(at + 16, true) : file.u32(at + 12, true);
    if (!file.has(*offset, *size)) {
      *why = std::string("truncated Mach-O universal file (its ") + name + " slice)";
      return false;
    }
    return true;
  }
  *why = "Mach-O universal file has no " +
         (arch.empty() ? std::string("64-bit") : std::string(arch)) + " slice (it has " + listed +
         ")";
  return false;
}

bool read_sections(const Bytes& slice, uint64_t at, uint32_t cmdsize, MachOFile* out,
                   std::string* why) {
  if (cmdsize < kSegmentSize) {
    *why = "corrupt Mach-O file (LC_SEGMENT_64 too short)";
    return false;
  }
  std::string segment = slice.name(at + 8, 16);
  uint32_t nsects = slice.u32(at + 64);
  if (nsects > (cmdsize - kSegmentSize) / kSectionSize) {
    *why = "corrupt Mach-O file (segment " + segment + " lists more sections than it holds)";
    return false;
  }
  for (uint32_t i = 0; i < nsects; ++i) {
    uint64_t s = at + kSegmentSize + uint64_t{i} * kSectionSize;
    MachOSection section;
    section.name = slice.name(s, 16);
    section.segment = slice.name(s + 16, 16);
    section.addr = slice.u64(s + 32);
    section.size = slice.u64(s + 40);
    const uint32_t flags = slice.u32(s + 64);
    const uint32_t type = flags & kSectionTypeMask;
    const bool zero_fill = type == kZeroFill || type == kGbZeroFill || type == kThreadLocalZeroFill;
    section.file_offset = zero_fill ? 0 : slice.u32(s + 48);
    section.code = (flags & (kPureInstructions | kSomeInstructions)) != 0;
    if (section.addr + section.size < section.addr) {
      *why = "corrupt Mach-O file (section " + section.name + " wraps around)";
      return false;
    }
    out->sections.push_back(std::move(section));
  }
  return true;
}

bool read_symbols(const Bytes& slice, uint64_t at, MachOFile* out, std::string* why) {
  const uint32_t symoff = slice.u32(at + 8), nsyms = slice.u32(at + 12);
  const uint32_t stroff = slice.u32(at + 16), strsize = slice.u32(at + 20);
  if (!slice.has(symoff, uint64_t{nsyms} * kNlistSize) || !slice.has(stroff, strsize)) {
    *why = "truncated Mach-O file (its LC_SYMTAB symbols or strings lie outside it)";
    return false;
  }
  const std::span<const uint8_t> strings = slice.sub(stroff, strsize);
  std::vector<MachOSymbol> symbols;
  for (uint32_t i = 0; i < nsyms; ++i) {
    const uint64_t n = symoff + uint64_t{i} * kNlistSize;
    const uint32_t strx = slice.u32(n);
    const uint8_t type = slice.u8(n + 4), sect = slice.u8(n + 5);
    const uint64_t value = slice.u64(n + 8);
    if ((type & kNStab) || (type & kNTypeMask) != kNSect) continue;
    if (sect == 0 || sect > out->sections.size() || !out->sections[sect - 1].code) continue;
    const MachOSection& section = out->sections[sect - 1];
    // Only symbols inside their section (the executable's __mh_execute_header is not).
    if (value < section.addr || value >= section.addr + section.size) continue;
    if (strx == 0 || strx >= strings.size()) continue;
    const char* p = reinterpret_cast<const char*>(strings.data() + strx);
    std::string name(p, strnlen(p, strings.size() - strx));
    // Assembler temporaries ("ltmp0", "L…"): no function's name.
    if (name.empty() || name[0] == 'L' || name.starts_with("ltmp")) continue;
    symbols.push_back(
        MachOSymbol{value, section.addr + section.size, (type & kNExt) != 0, std::move(name)});
  }
  // By address; at one address the external name first, then the first listed.
  std::stable_sort(symbols.begin(), symbols.end(), [](const MachOSymbol& a, const MachOSymbol& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    return a.external && !b.external;
  });
  for (MachOSymbol& symbol : symbols) {
    if (!out->symbols.empty() && out->symbols.back().addr == symbol.addr) continue;
    if (!out->symbols.empty() && out->symbols.back().end > symbol.addr) {
      out->symbols.back().end = symbol.addr;
    }
    out->symbols.push_back(std::move(symbol));
  }
  return true;
}

bool parse_slice(const Bytes& slice, MachOFile* out, std::string* why) {
  if (!slice.has(0, 4)) {
    *why = "truncated Mach-O file (its header)";
    return false;
  }
  const uint32_t magic = slice.u32(0);
  if (magic == kCigam64) {
    *why = "big-endian Mach-O file: not supported";
    return false;
  }
  if (magic != kMagic64) {
    *why = "not a 64-bit Mach-O file (magic " + hex_u64(magic) + ")";
    return false;
  }
  if (!slice.has(0, kHeaderSize)) {
    *why = "truncated Mach-O file (its header)";
    return false;
  }
  const uint32_t cpu = slice.u32(4);
  const char* arch = arch_of_cpu(cpu);
  if (!arch) {
    *why = "Mach-O file for an unsupported CPU (" + hex_u64(cpu) + ")";
    return false;
  }
  out->arch = arch;
  const uint32_t ncmds = slice.u32(16), sizeofcmds = slice.u32(20);
  if (!slice.has(kHeaderSize, sizeofcmds)) {
    *why = "truncated Mach-O file (its load commands)";
    return false;
  }
  const uint64_t end = kHeaderSize + uint64_t{sizeofcmds};
  uint64_t at = kHeaderSize;
  std::optional<uint64_t> symtab;
  for (uint32_t i = 0; i < ncmds; ++i) {
    if (end - at < 8) {
      *why = "corrupt Mach-O file (load command " + std::to_string(i) + " outside sizeofcmds)";
      return false;
    }
    const uint32_t cmd = slice.u32(at), cmdsize = slice.u32(at + 4);
    if (cmdsize < 8 || cmdsize > end - at) {
      *why = "corrupt Mach-O file (load command " + std::to_string(i) + " has size " +
             std::to_string(cmdsize) + ")";
      return false;
    }
    if (cmd == kLcSegment64) {
      if (!read_sections(slice, at, cmdsize, out, why)) return false;
    } else if (cmd == kLcUuid && cmdsize >= 24) {
      out->uuid = hex_string(slice.sub(at + 8, 16));
    } else if (cmd == kLcSymtab && cmdsize >= 24) {
      symtab = at;
    }
    at += cmdsize;
  }
  // Symbols name sections by number: read them once every segment's sections are known.
  return !symtab || read_symbols(slice, *symtab, out, why);
}

}  // namespace

bool MachOFile::has_dwarf() const {
  const MachOSection* info = section("__DWARF", "__debug_info");
  return info && info->size > 0 && info->file_offset > 0;
}

const MachOSection* MachOFile::section(std::string_view segment, std::string_view name) const {
  for (const MachOSection& s : sections) {
    if (s.segment == segment && s.name == name) return &s;
  }
  return nullptr;
}

const MachOSymbol* MachOFile::symbol_at(uint64_t addr) const {
  auto it = std::upper_bound(symbols.begin(), symbols.end(), addr,
                             [](uint64_t a, const MachOSymbol& s) { return a < s.addr; });
  if (it == symbols.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

bool looks_like_macho(std::span<const uint8_t> bytes) {
  if (bytes.size() < 8) return false;
  Bytes b(bytes);
  const uint32_t le = b.u32(0), be = b.u32(0, true);
  if (le == kMagic64 || le == kCigam64) return true;
  return (be == kFatMagic || be == kFatMagic64) && b.u32(4, true) > 0 &&
         b.u32(4, true) <= kMaxFatArchs;
}

std::optional<MachOFile> parse_macho(std::span<const uint8_t> bytes, std::string_view arch,
                                     std::string* why) {
  Bytes file(bytes);
  if (!file.has(0, 8)) {
    *why = "truncated Mach-O file (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  MachOFile out;
  out.slice_size = bytes.size();
  const uint32_t be = file.u32(0, true);
  if (be == kFatMagic || be == kFatMagic64) {
    if (!find_slice(file, arch, &out.slice_offset, &out.slice_size, why)) return std::nullopt;
  }
  if (!parse_slice(Bytes(file.sub(out.slice_offset, out.slice_size)), &out, why)) {
    return std::nullopt;
  }
  if (!arch.empty() && out.arch != arch) {
    *why = "Mach-O file for " + out.arch + ", the dump is " + std::string(arch);
    return std::nullopt;
  }
  return out;
}

std::optional<MachOFile> read_macho_file(const std::string& path, std::string_view arch,
                                         std::string* why) {
  int fd = open_regular_file(path, why);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    *why = "empty file";
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    *why = std::string("cannot map: ") + std::strerror(errno);
    return std::nullopt;
  }
  auto out =
      parse_macho(std::span<const uint8_t>(static_cast<const uint8_t*>(map), size), arch, why);
  ::munmap(map, size);
  return out;
}

bool read_macho_section(const std::string& path, const MachOFile& file, const MachOSection& section,
                        std::vector<uint8_t>* out, std::string* why) {
  if (section.file_offset == 0 || section.file_offset > file.slice_size ||
      section.size > file.slice_size - section.file_offset) {
    *why = "section " + section.segment + "," + section.name + " lies outside the file";
    return false;
  }
  int fd = open_regular_file(path, why);
  if (fd < 0) return false;
  out->resize(section.size);
  size_t done = 0;
  while (done < out->size()) {
    ssize_t n = ::pread(fd, out->data() + done, out->size() - done,
                        static_cast<off_t>(file.slice_offset + section.file_offset + done));
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != out->size()) {
    *why = "cannot read section " + section.segment + "," + section.name + " (truncated file?)";
    return false;
  }
  return true;
}

bool is_macho_file(const std::string& path) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) return false;
  uint8_t head[8];
  ssize_t n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && looks_like_macho(head);
}

}  // namespace inprof::symbolicate
