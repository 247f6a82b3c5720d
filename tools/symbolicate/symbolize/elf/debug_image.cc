#include "symbolize/elf/debug_image.h"

#include <elf.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string_view>

#include "symbolize/elf/elf_file.h"

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2  // newer <elf.h> only
#endif

namespace inprof::symbolicate {
namespace {

// Limits against a damaged or hostile file: what it claims is checked before space is made.
constexpr uint64_t kMaxSectionBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxImageBytes = uint64_t(4) << 30;
constexpr uint64_t kMaxAlign = 4096;

// Compressed sections symbolization never reads (location lists, macros, name indexes): left
// out of the image rather than inflated. Everything else compressed is inflated, names unknown to
// this list included.
bool never_read(std::string_view name) {
  static constexpr std::string_view kSkipped[] = {
      ".debug_loc",     ".debug_loclists",     ".debug_macro",
      ".debug_macinfo", ".debug_pubnames",     ".debug_pubtypes",
      ".debug_names",   ".debug_gnu_pubnames", ".debug_gnu_pubtypes"};
  return std::find(std::begin(kSkipped), std::end(kSkipped), name) != std::end(kSkipped);
}

uint64_t align_up(uint64_t v, uint64_t align) { return (v + align - 1) / align * align; }

// Inflates exactly `out_size` bytes; false if the data is damaged or has another size.
// libdeflate rather than zlib: the whole section is at hand, and it inflates twice as fast.
bool inflate_zlib(const uint8_t* in, uint64_t in_size, uint8_t* out, uint64_t out_size) {
  libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (!d) return false;
  size_t got = 0;
  libdeflate_result rc = libdeflate_zlib_decompress(d, in, in_size, out, out_size, &got);
  libdeflate_free_decompressor(d);
  return rc == LIBDEFLATE_SUCCESS && got == out_size;
}

bool inflate_zstd(const uint8_t* in, uint64_t in_size, uint8_t* out, uint64_t out_size) {
  size_t n = ZSTD_decompress(out, out_size, in, in_size);
  return !ZSTD_isError(n) && n == out_size;
}

}  // namespace

std::unique_ptr<DebugImage> DebugImage::plan(const std::string& path, std::string* why) {
  why->clear();
  if constexpr (std::endian::native != std::endian::little) return nullptr;
  std::unique_ptr<DebugImage> image(new DebugImage);
  if (!image->map_source(path, why)) return nullptr;
  const uint8_t* src = image->source_;
  const uint64_t src_size = image->source_size_;

  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, src, sizeof ehdr);
  if (std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 || ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
      ehdr.e_ident[EI_DATA] != ELFDATA2LSB || ehdr.e_shentsize != sizeof(Elf64_Shdr) ||
      ehdr.e_shnum == 0 || ehdr.e_shstrndx == SHN_UNDEF || ehdr.e_shstrndx >= ehdr.e_shnum ||
      ehdr.e_shoff > src_size || (src_size - ehdr.e_shoff) / sizeof(Elf64_Shdr) < ehdr.e_shnum) {
    return nullptr;  // 32-bit, big-endian, extended numbering or damaged: left to libdw
  }
  std::vector<Elf64_Shdr> shdrs(ehdr.e_shnum);
  std::memcpy(shdrs.data(), src + ehdr.e_shoff, shdrs.size() * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names = shdrs[ehdr.e_shstrndx];
  if (names.sh_type == SHT_NOBITS || names.sh_offset > src_size ||
      names.sh_size > src_size - names.sh_offset) {
    return nullptr;
  }
  auto name_of = [&](const Elf64_Shdr& s) -> std::string_view {
    if (s.sh_name >= names.sh_size) return {};
    const char* p = reinterpret_cast<const char*>(src + names.sh_offset + s.sh_name);
    return std::string_view(p, strnlen(p, names.sh_size - s.sh_name));
  };

  // The original bytes of compressed sections are not copied: [offset, end) ranges.
  std::vector<std::pair<uint64_t, uint64_t>> holes;
  uint64_t cursor = align_up(src_size, kMaxAlign);  // appended sections start here
  for (size_t i = 1; i < shdrs.size(); ++i) {
    Elf64_Shdr& s = shdrs[i];
    if (s.sh_type == SHT_NOBITS || !(s.sh_flags & SHF_COMPRESSED)) continue;
    if (s.sh_offset > src_size || s.sh_size > src_size - s.sh_offset ||
        s.sh_size < sizeof(Elf64_Chdr)) {
      return nullptr;
    }
    Elf64_Chdr chdr;
    std::memcpy(&chdr, src + s.sh_offset, sizeof chdr);
    if (never_read(name_of(s))) {
      holes.emplace_back(s.sh_offset, s.sh_offset + s.sh_size);
      image->skipped_bytes_ += s.sh_size;
      s.sh_type = SHT_NOBITS;
      s.sh_flags &= ~uint64_t(SHF_COMPRESSED);
      s.sh_size = chdr.ch_size;
      continue;
    }
    const uint64_t align = std::max<uint64_t>(chdr.ch_addralign, 1);
    if ((chdr.ch_type != ELFCOMPRESS_ZLIB && chdr.ch_type != ELFCOMPRESS_ZSTD) ||
        chdr.ch_size > kMaxSectionBytes || !std::has_single_bit(align) || align > kMaxAlign) {
      continue;  // left compressed: libdw inflates it, or says why not
    }
    cursor = align_up(cursor, align);
    if (cursor + chdr.ch_size > kMaxImageBytes) return nullptr;
    holes.emplace_back(s.sh_offset, s.sh_offset + s.sh_size);
    image->tasks_.push_back(Task{s.sh_offset + sizeof(Elf64_Chdr), s.sh_size - sizeof(Elf64_Chdr),
                                 cursor, chdr.ch_size, chdr.ch_type});
    image->inflated_bytes_ += chdr.ch_size;
    s.sh_offset = cursor;
    s.sh_size = chdr.ch_size;
    s.sh_addralign = align;
    s.sh_flags &= ~uint64_t(SHF_COMPRESSED);
    cursor += chdr.ch_size;
  }
  if (image->tasks_.empty()) return nullptr;  // nothing to gain
  std::sort(image->tasks_.begin(), image->tasks_.end(),
            [](const Task& a, const Task& b) { return a.size > b.size; });
  const uint64_t table = align_up(cursor, 8);
  image->size_ = table + shdrs.size() * sizeof(Elf64_Shdr);
  ehdr.e_shoff = table;
  if (!image->make_image(holes, &ehdr, sizeof ehdr, shdrs.data(), shdrs.size() * sizeof(Elf64_Shdr),
                         table, why)) {
    return nullptr;
  }
  return image;
}

bool DebugImage::map_source(const std::string& path, std::string* why) {
  int source_fd = open_regular_file(path, why);
  if (source_fd < 0) return false;
  struct stat st;
  if (::fstat(source_fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr)) ||
      static_cast<uint64_t>(st.st_size) > kMaxImageBytes) {
    ::close(source_fd);
    return false;  // not one to rewrite: libdw reads it as it is
  }
  path_ = path;
  source_size_ = static_cast<size_t>(st.st_size);
  void* mapped = ::mmap(nullptr, source_size_, PROT_READ, MAP_PRIVATE, source_fd, 0);
  ::close(source_fd);
  if (mapped == MAP_FAILED) {
    *why = std::string("cannot map the file: ") + std::strerror(errno);
    return false;
  }
  source_ = static_cast<const uint8_t*>(mapped);
  return true;
}

