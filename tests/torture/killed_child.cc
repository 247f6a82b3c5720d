// torture_killed_child DUMP: profiles itself into DUMP and never stops. A test SIGKILLs it once
// the dump has grown, then checks that everything written up to the kill reads back.
#include <inprof/markers.h>
#include <inprof/profiler.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) uint64_t spin(uint64_t seed) {
  for (int i = 0; i < 100000; ++i) seed = seed * 6364136223846793005u + 1442695040888963407u;
  return seed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: torture_killed_child DUMP\n");
    return 2;
  }
  inprof::Options options;
  options.interval = std::chrono::microseconds(500);
  options.output_path = argv[1];
  if (inprof::Status s = inprof::Profiler::start(options); !s.ok()) {
    std::fprintf(stderr, "torture_killed_child: start: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([t] {
      inprof::set_thread_name("killed-worker-" + std::to_string(t));
      for (uint64_t seed = t;; seed = spin(seed)) g_sink.fetch_add(seed, std::memory_order_relaxed);
    });
  }
  for (uint64_t round = 0;; ++round) {
    INPROF_MARKER("round");
    g_sink.fetch_add(spin(round), std::memory_order_relaxed);
  }
}
