#include "sampler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "declarations.h"
#include "label_stack.h"
#include "process_info.h"
#include "profiler_threads.h"
#include "thread_names.h"

namespace inprof::internal {
namespace {

constexpr uint64_t kOsNamesRefreshNs = 250000000;  // threads rename themselves after start
constexpr uint64_t kThreadListingPeriodNs = 4000000;
constexpr uint64_t kFullListingPeriodNs = 100000000;
// Where the kernel reports thread starts and ends (watch_activity()), a full listing only finds
// threads born to unwatched ones as another ended: at 2,000 threads, listing every 100 ms was a
// sixth of what the sampler spent.
constexpr uint64_t kWatchedFullListingPeriodNs = 1000000000;
// Without CPU samples a tick lists threads (for their names and ends: an allocating thread is
// added when its first allocation is drained) and drains the allocation pool, which wakes the
// sampler itself when half full.
constexpr uint64_t kNoCpuTickNs = 50000000;
constexpr int kLeafCandidateSlots = 8;
constexpr uint32_t kMaxBackoffTicks = 1024;
// With self-sampling the tick serves threads that mostly sleep (and collects the busy ones'
// queues): 1 kHz is enough for them, and spares a small machine ten times as many wake-ups at
// 10 kHz.
constexpr uint64_t kSelfSamplingMinPeriodNs = 1000000;
// A self-sampled thread's business is judged over at least this long (and 4 ticks): the OS's
// count of time waiting for a CPU moves in scheduler ticks (4 ms at 250 Hz).
constexpr uint64_t kSelfSamplingWindowNs = 20000000;
// A thread that ran within this keeps its timer or ring while it sleeps (it costs nothing then),
// unless another running thread waits for one: its next burst is sampled from its first
// interval, not from the tick that sees it again (a thread running 2 ms every 50 ms kept a
// quarter of its CPU in the profile; the rest went to its sleeping stack).
constexpr uint64_t kKeepWhileRanWithinNs = 1000000000;
constexpr uint64_t kScarceForTicks = 64;
// Timers or rings given at one tick to threads found asleep after a burst: each costs the sampler
// system calls (a ring: an event opened and mapped), and a pool of threads that all wake at once
// must not make one tick long.
constexpr uint32_t kBurstArmsPerTick = 2;
constexpr uint32_t kMostIdleBackoffShift = 4;
// A watched thread (watch_activity()) is checked at the tick after it is switched on, however
// long its back-off: its repeats only keep the wall-clock view, each weighed by the time since
// the previous one, and 128 intervals apart they cost 1,000 sleeping threads 8 times fewer
// records (and the profile as many fewer samples).
constexpr uint32_t kMostWatchedIdleBackoffShift = 7;
// Threads the kernel reported before a listing showed them: more than this many waiting (a burst
// of short-lived threads) and they are forgotten, asked by their clocks like unwatched ones.
constexpr size_t kMostPendingActivity = 4096;
// Repeats written for timer expirations a self-sampled thread missed while it waited for a CPU
// (or was stopped): at most this many per sample.
constexpr uint64_t kMaxMergedExpirations = 1000;
// A thread gets a timer only once it is this old (as seen by the sampler).
constexpr uint64_t kNewThreadGraceNs = 2000000;

}  // namespace

Sampler::Sampler(const SamplerConfig& config, std::unique_ptr<StackCopier> copier,
                 std::unique_ptr<Unwinder> unwinder, std::unique_ptr<ThreadLister> threads,
                 std::unique_ptr<ModuleLister> modules, RingBuffer& ring, MetadataQueue& metadata)
    : config_(config),
      copier_(std::move(copier)),
      self_sampling_(copier_->self_sampling()),
      unwinder_(std::move(unwinder)),
      thread_lister_(std::move(threads)),
      module_lister_(std::move(modules)),
      ring_(ring),
      metadata_(metadata),
      stack_buffer_(make_large_array<uint8_t>(config.stack_copy_size)),
      frames_(config.max_frames),
      frame_sps_(config.max_frames),
      encode_buffer_(64 + config.max_frames * 11 + (kLeafCandidateSlots + 1) * 12 +
                     kMaxLabelDepth * 16) {
  snapshot_.buffer = stack_buffer_.get();
  snapshot_.capacity = config.stack_copy_size;
}

Sampler::~Sampler() = default;

size_t Sampler::leaf_candidates(const StackSnapshot& snapshot, LeafCandidate* out) const {
  size_t count = 0;
  for (int slot = 0; slot < kLeafCandidateSlots; ++slot) {
    uint64_t word;
    if (snapshot.read_word(snapshot.sp() + 8 * slot, &word) && in_code(word)) {
      out[count++] = {static_cast<uint8_t>(slot), word};
    }
  }
  // Where calls leave the return address in a register, a function that has not saved it (a
  // leaf, a prologue, an epilogue) returns through it: the link register is a candidate too.
  if constexpr (kHasLinkRegister) {
    const uint64_t lr = code_address(snapshot.regs[kRegLr]);
    if (in_code(lr)) out[count++] = {kLeafCandidateLinkRegister, lr};
  }
  return count;
}

uint32_t Sampler::walk_flags(const UnwindOutput& unwound, const StackSnapshot& snapshot,
                             LeafCandidate* candidates, size_t* candidate_count) const {
  uint32_t flags = 0;
  if (unwound.result == UnwindResult::kTruncated) flags |= kSampleTruncatedCopy;
  if (unwound.result == UnwindResult::kDepthLimit) flags |= kSampleDepthLimit;
  if (!snapshot.stack_found) flags |= kSampleNoStack;
  if (unwound.result == UnwindResult::kComplete && !unwound.reached_end) {
    flags |= kSampleIncomplete;
  }
  *candidate_count = 0;
  if (unwound.frame_pointer_walk) {
    flags |= kSampleFramePointerWalk;
    *candidate_count = leaf_candidates(snapshot, candidates);
  }
  return flags;
}

void Sampler::enable_crash_samples() {
  crash_stack_buffer_ = make_large_array<uint8_t>(config_.stack_copy_size);
  // Touched now, as the crash writer's buffers are: a crash (out of memory, perhaps) should not be
  // the first to fault these pages in.
  std::memset(crash_stack_buffer_.get(), 0, config_.stack_copy_size);
  crash_snapshot_.buffer = crash_stack_buffer_.get();
  crash_snapshot_.capacity = config_.stack_copy_size;
}

void Sampler::write_crash_sample() {
  const UnwindOutput unwound = unwinder_->unwind(crash_snapshot_, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, crash_snapshot_, candidates, &candidate_count);
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, crash_tid_, relative(crash_snapshot_.time_ns), std::nullopt, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count));
  const bool written =
      !w.overflowed() && ring_.write(static_cast<uint8_t>(RecordType::kSample), w.view());
  crash_state_.store(written ? kCrashWritten : kCrashFailed, std::memory_order_release);
}

