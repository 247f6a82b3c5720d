// dlopen/dlclose storm: the sampler re-reads the module list (dl_iterate_phdr) and unwinds
// through code that may be unmapped by the time it looks, while exceptions (which also walk the
// loader's list) fly on another thread. Library B has a single user, so each dlclose really
// unmaps it right after its code was on a sampled stack.
#include <dlfcn.h>

#include <stdexcept>
#include <thread>
#include <vector>

#include "torture.h"

#ifndef TORTURE_SPIN_LIB_A
#error "TORTURE_SPIN_LIB_A and TORTURE_SPIN_LIB_B must name the two builds of torture_spin_lib"
#endif

namespace {

uint64_t torture_spin_reference(uint64_t seed, uint64_t rounds) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < rounds; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x + 1;  // + the library's "loaded" flag, set by its constructor
}

using SpinFn = uint64_t (*)(uint64_t, uint64_t);

}  // namespace

TORTURE_SCENARIO(dlopen_storm) {
  torture::start(ctx);
  torture::Deadline deadline(ctx.seconds);
  std::atomic<uint64_t> loads{0}, unloads_seen{0}, wrong{0}, exceptions{0};
  auto storm = [&](const char* path, bool sole_user, uint64_t rounds, uint64_t seed) {
    for (uint64_t i = 0; !deadline.passed(); ++i) {
      void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      TT_CHECK(h != nullptr, "dlopen(%s): %s", path, dlerror());
      auto spin = reinterpret_cast<SpinFn>(dlsym(h, "torture_spin"));
      TT_CHECK(spin != nullptr, "dlsym: %s", dlerror());
      if (spin(seed + i, rounds) != torture_spin_reference(seed + i, rounds)) wrong.fetch_add(1);
      TT_CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
      loads.fetch_add(1);
      if (sole_user) {
        // Nobody else holds it: it must be gone now.
        void* still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (still == nullptr) {
          unloads_seen.fetch_add(1);
        } else {
          dlclose(still);
        }
      }
    }
  };
  std::vector<std::thread> threads;
  threads.emplace_back(storm, TORTURE_SPIN_LIB_A, false, 20000, 1);
  threads.emplace_back(storm, TORTURE_SPIN_LIB_A, false, 50000, 2);
  threads.emplace_back([&] {
    while (!deadline.passed()) {
      try {
        throw std::runtime_error("dl");
      } catch (const std::runtime_error&) {
        exceptions.fetch_add(1);
      }
    }
  });
  storm(TORTURE_SPIN_LIB_B, true, 100000, 3);
  for (auto& t : threads) t.join();
  torture::stop();
  TT_CHECK(wrong.load() == 0, "%llu calls into the library computed a wrong value",
           (unsigned long long)wrong.load());
  TT_CHECK(unloads_seen.load() > 0, "library B was never really unloaded");
  torture::report(ctx, "%llu dlopen/call/dlclose, library B unmapped %llu times, %llu exceptions",
                  (unsigned long long)loads.load(), (unsigned long long)unloads_seen.load(),
                  (unsigned long long)exceptions.load());
  return 0;
}
