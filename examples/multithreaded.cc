// A small multi-threaded program that profiles itself.
//
//   ./multithreaded [output.inprof]
//   symbolicate output.inprof -o profile.json    # then open profile.json on profiler.firefox.com
#include <inprof/profiler.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

__attribute__((noipa)) bool is_prime(uint64_t n) {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

__attribute__((noipa)) uint64_t count_primes(uint64_t limit) {
  uint64_t count = 0;
  for (uint64_t n = 0; n < limit; ++n) count += is_prime(n);
  return count;
}

__attribute__((noipa)) void sort_random_vectors(int rounds) {
  std::mt19937 rng(42);
  for (int r = 0; r < rounds; ++r) {
    std::vector<uint32_t> v(200000);
    for (auto& x : v) x = rng();
    std::sort(v.begin(), v.end());
  }
}

__attribute__((noipa)) double simulate(int steps) {
  double x = 1.0, v = 0.0;
  for (int i = 0; i < steps; ++i) {
    v -= std::sin(x) * 1e-4;
    x += v * 1e-4;
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "multithreaded.inprof";
  if (auto status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "cannot start the profiler: %s\n", status.message().c_str());
    return 1;
  }

  std::thread primes([] {
    inprof::set_thread_name("primes");
    std::printf("primes below 2M: %llu\n", static_cast<unsigned long long>(count_primes(2000000)));
  });
  std::thread sorter([] {
    inprof::set_thread_name("sorter");
    sort_random_vectors(40);
  });
  std::thread physics([] {
    inprof::set_thread_name("physics");
    std::printf("physics: %f\n", simulate(60000000));
  });
  primes.join();
  sorter.join();
  physics.join();

  if (auto status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "profile incomplete: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("profile written to %s\n", options.output_path.c_str());
  return 0;
}