void Sampler::set_allocation_pool(AllocationPool* pool) {
  allocation_pool_ = pool;
  // Inside the program's allocator, maybe in a signal handler: a write to the wake descriptor.
  pool->set_wake(
      [](void* sampler) {
        const int saved = errno;
        static_cast<Sampler*>(sampler)->wake();
        errno = saved;
      },
      this);
}

size_t Sampler::drain_allocations() {
  if (allocation_pool_ == nullptr || allocation_pool_->ready() == 0) return 0;
  // No module refresh here (ticks do it): listing modules takes the loader's lock, which a
  // thread allocating in a dlopen'ed constructor holds while it waits for a free slot.
  return allocation_pool_->drain([this](const AllocationSlot& slot) { write_allocation(slot); });
}

void Sampler::prepare_modules() { refresh_modules(monotonic_ns()); }

void Sampler::write_allocation(const AllocationSlot& slot) {
  // A thread born since the last listing (a short one may be gone by the next): known before its
  // first record, else the profile would have no thread to put its allocations in.
  const uint64_t tid = slot.event.tid;
  if (!threads_.count(tid) && !excluded_.count(tid) && !is_profiler_thread(tid)) {
    add_thread(tid, slot.snapshot.time_ns);
  }
  const UnwindOutput unwound = unwinder_->unwind(slot.snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  // The leaf is exact (the allocator's caller, below): no leaf fix-up.
  uint32_t flags = walk_flags(unwound, slot.snapshot, candidates, &candidate_count) &
                   ~uint32_t(kSampleFramePointerWalk | kSampleOnCpu);
  // The walk starts in the profiler's sink; the stack the program sees starts at the call into
  // the allocator. Its return address minus one names the call instruction.
  size_t first = unwound.count;
  for (size_t i = 1; i < unwound.count; ++i) {
    if (frames_[i] == slot.event.caller_pc) {
      first = i;
      break;
    }
  }
  size_t count = unwound.count;
  if (first < unwound.count) {
    frames_[first] = slot.event.caller_pc - 1;
  } else {
    // The walk did not reach the caller (its module not listed yet — a dlopen whose constructor
    // allocates, drained before the next tick — or code without unwind information): the call
    // into the allocator alone, marked incomplete, rather than the profiler's own frames.
    first = 0;
    count = 1;
    frames_[0] = slot.event.caller_pc - 1;
    flags |= kAllocationCallerNotFound | kSampleIncomplete;
  }
  const InprofAllocationEvent& e = slot.event;
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_allocation(w, e.tid, relative(slot.snapshot.time_ns), e.address, e.size, e.weight, e.kind,
                    flags, std::span<const uint64_t>(frames_.data() + first, count - first));
  if (w.overflowed() || !ring_.write(static_cast<uint8_t>(RecordType::kAllocation), w.view())) {
    allocation_pool_->dropped().fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t Sampler::period_ns() const {
  return self_sampling_ ? std::max(config_.interval_ns, kSelfSamplingMinPeriodNs)
                        : config_.interval_ns;
}

void Sampler::run() {
  uint64_t next = monotonic_ns();
  for (;;) {
    uint64_t interval;
    {
      std::lock_guard hold(tick_mutex_);
      tick();
      interval = next_tick_in_ns();
    }
    own_cpu_ns_.store(current_thread_cpu_ns(), std::memory_order_relaxed);
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
      if (activity_) drain_activity();  // threads started (and named) since the last tick
      drain_allocations();
      stop_all_self_sampling(/*collect_first=*/true);  // what the threads queued is kept
      // The counters' values at the end, so that each series ends where the program left it,
      // however late the last tick was (under qemu, ticks come 100 ms apart or more).
      if (!paused_.load(std::memory_order_relaxed)) sample_counters(monotonic_ns());
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
    const bool wakes = self_sampling_ != nullptr && self_sampling_->wakeable();
    return counters_.empty() && wakes ? std::max(period, kNoCpuTickNs / period * period) : period;
  }
  // No ring open (every thread asleep, or the kernel refused rings: timers) is no reason to tick
  // at the interval: the loop below asks for it as soon as one thread runs.
  if (period >= kCollectPeriodNs || self_sampling_ == nullptr || !counters_.empty() ||
      crash_state_.load(std::memory_order_relaxed) != kCrashIdle) {
    return period;
  }
  // Every thread is either sampled by the kernel into a ring that wakes the sampler when it
  // fills, or did not run since its last sample (its next one is a repeat, weighed by the time
  // since its last); sampled allocations wake it when half their pool is taken. Nothing needs a
  // tick before kCollectPeriodNs; one that starts to run is copied at the next tick, its sample
  // weighed by the CPU it used (at most 12 intervals, see kSettledCollectPeriodNs), and the ticks
  // return to the interval.
  bool settled = true;
  // A ring still finding its size is read at every interval while its thread runs (a walk cut
  // short grows it at once). While the thread sleeps there is nothing to read: a process that
  // waits (a compiler driver for its cc1, a shell for its children) never collects the samples
  // that would settle its ring, and ticked at the full rate for its whole life. Its ticks wait at
  // most kSettledMaxIntervals intervals, so a thread that wakes deeper loses as few samples to a
  // ring too small as a settled one does.
  bool idle_unsettled = false;
  // Parked threads have neither a timer nor a ring, and did not run at their last check.
  for (const uint64_t tid : awake_) {
    const auto it = threads_.find(tid);
    if (it == threads_.end()) continue;
    const ThreadState& state = it->second;
    if (!state.selected) continue;
    if (state.self_handle >= 0 && !self_sampling_->holds_collect_period(state.self_handle)) {
      if (state.ran_since_tick) return period;
      idle_unsettled = true;
    } else if (state.self_handle < 0 && state.ran_since_tick) {
      return period;
    }
    settled = settled &&
              (state.self_handle < 0 || self_sampling_->holds_settled_period(state.self_handle));
  }
  // Every ring has kept its size for long (kSettledCollectPeriodNs): fewer wake-ups still.
  uint64_t relaxed = settled ? std::max(kCollectPeriodNs, std::min(kSettledCollectPeriodNs,
                                                                   kSettledMaxIntervals * period))
                             : kCollectPeriodNs;
  if (idle_unsettled) relaxed = std::min(relaxed, kSettledMaxIntervals * period);
  return std::max(period, relaxed / period * period);
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
    if (now >= deadline || self_sampling_ == nullptr ||
        !(self_sampling_->waitable() || self_sampling_->wakeable())) {
      break;
    }
    const bool rings_full = self_sampling_->wait(deadline - now);
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
  paused_.store(paused, std::memory_order_relaxed);
  wake();  // a pause stops the interruptions now, not at a tick up to kCollectPeriodNs away
}

void Sampler::wake() {
  // self_sampling_ is set once at construction; nulled (taken over by the program) only in a
  // tick, after which waitable() is never asked again: the copier still owns the object.
  if (SelfSampling* s = copier_->self_sampling()) s->interrupt_wait();
}

SamplerStats Sampler::stats() const {
  return {samples_written_.load(), samples_dropped_.load(),  threads_timed_out_.load(),
          ticks_late_.load(),      samples_given_up_.load(), own_cpu_ns_.load()};
}

void Sampler::tick() {
  if (crash_state_.load(std::memory_order_acquire) == kCrashPosted) write_crash_sample();
  if (paused_.load(std::memory_order_relaxed)) {
    stop_all_self_sampling(/*collect_first=*/false);  // paused: nothing recorded, no interruption
    drain_allocations();  // the allocating threads would wait for the pool
    return;
  }
  const uint64_t now = monotonic_ns();
  sample_counters(now);
  if (module_lister_->changed()) refresh_modules(now);
  drain_allocations();
  // Listing /proc/self/task is most of an idle thread's cost per tick: at most every 4 ms, so a
  // new thread is seen within 4 ms (an exited one simply stops answering meanwhile).
  if (tick_count_ == 0 || now - last_thread_listing_ns_ >= kThreadListingPeriodNs) {
    last_thread_listing_ns_ = now;
    // Not when the count is what the last listing found (a few microseconds to ask, where
    // listing 1,000 threads every 4 ms cost ~12 % of a CPU); at least every 100 ms, for a thread
    // born as another ended.
    const std::optional<uint64_t> count = thread_lister_->thread_count();
    const uint64_t full_period = activity_ ? kWatchedFullListingPeriodNs : kFullListingPeriodNs;
    if (!count || *count != tids_.size() || now - last_full_listing_ns_ >= full_period) {
      last_full_listing_ns_ = now;
      refresh_threads(now);
    }
  }
  refresh_names(now);
  if (activity_) drain_activity();
  if (!config_.cpu_samples) {
    ++tick_count_;
    return;
  }
  if (self_sampling_ && !self_sampling_->usable()) {
    // The program installed its own handler for the sampling signal: it is the program's now.
    // Running threads are no longer sampled (counted); sleeping ones still are.
    stop_all_self_sampling(/*collect_first=*/true);
    self_sampling_ = nullptr;
  }
  burst_arms_at_tick_ = 0;
  visit_threads(now);
  ++tick_count_;
}

void Sampler::visit_threads(uint64_t now) {
  parked_.take_due(now, [this](uint64_t tid, uint64_t due_ns) {
    auto it = threads_.find(tid);
    if (it != threads_.end() && it->second.parked && it->second.parked_until == due_ns) {
      wake_thread(tid, it->second);
    }
  });
  const bool crashed = crash_state_.load(std::memory_order_relaxed) != kCrashIdle;
  visiting_.swap(awake_);
  awake_.clear();
  for (const uint64_t tid : visiting_) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) continue;  // ended since
    ThreadState& state = it->second;
    if (!state.awake || state.visited_tick == tick_count_) continue;  // parked, or seen
    state.visited_tick = tick_count_;
    // Where the program's threads leave the sampler little CPU (200 busy threads at exit), one
    // tick's walks took hundreds of milliseconds that a stop waited for.
    if (!stopping_.load(std::memory_order_relaxed)) visit_thread(tid, state, now, crashed);
    if (parkable(state, now)) {
      state.awake = false;
      state.parked = true;
      state.parked_until = state.selected ? state.next_check_ns : ParkedThreads::kUntilWoken;
      ++parked_count_;
      parked_.park(tid, state.parked_until);
    } else {
      awake_.push_back(tid);
    }
  }
  parked_.compact_if_stale(parked_count_, [this](uint64_t tid, uint64_t due_ns) {
    auto it = threads_.find(tid);
    return it != threads_.end() && it->second.parked && it->second.parked_until == due_ns;
  });
}

void Sampler::visit_thread(uint64_t tid, ThreadState& state, uint64_t now, bool crashed) {
  // The crashed thread is in its crash handler now: its crash sample is its last.
  if (!state.selected || (crashed && tid == crash_tid_)) {
    stop_self_sampling(state);
    return;
  }
  if (state.self_handle >= 0) {
    collect_self_samples(tid, state, now);
    return;
  }
  if (state.retry_at_tick > tick_count_) return;
  // Backing off while asleep, unless the kernel said it was switched on since.
  if (state.next_check_ns > now && !state.activity.switched_on) return;
  sample_thread(tid, state, now);
}

bool Sampler::parkable(const ThreadState& state, uint64_t now) const {
  if (state.self_handle >= 0 || state.activity.switched_on || stopping_.load()) return false;
  if (!state.selected) return true;  // until it is
  return !state.ran_since_tick && state.next_check_ns > now && state.retry_at_tick <= tick_count_;
}

void Sampler::wake_thread(uint64_t tid, ThreadState& state) {
  if (!config_.cpu_samples) return;  // ticks visit no thread
  if (state.parked) {
    state.parked = false;
    --parked_count_;
  }
  if (!state.awake) {
    state.awake = true;
    awake_.push_back(tid);
  }
}

void Sampler::refresh_modules(uint64_t now) {
  module_lister_->list(module_scratch_);
  unwinder_->set_modules(module_scratch_);
  for (auto& [key, known] : modules_) known.seen = false;
  code_ranges_.clear();
  for (ModuleInfo& m : module_scratch_) {
    auto key = std::make_tuple(m.start, m.path, m.build_id);
    auto it = modules_.find(key);
    if (it == modules_.end()) {
      ModuleRecord rec;
      rec.id = next_module_id_++;
      rec.time_ns = relative(now);
      rec.start = m.start;
      rec.end = m.end;
      rec.load_bias = m.load_bias;
      rec.file_offset = m.file_offset;
      rec.flags = m.flags;
      rec.path = m.path;
      rec.build_id = m.build_id;
      metadata_.push(RecordType::kModuleLoad, rec);
      it = modules_.emplace(std::move(key), KnownModule{rec.id, false}).first;
    }
    it->second.seen = true;
    code_ranges_.insert(code_ranges_.end(), m.code_ranges.begin(), m.code_ranges.end());
  }
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (!it->second.seen) {
      metadata_.push(RecordType::kModuleUnload, ModuleUnloadRecord{it->second.id, relative(now)});
      it = modules_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(code_ranges_.begin(), code_ranges_.end());
}

bool Sampler::in_code(uint64_t address) const {
  auto it = std::upper_bound(code_ranges_.begin(), code_ranges_.end(),
                             std::make_pair(address, UINT64_MAX));
  return it != code_ranges_.begin() && address < std::prev(it)->second;
}

bool Sampler::program_has_threads() const {
  const uint64_t leader = process_id();
  for (uint64_t tid : tids_) {
    if (is_profiler_thread(tid)) continue;
    // The main thread stays listed, a zombie, after it called pthread_exit().
    if (tid == leader && thread_lister_->ended(tid).value_or(false)) continue;
    return true;
  }
  return false;
}

void Sampler::refresh_threads(uint64_t now) {
  if (!thread_lister_->list(tids_)) return;
  if (program_ended_ && !tids_.empty() && !program_has_threads()) {
    std::exchange(program_ended_, nullptr)();
  }
  // A thread missing from the listing has exited, and so has published every allocation it
  // sampled: written now, before its end, they are never drained after it (which would announce
  // the thread again).
  drain_allocations();
  for (uint64_t tid : tids_) {
    if (excluded_.count(tid) || is_profiler_thread(tid)) continue;
    add_thread(tid, now);
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    // A watched thread is ended a drain after its end record: the records of its last moments
    // (its name, say) may come from another CPU's ring, read later.
    const Activity& activity = it->second.activity;
    const bool awaiting_end =
        activity.watched && !activity.resync && !(activity.ended && activity.ended_drains > 1);
    if (it->second.last_seen_tick != tick_count_ && !awaiting_end) {
      it = end_thread(it, now);
    } else {
      ++it;
    }
  }
}

std::map<uint64_t, Sampler::ThreadState>::iterator Sampler::end_thread(
    std::map<uint64_t, ThreadState>::iterator it, uint64_t now) {
  drain_self_samples(it->first, it->second);  // taken before it exited
  write_tail(it->first, it->second);
  stop_self_sampling(it->second);
  if (it->second.announced) {
    metadata_.push(RecordType::kThreadEnd, ThreadEndRecord{it->first, relative(now)});
  }
  thread_lister_->forget(it->first);
  ThreadNames::instance().forget(it->first);  // the id may be reused by a new thread
  if (it->second.parked) --parked_count_;
  return threads_.erase(it);
}

void Sampler::add_thread(uint64_t tid, uint64_t now) {
  auto [it, inserted] = threads_.try_emplace(tid);
  it->second.last_seen_tick = tick_count_;
  if (!inserted) return;
  ThreadState& state = it->second;
  state.first_seen_ns = now;
  if (auto pending = activity_pending_.find(tid); pending != activity_pending_.end()) {
    state.activity = pending->second;
    activity_pending_.erase(pending);
    if (state.activity.ended) ending_.push_back(tid);
  }
  // Its CPU is counted from here, so that its first sample carries what it used before
  // (issue 21: else uncounted). Born during the session (the first listing has every thread
  // there was), its CPU clock started at 0.
  state.last_cpu_ns =
      tick_count_ != 0 ? std::optional<uint64_t>(0) : thread_lister_->cpu_time_ns(tid);
  auto given = ThreadNames::instance().get(tid);
  state.name = given ? *given : thread_lister_->name(tid);
  // Ended before it was listed: the name it gave itself, as the kernel's record said.
  if (state.name.empty()) state.name = state.activity.name;
  // One of the profiler's threads, listed between its start and its mark, may have named itself
  // since (it marks itself first): asked again once its name is read, so that no "inprof-…"
  // thread is ever announced (seen under TSan, which widens that window).
  if (is_profiler_thread(tid)) {
    threads_.erase(it);
    return;
  }
  wake_thread(tid, state);
  select(tid, state, now);
}

bool Sampler::watch_activity(uint64_t starter) {
  activity_ = thread_lister_->watch_activity(starter);
  if (activity_) activity_pending_[starter].watched = true;
  return activity_;
}

void Sampler::drain_activity() {
  thread_lister_->drain_activity(
      [](void* self, const ThreadLister::Activity& record) {
        static_cast<Sampler*>(self)->on_activity(record);
      },
      this);
  // Kept for one more drain: a thread's records come from the rings of the CPUs it ran on and
  // of the one its creator ran on, each read once per drain, one after another. Its start,
  // written before it ran, may still come after its end (the creator's ring read first).
  for (auto it = activity_pending_.begin(); it != activity_pending_.end();) {
    if (it->second.ended && ++it->second.ended_drains > 1) {
      it = activity_pending_.erase(it);
    } else {
      ++it;
    }
  }
  // Listed threads with an end record: counted here, ended by the next listing.
  for (auto tid = ending_.begin(); tid != ending_.end();) {
    auto it = threads_.find(*tid);
    if (it == threads_.end() || ++it->second.activity.ended_drains > 1) {
      tid = ending_.erase(tid);
    } else {
      ++tid;
    }
  }
}

void Sampler::on_activity(const ThreadLister::Activity& record) {
  using Kind = ThreadLister::Activity::Kind;
  if (record.kind == Kind::kLost) {
    // Any watched thread may have run, may be on a CPU now, or may have ended: each is asked
    // by its clock until a check finds it did not run (then it is off every CPU, and its
    // records tell again), and a listing without it ends it (its end record may be lost).
    // (A burst of 2,000 threads started at once overflowed the rings.)
    auto resync = [](Activity& activity) {
      activity.on_cpu = true;
      activity.switched_on = true;
      activity.resync = true;
    };
    for (auto& [tid, state] : threads_) {
      resync(state.activity);
      wake_thread(tid, state);
    }
    for (auto& [tid, activity] : activity_pending_) resync(activity);
    return;
  }
  if (excluded_.count(record.tid) != 0) return;
  Activity* activity;
  auto it = threads_.find(record.tid);
  if (it == threads_.end() && record.kind == Kind::kCreated) {
    // Listed at once, so that a thread that ends before the next listing is still in the
    // profile, with its name.
    activity_pending_[record.tid].watched = true;
    add_thread(record.tid, monotonic_ns());
    it = threads_.find(record.tid);
    if (it == threads_.end()) return;  // one of the profiler's
  }
  if (it != threads_.end()) {
    activity = &it->second.activity;
  } else {
    if (activity_pending_.size() >= kMostPendingActivity &&
        activity_pending_.count(record.tid) == 0) {
      activity_pending_.clear();
    }
    activity = &activity_pending_[record.tid];
  }
  switch (record.kind) {
    case Kind::kCreated:
      activity->watched = true;
      break;
    case Kind::kEnded:
      activity->ended = true;  // forgotten after this drain, unless it was listed meanwhile
      if (it != threads_.end()) ending_.push_back(record.tid);
      break;
    case Kind::kNamed:
      // One of the profiler's, listed before it marked itself (it marks itself, then names
      // itself): ended like any other, never renamed "inprof-…" (seen under TSan).
      if (is_profiler_thread(record.tid)) break;
      activity->name = record.name;
      if (it != threads_.end() && !ThreadNames::instance().get(record.tid)) {
        rename(record.tid, it->second, activity->name, monotonic_ns());
      }
      break;
    case Kind::kOn:
      activity->switched_on = true;
      if (it != threads_.end()) wake_thread(record.tid, it->second);
      [[fallthrough]];
    case Kind::kOff:
      activity->watched = true;  // only watched threads' switches are recorded
      // Records of one thread come from the rings of the CPUs it ran on, read one ring after
      // another: the newest says where it is.
      if (record.time_ns >= activity->at_ns) {
        activity->on_cpu = record.kind == Kind::kOn;
        activity->at_ns = record.time_ns;
      }
      break;
    default:
      break;
  }
}

void Sampler::refresh_names(uint64_t now) {
  const uint64_t generation = ThreadNames::instance().generation();
  const bool os_names_due = now - last_os_names_ns_ >= kOsNamesRefreshNs;
  if (generation == names_generation_ && !os_names_due) return;
  names_generation_ = generation;
  if (os_names_due) last_os_names_ns_ = now;
  for (auto& [tid, state] : threads_) {
    // One of the profiler's, listed before it marked itself: ended at the next listing, and
    // never renamed meanwhile.
    if (is_profiler_thread(tid)) continue;
    auto given = ThreadNames::instance().get(tid);
    std::string name;
    if (given) {
      name = *given;
    } else if (os_names_due && now >= state.next_os_name_ns) {
      // Threads name themselves soon after they start, seldom later: read again after 0.25,
      // 0.5, 1 ... 4 s (1,000 threads' names read every 0.25 s: ~1 % of a CPU).
      state.os_name_reads = std::min<uint32_t>(state.os_name_reads + 1, 5);
      state.next_os_name_ns = now + (kOsNamesRefreshNs << state.os_name_reads) / 2;
      name = thread_lister_->name(tid);
      // As in add_thread: a profiler thread may have marked and named itself since the check.
      if (is_profiler_thread(tid)) continue;
    }
    rename(tid, state, name, now);
  }
}

void Sampler::rename(uint64_t tid, ThreadState& state, const std::string& name, uint64_t now) {
  if (!name.empty() && name != state.name) {
    state.name = name;
    if (state.announced) {
      metadata_.push(RecordType::kThreadName, ThreadRecord{tid, relative(now), 0, name});
    }
  }
  select(tid, state, now);  // a rename or (un)registration may change the selection
}

void Sampler::select(uint64_t tid, ThreadState& state, uint64_t now) {
  const bool was_selected = state.selected;
  state.selected = config_.thread_filters.empty();
  for (const std::string& filter : config_.thread_filters) {
    if (state.name.find(filter) != std::string::npos) state.selected = true;
  }
  switch (ThreadNames::instance().choice(tid)) {
    case ThreadNames::Choice::kAlways:
      state.selected = true;
      break;
    case ThreadNames::Choice::kNever:
      state.selected = false;
      break;
    case ThreadNames::Choice::kFilters:
      break;
  }
  if (state.selected && !was_selected && state.parked) wake_thread(tid, state);
  if (state.selected && !state.announced) {
    state.announced = true;
    metadata_.push(
        RecordType::kThreadStart,
        ThreadRecord{tid, relative(now), tid == main_thread_id() ? kThreadMain : 0u, state.name});
  }
}

void Sampler::sample_thread(uint64_t tid, ThreadState& state, uint64_t now) {
  if (state.activity.watched && !state.activity.resync) {
    const bool ran = state.activity.on_cpu || state.activity.switched_on;
    state.activity.switched_on = false;
    if (!ran && state.has_stack && state.last_cpu_ns) {
      // Off every CPU since its last check, as the kernel's records say: its stack and CPU time
      // are what they were, known without asking its clock (most of what 1,000 sleeping
      // threads cost the sampler).
      state.ran_since_tick = false;
      write_repeat(tid, state, now, uint64_t{0});
      state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, kMostWatchedIdleBackoffShift);
      state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
      return;
    }
  }
  std::optional<uint64_t> cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return;  // gone; the next listing ends it
  observe_cpu(state, cpu, now);
  std::optional<uint64_t> cpu_delta;
  if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  state.ran_since_tick = !(state.has_stack && cpu_delta == 0u);
  if (state.activity.resync && cpu_delta == 0u) {
    // Records were lost; it has not run since its last check, so it is off every CPU, and
    // from now on its records say when it is switched on again.
    state.activity.resync = false;
    state.activity.on_cpu = false;
    state.activity.switched_on = false;
  }
  if (!state.ran_since_tick) {
    // It has not run since its last sample, so its stack cannot have changed: no need to stop it.
    // The repeat stands for the whole time since the last sample (the wall-clock view weighs a
    // sleeping sample by it), so a thread asleep at its last checks is read again after 2, 4 ...
    // 16 intervals (reading every clock at every tick was most of what 1,000 sleeping threads
    // cost: 26 % of a CPU with the listing, benchmarks/idle_threads). 16
    // at most, the gap after which one sample no longer stands for all the CPU before it. (Half
    // an interval early: ticks are not exactly an interval apart.)
    write_repeat(tid, state, now, cpu_delta);
    state.last_cpu_ns = cpu;
    state.idle_checks = std::min<uint32_t>(state.idle_checks + 1, kMostIdleBackoffShift);
    state.next_check_ns = now + (period_ns() << state.idle_checks) - period_ns() / 2;
    return;
  }
  state.idle_checks = 0;
  snapshot_.label_source = find_label_stack(tid);
  snapshot_.label_owner = tid;
  snapshot_.label_count = 0;
  const CopyResult copied = copier_->copy(tid, snapshot_);
  if (copied == CopyResult::kRunning) {
    // On a CPU: its own timer samples it from now on, if it may have one.
    // Not in the first milliseconds of a thread's life, when a sandboxed thread may still be
    // about to enter seccomp.
    if (self_sampling_ && state.arm_after_tick <= tick_count_ &&
        now - state.first_seen_ns >= kNewThreadGraceNs) {
      start_self_sampling(tid, state, now);
    }
    if (state.self_handle < 0) samples_given_up_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (copied == CopyResult::kTimedOut) {
    note_timeout(state);
    return;
  }
  if (copied != CopyResult::kOk) return;
  state.timeouts = 0;
  if (snapshot_.thread_cpu_ns != 0) {
    // Its CPU time when the copy was taken (the copier checked that it did not run meanwhile):
    // what it used up to then is this sample's, what it used after is the next one's. (Counting
    // from a later reading lost the CPU a runnable thread used while the sampler, descheduled,
    // was between the two: a quarter of a deep phase beside two busy loops.)
    cpu = std::max(snapshot_.thread_cpu_ns, *cpu);
    cpu_delta.reset();
    if (state.last_cpu_ns && *cpu >= *state.last_cpu_ns) cpu_delta = *cpu - *state.last_cpu_ns;
  } else if (auto after = thread_lister_->cpu_time_ns(tid)) {
    // A copier that reads no CPU time stops the thread: counted from after the copy, so that the
    // time it spent stopped is not its work.
    cpu = after;
  }
  state.last_sp = snapshot_.sp();
  const bool may_arm = self_sampling_ && state.arm_after_tick <= tick_count_ &&
                       now - state.first_seen_ns >= kNewThreadGraceNs;
  // Caught outside a system call, in the middle of its code: it gets a timer of its own like a
  // thread found on a CPU.
  if (snapshot_.runnable && may_arm) {
    state.last_cpu_ns = cpu;
    write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
    start_self_sampling(tid, state, now);
    return;
  }
  // Asleep again after running between two ticks (a burst shorter than the tick): where it ran
  // is not in this stack, where it sleeps. It gets a timer or ring now, which costs nothing while
  // it sleeps; this sample carries no CPU, and the burst's goes with the first snapshot of its
  // own (where it runs then). Without one, the burst's CPU stays here, the only stack known.
  if (cpu_delta && *cpu_delta > 0 && may_arm && !scarce_self_sampling() &&
      burst_arms_at_tick_ < kBurstArmsPerTick) {
    ++burst_arms_at_tick_;
    start_self_sampling(tid, state, now);
    if (state.self_handle >= 0) {
      write_sample(tid, state, snapshot_, uint64_t{0}, snapshot_.time_ns);
      return;
    }
  }
  state.last_cpu_ns = cpu;
  write_sample(tid, state, snapshot_, cpu_delta, snapshot_.time_ns);
}

bool Sampler::scarce_self_sampling() const {
  return self_sampling_refused_at_tick_ != 0 &&
         tick_count_ < self_sampling_refused_at_tick_ + kScarceForTicks;
}

void Sampler::write_repeat(uint64_t tid, ThreadState& state, uint64_t at,
                           std::optional<uint64_t> cpu_delta) {
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode(w, SampleRepeatRecord{tid, relative(at), cpu_delta});
  commit_record(RecordType::kSampleRepeat, w, state);
  state.last_record_ns = std::max(state.last_record_ns, at);
}

void Sampler::observe_cpu(ThreadState& state, std::optional<uint64_t> cpu, uint64_t now) {
  if (!cpu) return;
  state.observed_cpu_ns = cpu;
  state.observed_ns = now;
}

void Sampler::write_tail(uint64_t tid, ThreadState& state) {
  if (!state.has_stack || !state.observed_cpu_ns || !state.last_cpu_ns ||
      *state.observed_cpu_ns <= *state.last_cpu_ns) {
    return;
  }
  const uint64_t tail = *state.observed_cpu_ns - *state.last_cpu_ns;
  state.last_cpu_ns = state.observed_cpu_ns;
  // After its last record (a thread's times only grow: a snapshot drained at this tick may be
  // later than the reading).
  write_repeat(tid, state, std::max(state.observed_ns, state.last_record_ns + 1), tail);
}

UnwindOutput Sampler::write_sample(uint64_t tid, ThreadState& state, const StackSnapshot& snapshot,
                                   std::optional<uint64_t> cpu_delta, uint64_t time_ns,
                                   uint32_t extra_flags) {
  const UnwindOutput unwound = unwinder_->unwind(snapshot, frames_, frame_sps_);
  LeafCandidate candidates[kLeafCandidateSlots + 1];
  size_t candidate_count = 0;
  const uint32_t flags = walk_flags(unwound, snapshot, candidates, &candidate_count) | extra_flags;
  SampleLabel labels[kMaxLabelDepth];
  const size_t label_count = place_labels(snapshot, unwound.count, labels);
  ByteWriter w(std::span<uint8_t>(encode_buffer_.data(), encode_buffer_.size()));
  encode_sample(w, tid, relative(time_ns), cpu_delta, flags,
                std::span<const uint64_t>(frames_.data(), unwound.count),
                std::span<const LeafCandidate>(candidates, candidate_count),
                std::span<const SampleLabel>(labels, label_count));
  state.has_stack = true;
  commit_record(RecordType::kSample, w, state);
  state.last_record_ns = std::max(state.last_record_ns, time_ns);
  return unwound;
}

void Sampler::commit_record(RecordType type, const ByteWriter& w, ThreadState& state) {
  if (!w.overflowed() && ring_.write(static_cast<uint8_t>(type), w.view())) {
    samples_written_.fetch_add(1, std::memory_order_relaxed);
  } else {
    samples_dropped_.fetch_add(1, std::memory_order_relaxed);
    // A repeat must refer to a sample the dump really holds.
    state.has_stack = false;
  }
}

void Sampler::note_timeout(ThreadState& state) {
  threads_timed_out_.fetch_add(1, std::memory_order_relaxed);
  state.timeouts = std::min<uint32_t>(state.timeouts + 1, 31);
  state.retry_at_tick =
      tick_count_ + std::min<uint64_t>(uint64_t(1) << state.timeouts, kMaxBackoffTicks);
}

std::optional<uint64_t> Sampler::runnable_ns(uint64_t tid, std::optional<uint64_t> cpu) {
  if (!cpu) cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return std::nullopt;
  return *cpu + thread_lister_->cpu_wait_ns(tid).value_or(0);
}

void Sampler::start_self_sampling(uint64_t tid, ThreadState& state, uint64_t now) {
  const int handle = self_sampling_->start(tid, state.last_sp, find_label_stack(tid));
  if (handle < 0) {
    if (self_sampling_->full()) self_sampling_refused_at_tick_ = tick_count_ + 1;
    // It blocks the signal, runs under seccomp, or every timer is taken: asked again later, less
    // and less often while the answer stays no.
    state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 1, 10);
    state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
    return;
  }
  state.arm_refusals = 0;
  state.self_handle = handle;
  state.self_counts = {};
  state.answered_at_tick = 0;
  state.drained_at_tick = state.drained;
  state.no_labels_before_ns = 0;
  state.last_answer_ns = now;
  state.cpu_when_silent.reset();
  state.probe_ns = now;
  state.probe_runnable_ns = runnable_ns(tid, std::nullopt);
  ++self_sampled_count_;
  ++self_sampling_starts_;
}

void Sampler::drain_self_samples(uint64_t tid, ThreadState& state) {
  if (state.self_handle < 0) return;
  // The handler copies the labels of the label stack it was given; a thread's label stack appears
  // with its first label, maybe after self-sampling began. Looked up before the queue is read: a
  // snapshot without labels taken before a lookup that found none is right; one taken after the
  // stack appeared may lack labels it had, and is not written.
  const uint64_t looked_up_ns = monotonic_ns();
  const LabelStack* labels = find_label_stack(tid);
  // Every queued snapshot was taken before this: none can have used more CPU. (The kernel's
  // event counts its own clock, which runs a little ahead of the thread's CPU clock when the
  // thread is switched often; the deltas must add up to the CPU it really used.)
  const std::optional<uint64_t> cpu_now = thread_lister_->cpu_time_ns(tid);
  self_sampling_->set_labels(state.self_handle, labels);
  if (labels == nullptr) state.no_labels_before_ns = looked_up_ns;
  uint64_t moved_sp = 0;  // SP of a snapshot taken outside the stack mapping it was told of
  uint64_t unlabelled = 0;
  // A copy the kernel took holds the records of the thread's label scopes; it lacks only labels
  // pushed without one (the C API's), from the first of those on. (Read after the lookup: such a
  // label pushed later is pushed after every copy taken before the lookup.)
  const uint64_t off_stack_since_ns =
      labels ? labels->off_stack_since_ns.load(std::memory_order_relaxed) : 0;
  while (const StackSnapshot* snapshot = self_sampling_->front(state.self_handle)) {
    if (snapshot->labels_from_copy) {
      if (snapshot->time_ns >= looked_up_ns) break;  // the next collection decides
      if (off_stack_since_ns != 0 && snapshot->time_ns >= off_stack_since_ns) {
        ++unlabelled;  // may lack a label it had; a timer takes the thread over
        self_sampling_->pop(state.self_handle);
        continue;
      }
    } else if (snapshot->label_source == nullptr &&
               snapshot->time_ns >= state.no_labels_before_ns) {
      if (labels == nullptr) break;  // taken after the lookup: the next collection decides
      ++unlabelled;
      self_sampling_->pop(state.self_handle);
      continue;
    }
    if (!snapshot->stack_region_known && !snapshot->stack_found &&
        self_sampling_->set_stack(state.self_handle, snapshot->sp())) {
      // Taken before its stack's mapping was known, where the kernel would not copy for us (an
      // emulator): registers only. The mapping is known now; this one is not written (counted
      // as a late tick). An SP in no mapping at all is written, as a sample without a stack.
      // Its SP is kept for the thread's next timer, whose first sample would be lost the same
      // way (an emulator reads no sleeping thread: a thread that runs in bursts lost them all).
      state.last_sp = snapshot->sp();
      ++unlabelled;
      self_sampling_->pop(state.self_handle);
      continue;
    }
    std::optional<uint64_t> thread_cpu;  // 0: the copier could not tell
    if (snapshot->thread_cpu_ns) thread_cpu = snapshot->thread_cpu_ns;
    if (thread_cpu && cpu_now) thread_cpu = std::min(*thread_cpu, *cpu_now);
    std::optional<uint64_t> cpu_delta;
    if (thread_cpu && state.last_cpu_ns && *thread_cpu >= *state.last_cpu_ns) {
      cpu_delta = *thread_cpu - *state.last_cpu_ns;
    }
    if (thread_cpu) state.last_cpu_ns = thread_cpu;
    if (!snapshot->stack_region_known) moved_sp = snapshot->sp();
    state.last_sp = snapshot->sp();
    ++state.drained;
    // Expirations merged into this one: the kernel checks CPU timers at its scheduler tick, so at
    // intervals below the tick one stack stands for several intervals of the thread's CPU. The
    // sample goes at the first, repeats at the others, the CPU time shared between them.
    const uint64_t merged = std::min(snapshot->expirations_merged, kMaxMergedExpirations);
    const uint64_t first_ns =
        std::max(snapshot->time_ns - std::min(snapshot->time_ns, merged * config_.interval_ns),
                 state.last_self_sample_ns);
    state.last_self_sample_ns = snapshot->time_ns;
    // CPU time unknown: each merged expiration is still one interval of the thread's CPU.
    std::optional<uint64_t> share;
    if (merged) share = config_.interval_ns;
    if (cpu_delta) share = *cpu_delta / (merged + 1);
    const UnwindOutput unwound =
        write_sample(tid, state, *snapshot,
                     cpu_delta ? std::optional<uint64_t>(*cpu_delta - merged * *share) : cpu_delta,
                     first_ns, kSampleOnCpu);
    // How much of the copy the walk used: where the kernel copies, the copy's size follows it.
    const uint64_t outermost_sp = unwound.count > 0 ? frame_sps_[unwound.count - 1] : 0;
    self_sampling_->note_walk(state.self_handle,
                              outermost_sp > snapshot->sp() ? outermost_sp - snapshot->sp() : 0,
                              unwound.result == UnwindResult::kTruncated);
    for (uint64_t i = 1; i <= merged && state.has_stack; ++i) {
      const uint64_t at = std::min(first_ns + i * config_.interval_ns, snapshot->time_ns);
      write_repeat(tid, state, at, share);
    }
    self_sampling_->pop(state.self_handle);
  }
  const SelfSampling::Counts counts = self_sampling_->counts(state.self_handle);
  // Interruptions that left no sample are ticks this thread missed.
  ticks_late_.fetch_add(counts.missed - state.self_counts.missed + unlabelled,
                        std::memory_order_relaxed);
  if (counts.answered != state.self_counts.answered) state.cpu_when_silent.reset();
  state.self_counts = counts;
  // SP left the stack mapping it started on (a new mapping, or another stack): where it is now.
  if (moved_sp != 0) self_sampling_->set_stack(state.self_handle, moved_sp);
}

void Sampler::collect_self_samples(uint64_t tid, ThreadState& state, uint64_t now) {
  // Since the last tick (the sampler may have collected between ticks).
  const uint64_t answered_before = state.answered_at_tick;
  const uint64_t drained_before = state.drained_at_tick;
  drain_self_samples(tid, state);
  state.answered_at_tick = state.self_counts.answered;
  state.drained_at_tick = state.drained;
  if (state.self_handle < 0) return;
  const std::optional<uint64_t> cpu = thread_lister_->cpu_time_ns(tid);
  if (!cpu) return;  // gone; the next listing ends it
  state.ran_since_tick =
      state.drained != drained_before || !state.cpu_at_tick || *cpu != *state.cpu_at_tick;
  if (state.last_ran_ns == 0 || state.ran_since_tick) state.last_ran_ns = now;
  state.cpu_at_tick = cpu;
  observe_cpu(state, cpu, now);
  if (state.self_counts.answered != answered_before) {
    state.last_answer_ns = now;
    state.cpu_when_silent.reset();
  } else if (now - state.last_answer_ns >= config_.answer_timeout_ns) {
    // It ran for two intervals without an answer. The kernel checks its timer only at ticks that
    // find it on a CPU, so a thread that runs in short bursts may simply not have been caught;
    // one that blocks the signal now must lose its timer (and the signal pending in it). Its
    // status says which.
    if (!state.cpu_when_silent) {
      state.cpu_when_silent = cpu;
    } else if (*cpu - *state.cpu_when_silent >= 2 * config_.interval_ns &&
               self_sampling_->still_allowed(state.self_handle)) {
      state.last_answer_ns = now;
      state.cpu_when_silent.reset();
    } else if (*cpu - *state.cpu_when_silent >= 2 * config_.interval_ns) {
      self_sampling_->abandon(state.self_handle);
      state.self_handle = -1;
      --self_sampled_count_;
      threads_timed_out_.fetch_add(1, std::memory_order_relaxed);
      state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 4, 10);
      state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
      return;
    }
  }
  // A tick without a sample from its timer: it did not run a whole interval since the last one.
  // The wall-clock view still gets its sample: the same stack if it has not run at all, else
  // where it sleeps now (if it sleeps: when it runs, its timer has it).
  if (state.drained == drained_before) {
    // Compared with the last tick, not the last snapshot: the CPU it ran since that snapshot is
    // still counting on its timer, but its stack changed only if it ran since the last tick
    // (else a sleeping thread with a timer was copied again at every tick).
    if (state.has_stack && !state.ran_since_tick) {
      write_repeat(tid, state, now, uint64_t{0});
    } else if (state.ran_since_tick) {
      snapshot_.label_source = find_label_stack(tid);
      snapshot_.label_owner = tid;
      snapshot_.label_count = 0;
      // Kept only if no snapshot of its own arrived meanwhile (samples stay in time order). It
      // carries no CPU: what the thread ran since its last snapshot is less than an interval of
      // its clock, still counting on its timer or ring, and goes with the snapshot that ends it
      // (where it runs then), never to the stack it sleeps in now.
      if (copier_->copy(tid, snapshot_) == CopyResult::kOk &&
          self_sampling_->front(state.self_handle) == nullptr) {
        state.last_self_sample_ns = snapshot_.time_ns;
        write_sample(tid, state, snapshot_, uint64_t{0}, snapshot_.time_ns);
      }
    }
  }
  // Its timer is given back once it is runnable less than a quarter of a window (few threads
  // sleep for long with a timer that expires only as they run, but timers are few).
  const uint64_t window = std::max(4 * period_ns(), kSelfSamplingWindowNs);
  if (now - state.probe_ns < window) return;
  const std::optional<uint64_t> runnable = runnable_ns(tid, cpu);
  // The scheduler's wait time lags (it is counted when the thread gets a CPU): a thread that
  // waited for one the whole window must not lose its timer, so the OS is asked as well.
  const bool sleeping = runnable && state.probe_runnable_ns &&
                        *runnable >= *state.probe_runnable_ns &&
                        4 * (*runnable - *state.probe_runnable_ns) < now - state.probe_ns &&
                        thread_lister_->asleep(tid).value_or(true);
  state.probe_ns = now;
  state.probe_runnable_ns = runnable;
  if (sleeping && (scarce_self_sampling() || now - state.last_ran_ns >= kKeepWhileRanWithinNs)) {
    // What it ran since its last snapshot (under an interval: its clock never reached the next
    // one) is settled now, on its last stack, so that it is neither lost nor taken for a new
    // burst.
    write_tail(tid, state);
    stop_self_sampling(state);
  } else if (!self_sampling_->still_allowed(state.self_handle)) {
    self_sampling_->abandon(state.self_handle);  // it blocks the signal now, or runs sandboxed
    state.self_handle = -1;
    --self_sampled_count_;
    state.arm_refusals = std::min<uint32_t>(state.arm_refusals + 4, 10);
    state.arm_after_tick = tick_count_ + (uint64_t(1) << state.arm_refusals);
  }
}

