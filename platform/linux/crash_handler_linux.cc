// Crash capture on Linux: sigaction handlers for the fatal signals. The handler gathers the
// crashing thread's registers and a frame-pointer walk of its stack (every read through
// process_vm_readv, which fails on an unmapped address instead of faulting), has the CrashWriter
// write the ring to the file opened at install time, then restores the program's previous action
// and lets the signal take its course: a fault re-executes the faulting instruction on return, a
// signal that was sent (abort, kill) is sent again. Either way the kernel delivers it to the
// program's action with that action's own flags and mask, or kills the process by that signal.
//
// The handler runs on whatever alternate stack the program gave the thread, possibly 8 KiB of
// which the kernel's signal frame takes up to ~3.5 KiB (AVX-512): its large buffers are static
// (one crash is handled at a time) and every signal is blocked while it runs, so that none
// stacks a second frame on top.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "output_open_linux.h"
#include "session/crash_handler.h"
#include "session/output_file.h"
#include "signal_disposition_linux.h"
#if defined(__x86_64__)
#include "ucontext_registers_x86_64.h"
#elif defined(__aarch64__)
#include "ucontext_registers_aarch64.h"
#endif

namespace inprof::internal {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kMaxCrashFrames = 256;
constexpr int kMaxStackPieces = 300;

struct CrashState {
  std::atomic<CrashWriter*> writer{nullptr};
  Sampler* sampler = nullptr;
  int fd = -1;
  long owner = 0;  // the process that installed it: a forked child not yet disarmed is not
  struct sigaction previous[NSIG] = {};
  std::atomic<bool> written{false};
  // The thread writing the crash (0: none yet); `done` once it has finished.
  std::atomic<long> claimed_by{0};
  std::atomic<bool> done{false};
  // The session's final dump, still empty (ring mode writes it at stop): a crash that ends the
  // process removes it, rather than leave an empty file beside the crash file.
  char final_output[4096] = {};
  dev_t final_dev = 0;
  ino_t final_ino = 0;
};
CrashState g_crash;

// Removes the final dump if the path still names that same empty file.
void remove_empty_final_output() {
  if (g_crash.final_output[0] == '\0') return;
  struct stat st;
  if (::stat(g_crash.final_output, &st) == 0 && st.st_dev == g_crash.final_dev &&
      st.st_ino == g_crash.final_ino && st.st_size == 0) {
    (void)::unlink(g_crash.final_output);
  }
}

// The signal's action after ours is the default: the process ends by it.
bool ends_the_process(int signal) {
  const struct sigaction& previous = g_crash.previous[signal];
  return !(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_DFL;
}

// Used only by the thread that claimed the crash; touched at install so that no page of it is
// first faulted in by the handler.
struct CrashScratch {
  uint64_t frames[kMaxCrashFrames];
  uint64_t candidates[8];
  iovec local[kMaxStackPieces];
  iovec remote[kMaxStackPieces];
};
CrashScratch g_scratch;

const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "signal";
  }
}

bool raw_write(void* context, const void* bytes, size_t size) {
  const int fd = *static_cast<int*>(context);
  const auto* p = static_cast<const uint8_t*>(bytes);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads one word of this process's memory without faulting on a bad address.
bool safe_read(uint64_t address, uint64_t* out) {
  if (address % 8 != 0 || address < 4096) return false;
  iovec local{out, 8};
  iovec remote{reinterpret_cast<void*>(address), 8};
  return syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0) == 8;
}

struct Registers {
  uint64_t pc = 0, sp = 0, fp = 0, lr = 0;
};

Registers registers_of(const uint64_t* regs) {
  Registers r;
  r.pc = regs[kRegPc];
  r.sp = regs[kRegSp];
  r.fp = regs[kRegFp];
  if constexpr (kHasLinkRegister) r.lr = regs[kRegLr];
  return r;
}

// Copies the top of the crashing thread's stack into the sampler's crash snapshot, a page at a
// time through process_vm_readv so that the copy stops at the first unmapped page.
void copy_stack(StackSnapshot& snapshot) {
  constexpr uint64_t kPage = 4096;
  const uint64_t sp = snapshot.sp();
  iovec* local = g_scratch.local;
  iovec* remote = g_scratch.remote;
  int pieces = 0;
  uint64_t at = sp;
  const uint64_t end = sp + snapshot.capacity;
  while (at < end && pieces < kMaxStackPieces) {
    const uint64_t next = std::min(end, (at / kPage + 1) * kPage);
    local[pieces] = {snapshot.buffer + (at - sp), static_cast<size_t>(next - at)};
    remote[pieces] = {reinterpret_cast<void*>(at), static_cast<size_t>(next - at)};
    ++pieces;
    at = next;
  }
  const long copied = syscall(SYS_process_vm_readv, getpid(), local, pieces, remote, pieces, 0);
  snapshot.stack_start = sp;
  snapshot.stack_size = copied > 0 ? static_cast<size_t>(copied) : 0;
  snapshot.stack_found = copied > 0;
  snapshot.stack_truncated = snapshot.stack_size == snapshot.capacity;
  snapshot.label_source = nullptr;
  snapshot.label_count = 0;
}

