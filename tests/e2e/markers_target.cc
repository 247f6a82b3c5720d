// The markers end-to-end test's program: markers, a label, a counter, a pause and two threads of
// known behaviour, profiled into argv[1]. check_markers.mjs checks what the profile shows.
//
//   main:    instant "Start"; counter "queue-length" 10 -> 20 -> 5; MarkerScope "Nap" around a
//            120 ms sleep; typed "Fetch" (url, bytes, integer); text "Log"; then, paused, a
//            100 ms busy spin ("PausedSpin" is recorded just before the pause); then "End".
//   busy:    interval_start "Handoff"; busy_outer -> parse_with_label [LabelScope "Parse"] ->
//            parse_work, computing for about 800 ms.
//   sleeper: naps until busy is done, then interval_end "Handoff" (the pair spans two threads).
//   helper:  nobody names it: it computes for 100 ms under the name the kernel gives it.
// The executable's name is longer than the 15 bytes the kernel keeps of a thread's name.
//
// Functions are noinline with barriers so each keeps a frame of its own (see e2e_target.cc).
#include <inprof/markers.h>
#include <inprof/profiler.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string_view>
#include <thread>

#define E2E_NOINLINE __attribute__((noinline))
#define E2E_BARRIER() asm volatile("" ::: "memory")

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> busy_done{false};
volatile unsigned long sink;

struct FetchMarker {
  static constexpr std::string_view kName = "Fetch";
  static constexpr inprof::MarkerField kFields[] = {
      {"url", "URL", inprof::Format::kUrl},
      {"size", "Size", inprof::Format::kBytes},
      {"attempt", "Attempt", inprof::Format::kInteger}};
  static constexpr std::string_view kTableLabel = "{marker.data.url}";
  static constexpr std::string_view kTooltipLabel = "Fetch {marker.data.url}";
  static constexpr std::string_view kDescription = "A simulated download";
};

void spin_for(std::chrono::milliseconds time) {
  Clock::time_point deadline = Clock::now() + time;
  do {
    for (unsigned long i = 0; i < 200'000; ++i) sink = sink + i;
  } while (Clock::now() < deadline);
}

void sleep_ms(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1'000'000};
  // The sampling signal may cut a nanosleep short: sleep out the remainder.
  while (nanosleep(&t, &t) != 0) {
  }
}

}  // namespace

// Global functions with plain names: the check matches demangled names.

E2E_NOINLINE void parse_work() {
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(800);
  do {
    for (unsigned long i = 0; i < 2'000'000; ++i) sink = sink + i;
  } while (Clock::now() < deadline);
  E2E_BARRIER();
}

E2E_NOINLINE void parse_with_label() {
  inprof::LabelScope label("Parse");
  parse_work();
  E2E_BARRIER();
}

E2E_NOINLINE void busy_outer() {
  parse_with_label();
  E2E_BARRIER();
}

E2E_NOINLINE void sleeper_wait() {
  while (!busy_done.load(std::memory_order_acquire)) sleep_ms(20);
  E2E_BARRIER();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.inprof\n", argv[0]);
    return 2;
  }
  inprof::Options options;
  options.output_path = argv[1];
  if (inprof::Status status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "markers_target: start failed: %s\n", status.message().c_str());
    return 1;
  }
  static inprof::Counter queue("queue-length", "Items waiting in the queue");
  inprof::marker("Start");

  std::thread sleeper([] {
    inprof::set_thread_name("sleeper");
    pthread_setname_np(pthread_self(), "sleeper");
    sleeper_wait();
    inprof::interval_end("Handoff");
  });
  std::thread busy([] {
    inprof::set_thread_name("busy");
    pthread_setname_np(pthread_self(), "busy");
    inprof::interval_start("Handoff");
    busy_outer();
    busy_done.store(true, std::memory_order_release);
  });

  std::thread helper([] { spin_for(std::chrono::milliseconds(100)); });

  // The counter stays at each value for many sampler ticks, so each one is recorded even when a
  // loaded machine makes the sampler late.
  queue.set(10);
  sleep_ms(150);
  queue.set(20);
  sleep_ms(150);
  queue.set(5);
  {
    inprof::MarkerScope nap("Nap", inprof::kCategoryIO);
    sleep_ms(120);
  }
  inprof::marker<FetchMarker>("Fetch", inprof::kCategoryNetwork, "https://example.com/data.bin",
                              int64_t{4096}, 3);
  inprof::text_marker("Log", "connected to db");

  busy.join();
  sleeper.join();
  helper.join();

  // Busy work while paused: if sampling went on, the main thread would have samples here.
  inprof::marker("PausedSpin");
  if (inprof::Status status = inprof::Profiler::pause(); !status) {
    std::fprintf(stderr, "markers_target: pause failed: %s\n", status.message().c_str());
    return 1;
  }
  spin_for(std::chrono::milliseconds(100));
  if (inprof::Status status = inprof::Profiler::resume(); !status) {
    std::fprintf(stderr, "markers_target: resume failed: %s\n", status.message().c_str());
    return 1;
  }
  spin_for(std::chrono::milliseconds(30));
  inprof::marker("End");

  if (inprof::Status status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "markers_target: stop failed: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
