#include "sampling/sampler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "sampling/sampler_constants.h"
#include "sampling/thread_names.h"
#include "session/process_info.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

Sampler::Sampler(const SamplerConfig& config, std::unique_ptr<StackCopier> copier,
                 std::unique_ptr<Unwinder> unwinder, std::unique_ptr<ThreadLister> threads,
                 std::unique_ptr<ModuleLister> modules, RingBuffer& ring, MetadataQueue& metadata)
    : config_(config),
      copier_(std::move(copier)),
      module_lister_(std::move(modules)),
      ring_(ring),
      metadata_(metadata),
      encoder_(config_, std::move(unwinder), ring, metadata),
      visitor_(config_, std::move(threads), metadata, stopping_, *this),
      stack_buffer_(make_large_array<uint8_t>(config.stack_copy_size)),
      collector_(config_, copier_->self_sampling(), *copier_, visitor_.lister(), encoder_,
                 snapshot_) {
  snapshot_.buffer = stack_buffer_.get();
  snapshot_.capacity = config.stack_copy_size;
}

Sampler::~Sampler() = default;

uint64_t Sampler::period_ns() const { return collector_.period_ns(); }

void Sampler::run() {
  uint64_t next = monotonic_ns();
  for (;;) {
    uint64_t interval;
    const uint64_t tick_start_ns = monotonic_ns();
    {
      std::lock_guard hold(tick_mutex_);
      tick();
      interval = next_tick_in_ns();
    }
    const uint64_t cpu_ns = current_thread_cpu_ns();
    own_cpu_ns_.store(cpu_ns, std::memory_order_relaxed);
    tick_overhead_.note(tick_start_ns, cpu_ns);
    // Producers never wake the writer (markers come from any thread, samples from here): this
    // tick does, once the ring is a quarter full.
    if (ring_filling_ && ring_.held_bytes() > ring_.capacity() / 4) ring_filling_();
    next += interval;
    const uint64_t now = monotonic_ns();
    if (now >= next) {
      // Overran: skip the ticks we cannot keep rather than bunching samples together.
      const uint64_t missed = (now - next) / interval + 1;
      ticks_late_.fetch_add(missed, std::memory_order_relaxed);
      next += missed * interval;
    }
    const WaitEnd end = wait_until(next);
    if (end == WaitEnd::kQueuesFull) {
      // A ring filled before its tick: the tick is taken now, and the next one an interval after
      // it. Collecting the ring and then waking again for the tick cost a program two wake-ups
      // where one does (xz: a ring that holds 9 ms of samples under ticks 12 ms apart).
      next = monotonic_ns();
      continue;
    }
    if (end == WaitEnd::kStop) {
      std::lock_guard hold(tick_mutex_);
      // The interposer is detached by now: these are the last, and no thread waits for the pool
      // while holding the loader's lock. A module loaded since the last tick (a dlopen whose
      // constructor allocated, ticks 50 ms apart without CPU samples) is listed before they are
      // unwound, and is in the dump for the records drained before.
      if (module_lister_->changed()) refresh_modules(monotonic_ns());
      // Threads started (and named) since the last tick; those whose start record was lost
      // from a listing.
      if (visitor_.watching()) {
        visitor_.drain_activity();
        visitor_.list_if_records_lost(monotonic_ns(), /*last=*/true);
      }
      drain_allocations();
      collector_.stop_all(visitor_.threads(), /*collect_first=*/true);  // queued snapshots kept
      write_final_repeats(monotonic_ns());
      // The counters' values at the end, so that each series ends where the program left it,
      // however late the last tick was (under qemu, ticks come 100 ms apart or more).
      if (!paused_.load(std::memory_order_relaxed)) encoder_.write_counters(monotonic_ns());
      own_cpu_ns_.store(current_thread_cpu_ns(), std::memory_order_relaxed);
      {
        std::lock_guard lock(stop_mutex_);
        finished_ = true;
      }
      stop_cv_.notify_all();
      return;
    }
  }
}

uint64_t Sampler::next_tick_in_ns() const {
  const uint64_t period = period_ns();
  // No CPU samples: ticks list threads and collect what the allocation pool holds (it wakes the
  // sampler when half full), and sample the counters, which keep the interval.
  if (!config_.cpu_samples) {
    const bool wakes = collector_.waits();
    return !encoder_.has_counters() && wakes ? std::max(period, kNoCpuTickNs / period * period)
                                             : period;
  }
  // No ring open (every thread asleep, or the kernel refused rings: timers) is no reason to tick
  // at the interval: the collector asks for it as soon as one thread runs.
  if (period >= kCollectPeriodNs || !collector_.active() || encoder_.has_counters() ||
      crash_state_.load(std::memory_order_relaxed) != kCrashIdle) {
    return period;
  }
  return collector_.tick_in_ns(period, visitor_.awake(), visitor_.threads());
}

