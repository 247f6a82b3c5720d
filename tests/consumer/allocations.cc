// A consumer that links inprof::allocations from the installed package: a session with
// Options::allocation_sample_bytes = 1 records every allocation of consumer_site (100 blocks of
// 1,000 bytes, freed at once: 100,000 bytes allocated, none retained).
#include <inprof/profiler.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<void*> g_sink{nullptr};

__attribute__((noinline)) void consumer_site() {
  for (int i = 0; i < 100; ++i) {
    void* p = std::malloc(1000);
    g_sink.store(p);
    std::free(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "consumer_allocations.inprof";
  options.allocation_sample_bytes = 1;
  if (auto status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "start: %s\n", status.message().c_str());
    return 1;
  }
  consumer_site();
  if (auto status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "stop: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("allocations recorded\n");
  return 0;
}
