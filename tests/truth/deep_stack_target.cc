// Issue 21's program: a thread spins shallow, then recurses past 8 MB of stack (a 64 MB thread
// stack), touching new stack pages as it goes, spinning at every level, then spins at the bottom.
// It prints its own CPU time in each phase (the thread's CPU clock), for the checker to compare
// with what the profile's weights say.
#include <pthread.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

uint64_t thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1000000000u + uint64_t(t.tv_nsec);
}

volatile uint64_t g_sink;
int g_levels = 0;
uint64_t g_shallow_ns = 0, g_deep_ns = 0;

__attribute__((noinline)) void spin(uint64_t ns) {
  const uint64_t end = thread_cpu_ns() + ns;
  uint64_t x = 0;
  while (thread_cpu_ns() < end) {
    for (int i = 0; i < 200; ++i) x += i * x + 1;
  }
  g_sink = x;
}

__attribute__((noinline)) void shallow_phase() { spin(150000000); }

// About 1 KiB of stack per level: the frame holds a buffer the compiler must keep.
__attribute__((noinline)) int recurse(int depth) {
  volatile char pad[1000];
  pad[0] = static_cast<char>(depth);
  spin(20000);
  if (depth < g_levels) return recurse(depth + 1) + pad[0];
  spin(150000000);
  return pad[0];
}

// A few dozen bytes per level: thousands of frames in a stack a compiler's recursions reach.
__attribute__((noinline)) int recurse_small(int depth) {
  volatile int level = depth;
  if (depth < g_levels) return recurse_small(depth + 1) + level;
  spin(300000000);
  return level;
}

bool g_small = false;

void* body(void*) {
  const uint64_t start = thread_cpu_ns();
  shallow_phase();
  const uint64_t middle = thread_cpu_ns();
  g_sink = static_cast<uint64_t>(g_small ? recurse_small(0) : recurse(0));
  g_shallow_ns = middle - start;
  g_deep_ns = thread_cpu_ns() - middle;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // deep_stack_target MEGABYTES: ~1 KiB frames that deep; deep_stack_target LEVELS frames:
  // that many small frames.
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 10;
  g_small = argc > 2 && std::string_view(argv[2]) == "frames";
  g_levels = g_small ? static_cast<int>(megabytes) : static_cast<int>(megabytes * 1024);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64u << 20);
  pthread_t thread;
  if (pthread_create(&thread, &attr, body, nullptr) != 0) return 1;
  pthread_setname_np(thread, "deep");
  pthread_join(thread, nullptr);
  std::printf("shallow_cpu_ns=%llu deep_cpu_ns=%llu\n",
              static_cast<unsigned long long>(g_shallow_ns),
              static_cast<unsigned long long>(g_deep_ns));
  return 0;
}
