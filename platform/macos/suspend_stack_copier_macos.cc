// The macOS stack copier: MachStackCopier over the real Mach calls. One at a time, as elsewhere.
#include <atomic>

#include "mach_api_macos.h"
#include "mach_stack_copier_macos.h"

namespace inprof::internal {
namespace {

std::atomic<bool> g_copier_exists{false};

class OnlyCopier final : public StackCopier {
 public:
  OnlyCopier() : copier_(system_mach_api()) {}
  ~OnlyCopier() override { g_copier_exists.store(false); }
  CopyResult copy(uint64_t tid, StackSnapshot& out) override { return copier_.copy(tid, out); }

 private:
  MachStackCopier copier_;
};

}  // namespace

std::unique_ptr<StackCopier> StackCopier::create(const Config&, Status* status) {
  bool expected = false;
  if (!g_copier_exists.compare_exchange_strong(expected, true)) {
    *status = Status::error(Status::Code::kAlreadyRunning, "a stack copier already exists");
    return nullptr;
  }
  *status = {};
  return std::make_unique<OnlyCopier>();
}

// The child of fork() has only the forking thread; the parent's copier object is abandoned.
void StackCopier::release_after_fork() { g_copier_exists.store(false); }

}  // namespace inprof::internal
