// StackCopier for Windows: SuspendThread, GetThreadContext, copy of the top of the stack,
// ResumeThread. The thread is stopped only for the context and the copy; unwinding happens later
// on the copy (rtl_unwinder_windows.cc), because RtlLookupFunctionEntry takes ntdll locks that
// the suspended thread may hold.
//
// SUSPENDED (between SuspendThread and ResumeThread): only system calls that take no user-mode
// lock — GetThreadContext, VirtualQuery, QueryPerformanceCounter — and plain copies. No
// allocation: the suspended thread may hold the heap lock.
// <windows.h> must come before the other Windows headers.
// clang-format off
#include <windows.h>
#include <mmsystem.h>
#include <winternl.h>
// clang-format on

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <unordered_map>

#include "sampling/stack_copier.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

std::atomic<bool> g_copier_exists{false};

// The start of NT_TIB, the head of every thread's TEB: the bounds of its current stack.
struct TibStackBounds {
  uint64_t exception_list;
  uint64_t stack_base;   // one past the highest address
  uint64_t stack_limit;  // lowest committed address
};

// The TEB's address, from NtQueryInformationThread(ThreadBasicInformation). Declared here:
// MinGW's winternl.h names the class but not the structure.
struct ThreadBasicInformation {
  LONG exit_status;
  PVOID teb_base_address;
  struct {
    HANDLE unique_process;
    HANDLE unique_thread;
  } client_id;
  ULONG_PTR affinity_mask;
  LONG priority;
  LONG base_priority;
};

// x64 CONTEXT to DWARF register numbers (arch_x86_64.h).
void capture_registers(const CONTEXT& c, uint64_t* regs) {
  regs[0] = c.Rax;
  regs[1] = c.Rdx;
  regs[2] = c.Rcx;
  regs[3] = c.Rbx;
  regs[4] = c.Rsi;
  regs[5] = c.Rdi;
  regs[6] = c.Rbp;
  regs[7] = c.Rsp;
  regs[8] = c.R8;
  regs[9] = c.R9;
  regs[10] = c.R10;
  regs[11] = c.R11;
  regs[12] = c.R12;
  regs[13] = c.R13;
  regs[14] = c.R14;
  regs[15] = c.R15;
  regs[16] = c.Rip;
}

// SUSPENDED: word copy of memory VirtualQuery showed committed and readable.
void copy_words(uint8_t* dst, const uint8_t* src, size_t n) {
  auto* d = reinterpret_cast<uint64_t*>(dst);
  auto* s = reinterpret_cast<const volatile uint64_t*>(src);
  for (size_t i = 0; i < n / 8; ++i) d[i] = s[i];
}

// SUSPENDED: copies [SP, top of stack) into the snapshot, bounded by its capacity, by the TEB's
// stack bounds and by the committed region SP lies in. SP in a guard page (the stack is growing
// into it) or outside the thread's stack (a fiber, a custom stack) leaves the copy empty: reading
// a guard page would fire it in this thread's name (STATUS_GUARD_PAGE_VIOLATION).
void copy_stack(uint64_t teb, StackSnapshot& out) {
  const uint64_t sp = out.sp();
  out.stack_start = sp;
  out.stack_size = 0;
  out.stack_found = false;
  out.stack_truncated = false;
  if (teb == 0) return;
  // A suspended thread exists, so its TEB is mapped: read directly.
  const auto* tib = reinterpret_cast<const volatile TibStackBounds*>(teb);
  const TibStackBounds bounds{0, tib->stack_base, tib->stack_limit};
  if (sp < bounds.stack_limit || sp >= bounds.stack_base || sp % 8 != 0) return;
  MEMORY_BASIC_INFORMATION region;
  if (VirtualQuery(reinterpret_cast<const void*>(sp), &region, sizeof(region)) != sizeof(region) ||
      region.State != MEM_COMMIT || (region.Protect & (PAGE_GUARD | PAGE_NOACCESS)) ||
      !(region.Protect & (PAGE_READWRITE | PAGE_EXECUTE_READWRITE))) {
    return;
  }
  const uint64_t region_end = reinterpret_cast<uint64_t>(region.BaseAddress) + region.RegionSize;
  const uint64_t top = std::min(bounds.stack_base, region_end);
  const uint64_t available = top - sp;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(available, out.capacity)) & ~size_t(7);
  copy_words(out.buffer, reinterpret_cast<const uint8_t*>(sp), n);
  out.stack_size = n;
  out.stack_truncated = available > n;
  out.stack_found = n > 0;
}

class SuspendStackCopier final : public StackCopier {
 public:
  explicit SuspendStackCopier(std::chrono::nanoseconds interval)
      : timer_period_raised_(interval < std::chrono::milliseconds(10) &&
                             timeBeginPeriod(1) == TIMERR_NOERROR) {}

