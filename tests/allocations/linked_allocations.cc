// Allocation profiling in a program that links inprof::allocations (no preload): a session with
// Options::allocation_sample_bytes = 1 records every allocation of linked_site, and a session
// asking for allocations fails with a clear status when the interposer is absent (the same
// source built without inprof::allocations, INPROF_NO_INTERPOSER). With a second dump, a second
// session follows: it frees blocks the first one sampled (not its own: no free of them may be
// recorded), and its own blocks are freed after it stopped.
//
// Usage: linked_allocations DUMP [SECOND_DUMP]
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

// Blocks kept past their session: freed by the next one, or after it.
__attribute__((noinline)) void kept_site(void** blocks, int count) {
  for (int i = 0; i < count; ++i) blocks[i] = std::malloc(3000 + i);
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
  void* first_session[100];
  kept_site(first_session, 100);
  (void)inprof::Profiler::stop();
  if (argc > 2) {
    options.output_path = argv[2];
    const inprof::Status second = inprof::Profiler::start(options);
    if (!second.ok()) {
      std::fprintf(stderr, "second start: %s\n", second.message().c_str());
      return 1;
    }
    for (void* block : first_session) std::free(block);
    void* second_session[50];
    kept_site(second_session, 50);
    for (int i = 0; i < 25; ++i) std::free(second_session[i]);
    (void)inprof::Profiler::stop();
    for (int i = 25; i < 50; ++i) std::free(second_session[i]);
  } else {
    for (void* block : first_session) std::free(block);
  }
  std::printf("ok\n");
  return 0;
#endif
}
