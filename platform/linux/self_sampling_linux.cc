#include "self_sampling_linux.h"

#include <errno.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "sampling/self_sample_queue.h"
#include "session/process_info.h"
#include "small_mappings_linux.h"
#include "thread_proc_linux.h"
#include "thread_stack_copy_linux.h"
#if defined(__x86_64__)
#include "ucontext_registers_x86_64.h"
#elif defined(__aarch64__)
#include "ucontext_registers_aarch64.h"
#endif

namespace inprof::internal {
namespace {

struct Mailbox {
  // Room for two copies of the most it takes (one being read, one being written; a ring with room
  // for one only lost every deep sample) and dozens of a shallow stack's.
  Mailbox(size_t entries, size_t copy_limit)
      : copy_limit(copy_limit), queue(entries, 2 * copy_limit) {}

  const size_t copy_limit;  // the largest stack copy it takes

  // Odd while a timer feeds it; bumped on every start and stop, so that a signal carrying an
  // older generation is ignored.
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> handlers_inside{0};  // the mailbox is reused only when 0
  std::atomic<uint64_t> tid{0};
  // The thread's stack mapping, under a sequence lock: the sampler may move it while the thread
  // samples itself (odd sequence: being written).
  std::atomic<uint32_t> stack_sequence{0};
  std::atomic<uint64_t> stack_begin{0};
  std::atomic<uint64_t> stack_end{0};
  std::atomic<bool> stack_is_main{false};
  size_t max_copy = 0;
  std::atomic<const LabelStack*> labels{nullptr};
  std::atomic<uint64_t> answered{0};
  std::atomic<uint64_t> missed{0};
  std::atomic<uint32_t> disarm_requested{0};  // by the sampler: the handler disarms the timer
  std::atomic<uint32_t> disarmed{0};          // by the handler
  // By the handler: the thread had too little stack left for it (a StackVerdict); its timer is
  // disarmed.
  std::atomic<uint32_t> short_of_stack{0};
  timer_t timer{};
  SelfSampleQueue queue;

