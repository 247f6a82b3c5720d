// StackCopier for Linux, built so that a profiled program cannot tell it is sampled:
//
// - A thread on a CPU is only ever interrupted by its own timer on its CPU-time clock
//   (self_sampling_linux.h), delivered as it returns to user mode: never inside a system call.
// - A thread that is not on a CPU gets no signal at all. If it sleeps in a system call, its user
//   registers are frozen where it entered the kernel: /proc/self/task/TID/syscall gives its SP
//   and PC, process_vm_readv copies its stack, and the copy is kept only if the thread did not
//   run meanwhile (same system call, same SP and PC, same CPU time before and after). Other
//   registers are unknown: the unwinder goes as far as the stack itself tells.
//
// So copy() never sends anything: it returns kRunning for a thread on a CPU (the sampler gives
// it a timer) and a snapshot for a sleeping one. The signal's handler serves the timers only.
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "perf_event_ring_linux.h"
#include "sampling/stack_copier.h"
#include "self_sampling_linux.h"
#include "self_sampling_router_linux.h"
#include "session/process_info.h"
#include "stack_regions_linux.h"
#include "thread_proc_linux.h"
#include "thread_stack_copy_linux.h"
#include "wait_descriptor_linux.h"

namespace inprof::internal {
namespace {

// SIGURG by default: its default action is to ignore. A sampling signal can still be pending
// when a thread calls execve (pending signals survive it) or after the handler is gone; with
// SIGPROF the new program, which has no handler, is killed. SIGURG is also used by hardly any
// program (socket out-of-band data), while SIGPROF belongs to setitimer profilers.
constexpr int kDefaultSampleSignal = SIGURG;

std::atomic<int> g_pid{0};
std::atomic<bool> g_copier_exists{false};
// The disposition to restore, kept here too so that a forked child can restore it.
int g_signal = 0;
struct sigaction g_previous_action;

// SUSPENDED: the signal handler. Async-signal-safe throughout.
void on_sample_signal(int, siginfo_t* info, void* context) {
  const int pid = g_pid.load(std::memory_order_relaxed);
  if (info->si_code != SI_TIMER || pid == 0) return;  // not ours (ignored while we own it)
  const int saved_errno = errno;
  on_self_sample_signal(info, static_cast<const ucontext_t*>(context), pid);
  errno = saved_errno;
}

bool handler_is_ours(int sig) {
  struct sigaction current = {};
  if (sigaction(sig, nullptr, &current) != 0) return false;
  return (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sample_signal;
}

struct sigaction our_action() {
  struct sigaction action = {};
  action.sa_sigaction = on_sample_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  // Every signal waits the microseconds our handler runs: a program's own signal arriving during
  // it would otherwise stack a second kernel frame (3.3 KiB with AVX-512) below ours, overrunning
  // a small alternate stack into the memory under it.
  sigfillset(&action.sa_mask);
  return action;
}

// Whether the kernel parks an ignored periodic timer's signal instead of discarding it (Linux
// 6.13's rework of POSIX timers). There, SIG_IGN moves the pending instance of every live
// periodic timer to a list, and the next sigaction that puts a handler in SIG_IGN's place queues
// each of them again to its thread, from the calling thread and wherever that thread is by then:
// a thread that went to sleep in between (SO_RCVTIMEO recv, semtimedop...) is woken with EINTR
// or, in the last tick of its wait, returns early. The same kernels drop a deleted timer's
// signal when it is dequeued: no handler runs and sigwait never returns it (it still shows in the
// pending set of a thread that blocks it, until the last timer's release discards it).
// Set once by StackCopier::create (uname), before any timer.
bool g_kernel_parks_ignored_timer_signals = false;

bool release_at_least(const char* release, int major, int minor) {
  int parts[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    if (*release < '0' || *release > '9') return false;
    while (*release >= '0' && *release <= '9') parts[i] = parts[i] * 10 + (*release++ - '0');
    if (i == 0 && *release++ != '.') return false;
  }
  return parts[0] > major || (parts[0] == major && parts[1] >= minor);
}

bool kernel_parks_ignored_timer_signals() {
  utsname u;
  return uname(&u) == 0 && release_at_least(u.release, 6, 13);
}

// Ignoring a signal discards every instance pending in any thread; then our handler comes back.
// Only while the disposition is ours: a handler the program installed is never touched. Never
// where the kernel parks ignored timer signals: coming back, our handler would have the pending
// signals of every other thread's timer sent again, to threads that may sleep by then.
void withdraw_pending_signals(int sig) {
  if (g_kernel_parks_ignored_timer_signals || !handler_is_ours(sig)) return;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(sig, &ignore, nullptr);
  const struct sigaction ours = our_action();
  sigaction(sig, &ours, nullptr);
}

// Gives the signal back: the program's disposition from before start, unless the program has
// installed its own since (then that one stays). Pending instances of ours are discarded first.

void give_back(int sig, const struct sigaction& previous) {
  if (sig == 0 || !handler_is_ours(sig)) return;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(sig, &ignore, nullptr);
  sigaction(sig, &previous, nullptr);
}

bool has_own_handler(const struct sigaction& action) {
  return (action.sa_flags & SA_SIGINFO)
             ? action.sa_sigaction != nullptr
             : (action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN);
}

// Installs our handler for the first timer, unless the program has put one of its own there
// since: then the signal is the program's and no thread is timer-sampled.
bool acquire_signal(int sig) {
  if (sig == 0) return false;
  if (handler_is_ours(sig)) return true;
  struct sigaction current = {};
  if (sigaction(sig, nullptr, &current) != 0 || has_own_handler(current)) return false;
  g_previous_action = current;
  const struct sigaction action = our_action();
  return sigaction(sig, &action, nullptr) == 0;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

uint64_t thread_cpu_ns(uint64_t tid) { return read_thread_cpu_ns(tid).value_or(UINT64_MAX); }

// Whether threads' CPU clocks move by less than 10 µs at a time (the scheduler's clock counts
// nanoseconds, as on every machine with a stable cycle counter): then a thread whose clock did
// not move did not run, not even briefly. Where it counts in ticks, a short run may not show.
bool thread_clocks_fine_grained() {
  const uint64_t self = current_thread_id();
  const uint64_t first = thread_cpu_ns(self);
  for (int i = 0; i < 20000 && first != UINT64_MAX; ++i) {
    const uint64_t now = thread_cpu_ns(self);
    if (now != first) return now - first < 10000;
  }
  return false;
}

class SignalStackCopier final : public StackCopier {
 public:
  SignalStackCopier(int sig, const Config& config)
      : signal_(sig), clock_shows_any_run_(thread_clocks_fine_grained()) {
    regions_.read();
    SamplingSignalOwner owner;
    owner.signal = sig;
    owner.locate_stack = [this](uint64_t tid, uint64_t sp) { return locate(tid, sp); };
    owner.handler_installed = [sig] { return handler_is_ours(sig); };
    owner.withdraw_pending = [sig] { withdraw_pending_signals(sig); };
    owner.acquire = [sig] { return acquire_signal(sig); };
    owner.release = [sig] { give_back(sig, g_previous_action); };
    const auto interval = static_cast<uint64_t>(config.interval.count());
    auto timers = std::make_unique<LinuxSelfSampling>(owner, interval, config.stack_copy_size);
    std::unique_ptr<PerfSelfSampling> perf;
    const char* way = getenv("INPROF_SELF_SAMPLING");
    if (way == nullptr || std::strcmp(way, "timer") != 0) {
      perf = PerfSelfSampling::create(owner.locate_stack, interval, config.stack_copy_size);
    }
    self_sampling_ = std::make_unique<SelfSamplingRouter>(std::move(timers), std::move(perf));
  }

  ~SignalStackCopier() override {
    self_sampling_->timers().stop_all();
    // Ignoring discards any of our signals still pending in threads that block it; then the
    // program's own disposition comes back.
    if (handler_is_ours(signal_)) {
      struct sigaction ignore = {};
      ignore.sa_handler = SIG_IGN;
      sigaction(signal_, &ignore, nullptr);
      self_sampling_.reset();  // waits for handlers still running
      sigaction(signal_, &g_previous_action, nullptr);
    } else {
      self_sampling_.reset();
    }
    g_pid.store(0);
    g_copier_exists.store(false);
  }

  SelfSampling* self_sampling() override { return self_sampling_.get(); }

  CopyResult copy(uint64_t tid, StackSnapshot& out) override {
    // (A reading given by the caller is older: the check below then spans more, never less.)
    const uint64_t cpu_before =
        out.cpu_read_before_ns != 0 ? out.cpu_read_before_ns : thread_cpu_ns(tid);
    if (cpu_before == UINT64_MAX) return CopyResult::kThreadGone;
    ThreadSyscallFile syscall_file(tid);
    const std::optional<ThreadSyscallState> before = syscall_file.read();
    if (!before) return CopyResult::kThreadGone;
    // On a CPU or waiting for one (/proc says "running" for both): only its own timer may stop
    // it. Asleep in a system call, or stopped outside one (a page fault, a stop signal): its
    // registers are frozen in the kernel until it runs again.
    if (before->running || before->sp == 0) return CopyResult::kRunning;
    out.time_ns = monotonic_ns();
    out.thread_cpu_ns = cpu_before;
    out.expirations_merged = 0;
    std::memset(out.regs, 0, sizeof(out.regs));
    out.regs[kRegSp] = before->sp;
    out.regs[kRegPc] = before->pc;
    // (Without its region, the copy stops at the first page that is not readable.)
    const std::optional<StackRegion> region = locate(tid, before->sp, /*paced=*/true);
    copy_other_stack(&out, region ? &*region : nullptr, pid_);
    out.stack_region_known = region.has_value();
    out.registers_partial = true;
    out.runnable = !before->in_syscall;
    out.wait_call = before->in_syscall ? before->number : -1;
    out.wait_object = before->first_argument;
    out.wait_object_kind = kDescriptorUnknown;
    // Nothing copied (the kernel refuses process_vm_readv: seccomp, an emulator): no sample rather
    // than a lone PC.
    if (!out.stack_found) return CopyResult::kFailed;
    out.label_count = copy_labels(out.label_source, out.label_owner, out.labels, kMaxLabelDepth);
    // Consistent only if it never left the kernel meanwhile: its clock did not move (proof
    // enough where clocks are fine-grained; else its system call is read again too, a sixth of
    // a copy's cost).
    if (thread_cpu_ns(tid) != cpu_before) return CopyResult::kRunning;
    if (!clock_shows_any_run_) {
      const std::optional<ThreadSyscallState> after = syscall_file.read();
      if (!after || !(*after == *before)) return CopyResult::kRunning;
    }
    // What it waits on, when that is a descriptor: after the copy (the thread sleeps on; this
    // only names the descriptor as it is now).
    if (out.wait_call >= 0 && waits_on_descriptor(out.wait_call)) {
      out.wait_object_kind = descriptor_kind(out.wait_object);
    }
    return CopyResult::kOk;
  }

 private:
  // The mapping holding `sp`. One the table does not hold (a new thread's stack, a grown main
  // stack) is asked of the kernel, or where it cannot answer, found by reading the table again:
  // at most every 100 ms per thread and, for a copy (`paced`: it can do without), only after a
  // pause of 19 times the last read (at 10,000 threads each read is 1.5 MB of text).
  std::optional<StackRegion> locate(uint64_t tid, uint64_t sp, bool paced = false) {
    const StackRegion* region = regions_.find(sp);
    if (region != nullptr) return *region;
    StackRegion asked;
    switch (query_stack_region(sp, &asked)) {
      case RegionQuery::kFound:
        regions_.insert(asked);
        return asked;
      case RegionQuery::kNotFound:
        return std::nullopt;
      case RegionQuery::kUnsupported:
        break;
    }
    if (!refresh_regions(tid, paced)) return std::nullopt;
    region = regions_.find(sp);
    return region ? std::optional<StackRegion>(*region) : std::nullopt;
  }

  bool refresh_regions(uint64_t tid, bool paced) {
    const uint64_t now = monotonic_ns();
    if (paced && now < next_paced_read_ns_) return false;
    auto [it, inserted] = last_refresh_ns_.try_emplace(tid, now);
    if (!inserted) {
      if (now - it->second < 100000000) return false;
      it->second = now;
    }
    if (last_refresh_ns_.size() > 4096) last_refresh_ns_.clear();  // ids of exited threads
    const bool read = regions_.read();
    const uint64_t done = monotonic_ns();
    next_paced_read_ns_ = done + 19 * (done - now);
    return read;
  }

  const int signal_;
  const bool clock_shows_any_run_;  // thread_clocks_fine_grained()
  const int pid_ = getpid();
  StackRegionTable regions_;
  std::unique_ptr<SelfSamplingRouter> self_sampling_;
  std::unordered_map<uint64_t, uint64_t> last_refresh_ns_;  // by thread id
  uint64_t next_paced_read_ns_ = 0;
};

}  // namespace

std::unique_ptr<StackCopier> StackCopier::create(const Config& config, Status* status) {
  const int sig = config.signal == 0 ? kDefaultSampleSignal : config.signal;
  if (sig < 1 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
      sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGABRT) {
    *status =
        Status::error(Status::Code::kInvalidOption,
                      "sample_signal " + std::to_string(sig) +
                          " cannot be used for sampling; pick e.g. SIGURG, SIGPROF or a real-time "
                          "signal");
    return nullptr;
  }
  bool expected = false;
  if (!g_copier_exists.compare_exchange_strong(expected, true)) {
    *status = Status::error(Status::Code::kAlreadyRunning, "a stack copier already exists");
    return nullptr;
  }
  if (!config.interrupts) {
    // No CPU samples: the signal is never sent, so it is neither checked nor taken. The copier
    // keeps the self-sampling object for its wake-up (sampled allocations use it); no thread is
    // ever started there. Signal 0 is nobody's: the destructor and a fork child give nothing back.
    g_pid.store(getpid());
    g_signal = 0;
    *status = {};
    return std::make_unique<SignalStackCopier>(0, config);
  }
  struct sigaction previous = {};
  if (sigaction(sig, nullptr, &previous) != 0) {
    g_copier_exists.store(false);
    *status = Status::error(
        Status::Code::kPlatformError,
        "cannot read the disposition of " + signal_name(sig) + ": " + std::strerror(errno));
    return nullptr;
  }
  if (has_own_handler(previous)) {
    g_copier_exists.store(false);
    *status = Status::error(
        Status::Code::kSignalInUse,
        signal_name(sig) +
            " already has a handler in this program (another profiler, or setitimer?); "
            "choose a free signal with Options::sample_signal");
    return nullptr;
  }
  // The handler goes in with the first timer (acquire_signal), and out after the last: threads
  // sampled by the kernel's rings, and sleeping ones, need none.
  g_kernel_parks_ignored_timer_signals = kernel_parks_ignored_timer_signals();
  g_pid.store(getpid());
  g_signal = sig;
  g_previous_action = previous;
  *status = {};
  return std::make_unique<SignalStackCopier>(sig, config);
}

void StackCopier::release_after_fork() {
  if (!g_copier_exists.load()) return;
  give_back(g_signal, g_previous_action);
  g_pid.store(0);
  self_sampling_release_after_fork();
  g_copier_exists.store(false);
}

}  // namespace inprof::internal