  ~SuspendStackCopier() override {
    forget_all();
    if (timer_period_raised_) timeEndPeriod(1);
    g_copier_exists.store(false);
  }

  CopyResult copy(uint64_t tid, StackSnapshot& out) override {
    if (tid == GetCurrentThreadId()) return CopyResult::kFailed;  // would never resume
    auto it = threads_.find(tid);
    if (it != threads_.end()) {
      // Under Wine a thread reports its TEB to the server only once it runs: asked before, the
      // server answers 0, and a thread opened that early would never have its stack copied.
      if (it->second.teb == 0) it->second.teb = query_teb(it->second.handle);
      const CopyResult result = copy_open_thread(it->second, out);
      if (result == CopyResult::kOk) return result;
      // The thread is gone, or its id now names a newer thread: open it afresh, once.
      CloseHandle(it->second.handle);
      threads_.erase(it);
    }
    ThreadHandle opened;
    const CopyResult result = open_thread(tid, &opened);
    if (result != CopyResult::kOk) return result;
    if (threads_.size() >= kMaxCachedThreads) forget_all();
    ThreadHandle& cached = threads_.emplace(tid, opened).first->second;  // before any suspension
    return copy_open_thread(cached, out);
  }

 private:
  // An open handle and the TEB's address, kept per thread: opening them costs three system
  // calls per sample otherwise (a wineserver round trip each under Wine).
  struct ThreadHandle {
    HANDLE handle = nullptr;
    uint64_t teb = 0;
  };
  static constexpr size_t kMaxCachedThreads = 4096;  // ids of exited threads are dropped past it

  static CopyResult open_thread(uint64_t tid, ThreadHandle* out) {
    HANDLE thread =
        OpenThread(THREAD_SUSPEND_RESUME | THREAD_GET_CONTEXT | THREAD_QUERY_INFORMATION, FALSE,
                   static_cast<DWORD>(tid));
    if (thread == nullptr) {
      return GetLastError() == ERROR_INVALID_PARAMETER ? CopyResult::kThreadGone
                                                       : CopyResult::kFailed;
    }
    ThreadBasicInformation basic{};
    if (!query_basic(thread, &basic) || basic.exit_status != STILL_ACTIVE) {
      CloseHandle(thread);
      return CopyResult::kThreadGone;
    }
    *out = ThreadHandle{thread, reinterpret_cast<uint64_t>(basic.teb_base_address)};
    return CopyResult::kOk;
  }

  static bool query_basic(HANDLE thread, ThreadBasicInformation* basic) {
    return NtQueryInformationThread(thread, static_cast<THREADINFOCLASS>(0) /* basic */, basic,
                                    sizeof(*basic), nullptr) == 0;
  }

  static uint64_t query_teb(HANDLE thread) {
    ThreadBasicInformation basic{};
    return query_basic(thread, &basic) ? reinterpret_cast<uint64_t>(basic.teb_base_address) : 0;
  }

  void forget_all() {
    for (auto& [tid, thread] : threads_) CloseHandle(thread.handle);
    threads_.clear();
  }

  CopyResult copy_open_thread(const ThreadHandle& thread, StackSnapshot& out) {
    // A thread that has exited cannot be suspended: SuspendThread fails.
    if (SuspendThread(thread.handle) == static_cast<DWORD>(-1)) return CopyResult::kThreadGone;
    // --- SUSPENDED from here to ResumeThread ------------------------------------------------
    // SuspendThread only asks; GetThreadContext waits until the thread is really stopped.
    // CONTEXT_FULL, not CONTEXT_CONTROL: RtlVirtualUnwind needs the integer registers.
    context_.ContextFlags = CONTEXT_FULL;
    const bool have_context = GetThreadContext(thread.handle, &context_);
    if (have_context) {
      out.time_ns = monotonic_ns();
      capture_registers(context_, out.regs);
      copy_stack(thread.teb, out);
      out.label_count = copy_labels(out.label_source, out.label_owner, out.labels, kMaxLabelDepth);
    }
    ResumeThread(thread.handle);
    // --- resumed ---------------------------------------------------------------------------
    return have_context ? CopyResult::kOk : CopyResult::kFailed;
  }

  const bool timer_period_raised_;
  // GetThreadContext needs a 16-byte aligned CONTEXT; a member keeps it off the stack.
  alignas(16) CONTEXT context_{};
  std::unordered_map<uint64_t, ThreadHandle> threads_;
};

}  // namespace

std::unique_ptr<StackCopier> StackCopier::create(const Config& config, Status* status) {
  bool expected = false;
  if (!g_copier_exists.compare_exchange_strong(expected, true)) {
    *status = Status::error(Status::Code::kAlreadyRunning, "a stack copier already exists");
    return nullptr;
  }
  *status = {};
  return std::make_unique<SuspendStackCopier>(config.interval);
}

// Windows has no fork().
void StackCopier::release_after_fork() {}

}  // namespace inprof::internal
