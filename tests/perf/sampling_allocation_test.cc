// No allocation on the sampling path: after warm-up, the sampler's ticks (listing threads,
// interrupting them, copying, unwinding, encoding, writing the ring buffer) allocate nothing,
// with either unwinder. Counted by the interposed malloc, on the sampler's thread only.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "counting_allocator.h"
#include "sampling/module_lister.h"
#include "sampling/sampler.h"
#include "sampling/stack_copier.h"
#include "sampling/thread_lister.h"
#include "session/metadata_queue.h"
#include "session/process_info.h"
#include "session/ring_buffer.h"
#include "unwind/dwarf_unwinder.h"
#include "unwind/frame_pointer_unwinder.h"

namespace inprof::internal {
namespace {

std::atomic<bool> g_spin_allocating{true};

__attribute__((noinline)) void spin_here() {
  while (g_spin_allocating.load(std::memory_order_relaxed)) {
    asm volatile("" ::: "memory");
  }
}

__attribute__((noinline)) void descend(int depth) {
  if (depth > 0) {
    descend(depth - 1);
  } else {
    spin_here();
  }
  asm volatile("" ::: "memory");  // no tail call
}

// Busy threads (sampled: copied and unwound) and sleeping ones (repeated), for the test's life.
class Workload {
 public:
  Workload() {
    g_spin_allocating = true;
    for (int i = 0; i < 2; ++i) threads_.emplace_back([] { descend(12); });
    for (int i = 0; i < 3; ++i) {
      threads_.emplace_back([this] {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return done_; });
      });
    }
  }
  ~Workload() {
    g_spin_allocating = false;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

struct TickCounts {
  uint64_t ticks_counted = 0;          // ticks with no unwind-rule cache miss
  uint64_t allocations = 0;            // during those ticks
  uint64_t ticks_with_misses = 0;      // a new PC was met: libdw was asked, and may allocate
  uint64_t ticks_with_promotions = 0;  // a thread moved to self-sampling (its timer was made)
  uint64_t samples = 0;
  size_t self_sampled = 0;  // busy threads sampling themselves (sampled by their own timers)
};

// Warms up until the rule cache has seen no new address for a while (a condition, not a time),
// then counts allocations tick by tick.
TickCounts run_ticks(std::unique_ptr<Unwinder> unwinder, const RuleCache* cache) {
  TickCounts counts;
  Status status;
  // A loaded machine may keep a busy thread off the CPU for a while: wait for it.
  auto copier = StackCopier::create({0, std::chrono::seconds(1)}, &status);
  EXPECT_TRUE(copier) << status.message();
  if (!copier) return counts;
  RingBuffer ring(8 << 20);
  MetadataQueue metadata;
  Sampler sampler(SamplerConfig{}, std::move(copier), std::move(unwinder), ThreadLister::create(),
                  ModuleLister::create(), ring, metadata);
  sampler.exclude_thread(current_thread_id());
  auto drain = [&] {
    ring.drain([](uint8_t, std::span<const uint8_t>) {});
    metadata.take();
  };
  // Busy threads move to self-sampling after two ticks that find them busy: give them those
  // ticks at the sampler's own pace (a condition, bounded), so that collecting their queues is
  // part of what is counted.
  for (int i = 0; i < 5000 && sampler.self_sampled_threads() < 2; ++i) {
    sampler.tick();
    drain();
    std::this_thread::sleep_for(std::chrono::nanoseconds(sampler.period_ns()));
  }
  int quiet_ticks = 0;
  for (int i = 0; i < 20000 && quiet_ticks < 300; ++i) {
    const uint64_t misses = cache ? cache->misses : 0;
    sampler.tick();
    drain();
    quiet_ticks = (cache && cache->misses != misses) ? 0 : quiet_ticks + 1;
  }
  const uint64_t written_before = sampler.stats().samples_written;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t misses = cache ? cache->misses : 0;
    const uint64_t starts = sampler.self_sampling_starts();
    uint64_t allocated;
    {
      testing::CountAllocations count;
      sampler.tick();
      allocated = count.count();
    }
    drain();
    // Time for the self-sampled threads to run and queue snapshots for the next ticks.
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (cache && cache->misses != misses) {
      ++counts.ticks_with_misses;
    } else if (sampler.self_sampling_starts() != starts) {
      // A thread the machine kept off the CPU fell back to being copied, and came back.
      ++counts.ticks_with_promotions;
    } else {
      ++counts.ticks_counted;
      counts.allocations += allocated;
    }
  }
  counts.samples = sampler.stats().samples_written - written_before;
  counts.self_sampled = sampler.self_sampled_threads();
  return counts;
}

TEST(SamplingAllocation, CountingAllocatorSeesAllocations) {
  // The test would prove nothing if the counter missed allocations.
  testing::CountAllocations count;
  auto* volatile p = new std::vector<int>(100);  // volatile: the pair cannot be elided
  delete p;
  void* volatile q = std::malloc(10);
  std::free(q);
  EXPECT_GE(count.count(), 3u);
}

TEST(SamplingAllocation, FramePointerSamplingAllocatesNothing) {
  Workload workload;
  const TickCounts c = run_ticks(std::make_unique<FramePointerUnwinder>(), nullptr);
  EXPECT_EQ(c.ticks_counted + c.ticks_with_promotions, 1000u);
  EXPECT_GE(c.ticks_counted, 900u);
  // Sampling went on (what is measured is the allocations): the 2 spinning threads copied when
  // caught between two runs or sampled by their own timers (whose samples were collected too),
  // the 3 sleeping ones repeated less and less often while they sleep.
  EXPECT_GE(c.samples, c.ticks_counted / 10);
  EXPECT_EQ(c.allocations, 0u);
}

TEST(SamplingAllocation, DwarfSamplingAllocatesNothing) {
  Workload workload;
  auto unwinder = std::make_unique<DwarfUnwinder>(CfiProvider::create(), true);
  const RuleCache* cache = &unwinder->cache();
  const TickCounts c = run_ticks(std::move(unwinder), cache);
  RecordProperty("ticks_with_rule_cache_misses", static_cast<int>(c.ticks_with_misses));
  RecordProperty("ticks_with_promotions", static_cast<int>(c.ticks_with_promotions));
  EXPECT_GE(c.ticks_counted, 900u);
  EXPECT_GE(c.samples, c.ticks_counted / 10);
  EXPECT_EQ(c.allocations, 0u);
}

}  // namespace
}  // namespace inprof::internal
