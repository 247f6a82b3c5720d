// The loaded modules' executable segments on Linux (lib/pull/code_segments.h).
#include <link.h>

#include "pull/code_segments.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kCodePageBytes = 4096;

int add_code_segments(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<CodeSegment>*>(data);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type != PT_LOAD || !(p.p_flags & PF_X) || p.p_memsz == 0) continue;
    const uint64_t start = info->dlpi_addr + p.p_vaddr;
    out->push_back(CodeSegment{start & ~(kCodePageBytes - 1),
                               (start + p.p_memsz + kCodePageBytes - 1) & ~(kCodePageBytes - 1),
                               p.p_offset & ~(kCodePageBytes - 1)});
  }
  return 0;
}

}  // namespace

std::vector<CodeSegment> loaded_code_segments() {
  std::vector<CodeSegment> out;
  dl_iterate_phdr(add_code_segments, &out);
  return out;
}

}  // namespace inprof::internal
