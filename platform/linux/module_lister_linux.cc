// Modules from dl_iterate_phdr: load bias, segments and the GNU build-id note, read from the
// mapped image itself (no file I/O, so a stripped or deleted file still gets its identity).
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "dump/dump_records.h"
#include "loaded_image_linux.h"
#include "sampling/module_lister.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

struct ListContext {
  std::vector<ModuleInfo>* modules;
  const std::string* executable;
};

int add_module(dl_phdr_info* info, size_t, void* data) {
  auto* ctx = static_cast<ListContext*>(data);
  ModuleInfo m;
  m.load_bias = info->dlpi_addr;
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) ph = program_header(info, i);
    if (ph.p_type != PT_LOAD) continue;
    uint64_t begin = info->dlpi_addr + ph.p_vaddr;
    uint64_t end = begin + ph.p_memsz;
    if (begin < low) {
      low = begin;
      m.file_offset = ph.p_offset & ~(page_size() - 1);
    }
    if (end > high) high = end;
    if (ph.p_flags & PF_X) m.code_ranges.emplace_back(begin, end);
  }
  if (low >= high) return 0;  // nothing mapped
  m.start = low & ~(page_size() - 1);
  m.end = high;
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') {
    // The first entry without a name is the executable itself.
    if (ctx->modules->empty()) {
      m.path = *ctx->executable;
      m.flags |= kModuleMainExecutable;
    }
  } else {
    m.path = name;
    if (std::strncmp(name, "linux-vdso", 10) == 0 || std::strncmp(name, "linux-gate", 10) == 0) {
      m.flags |= kModuleVdso;
    }
  }
  m.build_id = find_build_id(info);
  ctx->modules->push_back(std::move(m));
  return 0;
}

struct Counters {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int read_counters(dl_phdr_info* info, size_t size, void* data) {
  auto* c = static_cast<Counters*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: stop after the first
}

// The loader names a library as it found it: often a link (liblzma.so.5), not the file that was
// mapped (liblzma.so.5.4.1). The link resolved, for an absolute name; the name itself otherwise
// (a relative name depends on a working directory that may have changed, a deleted file has no
// path to resolve).
std::string resolved_path(const std::string& name) {
  if (name.empty() || name[0] != '/') return name;
  char real[PATH_MAX];
  return ::realpath(name.c_str(), real) ? std::string(real) : name;
}

class LinuxModuleLister final : public ModuleLister {
 public:
  LinuxModuleLister() : executable_(executable_path()) {}

  bool changed() override {
    Counters now;
    dl_iterate_phdr(read_counters, &now);
    return !listed_ || now.adds != seen_.adds || now.subs != seen_.subs;
  }

  void list(std::vector<ModuleInfo>& modules) override {
    dl_iterate_phdr(read_counters, &seen_);
    listed_ = true;
    modules.clear();
    ListContext ctx{&modules, &executable_};
    dl_iterate_phdr(add_module, &ctx);
    // Resolved after the walk, which holds the loader's lock; each module once while it stays
    // loaded (its key, loader name and bias, is stable meanwhile).
    std::map<std::pair<std::string, uint64_t>, std::string> resolved;
    for (ModuleInfo& m : modules) {
      if (m.flags & (kModuleMainExecutable | kModuleVdso)) continue;  // exe: /proc/self/exe's
      auto key = std::make_pair(m.path, m.load_bias);
      auto it = resolved_.find(key);
      std::string real = it != resolved_.end() ? std::move(it->second) : resolved_path(m.path);
      m.path = real;
      resolved.emplace(std::move(key), std::move(real));
    }
    resolved_.swap(resolved);  // forgets what was unloaded
  }

 private:
  std::string executable_;
  Counters seen_;
  bool listed_ = false;
  std::map<std::pair<std::string, uint64_t>, std::string> resolved_;  // by loader name and bias
};

}  // namespace

std::span<const uint8_t> vdso_image(uint64_t start, uint64_t end) {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (base == 0 || base != start || end <= start) return {};
  // The kernel maps the vDSO's whole file: its size is where its last part (the section headers,
  // or a segment) ends, within the mapping.
  const uint64_t mapped = ((end - start) + page_size() - 1) & ~(page_size() - 1);
  if (mapped < sizeof(ElfW(Ehdr))) return {};
  const auto* ehdr = reinterpret_cast<const ElfW(Ehdr)*>(base);
  if (std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0) return {};
  uint64_t size = uint64_t{ehdr->e_shoff} + uint64_t{ehdr->e_shnum} * ehdr->e_shentsize;
  const uint64_t phdrs_end = uint64_t{ehdr->e_phoff} + uint64_t{ehdr->e_phnum} * ehdr->e_phentsize;
  if (phdrs_end > mapped) return {};
  const auto* phdr = reinterpret_cast<const ElfW(Phdr)*>(base + ehdr->e_phoff);
  for (unsigned i = 0; i < ehdr->e_phnum; ++i) {
    size = std::max<uint64_t>(size, uint64_t{phdr[i].p_offset} + phdr[i].p_filesz);
  }
  if (size > mapped) return {};
  return {reinterpret_cast<const uint8_t*>(base), static_cast<size_t>(size)};
}

std::unique_ptr<ModuleLister> ModuleLister::create() {
  return std::make_unique<LinuxModuleLister>();
}

}  // namespace inprof::internal
