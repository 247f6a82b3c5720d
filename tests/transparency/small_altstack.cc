// Item (issue 39): a small alternate signal stack is the program's, sized for its own handler. 12
// threads each install a 4 KiB sigaltstack (more where the machine's minimum asks for it) cut
// from a heap block with 4 KiB of canary bytes below and above it, run their own SA_ONSTACK
// handler once (SIGUSR1 raised at themselves, checked to have run on that stack), and compute for
// ~300 ms: a profiler's handler that runs on the program's alternate stack and needs more than
// the little left there writes past its end, into the canaries below it.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

constexpr int kThreads = 12;
constexpr size_t kGuard = 4096;
constexpr unsigned char kCanary = 0xA5;

thread_local char* stack_low = nullptr;
thread_local size_t stack_size = 0;
thread_local volatile bool ran_on_altstack = false;
thread_local volatile bool handled = false;

void on_usr1(int) {
  char here;
  handled = true;
  ran_on_altstack = &here >= stack_low && &here < stack_low + stack_size;
}

// 4 KiB: the kernel's signal frame (sysconf(_SC_MINSIGSTKSZ), 3376 bytes with AVX-512) and the
// few bytes on_usr1 needs; a page more where the frame leaves less than 512 bytes.
size_t altstack_size() {
  size_t size = 4096;
#ifdef _SC_MINSIGSTKSZ
  const long minimum = sysconf(_SC_MINSIGSTKSZ);
  if (minimum > 0 && size_t(minimum) + 512 > size)
    size = (size_t(minimum) + 1024 + 4095) & ~size_t(4095);
#endif
  return size;
}

struct Result {
  bool handler_on_altstack = false;
  bool below_intact = false;
  bool above_intact = false;
  size_t used = 0;  // bytes of the alternate stack written while the thread computed
};

bool intact(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != kCanary) return false;
  }
  return true;
}

}  // namespace

int main() {
  const size_t size = altstack_size();
  // One handler for all: each thread installs it (the same) before raising its signal.
  std::vector<Result> results(kThreads);
  std::vector<unsigned char*> blocks(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      unsigned char* block = static_cast<unsigned char*>(std::malloc(kGuard + size + kGuard));
      blocks[t] = block;
      std::memset(block, kCanary, kGuard + size + kGuard);
      stack_low = reinterpret_cast<char*>(block + kGuard);
      stack_size = size;
      stack_t ss = {};
      ss.ss_sp = stack_low;
      ss.ss_size = size;
      if (sigaltstack(&ss, nullptr) != 0) std::abort();
      struct sigaction sa = {};
      sa.sa_handler = on_usr1;
      sa.sa_flags = SA_ONSTACK | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGUSR1, &sa, nullptr);
      transparency::spin_cpu_ms(20);
      pthread_kill(pthread_self(), SIGUSR1);
      results[t].handler_on_altstack = handled && ran_on_altstack;
      std::memset(stack_low, kCanary, size);  // to see below how deep a later handler went
      transparency::spin_cpu_ms(300);         // sampled, with the small alternate stack in place
      // The stack is left in place (and the block allocated) until the canaries are read.
      stack_t off = {};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      size_t untouched = 0;
      while (untouched < size && block[kGuard + untouched] == kCanary) ++untouched;
      results[t].used = size - untouched;
      results[t].below_intact = intact(block, kGuard);
      results[t].above_intact = intact(block + kGuard + size, kGuard);
    });
  }
  for (auto& t : threads) t.join();
  int on_altstack = 0, below = 0, above = 0;
  size_t deepest = 0;
  for (int t = 0; t < kThreads; ++t) {
    on_altstack += results[t].handler_on_altstack;
    below += results[t].below_intact;
    above += results[t].above_intact;
    if (results[t].used > deepest) deepest = results[t].used;
    std::free(blocks[t]);
  }
  // Information only (the canaries judge): 0 unprofiled, a handler's frame when profiled.
  std::fprintf(stderr, "deepest use of a %zu-byte alternate stack while computing: %zu bytes\n",
               size, deepest);
  std::printf("threads whose own handler ran on their alternate stack: %d of %d\n", on_altstack,
              kThreads);
  std::printf("canaries intact below the alternate stacks: %d of %d\n", below, kThreads);
  std::printf("canaries intact above the alternate stacks: %d of %d\n", above, kThreads);
  return 0;
}
