// Allocation profiling in a program that links inprof::allocations (no preload): a session with
// Options::allocation_sample_bytes = 1 records every allocation of linked_site, and a session
// asking for allocations fails with a clear status when the interposer is absent (the same
// source built without inprof::allocations, INPROF_NO_INTERPOSER).
//
// Usage: linked_allocations DUMP
#include <inprof/profiler.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#if !defined(INPROF_NO_INTERPOSER)
namespace {

std::atomic<void*> g_sink{nullptr};

__attribute__((noinline)) void linked_site() {
  for (int i = 0; i < 500; ++i) {
    void* p = std::malloc(1000 + i);
    g_sink.store(p);
    std::free(p);
  }
}

}  // namespace
#endif

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  inprof::Options options;
  options.output_path = argv[1];
  options.allocation_sample_bytes = 1;
  const inprof::Status status = inprof::Profiler::start(options);
#if defined(INPROF_NO_INTERPOSER)
  if (status.ok()) {
    std::fprintf(stderr, "start() succeeded without the interposer\n");
    return 1;
  }
  std::printf("refused: %s\n", status.message().c_str());
  return 0;
#else
  if (!status.ok()) {
    std::fprintf(stderr, "start: %s\n", status.message().c_str());
    return 1;
  }
  linked_site();
  (void)inprof::Profiler::stop();
  std::printf("ok\n");
  return 0;
#endif
}
