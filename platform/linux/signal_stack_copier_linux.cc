// StackCopier for Linux: one signal, one round trip.
//
// The sampler publishes a request (sequence number, output snapshot, the table of stack
// mappings) and sends the signal to one thread with rt_tgsigqueueinfo, the sequence number in
// si_value. The handler, running on that thread, claims the request with one CAS (so a late or
// foreign signal can never write into a snapshot), copies registers and the top of its stack,
// marks the request done and wakes the sampler if it sleeps. The thread then simply returns:
// it is stopped for the length of a memcpy. The sampler unwinds the copy afterwards.
//
// The same handler serves self-sampling (self_sampling_linux.h): a signal from a thread's own
// timer (si_code SI_TIMER) queues a snapshot in that thread's mailbox instead.
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <unordered_map>

#include "interrupted_calls_linux.h"
#include "process_info.h"
#include "self_sampling_linux.h"
#include "stack_copier.h"
#include "stack_regions_linux.h"
#include "thread_stack_copy_linux.h"
#if defined(__x86_64__)
#include "ucontext_registers_x86_64.h"
#elif defined(__aarch64__)
#include "ucontext_registers_aarch64.h"
#endif

namespace inprof::internal {
namespace {

enum Phase : uint32_t { kIdle = 0, kRequested = 1, kCopying = 2, kDone = 3 };
constexpr uint32_t kSequenceMask = 0x3fffffff;
constexpr uint64_t kResendNs = 1000000;
// SIGURG by default: its default action is to ignore. A sampling signal can still be pending
// when a thread calls execve (pending signals survive it) or after the handler is gone; with
// SIGPROF the new program, which has no handler, is killed. SIGURG is also used by hardly any
// program (socket out-of-band data), while SIGPROF belongs to setitimer profilers.
constexpr int kDefaultSampleSignal = SIGURG;

// Shared with the handler. Static storage, never freed: a signal that arrives after the
// profiler stopped finds valid memory and an idle state, and does nothing.
struct HandlerShared {
  std::atomic<uint32_t> state{kIdle};  // (sequence << 2) | phase; also the futex word
  std::atomic<uint32_t> sampler_waiting{0};
  std::atomic<int> pid{0};
  // Written by the sampler before it publishes kRequested; read by the handler after its CAS.
  StackSnapshot* out = nullptr;
  const StackRegion* regions = nullptr;
  size_t region_count = 0;
};

HandlerShared g_shared;
std::atomic<bool> g_copier_exists{false};
// The disposition to restore, kept here too so that a forked child can restore it.
int g_signal = 0;
struct sigaction g_previous_action;

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op | FUTEX_PRIVATE_FLAG, value,
                 timeout, nullptr, 0);
}