bool DebugImage::make_image(std::vector<std::pair<uint64_t, uint64_t>>& holes, const void* header,
                            size_t header_size, const void* section_table, size_t table_size,
                            uint64_t table_offset, std::string* why) {
  fd_ = ::memfd_create("inprof-debug-image", MFD_CLOEXEC);
  if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    *why = std::string("cannot make an in-memory file: ") + std::strerror(errno);
    return false;
  }
  void* mapped = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (mapped == MAP_FAILED) {
    *why = std::string("cannot map an in-memory file: ") + std::strerror(errno);
    return false;
  }
  image_ = static_cast<uint8_t*>(mapped);
  // The original's bytes where they were, but for the compressed sections (a hole stays zero and
  // takes no memory).
  std::sort(holes.begin(), holes.end());
  uint64_t from = 0;
  for (const auto& [begin, end] : holes) {
    if (begin > from) std::memcpy(image_ + from, source_ + from, begin - from);
    from = std::max(from, end);
  }
  if (from < source_size_) std::memcpy(image_ + from, source_ + from, source_size_ - from);
  std::memcpy(image_, header, header_size);
  std::memcpy(image_ + table_offset, section_table, table_size);
  return true;
}

void DebugImage::run_task(size_t i) {
  const Task& t = tasks_[i];
  const uint8_t* in = source_ + t.source_offset;
  uint8_t* out = image_ + t.target_offset;
  bool ok = t.compression == ELFCOMPRESS_ZLIB ? inflate_zlib(in, t.source_size, out, t.size)
                                              : inflate_zstd(in, t.source_size, out, t.size);
  if (!ok) failed_.fetch_add(1, std::memory_order_relaxed);
}

bool DebugImage::finish(std::string* why) {
  if (image_) ::munmap(image_, size_);
  image_ = nullptr;
  if (source_) ::munmap(const_cast<uint8_t*>(source_), source_size_);
  source_ = nullptr;
  if (failed_.load() != 0) {
    *why = std::to_string(failed_.load()) + " compressed sections do not inflate to their size";
    return false;
  }
  return fd_ >= 0;
}

std::unique_ptr<DebugImage> DebugImage::adopt(const std::string& path, int fd, uint64_t size) {
  std::unique_ptr<DebugImage> image(new DebugImage);
  image->path_ = path;
  image->fd_ = fd;
  image->size_ = size;
  return image;
}

DebugImage::~DebugImage() {
  if (image_) ::munmap(image_, size_);
  if (source_) ::munmap(const_cast<uint8_t*>(source_), source_size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace inprof::symbolicate
