#include "preload_check.h"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace inprof::launcher {
namespace {

bool is_executable_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

template <typename T>
bool read_at(std::ifstream& in, uint64_t offset, T* out) {
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(reinterpret_cast<char*>(out), sizeof(T)));
}

// The dynamic loader is named by PT_INTERP; without one, nothing reads LD_PRELOAD. That holds for
// ET_EXEC programs and for static PIEs (DF_1_PIE), but not for the loader itself (ld.so, which
// has no PT_INTERP and does honour LD_PRELOAD when run as `ld.so PROGRAM`).
template <typename Ehdr, typename Phdr, typename Dyn>
bool is_static(std::ifstream& in) {
  Ehdr header;
  if (!read_at(in, 0, &header)) return false;
  if (header.e_type != ET_EXEC && header.e_type != ET_DYN) return false;
  bool has_interpreter = false;
  std::optional<Phdr> dynamic;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Phdr ph;
    if (!read_at(in, header.e_phoff + uint64_t{i} * header.e_phentsize, &ph)) return false;
    if (ph.p_type == PT_INTERP) has_interpreter = true;
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
  }
  if (has_interpreter) return false;
  if (header.e_type == ET_EXEC) return true;
  if (!dynamic) return true;  // position-independent, yet nothing to link: static
  for (uint64_t off = dynamic->p_offset; off + sizeof(Dyn) <= dynamic->p_offset + dynamic->p_filesz;
       off += sizeof(Dyn)) {
    Dyn entry;
    if (!read_at(in, off, &entry) || entry.d_tag == DT_NULL) break;
    if (entry.d_tag == DT_FLAGS_1 && (entry.d_un.d_val & DF_1_PIE)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> find_program(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    return is_executable_file(name) ? std::optional(name) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/bin:/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

std::optional<std::string> preload_obstacle(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char ident[EI_NIDENT];
  if (!in.read(reinterpret_cast<char*>(ident), sizeof ident)) return std::nullopt;
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return std::nullopt;
  const bool is_static_program =
      ident[EI_CLASS] == ELFCLASS64   ? is_static<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn>(in)
      : ident[EI_CLASS] == ELFCLASS32 ? is_static<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn>(in)
                                      : false;
  if (is_static_program) {
    return "it is statically linked: no dynamic loader reads LD_PRELOAD there, so it cannot be "
           "profiled without changes (link libinprof into it and call inprof::Profiler::start)";
  }
  return std::nullopt;
}

}  // namespace inprof::launcher
