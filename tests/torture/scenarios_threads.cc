// Allocator and thread-lifetime torture: a sample that lands inside malloc must not need malloc,
// threads that come and go by the thousand must neither be lost track of nor crash the sampler,
// and threads that never answer (all signals blocked) must only be skipped.
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "torture.h"

namespace {

// Allocates, fills, verifies and frees blocks of random sizes; any corruption (a handler writing
// where it must not) shows as a pattern mismatch.
struct StormResult {
  uint64_t ops = 0;
  uint64_t corrupt = 0;
};

StormResult malloc_storm(uint64_t seed, const torture::Deadline& deadline) {
  constexpr int kSlots = 256;
  struct Block {
    unsigned char* p = nullptr;
    size_t size = 0;
    unsigned char tag = 0;
  };
  std::vector<Block> slots(kSlots);
  StormResult r;
  uint64_t x = seed | 1;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  auto check_free = [&r](Block& b) {
    if (b.p == nullptr) return;
    for (size_t i = 0; i < b.size; i += 61) {
      if (b.p[i] != static_cast<unsigned char>(b.tag + i)) ++r.corrupt;
    }
    std::free(b.p);
    b.p = nullptr;
  };
  while (!deadline.passed()) {
    for (int k = 0; k < 1000; ++k) {
      Block& b = slots[next() % kSlots];
      check_free(b);
      // Mostly small blocks, sometimes large ones (mmap'd by glibc) and reallocs.
      const uint64_t kind = next() % 100;
      b.size = kind < 90   ? 8 + next() % 512
               : kind < 98 ? 4096 + next() % 65536
                           : 200000 + next() % 300000;
      b.tag = static_cast<unsigned char>(next());
      b.p = static_cast<unsigned char*>(std::malloc(b.size));
      TT_CHECK(b.p != nullptr, "malloc(%zu) failed", b.size);
      if (kind % 7 == 0) {
        b.size += 100;
        b.p = static_cast<unsigned char*>(std::realloc(b.p, b.size));
        TT_CHECK(b.p != nullptr, "realloc failed");
      }
      for (size_t i = 0; i < b.size; i += 61) b.p[i] = static_cast<unsigned char>(b.tag + i);
      ++r.ops;
    }
  }
  for (Block& b : slots) check_free(b);
  return r;
}

}  // namespace

// malloc/free on every thread, the main thread included.
TORTURE_SCENARIO(malloc_storm) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  constexpr int kThreads = 4;
  std::vector<StormResult> results(kThreads + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = malloc_storm(1000 + i, deadline); });
  }
  results[kThreads] = malloc_storm(42, deadline);
  for (auto& t : threads) t.join();
  torture::stop();
  uint64_t ops = 0;
  for (const StormResult& r : results) {
    TT_CHECK(r.corrupt == 0, "%llu corrupted blocks", (unsigned long long)r.corrupt);
    TT_CHECK(r.ops > 0, "a thread made no progress");
    ops += r.ops;
  }
  torture::report(ctx, "%llu allocations on %d threads, 0 corrupted", (unsigned long long)ops,
                  kThreads + 1);
  return 0;
}

// Thousands of short-lived threads, several alive at once; each computes a known value.
TORTURE_SCENARIO(thread_churn) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  constexpr uint64_t min_threads = 3000;  // then on until the deadline
  constexpr int kBatch = 8;
  uint64_t created = 0;
  uint64_t wrong = 0;
  while (created < min_threads || !deadline.passed()) {
    uint64_t got[kBatch] = {};
    std::thread batch[kBatch];
    for (int i = 0; i < kBatch; ++i) {
      // Some exit at once, some work long enough to be sampled.
      const uint64_t rounds = (created + i) % 4 == 0 ? 20000 : 10;
      batch[i] =
          std::thread([&got, i, created, rounds] { got[i] = torture::mix(created + i, rounds); });
    }
    for (int i = 0; i < kBatch; ++i) {
      batch[i].join();
      const uint64_t rounds = (created + i) % 4 == 0 ? 20000 : 10;
      if (got[i] != torture::mix(created + i, rounds)) ++wrong;
    }
    created += kBatch;
  }
  torture::stop();
  TT_CHECK(wrong == 0, "%llu threads computed a wrong value", (unsigned long long)wrong);
  torture::report(ctx, "%llu threads created and joined, all results right",
                  (unsigned long long)created);
  return 0;
}

// Threads with every signal blocked never answer; the sampler must skip them and carry on, and
// when they unblock after stop() no stale sampling signal may be left pending for them.
TORTURE_SCENARIO(blocked_signals) {
  torture::start(ctx);
  std::atomic<bool> stopped{false};
  std::atomic<int> unblocked{0}, left_pending{0};
  const int sampling_signal = torture::options(ctx).sample_signal != 0
                                  ? torture::options(ctx).sample_signal
                                  : SIGURG;  // the library's default
  constexpr int kThreads = 3;
  uint64_t results[kThreads] = {};
  std::vector<std::thread> threads;
  torture::Deadline deadline(ctx.seconds);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      uint64_t x = i;
      while (!deadline.passed()) x = torture::mix(x, 10000);
      results[i] = x;
      while (!stopped.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      // stop() must have discarded any sampling signal still pending for this thread. The
      // default signal's own action is to ignore, so its delivery would prove nothing: ask.
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, sampling_signal) == 1) left_pending.fetch_add(1);
      pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
      results[i] ^= torture::mix(x, 1000);
      unblocked.fetch_add(1);
    });
  }
  // The main thread stays sampleable, so the dump has samples.
  uint64_t main_work = 0;
  while (!deadline.passed()) main_work = torture::mix(main_work, 10000);
  torture::stop();
  stopped.store(true);
  for (auto& t : threads) t.join();
  TT_CHECK(unblocked.load() == kThreads, "not every thread unblocked");
  TT_CHECK(left_pending.load() == 0, "%d threads still had the sampling signal pending after stop",
           left_pending.load());
  for (int i = 0; i < kThreads; ++i) TT_CHECK(results[i] != 0, "thread %d made no progress", i);
  // Give a stale signal time to arrive before we declare victory.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  torture::report(ctx, "%d signal-blocking threads finished and unblocked after stop", kThreads);
  return 0;
}