Sampler::WaitEnd Sampler::wait_until(uint64_t deadline) {
  // Where the kernel samples busy threads by itself, their queues fill at the full rate between
  // ticks: the sampler wakes when one needs collecting (the tick is then taken early), or when
  // woken (a stop, a pause).
  for (;;) {
    const uint64_t now = monotonic_ns();
    {
      std::lock_guard lock(stop_mutex_);
      if (stop_requested_) return WaitEnd::kStop;
    }
    if (now >= deadline || !collector_.waits()) {
      break;
    }
    const bool rings_full = collector_.wait(deadline - now);
    if (allocation_pool_ != nullptr && allocation_pool_->ready() != 0) {
      std::lock_guard hold(tick_mutex_);
      drain_allocations();
    }
    if (rings_full) return WaitEnd::kQueuesFull;
  }
  std::unique_lock lock(stop_mutex_);
  if (allocation_pool_ != nullptr) {
    // Sampled allocations wait in a small pool: collect them every millisecond meanwhile, and
    // every 100 µs while they keep coming (at a high rate the pool fills in microseconds).
    constexpr uint64_t kAllocationDrainNs = 1000000;
    constexpr uint64_t kBusyAllocationDrainNs = 100000;
    uint64_t slice = kAllocationDrainNs;
    for (;;) {
      const uint64_t now = monotonic_ns();
      if (stop_requested_) return WaitEnd::kStop;
      if (now >= deadline) return WaitEnd::kDeadline;
      if (stop_cv_.wait_for(lock, std::chrono::nanoseconds(std::min(deadline - now, slice)),
                            [this] { return stop_requested_; })) {
        return WaitEnd::kStop;
      }
      lock.unlock();
      size_t drained = 0;
      {
        std::lock_guard hold(tick_mutex_);
        drained =
            allocation_pool_->drain([this](const AllocationSlot& slot) { write_allocation(slot); });
      }
      slice = drained != 0 ? kBusyAllocationDrainNs : kAllocationDrainNs;
      lock.lock();
    }
  }
  // The rings' wait above usually ran to the deadline: then no condition wait at all (one with
  // an expired timeout is still a futex call, and on this path a context switch per tick).
  if (monotonic_ns() < deadline) {
    // steady_clock and monotonic_ns() are the same clock; wait for the remaining time.
    stop_cv_.wait_for(lock, std::chrono::nanoseconds(deadline - std::min(deadline, monotonic_ns())),
                      [this] { return stop_requested_; });
  }
  return stop_requested_ ? WaitEnd::kStop : WaitEnd::kDeadline;
}

void Sampler::request_stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stop_requested_ = true;
    stopping_.store(true, std::memory_order_relaxed);
    stop_cv_.notify_all();
  }
  wake();
}

bool Sampler::wait_finished(uint64_t timeout_ns) {
  std::unique_lock lock(stop_mutex_);
  return stop_cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns),
                           [this] { return finished_; });
}

void Sampler::set_paused(bool paused) {
  if (paused) {
    paused_at_ns_.store(monotonic_ns(), std::memory_order_relaxed);
    settle_due_.store(true, std::memory_order_release);
  } else {
    resume_due_.store(true, std::memory_order_release);
  }
  paused_.store(paused, std::memory_order_release);
  wake();  // a pause stops the interruptions now, not at a tick up to kCollectPeriodNs away
}

void Sampler::wake() {
  // The collector's backend is the copier's; given up (taken over by the program) only in a
  // tick, after which wait() is never called again: the copier still owns the object.
  if (SelfSampling* s = copier_->self_sampling()) s->interrupt_wait();
}

SamplerStats Sampler::stats() const {
  return {encoder_.samples_written(),
          encoder_.samples_dropped(),
          threads_timed_out_.load() + collector_.timed_out(),
          ticks_late_.load() + collector_.ticks_late(),
          samples_given_up_.load(),
          own_cpu_ns_.load(),
          tick_overhead_.figures(),
          sleep_stacks_unread_.load()};
}

void Sampler::tick() {
  if (crash_state_.load(std::memory_order_acquire) == kCrashPosted) write_crash_sample();
  if (settle_due_.exchange(false, std::memory_order_acq_rel)) {
    settle_before_pause(paused_at_ns_.load(std::memory_order_relaxed));
  }
  if (paused_.load(std::memory_order_acquire)) {
    collector_.stop_all(visitor_.threads(), /*collect_first=*/false);  // paused: nothing recorded
    drain_allocations();  // the allocating threads would wait for the pool
    return;
  }
  const uint64_t now = monotonic_ns();
  encoder_.write_counters(now);
  if (module_lister_->changed()) refresh_modules(now);
  drain_allocations();
  visitor_.refresh(now);  // the threads, their names, the kernel's records of them
  if (resume_due_.exchange(false, std::memory_order_acq_rel)) resume_after_pause(now);
  if (!config_.cpu_samples) {
    visitor_.end_tick();
    return;
  }
  // The program installed its own handler for the sampling signal: it is the program's now.
  collector_.give_up_if_taken(visitor_.threads());
  collector_.begin_tick(visitor_.tick());
  crashed_ = crash_state_.load(std::memory_order_relaxed) != kCrashIdle;
  visitor_.visit_threads(now);
  visitor_.end_tick();
}

}  // namespace inprof::internal
