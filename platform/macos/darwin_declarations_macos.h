// Exactly the Darwin (Mach, dyld, libpthread, libc) functions, structures and constants that
// platform/macos uses, declared here instead of including the SDK's headers (the approach of
// Rust's mach2 crate): the code then compiles with any clang for both macOS targets, SDK or not
// (tools/scripts/run-macos-compile.sh checks it on every commit), and the layouts it relies on
// are written down in one place. Values and layouts are those of the macOS 11+ SDK for LP64
// (x86_64 and arm64); each must match the SDK's, which only a build on a Mac can confirm.
//
// The functions are declared under names of our own bound to the C symbols with asm labels
// (Mach-O prefixes C symbols with '_'): so they never clash with a declaration of the same
// function the C++ library's headers bring in (the SDK's on a Mac, glibc's in the compile check).
// Only files named *_macos.cc include this header.
#ifndef INPROF_PLATFORM_MACOS_DARWIN_DECLARATIONS_MACOS_H_
#define INPROF_PLATFORM_MACOS_DARWIN_DECLARATIONS_MACOS_H_

#include <cstddef>
#include <cstdint>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "macOS: x86_64 or arm64 only"
#endif

#define INPROF_DARWIN_SYMBOL(name) __asm__("_" #name)

namespace inprof::internal::darwin {

// --- Mach types (mach/std_types.h, mach/message.h, mach/vm_types.h) -------------------------
using natural_t = unsigned int;
using integer_t = int;
using mach_port_t = natural_t;
using kern_return_t = int;
using mach_msg_type_number_t = natural_t;
using vm_address_t = uintptr_t;
using vm_size_t = uintptr_t;

inline constexpr kern_return_t kKernSuccessCode = 0;

// mach_task_self() is the macro `mach_task_self_`, a variable of libsystem_kernel.
extern mach_port_t task_self_port INPROF_DARWIN_SYMBOL(mach_task_self_);
mach_port_t mach_thread_self() INPROF_DARWIN_SYMBOL(mach_thread_self);
kern_return_t task_threads(mach_port_t task, mach_port_t** threads, mach_msg_type_number_t* count)
    INPROF_DARWIN_SYMBOL(task_threads);
kern_return_t vm_deallocate(mach_port_t task, vm_address_t address, vm_size_t size)
    INPROF_DARWIN_SYMBOL(vm_deallocate);
kern_return_t vm_read_overwrite(mach_port_t task, vm_address_t address, vm_size_t size,
                                vm_address_t data, vm_size_t* out_size)
    INPROF_DARWIN_SYMBOL(vm_read_overwrite);
kern_return_t mach_port_deallocate(mach_port_t task, mach_port_t name)
    INPROF_DARWIN_SYMBOL(mach_port_deallocate);
kern_return_t thread_suspend(mach_port_t thread) INPROF_DARWIN_SYMBOL(thread_suspend);
kern_return_t thread_resume(mach_port_t thread) INPROF_DARWIN_SYMBOL(thread_resume);
kern_return_t thread_info(mach_port_t thread, natural_t flavor, integer_t* info,
                          mach_msg_type_number_t* count) INPROF_DARWIN_SYMBOL(thread_info);
kern_return_t thread_get_state(mach_port_t thread, int flavor, natural_t* state,
                               mach_msg_type_number_t* count)
    INPROF_DARWIN_SYMBOL(thread_get_state);

// --- thread_info flavours (mach/thread_info.h) ------------------------------------------------
inline constexpr natural_t kThreadBasicInfo = 3;
inline constexpr natural_t kThreadIdentifierInfo = 4;
inline constexpr integer_t kThStateWaiting = 3;

struct time_value_t {
  integer_t seconds;
  integer_t microseconds;
};
struct thread_basic_info {
  time_value_t user_time;
  time_value_t system_time;
  integer_t cpu_usage;
  integer_t policy;
  integer_t run_state;
  integer_t flags;
  integer_t suspend_count;
  integer_t sleep_time;
};
static_assert(sizeof(thread_basic_info) == 40);
inline constexpr mach_msg_type_number_t kThreadBasicInfoCount =
    sizeof(thread_basic_info) / sizeof(natural_t);

struct thread_identifier_info {
  uint64_t thread_id;
  uint64_t thread_handle;
  uint64_t dispatch_qaddr;
};
inline constexpr mach_msg_type_number_t kThreadIdentifierInfoCount =
    sizeof(thread_identifier_info) / sizeof(natural_t);

// --- thread states (mach/i386/thread_status.h, mach/arm/thread_status.h) ----------------------
#if defined(__x86_64__)
inline constexpr int kThreadStateFlavor = 4;  // x86_THREAD_STATE64
struct thread_state64 {
  uint64_t rax, rbx, rcx, rdx, rdi, rsi, rbp, rsp;
  uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
  uint64_t rip, rflags, cs, fs, gs;
};
static_assert(sizeof(thread_state64) == 168);
#else
inline constexpr int kThreadStateFlavor = 6;  // ARM_THREAD_STATE64
// In an arm64e process fp, lr, sp and pc may be signed (the SDK's accessors authenticate them);
// in an arm64 process they are plain. inprof is built arm64.
struct thread_state64 {
  uint64_t x[29];
  uint64_t fp, lr, sp, pc;
  uint32_t cpsr;
  uint32_t flags;
};
static_assert(sizeof(thread_state64) == 272);
#endif
inline constexpr mach_msg_type_number_t kThreadStateCount =
    sizeof(thread_state64) / sizeof(natural_t);

// --- time (mach/mach_time.h) ----------------------------------------------------------------
struct mach_timebase_info_data_t {
  uint32_t numer;
  uint32_t denom;
};
uint64_t mach_absolute_time() INPROF_DARWIN_SYMBOL(mach_absolute_time);
kern_return_t mach_timebase_info(mach_timebase_info_data_t* info)
    INPROF_DARWIN_SYMBOL(mach_timebase_info);

// --- libpthread (pthread/pthread.h) ---------------------------------------------------------
struct opaque_pthread;
using pthread_t = opaque_pthread*;
pthread_t pthread_from_mach_thread_np(mach_port_t thread)
    INPROF_DARWIN_SYMBOL(pthread_from_mach_thread_np);
void* pthread_get_stackaddr_np(pthread_t thread) INPROF_DARWIN_SYMBOL(pthread_get_stackaddr_np);
size_t pthread_get_stacksize_np(pthread_t thread) INPROF_DARWIN_SYMBOL(pthread_get_stacksize_np);
int pthread_getname_np(pthread_t thread, char* name, size_t size)
    INPROF_DARWIN_SYMBOL(pthread_getname_np);
int pthread_atfork(void (*prepare)(), void (*parent)(), void (*child)())
    INPROF_DARWIN_SYMBOL(pthread_atfork);
int pthread_setname_np(const char* name) INPROF_DARWIN_SYMBOL(pthread_setname_np);
int pthread_threadid_np(pthread_t thread, uint64_t* id) INPROF_DARWIN_SYMBOL(pthread_threadid_np);
pthread_t pthread_main_thread_np() INPROF_DARWIN_SYMBOL(pthread_main_thread_np);
using sigset_t = uint32_t;
inline constexpr int kSigBlock = 1;
int pthread_sigmask(int how, const sigset_t* set, sigset_t* old)
    INPROF_DARWIN_SYMBOL(pthread_sigmask);

// --- dyld (mach-o/dyld.h) -------------------------------------------------------------------
struct mach_header;
uint32_t dyld_image_count() INPROF_DARWIN_SYMBOL(_dyld_image_count);
const mach_header* dyld_get_image_header(uint32_t index)
    INPROF_DARWIN_SYMBOL(_dyld_get_image_header);
intptr_t dyld_get_image_vmaddr_slide(uint32_t index)
    INPROF_DARWIN_SYMBOL(_dyld_get_image_vmaddr_slide);
const char* dyld_get_image_name(uint32_t index) INPROF_DARWIN_SYMBOL(_dyld_get_image_name);
void dyld_register_func_for_add_image(void (*callback)(const mach_header*, intptr_t))
    INPROF_DARWIN_SYMBOL(_dyld_register_func_for_add_image);
void dyld_register_func_for_remove_image(void (*callback)(const mach_header*, intptr_t))
    INPROF_DARWIN_SYMBOL(_dyld_register_func_for_remove_image);
// mach-o/dyld.h and crt_externs.h.
int ns_get_executable_path(char* buf, uint32_t* size) INPROF_DARWIN_SYMBOL(_NSGetExecutablePath);
int* ns_get_argc() INPROF_DARWIN_SYMBOL(_NSGetArgc);
char*** ns_get_argv() INPROF_DARWIN_SYMBOL(_NSGetArgv);

// --- libc (unistd.h, fcntl.h, sys/file.h, sys/stat.h, sys/sysctl.h, time.h, errno.h) ---------
using pid_t = int;
using off_t = int64_t;
pid_t getpid() INPROF_DARWIN_SYMBOL(getpid);
int open(const char* path, int flags, ...) INPROF_DARWIN_SYMBOL(open);
long write(int fd, const void* data, size_t size) INPROF_DARWIN_SYMBOL(write);
int close(int fd) INPROF_DARWIN_SYMBOL(close);
int fsync(int fd) INPROF_DARWIN_SYMBOL(fsync);
int flock(int fd, int operation) INPROF_DARWIN_SYMBOL(flock);
int ftruncate(int fd, off_t length) INPROF_DARWIN_SYMBOL(ftruncate);
int* errno_location() INPROF_DARWIN_SYMBOL(__error);
int sysctlbyname(const char* name, void* out, size_t* out_size, void* in, size_t in_size)
    INPROF_DARWIN_SYMBOL(sysctlbyname);
struct timespec {
  long tv_sec;
  long tv_nsec;
};
inline constexpr int kClockRealtime = 0;
inline constexpr int kClockThreadCputime = 16;  // CLOCK_THREAD_CPUTIME_ID
int clock_gettime(int clock, timespec* out) INPROF_DARWIN_SYMBOL(clock_gettime);

// struct stat (64-bit inodes): only st_mode is read, at its offset; x86_64 names the function
// with the $INODE64 suffix, arm64 does not.
inline constexpr size_t kStatSize = 144;
inline constexpr size_t kStatModeOffset = 4;
#if defined(__x86_64__)
int fstat(int fd, void* stat_out) __asm__("_fstat$INODE64");
#else
int fstat(int fd, void* stat_out) INPROF_DARWIN_SYMBOL(fstat);
#endif
inline constexpr uint16_t kSIfmt = 0170000;
inline constexpr uint16_t kSIfreg = 0100000;

inline constexpr int kOWronly = 0x0001;
inline constexpr int kONofollow = 0x0100;
inline constexpr int kOCreat = 0x0200;
inline constexpr int kOCloexec = 0x01000000;
inline constexpr int kLockEx = 2;
inline constexpr int kLockNb = 4;
inline constexpr int kEintr = 4;
inline constexpr int kEagain = 35;  // also EWOULDBLOCK
inline constexpr int kEloop = 62;

}  // namespace inprof::internal::darwin

#undef INPROF_DARWIN_SYMBOL

#endif  // INPROF_PLATFORM_MACOS_DARWIN_DECLARATIONS_MACOS_H_
