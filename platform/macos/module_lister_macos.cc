// Modules from dyld: every image's header (read in place, macho_image_macos.h), slide and path.
// dyld's add/remove callbacks only bump a counter, which changed() compares.
#include <atomic>

#include "darwin_declarations_macos.h"
#include "dump/dump_records.h"
#include "macho_image_macos.h"
#include "sampling/module_lister.h"

namespace inprof::internal {
namespace {

namespace d = darwin;

std::atomic<uint32_t> g_image_events{0};

// Called by dyld under its lock, for every image already loaded at registration and each later
// one: counts only.
void on_image_event(const d::mach_header*, intptr_t) {
  g_image_events.fetch_add(1, std::memory_order_relaxed);
}

class MacModuleLister final : public ModuleLister {
 public:
  MacModuleLister() {
    static const bool registered = [] {
      d::dyld_register_func_for_add_image(on_image_event);
      d::dyld_register_func_for_remove_image(on_image_event);
      return true;
    }();
    (void)registered;
  }

  bool changed() override {
    return !listed_ || g_image_events.load(std::memory_order_relaxed) != seen_events_;
  }

  void list(std::vector<ModuleInfo>& modules) override {
    listed_ = true;
    seen_events_ = g_image_events.load(std::memory_order_relaxed);
    modules.clear();
    const uint32_t count = d::dyld_image_count();
    for (uint32_t i = 0; i < count; ++i) {
      const auto* header = reinterpret_cast<const uint8_t*>(d::dyld_get_image_header(i));
      const char* name = d::dyld_get_image_name(i);
      if (header == nullptr || name == nullptr) continue;  // unloaded meanwhile
      uint32_t sizeofcmds;
      __builtin_memcpy(&sizeofcmds, header + 20, sizeof(sizeofcmds));
      ModuleInfo m;
      if (!read_macho_image({header, kMachHeader64Size + sizeofcmds},
                            d::dyld_get_image_vmaddr_slide(i), &m)) {
        continue;
      }
      m.path = name;
      if (i == 0) m.flags |= kModuleMainExecutable;  // dyld lists the executable first
      modules.push_back(std::move(m));
    }
  }

 private:
  bool listed_ = false;
  uint32_t seen_events_ = 0;
};

}  // namespace

std::unique_ptr<ModuleLister> ModuleLister::create() { return std::make_unique<MacModuleLister>(); }

std::span<const uint8_t> vdso_image(uint64_t, uint64_t) { return {}; }  // macOS has none

}  // namespace inprof::internal
