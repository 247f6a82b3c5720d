#include "symbolize/elf/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "text_util.h"

namespace inprof::symbolicate {
namespace {

// The GNU build-id in one note section's data, or "".
std::string build_id_in_notes(Elf_Data* data) {
  size_t offset = 0;
  GElf_Nhdr nhdr;
  size_t name_offset, desc_offset;
  while (offset < data->d_size &&
         (offset = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset)) > 0) {
    const char* name = static_cast<const char*>(data->d_buf) + name_offset;
    if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
        nhdr.n_descsz > 0) {
      return hex_string(std::span<const uint8_t>(
          static_cast<const uint8_t*>(data->d_buf) + desc_offset, nhdr.n_descsz));
    }
  }
  return {};
}

}  // namespace

int open_regular_file(const std::string& path, std::string* why) {
  struct stat st;
  if (path.empty()) {
    *why = "no file name";
    return -1;
  }
  if (::stat(path.c_str(), &st) != 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return -1;
  }
  // O_NONBLOCK: should the path be swapped for a FIFO after stat, open must not wait.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = "not a regular file";
    return -1;
  }
  return fd;
}

std::optional<ElfFileInfo> inspect_elf_file(const std::string& path, std::string* why) {
  int fd = open_regular_file(path, why);
  if (fd < 0) return std::nullopt;
  elf_version(EV_CURRENT);
  // Read, not mapped: only the headers, section names and notes are wanted, a few KB of a file
  // of megabytes; mapping it cost a mapping, its page faults and, at elf_end, a TLB flush (a
  // warm run inspects a dozen files).
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    *why = "not an ELF file";
    if (elf) elf_end(elf);
    ::close(fd);
    return std::nullopt;
  }
  ElfFileInfo info;
  size_t shstrndx = 0;
  bool have_names = elf_getshdrstrndx(elf, &shstrndx) == 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr)) continue;
    const char* name = have_names ? elf_strptr(elf, shstrndx, shdr.sh_name) : nullptr;
    if (shdr.sh_type == SHT_NOTE && info.build_id.empty()) {
      if (Elf_Data* data = elf_getdata(scn, nullptr)) info.build_id = build_id_in_notes(data);
      continue;
    }
    if (!name || shdr.sh_type == SHT_NOBITS) continue;
    if ((std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0) &&
        shdr.sh_size > 0) {
      info.has_dwarf = true;
    } else if (std::strcmp(name, ".gnu_debuglink") == 0) {
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (!data || !data->d_buf || data->d_size < 8) continue;
      const char* text = static_cast<const char*>(data->d_buf);
      size_t len = strnlen(text, data->d_size);
      size_t crc_offset = (len + 4) & ~size_t{3};  // the name, its NUL, padding to 4
      if (len == 0 || crc_offset + 4 > data->d_size) continue;
      uint32_t crc;
      std::memcpy(&crc, text + crc_offset, 4);
      if (elf_getident(elf, nullptr)[EI_DATA] == ELFDATA2MSB) crc = __builtin_bswap32(crc);
      std::string file(text, len);
      if (file.find('/') != std::string::npos) continue;  // a name, never a path
      info.debug_link = DebugLink{file, crc};
    }
  }
  elf_end(elf);
  ::close(fd);
  return info;
}

std::optional<uint32_t> file_crc32(const std::string& path) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) return std::nullopt;
  std::vector<unsigned char> buffer(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
  }
  ::close(fd);
  return static_cast<uint32_t>(crc);
}

}  // namespace inprof::symbolicate
