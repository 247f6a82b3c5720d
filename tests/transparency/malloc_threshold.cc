// Item (17): the program's memory behaviour must not change. glibc's malloc serves a block of at
// least its mmap threshold (128 KiB at start) with a mapping of its own, and raises that threshold
// for the whole process, up to 32 MiB, each time such a block larger than it is freed (the trim
// threshold follows at twice it). A profiler whose threads free a large block that malloc had
// mapped (a zstd workspace resized between chunks, a grown buffer) moves the threshold under the
// program: its later large blocks come from the heap, which is trimmed less often, and a python
// benchmark had a quarter of its page faults and a fraction of its system time.
//
// The program never frees a mapped block itself (no block of 128 KiB or more is ever freed), so
// unprofiled the threshold stays at 128 KiB. It asks for a 129 KiB block (mapped while the
// threshold is at its default, not once it was raised at all), then keeps 4 threads busy for 3 s
// in a recursion that takes a different path every time (many distinct stacks: the dump's
// chunks grow and zstd's workspace with them), asks again and prints whether each block came from
// a mapping. The probe blocks are leaked: freeing one would raise the threshold itself.
#include <malloc.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kProbeBytes = 129 << 10;

// glibc marks a chunk served by its own mapping with bit 1 (IS_MMAPPED) of the size word just
// before the block (malloc's, not the block's: hidden from the compiler, which would warn).
bool from_mapping(const void* block) {
  const char* header = static_cast<const char*>(block) - sizeof(size_t);
  asm volatile("" : "+r"(header));
  size_t size_word;
  std::memcpy(&size_word, header, sizeof size_word);
  return (size_word & 2) != 0;
}

bool probe() {
  void* block = std::malloc(kProbeBytes);
  if (block == nullptr) return false;
  static_cast<volatile char*>(block)[0] = 1;
  return from_mapping(block);  // leaked on purpose (see above)
}

uint64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

std::atomic<bool> stop{false};
std::atomic<uint64_t> sink{0};

// Eight mutually recursive functions; the path depends on a changing seed, so the sampled stacks
// are many and long.
using Step = uint64_t (*)(uint64_t seed, int depth);
extern Step steps[8];

template <int N>
__attribute__((noinline)) uint64_t step(uint64_t seed, int depth) {
  volatile uint64_t local = seed * (N + 3);
  if (depth == 0) {
    uint64_t x = local;
    for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
  }
  const uint64_t next = seed * 2862933555777941757ull + 3037000493ull;
  return steps[(next >> 33) & 7](next, depth - 1) + local;
}

Step steps[8] = {step<0>, step<1>, step<2>, step<3>, step<4>, step<5>, step<6>, step<7>};

void worker(uint64_t seed) {
  while (!stop.load(std::memory_order_relaxed)) {
    seed = seed * 6364136223846793005ull + 1;
    sink.fetch_add(steps[seed >> 61](seed, 20 + static_cast<int>((seed >> 40) % 40)),
                   std::memory_order_relaxed);
  }
}

}  // namespace

int main() {
  const bool before = probe();
  std::vector<std::thread> threads;
  for (uint64_t i = 0; i < 4; ++i) threads.emplace_back(worker, i * 7919 + 1);
  const uint64_t start = now_ms();
  while (now_ms() - start < 3000) {
    timespec pause{0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
  stop.store(true);
  for (auto& t : threads) t.join();
  const bool after = probe();
  std::printf("a 129 KiB block at start comes from its own mapping: %s\n", before ? "yes" : "no");
  std::printf("a 129 KiB block after 3 s of work comes from its own mapping: %s\n",
              after ? "yes" : "no");
  return 0;
}
