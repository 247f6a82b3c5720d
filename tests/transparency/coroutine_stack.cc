// Item: the sampling handler never faults, whatever the program does with its stacks. A thread
// runs on a stack of its own (pthread_attr_setstack) whose lower part also holds a coroutine
// stack (swapcontext); the pages between the two are unmapped while the coroutine runs, so the
// mapping the profiler read at start no longer describes memory. The coroutine computes for a
// while (sampled many times), then returns; the program prints its result.
#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>

#include "transparency.h"

namespace {

constexpr size_t kMapping = 4 << 20;      // the thread's whole stack mapping
constexpr size_t kCoroutine = 256 << 10;  // the coroutine's stack, at the bottom of it
constexpr size_t kHole = 1 << 20;         // unmapped above the coroutine's stack

ucontext_t main_context, coroutine_context;
char* mapping;
volatile uint64_t result;

uint64_t recurse(int depth) {
  if (depth == 0) {
    transparency::spin_cpu_ms(1);
    return 1;
  }
  return recurse(depth - 1) + static_cast<uint64_t>(depth);
}

void coroutine() {
  for (int i = 0; i < 300; ++i) result = result + recurse(50);
  swapcontext(&coroutine_context, &main_context);
}

void* thread_main(void*) {
  getcontext(&coroutine_context);
  coroutine_context.uc_stack.ss_sp = mapping;
  coroutine_context.uc_stack.ss_size = kCoroutine;
  coroutine_context.uc_link = &main_context;
  makecontext(&coroutine_context, coroutine, 0);
  // The hole: this thread's own frames are near the top, far above it.
  munmap(mapping + kCoroutine, kHole);
  swapcontext(&main_context, &coroutine_context);
  return nullptr;
}

}  // namespace

int main() {
  mapping = static_cast<char*>(mmap(nullptr, kMapping, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0));
  if (mapping == MAP_FAILED) return 2;
  transparency::spin_cpu_ms(20);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, mapping, kMapping);
  pthread_t thread;
  if (pthread_create(&thread, &attr, thread_main, nullptr) != 0) return 2;
  pthread_join(thread, nullptr);
  std::printf("coroutine result %llu\n", static_cast<unsigned long long>(result));
  return 0;
}
