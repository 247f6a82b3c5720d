// Every Mach, dyld and pthread_*_np call the macOS sampling path makes, behind one small
// interface: mach_api_macos.cc implements it with the real calls; tests/macos/fake_mach_api.h
// scripts it on Linux, so that the code above it (mach_thread_ports, mach_thread_lister,
// mach_stack_copier) runs in CTest without a Mac. This header includes no OS header.
//
// SUSPENDED: thread_get_state, now_ns and thread_resume are called while a thread is stopped;
// implementations of those three must not allocate, lock or log.
#ifndef INPROF_PLATFORM_MACOS_MACH_API_MACOS_H_
#define INPROF_PLATFORM_MACOS_MACH_API_MACOS_H_

#include <cstddef>
#include <cstdint>

#include "unwind/arch.h"

namespace inprof::internal {

using MachPort = uint32_t;  // mach_port_t: a name in this task's port space
using KernReturn = int;     // kern_return_t

inline constexpr MachPort kMachPortNull = 0;
inline constexpr KernReturn kKernSuccess = 0;
inline constexpr KernReturn kKernInvalidArgument = 4;
inline constexpr KernReturn kKernTerminated = 37;
inline constexpr KernReturn kMachSendInvalidDest = 0x10000003;

// Whether a thread call failed because the thread no longer exists.
inline constexpr bool is_thread_death(KernReturn kr) {
  return kr == kKernTerminated || kr == kMachSendInvalidDest || kr == kKernInvalidArgument;
}

// thread_info(THREAD_BASIC_INFO): the thread's CPU time so far.
struct MachThreadTimes {
  uint64_t user_ns = 0;
  uint64_t system_ns = 0;
  bool waiting = false;  // run_state TH_STATE_WAITING: blocked
};

// The thread's stack as pthread says: [low, base), base one past the highest address. Both 0:
// unknown (not a pthread).
struct MachStackBounds {
  uint64_t low = 0;
  uint64_t base = 0;
};

class MachApi {
 public:
  virtual ~MachApi() = default;

  // task_threads(mach_task_self()): a send right per thread, in an array the caller gives back
  // with release_thread_array, after it has deallocated (or kept) every right.
  virtual KernReturn task_threads(MachPort** threads, uint32_t* count) = 0;
  // vm_deallocate of task_threads' array.
  virtual void release_thread_array(MachPort* threads, uint32_t count) = 0;
  // mach_port_deallocate(mach_task_self(), port): gives back one reference.
  virtual void port_deallocate(MachPort port) = 0;
  // mach_thread_self(): a new reference each call, to be deallocated.
  virtual MachPort thread_self() = 0;
  // pthread_threadid_np(nullptr): the calling thread's system-wide 64-bit id.
  virtual uint64_t current_thread_id() = 0;
  // thread_info(THREAD_IDENTIFIER_INFO).thread_id: the same id as pthread_threadid_np.
  virtual KernReturn thread_id(MachPort thread, uint64_t* id) = 0;
  virtual KernReturn thread_times(MachPort thread, MachThreadTimes* times) = 0;
  // pthread_getname_np(pthread_from_mach_thread_np(thread)); false if none.
  virtual bool thread_name(MachPort thread, char* out, size_t size) = 0;
  // pthread_get_stackaddr_np / pthread_get_stacksize_np of pthread_from_mach_thread_np; taken
  // before the thread is suspended (pthread_from_mach_thread_np takes a lock).
  virtual MachStackBounds stack_bounds(MachPort thread) = 0;
  // The bits of a code address that are the address (arm64e signs return addresses in the
  // others, from machdep.virtual_address_size); all ones on x86-64.
  virtual uint64_t code_address_mask() = 0;

  virtual KernReturn thread_suspend(MachPort thread) = 0;
  // SUSPENDED: the thread's registers by DWARF number (thread_get_state of the architecture's
  // THREAD_STATE64 flavour).
  virtual KernReturn thread_get_state(MachPort thread, uint64_t (&regs)[kRegisterCount]) = 0;
  // SUSPENDED: mach_absolute_time in nanoseconds (the timebase read once beforehand).
  virtual uint64_t now_ns() = 0;
  // SUSPENDED.
  virtual KernReturn thread_resume(MachPort thread) = 0;
};

// The real calls (mach_api_macos.cc; macOS builds only): one for the process, never destroyed.
MachApi& system_mach_api();

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_MACOS_MACH_API_MACOS_H_
