// The macOS thread lister: MachThreadLister over the real Mach calls.
#include "mach_api_macos.h"
#include "mach_thread_lister_macos.h"

namespace inprof::internal {

std::unique_ptr<ThreadLister> ThreadLister::create() {
  return std::make_unique<MachThreadLister>(system_mach_api());
}

}  // namespace inprof::internal