// SUSPENDED: the signal handler. Async-signal-safe throughout.
void on_sample_signal(int, siginfo_t* info, void* context) {
  // Any run of this handler may have cut a sleeping call short: let the wrappers in
  // restarted_calls_linux.cc resume it.
  ++t_sample_interruptions;
  const int pid = g_shared.pid.load(std::memory_order_relaxed);
  if (info->si_code == SI_TIMER && pid != 0) {
    const int saved_errno = errno;
    on_self_sample_signal(info, static_cast<const ucontext_t*>(context), pid);
    errno = saved_errno;
    return;
  }
  if (info->si_code != SI_QUEUE || info->si_pid != g_shared.pid.load(std::memory_order_relaxed)) {
    return;  // not ours: someone else's signal (ignored while we own it)
  }
  const auto sequence =
      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr));
  uint32_t expected = (sequence << 2) | kRequested;
  if (!g_shared.state.compare_exchange_strong(expected, (sequence << 2) | kCopying,
                                              std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
    return;  // a late signal for a request that timed out, or already served
  }
  const int saved_errno = errno;
  StackSnapshot* out = g_shared.out;
  out->time_ns = monotonic_ns();
  capture_registers(static_cast<const ucontext_t*>(context), out->regs);
  copy_own_stack(out, find_stack_region(g_shared.regions, g_shared.region_count, out->sp()), pid);
  out->label_count = copy_labels(out->label_source, out->label_owner, out->labels, kMaxLabelDepth);
  g_shared.state.store((sequence << 2) | kDone, std::memory_order_seq_cst);
  if (g_shared.sampler_waiting.load(std::memory_order_seq_cst)) {
    futex(&g_shared.state, FUTEX_WAKE, 1, nullptr);
  }
  errno = saved_errno;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

class SignalStackCopier final : public StackCopier {
 public:
  SignalStackCopier(int sig, const Config& config, const struct sigaction& previous)
      : signal_(sig),
        timeout_ns_(static_cast<uint64_t>(config.timeout.count())),
        previous_(previous),
        self_sampling_(
            std::make_unique<LinuxSelfSampling>(sig, static_cast<uint64_t>(config.interval.count()),
                                                config.stack_copy_size, regions_)) {
    read_stack_regions(&regions_);
  }

  ~SignalStackCopier() override {
    self_sampling_->stop_all();
    // Ignoring discards any of our signals still pending in threads that block it; then the
    // program's own disposition comes back.
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    sigaction(signal_, &ignore, nullptr);
    self_sampling_.reset();  // waits for handlers still running
    sigaction(signal_, &previous_, nullptr);
    g_shared.pid.store(0);
    g_copier_exists.store(false);
  }

  SelfSampling* self_sampling() override { return self_sampling_.get(); }

  CopyResult copy(uint64_t tid, StackSnapshot& out) override {
    CopyResult result = copy_once(tid, out);
    if (result == CopyResult::kOk && !out.stack_found && refresh_regions(tid)) {
      // SP was in no known mapping: a new thread's stack, or the main stack grew. Once more.
      result = copy_once(tid, out);
    }
    return result;
  }

 private:
  CopyResult copy_once(uint64_t tid, StackSnapshot& out) {
    sequence_ = (sequence_ + 1) & kSequenceMask;
    if (sequence_ == 0) sequence_ = 1;
    const uint32_t base = sequence_ << 2;
    g_shared.out = &out;
    g_shared.regions = regions_.data();
    g_shared.region_count = regions_.size();
    g_shared.state.store(base | kRequested, std::memory_order_release);
    if (!send(tid)) {
      const int err = errno;
      g_shared.state.store(base | kIdle, std::memory_order_relaxed);
      return err == ESRCH ? CopyResult::kThreadGone : CopyResult::kFailed;
    }
    return wait_for(base, tid) ? CopyResult::kOk : CopyResult::kTimedOut;
  }

  bool send(uint64_t tid) {
    siginfo_t info = {};
    info.si_signo = signal_;
    info.si_code = SI_QUEUE;
    info.si_pid = pid_;
    info.si_uid = uid_;
    info.si_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(sequence_));
    return syscall(SYS_rt_tgsigqueueinfo, pid_, static_cast<pid_t>(tid), signal_, &info) == 0;
  }

  // Spins briefly (a round trip takes microseconds, and a spinning waiter spares the handler a
  // futex wake), then sleeps on the futex until done or timed out. Sends the signal again every
  // millisecond: a classic (non-real-time) signal that is already pending, such as one from the
  // thread's self-sampling timer just stopped, swallows ours without a word.
  bool wait_for(uint32_t base, uint64_t tid) {
    const uint64_t start = monotonic_ns();
    uint64_t resend_at = start + kResendNs;
    const uint64_t deadline = start + timeout_ns_;
    const uint64_t spin_until = start + std::min<uint64_t>(50000, timeout_ns_);
    for (;;) {
      uint32_t s = g_shared.state.load(std::memory_order_acquire);
      if (s == (base | kDone)) break;
      const uint64_t now = monotonic_ns();
      if (now < spin_until) {
        cpu_relax();
        continue;
      }
      if (now >= deadline && s == (base | kRequested)) {
        uint32_t expected = base | kRequested;
        if (g_shared.state.compare_exchange_strong(expected, base | kIdle)) return false;
        continue;  // the handler claimed it meanwhile: it finishes in microseconds
      }
      // Sleep until woken; a handler mid-copy gets no deadline (it cannot block).
      timespec wait = {0, static_cast<long>(kResendNs)};
      if (s == (base | kRequested)) {
        if (now >= resend_at) {
          send(tid);  // a duplicate of a classic signal still pending is merged with it
          resend_at = now + kResendNs;
        }
        uint64_t left = std::min(deadline, resend_at) - now;
        wait = {static_cast<time_t>(left / 1000000000u), static_cast<long>(left % 1000000000u)};
      }
      g_shared.sampler_waiting.store(1, std::memory_order_seq_cst);
      if (g_shared.state.load(std::memory_order_seq_cst) == s) {
        futex(&g_shared.state, FUTEX_WAIT, s, &wait);
      }
      g_shared.sampler_waiting.store(0, std::memory_order_relaxed);
    }
    g_shared.state.store(base | kIdle, std::memory_order_relaxed);
    return true;
  }

  // Re-reads the mapping table because `tid`'s SP was in none of it: a new thread, or a grown
  // main stack. At most once per 100 ms per thread, so a thread whose SP is in no readable
  // mapping at all does not make every tick read /proc.
  bool refresh_regions(uint64_t tid) {
    const uint64_t now = monotonic_ns();
    auto [it, inserted] = last_refresh_ns_.try_emplace(tid, now);
    if (!inserted) {
      if (now - it->second < 100000000) return false;
      it->second = now;
    }
    if (last_refresh_ns_.size() > 4096) last_refresh_ns_.clear();  // ids of exited threads
    return read_stack_regions(&regions_);
  }

  const int signal_;
  const uint64_t timeout_ns_;
  const struct sigaction previous_;
  const int pid_ = getpid();
  const uid_t uid_ = getuid();  // one system call less per sample
  uint32_t sequence_ = 0;
  std::vector<StackRegion> regions_;  // before self_sampling_, which keeps a reference
  std::unique_ptr<LinuxSelfSampling> self_sampling_;
  std::unordered_map<uint64_t, uint64_t> last_refresh_ns_;  // by thread id
};

}  // namespace