void Sampler::stop_self_sampling(ThreadState& state) {
  if (state.self_handle < 0) return;
  self_sampling_->stop(state.self_handle);
  state.self_handle = -1;
  --self_sampled_count_;
}

void Sampler::stop_all_self_sampling(bool collect_first) {
  if (self_sampled_count_ == 0) return;
  for (auto& [tid, state] : threads_) {
    if (collect_first && state.self_handle >= 0) {
      drain_self_samples(tid, state);
      observe_cpu(state, thread_lister_->cpu_time_ns(tid), monotonic_ns());
      write_tail(tid, state);
    }
    stop_self_sampling(state);
  }
}

}  // namespace inprof::internal

namespace inprof::internal {

size_t Sampler::place_labels(const StackSnapshot& snapshot, size_t count, SampleLabel* out) {
  // A label lives in the frame of the function that pushed it: frame k spans
  // [sp[k], sp[k + 1]). In leaf-first order it goes just before that function's frame.
  for (size_t i = 0; i < snapshot.label_count; ++i) {
    const LabelEntry& e = snapshot.labels[i];
    uint32_t position = static_cast<uint32_t>(count);
    for (size_t k = 0; k < count; ++k) {
      const uint64_t end = k + 1 < count ? frame_sps_[k + 1] : UINT64_MAX;
      if (e.address < end) {
        position = static_cast<uint32_t>(k);
        break;
      }
    }
    out[i] = SampleLabel{position, intern_label(e.name), e.category};
  }
  return snapshot.label_count;
}

uint64_t Sampler::intern_label(const char* name) {
  auto [it, inserted] = label_ids_.try_emplace(name, 0);
  if (!inserted) return it->second;
  // The pointer came from the sampled thread: read it without trusting it.
  char text[128];
  const size_t n = read_memory(reinterpret_cast<uint64_t>(name), text, sizeof(text));
  size_t length = 0;
  while (length < n && text[length] != '\0') ++length;
  it->second = next_string_id_++;
  metadata_.push(RecordType::kString,
                 StringRecord{it->second, length ? std::string(text, length) : "(label)"});
  return it->second;
}

void Sampler::sample_counters(uint64_t now) {
  Declarations& declarations = Declarations::instance();
  if (declarations.counter_count() != counters_.size()) {
    for (const auto& cell : declarations.counters()) {
      if (cell.id >= counters_.size()) counters_.push_back({cell.id, cell.value});
    }
  }
  uint8_t buffer[32];
  for (CounterState& c : counters_) {
    const int64_t value = c.value->load(std::memory_order_relaxed);
    if (c.written && value == c.last) continue;
    ByteWriter w(buffer);
    encode(w, CounterSampleRecord{c.id, relative(now), value});
    if (ring_.write(static_cast<uint8_t>(RecordType::kCounterSample), w.view())) {
      c.written = true;
      c.last = value;
    }
  }
}

}  // namespace inprof::internal