// Hands the crash to the sampler and waits (100 ms at most) for it to write the sample.
bool sample_through_sampler(Sampler* sampler, const ucontext_t* uc, uint64_t tid, uint64_t now) {
  StackSnapshot* snapshot = sampler ? sampler->crash_snapshot() : nullptr;
  if (!snapshot) return false;
  capture_registers(uc, snapshot->regs);
  snapshot->time_ns = now;
  copy_stack(*snapshot);
  sampler->post_crash_sample(tid);
  for (int waited_ms = 0; waited_ms < 100; ++waited_ms) {
    if (sampler->crash_sample_written()) return true;
    // The raw system call: the libc symbol may be interposed (ours is, to resume sleeps the
    // sampling signal cuts short) and resolving it lazily would take the loader's lock.
    timespec one_ms{0, 1000000};
    syscall(SYS_nanosleep, &one_ms, nullptr);
  }
  return sampler->crash_sample_written();
}

// frames[0] is the PC, then return addresses along the frame-pointer chain, each frame record
// being [fp] = caller's fp, [fp + 8] = return address on both architectures. The chain must climb
// the stack; where frame pointers are absent it ends early (the ring's earlier samples, unwound
// with DWARF, carry the full stacks).
size_t walk(const Registers& r, uint64_t* frames, uint64_t* candidates) {
  size_t n = 0;
  frames[n++] = r.pc;
  for (int slot = 0; slot < 8; ++slot) {
    uint64_t word = 0;
    candidates[slot] = safe_read(r.sp + 8 * static_cast<uint64_t>(slot), &word) ? word : 0;
  }
#if defined(__aarch64__)
  // A leaf or a prologue still has its return address in the link register.
  candidates[0] = r.lr;
#endif
  uint64_t fp = r.fp;
  const uint64_t stack_limit = r.sp + (64u << 20);
  while (n < kMaxCrashFrames && fp >= r.sp && fp < stack_limit) {
    uint64_t caller_fp = 0, return_address = 0;
    if (!safe_read(fp, &caller_fp) || !safe_read(fp + 8, &return_address)) break;
    if (return_address < 4096) break;
    frames[n++] = return_address;
    if (caller_fp <= fp) break;
    fp = caller_fp;
  }
  return n;
}

uint64_t monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void sleep_ms(long ms) {
  // The raw system call, as in sample_through_sampler.
  timespec duration{ms / 1000, (ms % 1000) * 1000000};
  syscall(SYS_nanosleep, &duration, nullptr);
}

// Sent (abort(), kill, raise) rather than raised by a faulting instruction: it has to be sent
// again. With its original siginfo where the kernel allows that (it does from the main thread).
void send_again(int signal, siginfo_t* info) {
  const long tid = syscall(SYS_gettid);
  if (info && syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signal, info) == 0) return;
  syscall(SYS_tgkill, getpid(), tid, signal);
}

void on_crash(int signal, siginfo_t* info, void* context);

// What happens to the signal once the crash is written (or not ours to write).
void hand_back(int signal, siginfo_t* info, void* context) {
  const bool sent = !info || info->si_code <= 0;
  const struct sigaction& previous = g_crash.previous[signal];
  if (restore_if_still_ours(signal, on_crash, previous)) {
    // A sent signal arrives once this handler returns (it is blocked until then); a fault
    // happens again when the faulting instruction re-executes.
    if (sent) send_again(signal, info);
    return;
  }
  // The program installed its own handler over ours, and it called us, passing the signal on to
  // the action it had found: do what that action (the one ours replaced) would have done.
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);
  } else if (previous.sa_handler == SIG_DFL) {
    // The default action of every crash signal ends the process: let it, by this signal.
    struct sigaction default_action = {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(signal, &default_action, nullptr);
    if (sent) send_again(signal, info);
  }
}

void on_crash(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  // The first crash writes; one on another thread waits for that writing to finish before its
  // signal takes its course (it would end the process mid-file). A fault inside the writing is
  // not caught again (every signal is blocked here): the kernel ends the process by it.
  CrashWriter* writer = g_crash.writer.load(std::memory_order_acquire);
  const long tid = syscall(SYS_gettid);
  long unclaimed = 0;
  if (writer && syscall(SYS_getpid) != g_crash.owner) {
    // A forked child, before its fork handler disarmed us: the parent's file is not its own.
  } else if (writer && g_crash.claimed_by.compare_exchange_strong(unclaimed, tid)) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    CrashReport report;
    report.tid = static_cast<uint64_t>(tid);
    report.time_ns = monotonic_now();
    size_t count = 0;
    if (!sample_through_sampler(g_crash.sampler, uc, report.tid, report.time_ns)) {
      uint64_t regs[kRegisterCount];
      capture_registers(uc, regs);
      count = walk(registers_of(regs), g_scratch.frames, g_scratch.candidates);
    }
    report.signal_name = signal_name(signal);
    report.code = info ? info->si_code : 0;
    report.address = info ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
    report.frames = std::span<const uint64_t>(g_scratch.frames, count);
    report.leaf_candidates = std::span<const uint64_t>(g_scratch.candidates, count ? 8 : 0);
    int fd = g_crash.fd;
    if (writer->write(report, CrashSink{&fd, raw_write})) {
      (void)fsync(fd);
      g_crash.written.store(true);
      // (A program whose own handler takes the signal may live on: its dump is still to come.)
      if (ends_the_process(signal)) remove_empty_final_output();
    }
    g_crash.done.store(true);
  } else if (writer && unclaimed != tid) {
    // Bounded: a writer stuck for good must not keep this crash from ending the process.
    for (int waited_ms = 0; waited_ms < 10000 && !g_crash.done.load(); waited_ms += 10) {
      sleep_ms(10);
    }
  }
  hand_back(signal, info, context);
  errno = saved_errno;
}