std::unique_ptr<StackCopier> StackCopier::create(const Config& config, Status* status) {
  const int sig = config.signal == 0 ? kDefaultSampleSignal : config.signal;
  if (sig < 1 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV ||
      sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGABRT) {
    *status = Status::error(Status::Code::kInvalidOption,
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
  struct sigaction previous = {};
  if (sigaction(sig, nullptr, &previous) != 0) {
    g_copier_exists.store(false);
    *status = Status::error(
        Status::Code::kPlatformError,
        "cannot read the disposition of " + signal_name(sig) + ": " + std::strerror(errno));
    return nullptr;
  }
  const bool has_handler = (previous.sa_flags & SA_SIGINFO)
                               ? previous.sa_sigaction != nullptr
                               : (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN);
  if (has_handler) {
    g_copier_exists.store(false);
    *status = Status::error(
        Status::Code::kSignalInUse,
        signal_name(sig) +
            " already has a handler in this program (another profiler, or setitimer?); "
            "choose a free signal with Options::sample_signal");
    return nullptr;
  }
  g_shared.pid.store(getpid());
  g_shared.state.store(kIdle);
  struct sigaction action = {};
  action.sa_sigaction = on_sample_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  if (sigaction(sig, &action, nullptr) != 0) {
    g_copier_exists.store(false);
    *status = Status::error(
        Status::Code::kPlatformError,
        "cannot install the handler for " + signal_name(sig) + ": " + std::strerror(errno));
    return nullptr;
  }
  g_signal = sig;
  g_previous_action = previous;
  *status = {};
  return std::make_unique<SignalStackCopier>(sig, config, previous);
}

void StackCopier::release_after_fork() {
  if (!g_copier_exists.load()) return;
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(g_signal, &ignore, nullptr);
  sigaction(g_signal, &g_previous_action, nullptr);
  g_shared.pid.store(0);
  self_sampling_release_after_fork();
  g_copier_exists.store(false);
}

}  // namespace inprof::internal