  void publish_stack(const std::optional<StackRegion>& region) {
    const uint32_t sequence = stack_sequence.load(std::memory_order_relaxed);
    stack_sequence.store(sequence + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    stack_begin.store(region ? region->begin : 0, std::memory_order_relaxed);
    stack_end.store(region ? region->end : 0, std::memory_order_relaxed);
    stack_is_main.store(region && region->main_stack, std::memory_order_relaxed);
    stack_sequence.store(sequence + 2, std::memory_order_release);
  }

  // SUSPENDED: the mapping as last published, if it was not being written and holds `sp`.
  bool read_stack(uint64_t sp, StackRegion* out) const {
    const uint32_t before = stack_sequence.load(std::memory_order_acquire);
    out->begin = stack_begin.load(std::memory_order_relaxed);
    out->end = stack_end.load(std::memory_order_relaxed);
    out->main_stack = stack_is_main.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint32_t after = stack_sequence.load(std::memory_order_relaxed);
    return before == after && (before & 1) == 0 && sp >= out->begin && sp < out->end;
  }
};

// Static storage: the handler reaches the mailboxes through this table and counts itself in
// g_handlers_inside before it looks, so teardown can wait for it (see ~LinuxSelfSampling).
std::atomic<Mailbox*> g_mailboxes[kMaxSelfSampledThreads];
std::atomic<uint32_t> g_handlers_inside{0};

uint64_t thread_cpu_ns() {
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// SUSPENDED: queues one snapshot of the calling thread.
void fill(Mailbox& box, const siginfo_t* info, const ucontext_t* context, int pid) {
  uint64_t regs[kRegisterCount];
  capture_registers(context, regs);
  const uint64_t sp = regs[kRegSp];
  StackRegion region;
  const bool known = box.read_stack(sp, &region);
  const size_t bytes = known ? std::min(stack_bytes_above(region, sp), box.max_copy) : box.max_copy;
  StackSnapshot* out = box.queue.reserve(bytes);
  if (out == nullptr) {
    box.missed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  out->time_ns = monotonic_ns();
  out->thread_cpu_ns = thread_cpu_ns();
  out->expirations_merged = info->si_overrun > 0 ? static_cast<uint64_t>(info->si_overrun) : 0;
  for (int i = 0; i < kRegisterCount; ++i) out->regs[i] = regs[i];
  copy_own_stack(out, known ? &region : nullptr, pid);
  out->stack_region_known = known;
  out->registers_partial = false;
  out->runnable = false;
  const uint64_t tid = box.tid.load(std::memory_order_relaxed);
  out->label_source = box.labels.load(std::memory_order_relaxed);
  out->label_owner = tid;
  out->label_count = copy_labels(out->label_source, tid, out->labels, kMaxLabelDepth);
  box.queue.commit();
}

// The kernel's signal frame on this CPU (AT_MINSIGSTKSZ), for the handler: set before any timer.
std::atomic<uint64_t> g_signal_frame_bytes{2048};

// SUSPENDED: whether the handler has kHandlerStackBytes below its frame, on the alternate stack it
// runs on (the kernel records it in the context) or on the thread's own stack (its mapping as last
// published). A small alternate stack, or a thread deep in its stack, must not be overrun by us.
StackVerdict judge_stack(const ucontext_t* context, const Mailbox& box) {
  // The kernel records the thread's alternate stack as set (its flags as given, not whether the
  // thread was on it): a thread without one has a size of 0.
  const auto alt_begin = reinterpret_cast<uint64_t>(context->uc_stack.ss_sp);
  const uint64_t alt_end = alt_begin + context->uc_stack.ss_size;
  if (context->uc_stack.ss_size != 0 && !(context->uc_stack.ss_flags & SS_DISABLE)) {
    // Interrupted on it (in a handler of its own): our frame went below the program's there. It
    // fitted this time; the thread is not given the chance again.
    const uint64_t interrupted = context_sp(context);
    if (interrupted > alt_begin && interrupted <= alt_end) return StackVerdict::kAltStackTooSmall;
    // Too small for the program's own handler (its frame and what it uses) and our frame below
    // it: the kernel kills the thread with SIGSEGV when one of our signals lands while that
    // handler runs and our frame does not fit (its mask does not hold our signal). The thread is
    // not timer-sampled again (counted; a kernel ring may take it), whatever this sample's luck.
    if (context->uc_stack.ss_size < kProgramHandlerStackBytes +
                                        2 * g_signal_frame_bytes.load(std::memory_order_relaxed) +
                                        kHandlerStackBytes) {
      return StackVerdict::kAltStackTooSmall;
    }
  }
  const auto here = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  if (!(context->uc_stack.ss_flags & SS_DISABLE) && here > alt_begin && here <= alt_end) {
    return here - alt_begin >= kHandlerStackBytes ? StackVerdict::kEnough
                                                  : StackVerdict::kAltStackTooSmall;
  }
  StackRegion region;
  const auto verdict = [](bool enough) {
    return enough ? StackVerdict::kEnough : StackVerdict::kOwnStackShort;
  };
  // The main thread's stack grows on demand below its mapping: nothing to judge by.
  // Not known yet (the timer's first signals): the mappings the sampler read before arming it.
  if (!box.read_stack(here, &region)) return verdict(!in_small_mapping(here));
  if (region.main_stack) return StackVerdict::kEnough;
  return verdict(here - region.begin >= kHandlerStackBytes &&
                 region.end - region.begin >= kSmallestTimerStack);
}

uint64_t encode_value(size_t index, uint32_t generation) {
  return (uint64_t(index) << 32) | generation;
}

// How long a stopping timer may wait for its thread to disarm it before it is deleted anyway.
constexpr uint64_t kStopWaitNs = 50000000;
constexpr uint64_t kStopAllWaitNs = 20000000;  // when the session stops: stop() waits for it

// What a timer's signal takes of a thread's stack: the kernel's frame (AT_MINSIGSTKSZ says how
// large on this CPU; 2 KiB where it does not say), our handler, and room for the code the thread
// runs next.
uint64_t signal_frame_bytes() {
  static const uint64_t frame = [] {
    const unsigned long reported = getauxval(AT_MINSIGSTKSZ);
    return reported != 0 ? uint64_t(reported) : uint64_t(2048);
  }();
  return frame;
}

uint64_t min_timer_headroom() { return signal_frame_bytes() + kHandlerStackBytes + 1024; }

bool valid_handle(int handle) {
  return handle >= 0 && static_cast<size_t>(handle) < kMaxSelfSampledThreads;
}

}  // namespace

void on_self_sample_signal(const siginfo_t* info, const ucontext_t* context, int pid) {
  g_handlers_inside.fetch_add(1, std::memory_order_seq_cst);
  const auto value = reinterpret_cast<uintptr_t>(info->si_value.sival_ptr);
  const uint64_t index = uint64_t(value) >> 32;
  const auto generation = static_cast<uint32_t>(value);
  Mailbox* box =
      index < kMaxSelfSampledThreads ? g_mailboxes[index].load(std::memory_order_seq_cst) : nullptr;
  if (box != nullptr) {
    box->handlers_inside.fetch_add(1, std::memory_order_seq_cst);
    // The timer signals its own thread only (SIGEV_THREAD_ID names the task, not a reusable id).
    if ((generation & 1) && box->generation.load(std::memory_order_seq_cst) == generation) {
      box->answered.fetch_add(1, std::memory_order_relaxed);
      if (box->disarm_requested.load(std::memory_order_acquire)) {
        const itimerspec zero = {};
        timer_settime(box->timer, 0, &zero, nullptr);
        box->disarmed.store(1, std::memory_order_release);
      } else if (const StackVerdict verdict = judge_stack(context, *box);
                 verdict != StackVerdict::kEnough) {
        // Given up (the sampler sees it in still_allowed() and counts it): no copy here, and no
        // more signals to this thread for a while (for good after an alternate stack's verdict).
        const itimerspec zero = {};
        timer_settime(box->timer, 0, &zero, nullptr);
        box->short_of_stack.store(static_cast<uint32_t>(verdict), std::memory_order_release);
        box->missed.fetch_add(1, std::memory_order_relaxed);
      } else {
        fill(*box, info, context, pid);
      }
    }
    box->handlers_inside.fetch_sub(1, std::memory_order_release);
  }
  g_handlers_inside.fetch_sub(1, std::memory_order_release);
}

LinuxSelfSampling::LinuxSelfSampling(SamplingSignalOwner owner, uint64_t interval_ns,
                                     size_t stack_copy_size)
    : owner_(std::move(owner)), interval_ns_(interval_ns), stack_copy_size_(stack_copy_size) {
  g_signal_frame_bytes.store(signal_frame_bytes(), std::memory_order_relaxed);
}

LinuxSelfSampling::~LinuxSelfSampling() {
  stop_all();
  Mailbox* boxes[kMaxSelfSampledThreads];
  for (size_t i = 0; i < kMaxSelfSampledThreads; ++i) {
    boxes[i] = g_mailboxes[i].exchange(nullptr, std::memory_order_seq_cst);
  }
  // A handler that counted itself before the table was emptied may still use a mailbox. It
  // takes microseconds unless its thread is preempted; after a second, leak rather than risk it.
  for (int waited_ms = 0; g_handlers_inside.load(std::memory_order_seq_cst) != 0; ++waited_ms) {
    if (waited_ms == 1000) return;
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
  for (Mailbox* box : boxes) delete box;
}

void LinuxSelfSampling::stop_all() {
  for (size_t i = 0; i < kMaxSelfSampledThreads; ++i) {
    if (slots_[i] == Slot::kActive) stop(static_cast<int>(i));
  }
  // Each thread disarms at its next expiration, which only comes if it runs: a thread that
  // sleeps has nothing pending, and its timer is deleted after the wait.
  const uint64_t deadline = monotonic_ns() + kStopAllWaitNs;
  for (;;) {
    reap(monotonic_ns() >= deadline);
    if (std::none_of(std::begin(slots_), std::end(slots_),
                     [](Slot s) { return s == Slot::kStopping; })) {
      return;
    }
    const timespec pause{0, 200000};
    nanosleep(&pause, nullptr);
  }
}

void LinuxSelfSampling::release(size_t index) {
  Mailbox& box = *g_mailboxes[index].load(std::memory_order_relaxed);
  timer_delete(box.timer);
  box.generation.store(box.generation.load(std::memory_order_relaxed) + 1,
                       std::memory_order_seq_cst);  // even: a late signal does nothing
  slots_[index] = Slot::kFree;
  if (signal_held_ && !any_timer()) {
    // The last timer is gone: the disposition goes back to the program (instances still pending
    // are discarded on the way).
    signal_held_ = false;
    owner_.release();
  }
}

bool LinuxSelfSampling::any_timer() const {
  return std::any_of(std::begin(slots_), std::end(slots_), [](Slot s) { return s != Slot::kFree; });
}

void LinuxSelfSampling::reap(bool force) {
  const uint64_t now = monotonic_ns();
  for (size_t i = 0; i < kMaxSelfSampledThreads; ++i) {
    if (slots_[i] != Slot::kStopping) continue;
    Mailbox& box = *g_mailboxes[i].load(std::memory_order_relaxed);
    if (!force && !box.disarmed.load(std::memory_order_acquire) && now < stop_deadline_ns_[i]) {
      continue;
    }
    release(i);
  }
}

bool LinuxSelfSampling::full() const {
  for (size_t i = 0; i < kMaxSelfSampledThreads; ++i) {
    if (slots_[i] == Slot::kFree) return false;
  }
  return true;
}

bool LinuxSelfSampling::usable() {
  // Only while timers run can the program take the signal from under them; between timers the
  // next start() asks again.
  if (usable_ && signal_held_ && !owner_.handler_installed()) usable_ = false;
  return usable_;
}

int LinuxSelfSampling::start(uint64_t tid, uint64_t sp, const LabelStack* labels) {
  reap(false);
  if (!usable() || full()) return -1;
  switch (may_take_signal(tid)) {
    case SignalVerdict::kAllowed:
      break;
    case SignalVerdict::kRefused:
      return -1;
    case SignalVerdict::kUnsure:
      return kAskAgainSoon;
  }
  // A free mailbox no handler is still leaving, else a new one in an empty slot.
  int index = -1;
  for (size_t i = 0; i < kMaxSelfSampledThreads && index < 0; ++i) {
    Mailbox* box = g_mailboxes[i].load(std::memory_order_relaxed);
    if (box && slots_[i] == Slot::kFree &&
        box->handlers_inside.load(std::memory_order_seq_cst) == 0) {
      index = static_cast<int>(i);
    }
  }
  for (size_t i = 0; i < kMaxSelfSampledThreads && index < 0; ++i) {
    if (g_mailboxes[i].load(std::memory_order_relaxed) == nullptr) {
      auto* box = i < kDeepMailboxes ? new Mailbox(kSelfSampleEntries, stack_copy_size_)
                                     : new Mailbox(kSelfSampleEntries / 2,
                                                   std::min(stack_copy_size_, kShallowCopyBytes));
      g_mailboxes[i].store(box, std::memory_order_seq_cst);
      index = static_cast<int>(i);
    }
  }
  if (index < 0) return -1;
  if (!signal_held_) {
    if (!owner_.acquire || !owner_.acquire()) return -1;  // the program's handler: no timers
    signal_held_ = true;
  }
  const int handle = arm(static_cast<size_t>(index), tid, sp, labels);
  if (handle < 0 && !any_timer()) {
    signal_held_ = false;
    owner_.release();
  }
  return handle;
}

LinuxSelfSampling::SignalVerdict LinuxSelfSampling::may_take_signal(uint64_t tid) {
  // Never a signal to a thread that could accept it (sigwait, signalfd) or that a handler's
  // system calls could get killed in. Its status shows the mask it has now, which inside
  // sigwait (nothing blocked: what it waits for is let through) or sigsuspend is not the one it
  // returns to: one that blocks the signal there would keep it pending for the program to take
  // (signalfd read it after sigtimedwait at 100 us). Asleep in one, it is refused; woken from
  // one, it keeps the mask it waited under until it runs again, and is "running" all that
  // time, like a thread preempted in its own code. So its mask is trusted only once it has run
  // since an earlier reading without going to sleep since: then it left every wait it was in.
  const std::optional<ThreadSyscallState> call = read_thread_syscall_state(tid);
  if (!call || (call->in_syscall && syscall_swaps_signal_mask(call->number))) {
    return SignalVerdict::kRefused;
  }
  const std::optional<uint64_t> cpu_before = read_thread_cpu_ns(tid);
  std::optional<ThreadSignalState> state = read_thread_signal_state(tid, owner_.signal);
  std::optional<uint64_t> cpu_after = read_thread_cpu_ns(tid);
  const auto refused = [&] {
    return !state || !cpu_before || !cpu_after || state->seccomp || state->blocks_signal;
  };
  if (refused()) {
    unsure_.erase(tid);
    return SignalVerdict::kRefused;
  }
  // Against an earlier reading (a tick before), else one more now if it runs (on another CPU).
  bool settled = false;
  if (auto earlier = unsure_.find(tid); earlier != unsure_.end()) {
    settled = *cpu_before > earlier->second.cpu_ns &&
              state->voluntary_switches == earlier->second.voluntary_switches;
  }
  if (!settled) {
    const std::optional<uint64_t> cpu_now = read_thread_cpu_ns(tid);
    if (cpu_now && *cpu_now > *cpu_after) {
      const uint64_t voluntary = state->voluntary_switches;
      state = read_thread_signal_state(tid, owner_.signal);
      cpu_after = read_thread_cpu_ns(tid);
      if (refused()) {
        unsure_.erase(tid);
        return SignalVerdict::kRefused;
      }
      settled = state->voluntary_switches == voluntary;
    }
  }
  if (settled) {
    unsure_.erase(tid);
    return SignalVerdict::kAllowed;
  }
  if (unsure_.size() >= kMostUnsureThreads) unsure_.clear();
  unsure_[tid] = UnsureReading{state->voluntary_switches, *cpu_after};
  return SignalVerdict::kUnsure;
}

int LinuxSelfSampling::arm(size_t index, uint64_t tid, uint64_t sp, const LabelStack* labels) {
  Mailbox& box = *g_mailboxes[index].load(std::memory_order_relaxed);
  const std::optional<StackRegion> region =
      sp != 0 ? owner_.locate_stack(tid, sp) : std::optional<StackRegion>();
  // A thread last seen this deep in its stack would take the kernel's signal frame and our
  // handler below it, and one with a small stack may be that deep at any moment: not
  // timer-sampled (the sampler counts what it gives up).
  if (region && !region->main_stack &&
      (sp - region->begin < min_timer_headroom() ||
       region->end - region->begin < kSmallestTimerStack)) {
    return -1;
  }
  // Its stack unknown yet (it has run since it was first seen): where the process has small
  // thread stacks, it may be deep in one, and the first signal's frame would not fit. It waits
  // until a sample read while it slept shows its stack (the sampler counts what it gives up
  // meanwhile). The handler of a first signal checks its own stack too (small_mappings_linux.h).
  if (!region && refresh_small_mappings(kSmallestTimerStack)) return -1;
  box.queue.reset();
  recent_copies_[index] = RecentCopies{};
  box.tid.store(tid, std::memory_order_relaxed);
  box.publish_stack(region);
  box.max_copy = box.copy_limit;
  box.labels.store(labels, std::memory_order_relaxed);
  box.answered.store(0, std::memory_order_relaxed);
  box.missed.store(0, std::memory_order_relaxed);
  box.disarm_requested.store(0, std::memory_order_relaxed);
  box.disarmed.store(0, std::memory_order_relaxed);
  box.short_of_stack.store(0, std::memory_order_relaxed);
  const uint32_t generation = box.generation.load(std::memory_order_relaxed) + 1;  // odd
  box.generation.store(generation, std::memory_order_seq_cst);

  sigevent event = {};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = owner_.signal;
  event._sigev_un._tid = static_cast<pid_t>(tid);
  event.sigev_value.sival_ptr =
      reinterpret_cast<void*>(static_cast<uintptr_t>(encode_value(index, generation)));
  if (timer_create(thread_cpu_clock(tid), &event, &box.timer) != 0) {
    box.generation.store(generation + 1, std::memory_order_seq_cst);
    return -1;
  }
  const timespec period{static_cast<time_t>(interval_ns_ / 1000000000u),
                        static_cast<long>(interval_ns_ % 1000000000u)};
  const itimerspec spec{period, period};
  if (timer_settime(box.timer, 0, &spec, nullptr) != 0) {
    timer_delete(box.timer);
    box.generation.store(generation + 1, std::memory_order_seq_cst);
    return -1;
  }
  slots_[index] = Slot::kActive;
  return static_cast<int>(index);
}

void LinuxSelfSampling::stop(int handle) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return;
  if (!usable()) {  // our handler is gone: it cannot disarm anything
    release(static_cast<size_t>(handle));
    return;
  }
  Mailbox& box = *g_mailboxes[handle].load(std::memory_order_relaxed);
  box.disarm_requested.store(1, std::memory_order_release);
  slots_[handle] = Slot::kStopping;
  stop_deadline_ns_[handle] = monotonic_ns() + kStopWaitNs;
  reap(false);
}

void LinuxSelfSampling::abandon(int handle) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return;
  release(static_cast<size_t>(handle));
  // The expiration it did not answer is still pending in it. Linux 6.13 and later drop a deleted
  // timer's signal when it is dequeued (withdraw_pending does nothing there: ignoring the signal
  // would have the other timers' pending signals sent again); older kernels deliver it, or hand
  // it to sigwait, unless it is withdrawn. The last timer's release discards it in any case.
  if (usable()) owner_.withdraw_pending();
}

bool LinuxSelfSampling::still_allowed(int handle) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return false;
  const Mailbox& box = *g_mailboxes[handle].load(std::memory_order_relaxed);
  if (box.short_of_stack.load(std::memory_order_acquire)) return false;
  const uint64_t tid = box.tid.load(std::memory_order_relaxed);
  const std::optional<ThreadSignalState> state = read_thread_signal_state(tid, owner_.signal);
  if (!state || state->seccomp) return false;
  // While our handler runs, the kernel blocks the signal; a thread preempted on its way into the
  // handler (the signal taken, the mask set, not one instruction run yet) shows that mask for as
  // long as it waits for a CPU. The program's own block leaves our timer's signal pending: the
  // thread ran two intervals of its CPU since its last answer.
  return !state->blocks_signal || !state->signal_pending;
}

bool LinuxSelfSampling::refused_for_alt_stack(int handle) const {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return false;
  const Mailbox& box = *g_mailboxes[handle].load(std::memory_order_relaxed);
  return box.short_of_stack.load(std::memory_order_acquire) ==
         static_cast<uint32_t>(StackVerdict::kAltStackTooSmall);
}

bool LinuxSelfSampling::set_stack(int handle, uint64_t sp) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return false;
  Mailbox& box = *g_mailboxes[handle].load(std::memory_order_relaxed);
  const std::optional<StackRegion> region =
      owner_.locate_stack(box.tid.load(std::memory_order_relaxed), sp);
  box.publish_stack(region);
  return region.has_value();
}

void LinuxSelfSampling::set_labels(int handle, const LabelStack* labels) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return;
  g_mailboxes[handle]
      .load(std::memory_order_relaxed)
      ->labels.store(labels, std::memory_order_relaxed);
}

