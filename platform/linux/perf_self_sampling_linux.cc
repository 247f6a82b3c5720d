#include "perf_self_sampling_linux.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "futex_linux.h"

namespace inprof::internal {
namespace {

constexpr size_t kLeastBudgetBytes = 1u << 20;
constexpr size_t kBudgetBytesPerRing = 96u << 10;
constexpr uint32_t kMinStackBytes = 2 * 1024;
constexpr uint32_t kUnknownDepthStackBytes = 4 * 1024;  // grown if a sample comes back cut
// Room per ring for two of the sampler's collections (it collects at least every
// kSettledCollectPeriodNs, or kCollectPeriodNs where the budget is tight), at least 4 samples: the
// sampler is woken early only when a ring is three quarters full, so the rings cost it no wake-ups
// of their own where the memory budget lets them hold that much.
constexpr uint64_t kMinRecordsPerRing = 4;
constexpr uint64_t kMaxRecordsPerRing = 32;
// A ring's stack size follows its thread's deepest stack seen over this many samples: the kernel
// copies (and the ring holds) the whole size at every sample, however shallow the stack.
constexpr uint32_t kResizeAfterSamples = 256;
// Each time a walk runs out of a ring's copy, that ring waits twice as long before it shrinks
// again, up to this: a thread whose depth swings (a recursion) would else shrink and grow over and
// over, and every sample the ring holds when a cut one is read (up to two collection periods'
// worth) comes back cut.
constexpr uint32_t kMaxResizeAfterSamples = 16384;
// A ring whose walks have run this long since its last resize without running out of copy has
// found its size (see collect_period()).
constexpr uint32_t kSettledSamples = 64;
// What a record holds besides the stack: header, ids, time, count, ABI, registers, sizes.
constexpr uint64_t kRecordOverhead = 512;

uint64_t round_up_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The user's allowance for perf rings per CPU (kernel.perf_event_mlock_kb; the kernel multiplies
// it by the online CPUs); beyond it the kernel charges the program's RLIMIT_MEMLOCK, which is the
// program's, not ours.
size_t user_allowance_kb_per_cpu() {
  size_t kb = 516;
  if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_mlock_kb", "re")) {
    unsigned long value = 0;
    if (std::fscanf(f, "%lu", &value) == 1) kb = value;
    std::fclose(f);
  }
  return kb;
}

// Asked once, on the calling thread: paranoid settings, seccomp policies and missing support
// refuse the same way for every thread. One sample must come back holding this thread's own
// stack pointer: an emulator that passes the call to the host kernel would hand back the
// emulator's registers (qemu-user), which must never be unwound as ours.
bool kernel_samples_us() {
  PerfEventRing probe;
  PerfEventRing::Spec spec;
  spec.tid = static_cast<uint64_t>(gettid());
  spec.period_ns = 20000;
  spec.stack_bytes = kMinStackBytes;
  spec.data_pages = 4;
  if (probe.open(spec) != 0) return false;
  volatile uint64_t spin = 0;
  const auto here = reinterpret_cast<uint64_t>(&spin);
  StackSnapshot sample;
  std::unique_ptr<uint8_t[]> staging(new uint8_t[kMinStackBytes + kRecordOverhead]);
  timespec started{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &started);
  for (;;) {
    for (int i = 0; i < 10000; ++i) spin = spin + 1;
    if (probe.next(&sample, staging.get(), kMinStackBytes + kRecordOverhead)) {
      const uint64_t sp = sample.sp();
      return sp != 0 && sp <= here && here - sp < 65536;
    }
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    if (now.tv_sec - started.tv_sec > 1 ||
        (now.tv_sec - started.tv_sec) * 1000000000L + (now.tv_nsec - started.tv_nsec) > 5000000) {
      return false;  // 5 ms of CPU without a sample: not sampled the way we need
    }
  }
}

}  // namespace