class LinuxCrashHandler final : public CrashHandler {
 public:
  explicit LinuxCrashHandler(std::string path) : path_(std::move(path)) {}
  ~LinuxCrashHandler() override {
    g_crash.writer.store(nullptr, std::memory_order_release);
    // Only our own handler is taken out: one installed over it stays.
    for (int signal : kCrashSignals) {
      restore_if_still_ours(signal, on_crash, g_crash.previous[signal]);
    }
    ::close(g_crash.fd);
    g_crash.fd = -1;
    if (!g_crash.written.load()) ::unlink(path_.c_str());
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<CrashHandler> CrashHandler::install(const std::string& path, CrashWriter* writer,
                                                    Sampler* sampler, Status* status,
                                                    const std::string& empty_final_output) {
  if (g_crash.fd >= 0) {
    *status = Status::error(Status::Code::kAlreadyRunning, "crash capture is already armed");
    return nullptr;
  }
  // As for the dump: never a FIFO or a device, never a file another live process holds.
  std::string error, own_path = path;
  bool held_elsewhere = false;
  int fd = open_output_file(path, "crash file ", &error, &held_elsewhere);
  if (fd < 0 && held_elsewhere) {
    own_path = OutputFile::pid_suffixed_path(path, static_cast<uint64_t>(getpid()));
    fd = open_output_file(own_path, "crash file ", &error, &held_elsewhere);
    if (fd >= 0) {
      std::fprintf(stderr,
                   "inprof: %s is being written by another process; this one (%d) writes %s\n",
                   path.c_str(), getpid(), own_path.c_str());
    }
  }
  if (fd < 0) {
    *status = Status::error(Status::Code::kOutputError, error);
    return nullptr;
  }
  // Bind now every libc function the handler calls, so that none is resolved lazily (through the
  // dynamic loader) for the first time inside it.
  {
    (void)getpid();
    (void)syscall(SYS_gettid);
    (void)monotonic_now();
    uint64_t word = 0;
    (void)safe_read(reinterpret_cast<uint64_t>(&word), &word);
    timespec none{0, 0};
    (void)syscall(SYS_nanosleep, &none, nullptr);
    (void)::write(fd, "", 0);
    (void)fsync(fd);
    struct sigaction current = {};
    (void)sigaction(SIGSEGV, nullptr, &current);
    struct stat st;
    g_crash.final_output[0] = '\0';
    if (!empty_final_output.empty() && empty_final_output.size() < sizeof g_crash.final_output &&
        ::stat(empty_final_output.c_str(), &st) == 0 && st.st_size == 0) {
      std::memcpy(g_crash.final_output, empty_final_output.c_str(), empty_final_output.size() + 1);
      g_crash.final_dev = st.st_dev;
      g_crash.final_ino = st.st_ino;
    }
    std::memset(&g_scratch, 0, sizeof g_scratch);
  }
  g_crash.fd = fd;
  g_crash.owner = syscall(SYS_getpid);
  g_crash.sampler = sampler;
  g_crash.written.store(false);
  g_crash.claimed_by.store(0);
  g_crash.done.store(false);
  g_crash.writer.store(writer, std::memory_order_release);
  for (int signal : kCrashSignals) {
    struct sigaction action = {};
    action.sa_sigaction = on_crash;
    // SA_ONSTACK: a stack overflow is caught on threads that have an alternate stack.
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    // No other handler (the sampling signal's) may run on top of this one: the alternate stack
    // it may be on is small. They arrive when it returns.
    sigfillset(&action.sa_mask);
    sigaction(signal, &action, &g_crash.previous[signal]);
  }
  *status = {};
  return std::make_unique<LinuxCrashHandler>(own_path);
}

void CrashHandler::disarm_after_fork() {
  if (g_crash.fd < 0) return;
  g_crash.final_output[0] = '\0';
  g_crash.writer.store(nullptr);
  for (int signal : kCrashSignals) {
    restore_if_still_ours(signal, on_crash, g_crash.previous[signal]);
  }
  ::close(g_crash.fd);
  g_crash.fd = -1;
}

}  // namespace inprof::internal
