// Unusual control flow under sampling: exceptions (the unwinder takes the loader's lock in
// dl_iterate_phdr, gperftools' old deadlock), setjmp/longjmp (also out of a signal handler), a
// thread inside its own handler on a sigaltstack, and very deep recursion.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "torture.h"

namespace {

struct TortureError : std::runtime_error {
  explicit TortureError(uint64_t v) : std::runtime_error("torture"), value(v) {}
  uint64_t value;
};

// Throws from `depth` frames down; each frame does a little work so that samples land in them.
__attribute__((noinline)) uint64_t throw_from(int depth, uint64_t seed) {
  if (depth == 0) {
    if (seed % 3 == 0) throw TortureError(seed);
    if (seed % 3 == 1) throw std::out_of_range("torture");
    return seed;  // every third call does not throw
  }
  std::vector<int> owned(4, depth);  // a destructor to run during unwinding
  uint64_t r = throw_from(depth - 1, torture::mix(seed, 20)) + owned[0];
  asm volatile("" : "+r"(r));
  return r;
}

}  // namespace

// C++ exceptions thrown and caught on every thread; counts must match exactly.
TORTURE_SCENARIO(exception_storm) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  constexpr int kThreads = 4;
  struct Counts {
    uint64_t calls = 0, custom = 0, std_ = 0, returned = 0, wrong = 0;
  };
  std::vector<Counts> counts(kThreads);
  auto work = [&deadline](Counts& c, uint64_t seed) {
    while (!deadline.passed()) {
      for (int i = 0; i < 200; ++i) {
        const uint64_t s = torture::mix(seed + c.calls, 3);
        const int depth = 1 + static_cast<int>(s % 24);
        // Predict the outcome from the seed the leaf will see.
        uint64_t leaf = s;
        for (int d = depth; d > 0; --d) leaf = torture::mix(leaf, 20);
        ++c.calls;
        try {
          (void)throw_from(depth, s);
          ++c.returned;
          if (leaf % 3 != 2) ++c.wrong;
        } catch (const TortureError& e) {
          ++c.custom;
          if (leaf % 3 != 0 || e.value != leaf) ++c.wrong;
        } catch (const std::out_of_range&) {
          ++c.std_;
          if (leaf % 3 != 1) ++c.wrong;
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < kThreads; ++i) threads.emplace_back(work, std::ref(counts[i]), i * 1000003u);
  work(counts[0], 7);
  for (auto& t : threads) t.join();
  torture::stop();
  uint64_t thrown = 0, calls = 0;
  for (const Counts& c : counts) {
    TT_CHECK(c.wrong == 0, "%llu calls ended differently than computed",
             (unsigned long long)c.wrong);
    TT_CHECK(c.custom + c.std_ + c.returned == c.calls, "calls lost");
    thrown += c.custom + c.std_;
    calls += c.calls;
  }
  TT_CHECK(thrown > 0, "no exception thrown");
  torture::report(ctx, "%llu exceptions thrown and caught in %llu calls, outcomes as computed",
                  (unsigned long long)thrown, (unsigned long long)calls);
  return 0;
}

namespace {

thread_local jmp_buf t_jump;
thread_local sigjmp_buf t_sigjump;

__attribute__((noinline)) void dive_and_jump(int depth, uint64_t seed) {
  volatile char pad[64];
  pad[0] = static_cast<char>(seed);
  if (depth == 0) {
    (void)torture::mix(seed, 500);
    if (seed != UINT64_MAX) longjmp(t_jump, static_cast<int>(seed % 1000) + 1);
    return;  // never: only keeps GCC from calling the recursion infinite
  }
  dive_and_jump(depth - 1, seed);
  pad[1] = pad[0];
}

std::atomic<uint64_t> g_handler_jumps{0};

void jump_out_of_handler(int) {
  g_handler_jumps.fetch_add(1);
  siglongjmp(t_sigjump, 1);
}

}  // namespace

// longjmp from deep frames, and siglongjmp out of a signal handler (leaving a signal frame
// behind on the stack), on two threads at once.
TORTURE_SCENARIO(setjmp_longjmp) {
  struct sigaction sa = {};
  sa.sa_handler = jump_out_of_handler;
  sigemptyset(&sa.sa_mask);
  TT_CHECK(sigaction(SIGUSR1, &sa, nullptr) == 0, "sigaction");
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  uint64_t jumps = 0, wrong = 0;
  uint64_t handler_jumps_expected = 0;
  std::thread other([&] {
    while (!deadline.passed()) {
      if (sigsetjmp(t_sigjump, 1) == 0) {
        ++handler_jumps_expected;
        pthread_kill(pthread_self(), SIGUSR1);
        TT_CHECK(false, "returned from a handler that jumps");
      }
      (void)torture::mix(handler_jumps_expected, 2000);
    }
  });
  for (uint64_t i = 0; !deadline.passed(); ++i) {
    volatile uint64_t seed = i * 7919;
    int r = setjmp(t_jump);
    if (r == 0) {
      dive_and_jump(static_cast<int>(i % 200), seed);
      ++wrong;  // unreachable
    } else {
      ++jumps;
      if (r != static_cast<int>(seed % 1000) + 1) ++wrong;
    }
  }
  other.join();
  torture::stop();
  TT_CHECK(wrong == 0, "%llu jumps returned the wrong value", (unsigned long long)wrong);
  TT_CHECK(g_handler_jumps.load() == handler_jumps_expected, "handler jumps %llu, raised %llu",
           (unsigned long long)g_handler_jumps.load(), (unsigned long long)handler_jumps_expected);
  torture::report(ctx, "%llu longjmps, %llu siglongjmps out of a handler",
                  (unsigned long long)jumps, (unsigned long long)handler_jumps_expected);
  return 0;
}

namespace {

std::atomic<uint64_t> g_altstack_runs{0};
std::atomic<uint64_t> g_altstack_wrong{0};
thread_local volatile uintptr_t t_alt_low = 0, t_alt_high = 0;

// The program's own handler, on its sigaltstack, busy for about a millisecond: long enough to be
// sampled (inprof's handler nests on the same alternate stack).
void busy_handler(int, siginfo_t* info, void*) {
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here < t_alt_low || here >= t_alt_high) g_altstack_wrong.fetch_add(1);
  const uint64_t seed = static_cast<uint64_t>(info->si_value.sival_int);
  if (torture::mix(seed, 100000) != torture::mix(seed, 100000)) g_altstack_wrong.fetch_add(1);
  g_altstack_runs.fetch_add(1);
}

}  // namespace

// Threads that spend most of their time inside their own SIGUSR2 handler on a sigaltstack: one
// from malloc, one from an mmap with guard pages, one tiny (MINSIGSTKSZ-ish, 16 KiB).
TORTURE_SCENARIO(sigaltstack) {
  struct sigaction sa = {};
  sa.sa_sigaction = busy_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  TT_CHECK(sigaction(SIGUSR2, &sa, nullptr) == 0, "sigaction");
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> raised{0};
  auto run = [&](int kind) {
    const size_t size = kind == 2 ? 16384 : 256 * 1024;
    void* mem;
    if (kind == 1) {
      // Guard pages on both sides: a handler running off its alt stack faults here.
      char* m = static_cast<char*>(mmap(nullptr, size + 2 * 4096, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      TT_CHECK(m != MAP_FAILED, "mmap");
      mprotect(m, 4096, PROT_NONE);
      mprotect(m + 4096 + size, 4096, PROT_NONE);
      mem = m + 4096;
    } else {
      mem = std::malloc(size);
    }
    stack_t ss = {};
    ss.ss_sp = mem;
    ss.ss_size = size;
    TT_CHECK(sigaltstack(&ss, nullptr) == 0, "sigaltstack: %s", strerror(errno));
    t_alt_low = reinterpret_cast<uintptr_t>(mem);
    t_alt_high = t_alt_low + size;
    for (int i = 0; !deadline.passed(); ++i) {
      sigval v;
      v.sival_int = i;
      raised.fetch_add(1);
      TT_CHECK(pthread_sigqueue(pthread_self(), SIGUSR2, v) == 0, "pthread_sigqueue");
      (void)torture::mix(i, 2000);  // a little outside the handler too
    }
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    if (kind == 1) {
      munmap(static_cast<char*>(mem) - 4096, size + 2 * 4096);
    } else {
      std::free(mem);
    }
  };
  std::vector<std::thread> threads;
  for (int kind = 0; kind < 3; ++kind) threads.emplace_back(run, kind);
  for (auto& t : threads) t.join();
  torture::stop();
  TT_CHECK(g_altstack_wrong.load() == 0, "%llu handler runs off the alternate stack or wrong",
           (unsigned long long)g_altstack_wrong.load());
  TT_CHECK(g_altstack_runs.load() == raised.load(), "handler ran %llu times for %llu signals",
           (unsigned long long)g_altstack_runs.load(), (unsigned long long)raised.load());
  torture::report(ctx, "%llu handler runs on sigaltstacks, all on the right stack",
                  (unsigned long long)raised.load());
  return 0;
}

namespace {

__attribute__((noinline)) uint64_t recurse(int depth, uint64_t acc) {
  if (depth == 0) return torture::mix(acc, 200000);  // sampled at the bottom of the recursion
  uint64_t r = recurse(depth - 1, acc * 31 + static_cast<uint64_t>(depth));
  asm volatile("" : "+r"(r));  // not a tail call: every frame stays
  return r + 1;
}

uint64_t recurse_expected(int depth, uint64_t acc) {
  for (int d = depth; d > 0; --d) acc = acc * 31 + static_cast<uint64_t>(d);
  return torture::mix(acc, 200000) + static_cast<uint64_t>(depth);
}

}  // namespace

// 10,000 frames deep on two threads (more than max_frames and stack_copy_size hold).
TORTURE_SCENARIO(deep_recursion) {
  constexpr int kDepth = 10000;
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> rounds{0}, wrong{0};
  auto work = [&](uint64_t seed) {
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      if (recurse(kDepth, seed + i) != recurse_expected(kDepth, seed + i)) wrong.fetch_add(1);
      rounds.fetch_add(1);
    }
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64u << 20);
  pthread_t big;
  auto trampoline = +[](void* arg) -> void* {
    (*static_cast<decltype(work)*>(arg))(99);
    return nullptr;
  };
  TT_CHECK(pthread_create(&big, &attr, trampoline, &work) == 0, "pthread_create");
  pthread_attr_destroy(&attr);
  work(1);  // the main thread's stack (8 MiB) holds 10,000 small frames too
  pthread_join(big, nullptr);
  torture::stop();
  TT_CHECK(wrong.load() == 0, "%llu recursions computed a wrong value",
           (unsigned long long)wrong.load());
  torture::report(ctx, "%llu recursions %d deep, all results right",
                  (unsigned long long)rounds.load(), kDepth);
  return 0;
}