RingLimits ring_limits(size_t cpus, size_t allowance_kb_per_cpu) {
  cpus = std::max<size_t>(cpus, 1);
  RingLimits limits;
  limits.rings = std::clamp<size_t>(2 * cpus, kLeastRingCap, kMaxPerfThreads);
  const size_t half_allowance = allowance_kb_per_cpu * 1024 * cpus / 2;
  limits.budget_bytes =
      std::min(half_allowance, std::max(kLeastBudgetBytes, limits.rings * kBudgetBytesPerRing));
  return limits;
}

std::unique_ptr<PerfSelfSampling> PerfSelfSampling::create(LocateStack locate_stack,
                                                           uint64_t interval_ns,
                                                           size_t stack_copy_size) {
  // The kernel's cpu-clock timer does not go below 10 µs.
  if (interval_ns < 10000) return nullptr;
  if (!kernel_samples_us()) return nullptr;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const RingLimits limits =
      ring_limits(cpus > 0 ? static_cast<size_t>(cpus) : 1, user_allowance_kb_per_cpu());
  return std::unique_ptr<PerfSelfSampling>(
      new PerfSelfSampling(std::move(locate_stack), interval_ns, stack_copy_size, limits));
}

PerfSelfSampling::PerfSelfSampling(LocateStack locate_stack, uint64_t interval_ns,
                                   size_t stack_copy_size, RingLimits limits)
    : locate_stack_(std::move(locate_stack)),
      interval_ns_(interval_ns),
      max_stack_bytes_(static_cast<uint32_t>(
          std::clamp<size_t>(stack_copy_size & ~size_t(7), kMinStackBytes, kMaxPerfStackBytes))),
      copy_wanted_deeper_(stack_copy_size > kMaxPerfStackBytes),
      budget_bytes_(limits.budget_bytes),
      ring_cap_(limits.rings),
      rings_(new Ring[limits.rings]),
      staging_(make_mapped_array<uint8_t>(kMaxPerfStackBytes + kRecordOverhead)),
      staging_size_(kMaxPerfStackBytes + kRecordOverhead) {}

PerfSelfSampling::~PerfSelfSampling() {
  for (size_t i = 0; i < ring_cap_; ++i) rings_[i].ring.close();
}

bool PerfSelfSampling::valid(int handle) const {
  return handle >= 0 && static_cast<size_t>(handle) < ring_cap_ && rings_[handle].active;
}

size_t PerfSelfSampling::active() const {
  return static_cast<size_t>(std::count_if(rings_.get(), rings_.get() + ring_cap_,
                                           [](const Ring& r) { return r.active; }));
}

size_t PerfSelfSampling::used_bytes() const {
  size_t used = 0;
  for (size_t i = 0; i < ring_cap_; ++i) used += rings_[i].ring.mapped_bytes();
  return used;
}

uint32_t PerfSelfSampling::stack_bytes_for(uint64_t depth) const {
  // Half as much again as it uses now, for the calls it makes next.
  const uint64_t want = depth == 0 ? kUnknownDepthStackBytes : depth + depth / 2 + 1024;
  const uint64_t rounded = (want + 511) & ~uint64_t(511);
  return static_cast<uint32_t>(std::clamp<uint64_t>(rounded, kMinStackBytes, max_stack_bytes_));
}

uint64_t PerfSelfSampling::records_per_ring(uint64_t collect_period_ns) const {
  return std::clamp<uint64_t>(2 * collect_period_ns / interval_ns_, kMinRecordsPerRing,
                              kMaxRecordsPerRing);
}

