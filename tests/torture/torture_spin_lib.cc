// The library of dlopen_storm, built twice (libtorture_spin_a/_b): one exported function that
// spins long enough to be sampled inside the library, and a static constructor/destructor so that
// loading and unloading run code too.
#include <atomic>
#include <cstdint>

namespace {

// Atomic although the loader runs constructors and destructors under its own lock: TSan does not
// see that lock, and would report the dlopen in one thread and the dlclose in another as a race.
std::atomic<uint64_t> g_loaded{0};

struct OnLoad {
  OnLoad() { g_loaded.store(1, std::memory_order_relaxed); }
  ~OnLoad() { g_loaded.store(0, std::memory_order_relaxed); }
} on_load;

}  // namespace

// The same recurrence as torture_spin_reference() in scenarios_dlopen.cc.
extern "C" __attribute__((visibility("default"), noinline)) uint64_t torture_spin(uint64_t seed,
                                                                                  uint64_t rounds) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    asm volatile("" : "+r"(x));
  }
  return x + g_loaded.load(std::memory_order_relaxed);
}
