// MachApi with the real Mach, dyld and pthread calls (darwin_declarations_macos.h). Includes no C++
// library header that could lock or allocate on the suspended path.
#include "mach_api_macos.h"

#include "darwin_declarations_macos.h"

namespace inprof::internal {
namespace {

namespace d = darwin;

uint64_t nanoseconds(const d::time_value_t& t) {
  return uint64_t(t.seconds) * 1000000000u + uint64_t(t.microseconds) * 1000u;
}

class SystemMachApi final : public MachApi {
 public:
  SystemMachApi() {
    d::mach_timebase_info_data_t timebase{1, 1};
    if (d::mach_timebase_info(&timebase) == d::kKernSuccessCode && timebase.denom != 0) {
      numer_ = timebase.numer;
      denom_ = timebase.denom;
    }
#if defined(__aarch64__)
    // Pointer authentication signs the bits above the virtual address size (47 on Apple
    // silicon so far); 48 if the system will not say.
    uint32_t bits = 0;
    size_t size = sizeof(bits);
    if (d::sysctlbyname("machdep.virtual_address_size", &bits, &size, nullptr, 0) != 0 ||
        bits < 32 || bits > 56) {
      bits = 48;
    }
    mask_ = (uint64_t{1} << bits) - 1;
#endif
  }

  KernReturn task_threads(MachPort** threads, uint32_t* count) override {
    d::mach_msg_type_number_t n = 0;
    const KernReturn kr = d::task_threads(d::task_self_port, threads, &n);
    *count = n;
    return kr;
  }
  void release_thread_array(MachPort* threads, uint32_t count) override {
    d::vm_deallocate(d::task_self_port, reinterpret_cast<d::vm_address_t>(threads),
                     sizeof(MachPort) * count);
  }
  void port_deallocate(MachPort port) override { d::mach_port_deallocate(d::task_self_port, port); }
  MachPort thread_self() override { return d::mach_thread_self(); }
  uint64_t current_thread_id() override {
    uint64_t id = 0;
    d::pthread_threadid_np(nullptr, &id);
    return id;
  }
  KernReturn thread_id(MachPort thread, uint64_t* id) override {
    d::thread_identifier_info info{};
    d::mach_msg_type_number_t count = d::kThreadIdentifierInfoCount;
    const KernReturn kr = d::thread_info(thread, d::kThreadIdentifierInfo,
                                         reinterpret_cast<d::integer_t*>(&info), &count);
    if (kr == d::kKernSuccessCode) *id = info.thread_id;
    return kr;
  }
  KernReturn thread_times(MachPort thread, MachThreadTimes* times) override {
    d::thread_basic_info info{};
    d::mach_msg_type_number_t count = d::kThreadBasicInfoCount;
    const KernReturn kr =
        d::thread_info(thread, d::kThreadBasicInfo, reinterpret_cast<d::integer_t*>(&info), &count);
    if (kr != d::kKernSuccessCode) return kr;
    times->user_ns = nanoseconds(info.user_time);
    times->system_ns = nanoseconds(info.system_time);
    times->waiting = info.run_state == d::kThStateWaiting;
    return kr;
  }
  bool thread_name(MachPort thread, char* out, size_t size) override {
    d::pthread_t pthread = d::pthread_from_mach_thread_np(thread);
    return pthread != nullptr && d::pthread_getname_np(pthread, out, size) == 0 && out[0] != 0;
  }
  MachStackBounds stack_bounds(MachPort thread) override {
    d::pthread_t pthread = d::pthread_from_mach_thread_np(thread);
    if (pthread == nullptr) return {};
    const uint64_t base = reinterpret_cast<uint64_t>(d::pthread_get_stackaddr_np(pthread));
    const uint64_t size = d::pthread_get_stacksize_np(pthread);
    if (base == 0 || size > base) return {};
    return {base - size, base};
  }
  uint64_t code_address_mask() override { return mask_; }

  KernReturn thread_suspend(MachPort thread) override { return d::thread_suspend(thread); }
  // SUSPENDED.
  KernReturn thread_get_state(MachPort thread, uint64_t (&regs)[kRegisterCount]) override {
    d::thread_state64 s;
    d::mach_msg_type_number_t count = d::kThreadStateCount;
    const KernReturn kr = d::thread_get_state(thread, d::kThreadStateFlavor,
                                              reinterpret_cast<d::natural_t*>(&s), &count);
    if (kr != d::kKernSuccessCode) return kr;
#if defined(__x86_64__)
    // DWARF numbers (arch_x86_64.h): rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip.
    const uint64_t by_dwarf[] = {s.rax, s.rdx, s.rcx, s.rbx, s.rsi, s.rdi, s.rbp, s.rsp, s.r8,
                                 s.r9,  s.r10, s.r11, s.r12, s.r13, s.r14, s.r15, s.rip};
    static_assert(sizeof(by_dwarf) / sizeof(by_dwarf[0]) == kRegisterCount);
    for (int i = 0; i < kRegisterCount; ++i) regs[i] = by_dwarf[i];
#else
    for (int i = 0; i < 29; ++i) regs[i] = s.x[i];
    regs[29] = s.fp;
    regs[30] = s.lr;
    regs[31] = s.sp;
    regs[32] = s.pc;
#endif
    return kr;
  }
  // SUSPENDED.
  uint64_t now_ns() override {
    const uint64_t ticks = d::mach_absolute_time();
    if (numer_ == denom_) return ticks;  // Intel Macs: 1/1
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * numer_ / denom_);
  }
  // SUSPENDED.
  KernReturn thread_resume(MachPort thread) override { return d::thread_resume(thread); }

 private:
  uint32_t numer_ = 1;
  uint32_t denom_ = 1;
  uint64_t mask_ = ~uint64_t{0};
};

}  // namespace

MachApi& system_mach_api() {
  static SystemMachApi* api = new SystemMachApi();  // never destroyed: threads may outlive exit
  return *api;
}

}  // namespace inprof::internal