const StackSnapshot* LinuxSelfSampling::front(int handle) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return nullptr;
  return g_mailboxes[handle].load(std::memory_order_relaxed)->queue.front();
}

void LinuxSelfSampling::pop(int handle) {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return;
  SelfSampleQueue& queue = g_mailboxes[handle].load(std::memory_order_relaxed)->queue;
  if (const StackSnapshot* snapshot = queue.front()) recent_copies_[handle].note(*snapshot);
  queue.pop();
}

void LinuxSelfSampling::RecentCopies::note(const StackSnapshot& snapshot) {
  if (in_window++ == kCopyWindow) {
    reserved[1] = reserved[0];
    used[1] = used[0];
    reserved[0] = used[0] = 0;
    in_window = 1;
  }
  reserved[0] = std::max(reserved[0], snapshot.capacity);
  used[0] = std::max(used[0], snapshot.stack_size);
}

SelfSampling::CollectPeriod LinuxSelfSampling::collect_period(int handle) const {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return CollectPeriod::kEveryTick;
  const RecentCopies& recent = recent_copies_[handle];
  if (recent.largest_reserved() == 0) return CollectPeriod::kEveryTick;  // none seen yet
  const SelfSampleQueue& queue = g_mailboxes[handle].load(std::memory_order_relaxed)->queue;
  return queue.snapshots_that_fit(recent.largest_reserved(), recent.largest_used()) >=
                 kSnapshotsForCollectPeriod
             ? CollectPeriod::kCollectPeriod
             : CollectPeriod::kEveryTick;
}

SelfSampling::Counts LinuxSelfSampling::counts(int handle) const {
  if (!valid_handle(handle) || slots_[handle] != Slot::kActive) return {};
  const Mailbox& box = *g_mailboxes[handle].load(std::memory_order_relaxed);
  return {box.answered.load(std::memory_order_relaxed), box.missed.load(std::memory_order_relaxed)};
}

void self_sampling_release_after_fork() {
  // The child's copies of the parent's mailboxes stay allocated (bounded); a new session in the
  // child starts from an empty table. The child has one thread, which is not in a handler: a
  // count inherited from a parent thread that was would make the next teardown wait for nothing.
  for (auto& box : g_mailboxes) box.store(nullptr, std::memory_order_relaxed);
  g_handlers_inside.store(0, std::memory_order_relaxed);
}

}  // namespace inprof::internal
