#include "mach_stack_copier_macos.h"

#include <algorithm>
#include <cstring>

namespace inprof::internal {

void copy_thread_stack(const MachStackBounds& bounds, StackSnapshot& out) {
  const uint64_t sp = out.sp();
  out.stack_start = sp;
  out.stack_size = 0;
  out.stack_found = false;
  out.stack_truncated = false;
  out.stack_region_known = true;
  if (bounds.base == 0 || out.buffer == nullptr) return;
  // SP elsewhere (a signal's alternate stack, a coroutine's) is not copied: its extent is unknown.
  if (sp < bounds.low || sp >= bounds.base || sp % 8 != 0) {
    out.stack_region_known = false;
    return;
  }
  const uint64_t available = bounds.base - sp;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(available, out.capacity)) & ~size_t{7};
  std::memcpy(out.buffer, reinterpret_cast<const void*>(sp), n);
  out.stack_size = n;
  out.stack_truncated = available > n;
  out.stack_found = n > 0;
}

MachStackCopier::MachStackCopier(MachApi& api, std::shared_ptr<MachApi> owned)
    : owned_(std::move(owned)), api_(api), ports_(api), code_mask_(api.code_address_mask()) {
  // Everything the suspended window calls, called once now (lazy binding, first-use setup).
  uint64_t regs[kRegisterCount];
  const MachPort self = api_.thread_self();
  (void)api_.thread_get_state(self, regs);
  (void)api_.now_ns();
  api_.port_deallocate(self);
}

CopyResult MachStackCopier::copy(uint64_t tid, StackSnapshot& out) {
  if (tid == api_.current_thread_id()) return CopyResult::kFailed;  // would never resume
  const MachPort port = ports_.find(tid);
  if (port == kMachPortNull) return CopyResult::kThreadGone;
  const MachStackBounds bounds = api_.stack_bounds(port);  // takes a lock: before suspending

  KernReturn kr = api_.thread_suspend(port);
  if (kr != kKernSuccess) {
    if (!is_thread_death(kr)) return CopyResult::kFailed;
    ports_.forget(tid);
    return CopyResult::kThreadGone;
  }
  // --- SUSPENDED from here to thread_resume ---------------------------------------------------
  out.time_ns = api_.now_ns();
  kr = api_.thread_get_state(port, out.regs);
  if (kr == kKernSuccess) {
    out.regs[kRegPc] &= code_mask_;
    if constexpr (kHasLinkRegister) out.regs[kRegLr] &= code_mask_;
    out.registers_partial = false;
    out.runnable = false;
    copy_thread_stack(bounds, out);
    out.label_count = copy_labels(out.label_source, out.label_owner, out.labels, kMaxLabelDepth);
  }
  if (api_.thread_resume(port) != kKernSuccess) ++resume_failures_;
  // --- resumed --------------------------------------------------------------------------------
  if (kr == kKernSuccess) return CopyResult::kOk;
  if (!is_thread_death(kr)) return CopyResult::kFailed;
  ports_.forget(tid);
  return CopyResult::kThreadGone;
}

}  // namespace inprof::internal
