// The executable and the shared libraries mapped into this process. Called from the sampler
// thread only, never while a thread is stopped (the OS's module list takes the loader lock).
#ifndef INPROF_LIB_MODULE_LISTER_H_
#define INPROF_LIB_MODULE_LISTER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace inprof::internal {

struct ModuleInfo {
  std::string path;
  uint64_t start = 0;  // lowest and one past the highest address of its loaded segments
  uint64_t end = 0;
  uint64_t load_bias = 0;
  uint64_t file_offset = 0;
  std::vector<uint8_t> build_id;
  uint32_t flags = 0;                                      // ModuleFlags of the dump
  std::vector<std::pair<uint64_t, uint64_t>> code_ranges;  // executable segments [begin, end)
};

// The vDSO's whole ELF image (a few KiB), when [start, end) is the module the kernel mapped as
// the vDSO; empty otherwise, and where there is none. Reads only the process's own memory.
std::span<const uint8_t> vdso_image(uint64_t start, uint64_t end);

class ModuleLister {
 public:
  static std::unique_ptr<ModuleLister> create();
  virtual ~ModuleLister() = default;

  // Cheap: whether modules may have been loaded or unloaded since the last list().
  virtual bool changed() = 0;
  virtual void list(std::vector<ModuleInfo>& modules) = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_MODULE_LISTER_H_
