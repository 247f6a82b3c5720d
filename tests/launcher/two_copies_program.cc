// A program instrumented with inprof (the static library linked in) that `inprof record` also
// preloads: two copies of inprof in one process. Its ProfileScope must succeed, and its markers,
// label, counter and thread name must land in the one session that runs (issue 23, item 4).
#include <inprof/markers.h>
#include <inprof/profiler.h>

#include <cstdio>
#include <cstdlib>

static const auto kMine = inprof::Category::define("Mine", inprof::Color::kPurple);
static inprof::Counter g_items("two-copies-items");

namespace {

volatile unsigned long g_sink = 0;

void busy() {
  INPROF_LABEL("two-copies-label");
  for (unsigned long i = 0; i < 60'000'000; ++i) g_sink = g_sink + i;
}

}  // namespace

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "own.inprof";
  inprof::ProfileScope scope(options);
  if (!scope.status()) {
    std::fprintf(stderr, "two_copies_program: start: %s\n", scope.status().message().c_str());
    return 1;
  }
  inprof::set_thread_name("two-copies-main");
  INPROF_MARKER("two-copies-marker");
  inprof::text_marker("two-copies-text", "hello", kMine);
  g_items.add(5);
  busy();
  std::puts("two_copies_program: done");
  return 0;
}