int PerfSelfSampling::open_ring(Ring& r, uint32_t stack_bytes) {
  const uint64_t page = static_cast<uint64_t>(getpagesize());
  const uint64_t record = stack_bytes + kRecordOverhead;
  // A ring's data area is a power of two pages: where the rounding would overrun the budget, a
  // ring that holds fewer records (down to kMinRecordsPerRing) rather than none (its thread would
  // get a timer); the sampler is woken sooner to read it.
  uint64_t data = std::max(round_up_pow2(records_per_ring(kSettledCollectPeriodNs) * record), page);
  const uint64_t least = std::max(round_up_pow2(kMinRecordsPerRing * record), page);
  // Room for the settled period beyond kCollectPeriodNs's only within a ring's fair share of the
  // budget: the first rings opened must not leave the later ones less than they had before.
  const uint64_t base = std::max(round_up_pow2(records_per_ring(kCollectPeriodNs) * record), page);
  while (data > base && data + page > budget_bytes_ / ring_cap_) data /= 2;
  const size_t others = used_bytes() - r.ring.mapped_bytes();
  // Room kept for the rings not yet opened, at the least a ring may hold: the first busy threads
  // must not leave a later one a timer (whose signal a thread deep in its stack may not survive).
  const size_t open_others = active() - (r.active ? 1 : 0);
  const uint64_t least_ring =
      std::max(round_up_pow2(kMinRecordsPerRing * (kUnknownDepthStackBytes + kRecordOverhead)),
               page) +
      page;
  const size_t kept = (kRingsKeptRoomFor - std::min(open_others, kRingsKeptRoomFor)) * least_ring;
  while (data > least && others + kept + data + page > budget_bytes_) data /= 2;
  if (others + data + page > budget_bytes_) return ENOMEM;
  r.ring.close();
  PerfEventRing::Spec spec;
  spec.tid = r.tid;
  spec.period_ns = interval_ns_;
  spec.stack_bytes = stack_bytes;
  spec.data_pages = static_cast<uint32_t>(data / page);
  return r.ring.open(spec);
}

int PerfSelfSampling::start(uint64_t tid, uint64_t sp, const LabelStack* labels) {
  if (labels != nullptr) return -1;
  int index = -1;
  for (size_t i = 0; i < ring_cap_ && index < 0; ++i) {
    if (!rings_[i].active) index = static_cast<int>(i);
  }
  if (index < 0) return -1;
  Ring& r = rings_[index];
  r.tid = tid;
  r.region = sp != 0 ? locate_stack_(tid, sp) : std::nullopt;
  r.grow_to = 0;
  r.deepest = 0;
  r.since_resize = 0;
  r.shrink_after = kResizeAfterSamples;
  r.too_deep = false;
  r.answered = 0;
  r.front_above = 0;
  // The mapping above SP also holds the thread's TLS and descriptor, which no walk reads: a
  // modest start, grown at once by the first walk that runs out of it.
  if (open_ring(r, stack_bytes_for(0)) != 0) return -1;
  r.active = true;
  return index;
}

void PerfSelfSampling::stop(int handle) {
  if (!valid(handle)) return;
  rings_[handle].ring.close();
  rings_[handle].active = false;
}

bool PerfSelfSampling::set_stack(int handle, uint64_t sp) {
  if (!valid(handle)) return false;
  Ring& r = rings_[handle];
  r.region = locate_stack_(r.tid, sp);
  return r.region.has_value();
}

const StackSnapshot* PerfSelfSampling::front(int handle) {
  if (!valid(handle)) return nullptr;
  Ring& r = rings_[handle];
  if (!r.ring.next(&snapshot_, staging_.get(), staging_size_)) {
    // Empty: the moment to resize its stack (nothing is lost). Larger at once when a sample came
    // back cut; smaller when its deepest stack over many samples needs much less.
    const uint32_t now = r.ring.stack_bytes();
    uint32_t resize = r.grow_to;
    if (resize == 0 && r.since_resize >= r.shrink_after && r.deepest != 0 &&
        stack_bytes_for(r.deepest) <= now / 4 * 3) {
      resize = stack_bytes_for(r.deepest);
    }
    if (resize != 0 && resize != now) {
      if (resize > now) r.shrink_after = std::min(2 * r.shrink_after, kMaxResizeAfterSamples);
      if (open_ring(r, resize) != 0) {
        // No room to grow (the memory budget): a timer's handler copies what it needs.
        if (resize > now) r.too_deep = true;
        if (open_ring(r, now) != 0) r.ring.close();
      }
      r.since_resize = 0;
      r.deepest = 0;
    }
    r.grow_to = 0;
    return nullptr;
  }
  const uint64_t sp = snapshot_.sp();
  const bool in_region = r.region && sp >= r.region->begin && sp < r.region->end;
  snapshot_.stack_region_known = in_region;
  r.front_above = 0;
  if (in_region) {
    const uint64_t above = r.region->end - sp;
    snapshot_.stack_size = static_cast<size_t>(std::min<uint64_t>(snapshot_.stack_size, above));
    snapshot_.stack_truncated = snapshot_.stack_size < above;
    r.front_above = above;
  }
  return &snapshot_;
}

SelfSampling::CollectPeriod PerfSelfSampling::collect_period(int handle) const {
  if (!valid(handle) || rings_[handle].grow_to != 0 ||
      rings_[handle].since_resize < kSettledSamples) {
    return CollectPeriod::kEveryTick;
  }
  return uint64_t(rings_[handle].since_resize) * interval_ns_ >= kSettledForNs
             ? CollectPeriod::kSettledPeriod
             : CollectPeriod::kCollectPeriod;
}

void PerfSelfSampling::note_walk(int handle, uint64_t bytes_used, bool cut) {
  if (!valid(handle)) return;
  Ring& r = rings_[handle];
  const uint32_t now = r.ring.stack_bytes();
  if (!cut) {
    r.deepest = std::max(r.deepest, bytes_used);
    ++r.since_resize;
    return;
  }
  if (now >= max_stack_bytes_) {
    r.too_deep = copy_wanted_deeper_;
    return;
  }
  // At once to what the mapping above SP holds (more than any walk needs) or twice the size:
  // one cut sample, not a series of them. The next shrink follows what the walks used.
  r.grow_to =
      std::max({r.grow_to, std::min(max_stack_bytes_, 2 * now), stack_bytes_for(r.front_above)});
}

void PerfSelfSampling::pop(int handle) {
  if (!valid(handle)) return;
  rings_[handle].ring.pop();
  ++rings_[handle].answered;
}

SelfSampling::Counts PerfSelfSampling::counts(int handle) const {
  if (!valid(handle)) return {};
  return {rings_[handle].answered, rings_[handle].ring.lost()};
}

bool PerfSelfSampling::wait(uint64_t timeout_ns) {
  // No descriptor to poll (see perf_event_ring_linux.h): the wait ends when the fullest ring could
  // reach its mark at one sample per period of its thread's CPU time, which no thread outruns.
  const uint32_t seen = wake_word_.load(std::memory_order_acquire);
  if (seen != handled_wake_) timeout_ns = 0;  // an interrupt_wait() came before this wait
  handled_wake_ = seen;
  for (size_t i = 0; i < ring_cap_; ++i) {
    const Ring& r = rings_[i];
    if (!r.active || !r.ring.is_open()) continue;
    const uint64_t samples = r.ring.samples_until_reading();
    if (samples == 0) return true;
    timeout_ns = std::min(timeout_ns, samples * interval_ns_);
  }
  const FutexWait waited =
      timeout_ns == 0 ? FutexWait::kWoken : futex_wait(wake_word_, seen, timeout_ns);
  handled_wake_ = wake_word_.load(std::memory_order_acquire);
  if (waited == FutexWait::kRefused) {
    // A seccomp policy or an odd kernel refuses the call: sleep instead, a stop waits for the end
    // of at most this slice, and nothing spins.
    const uint64_t slice = std::min<uint64_t>(timeout_ns, 2000000);
    const timespec pause{0, static_cast<long>(slice)};
    nanosleep(&pause, nullptr);
  }
  for (size_t i = 0; i < ring_cap_; ++i) {
    if (rings_[i].active && rings_[i].ring.needs_reading()) return true;
  }
  return false;
}

void PerfSelfSampling::interrupt_wait() {
  // Called from allocating threads too (inside malloc): their errno is theirs.
  const int saved_errno = errno;
  wake_word_.fetch_add(1, std::memory_order_release);
  futex_wake_all(wake_word_);
  errno = saved_errno;
}

}  // namespace inprof::internal
