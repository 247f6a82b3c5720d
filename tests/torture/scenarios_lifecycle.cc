// Session lifecycle torture: start/stop a thousand times with busy threads, pause/resume in
// between, and stop() from another thread while markers, labels and counters are being recorded.
#include <inprof/markers.h>

#include <random>
#include <thread>
#include <vector>

#include "torture.h"

namespace {

struct RequestMarker {
  static constexpr std::string_view kName = "TortureRequest";
  static constexpr inprof::MarkerField kFields[] = {
      {"url", "URL", inprof::Format::kUrl},
      {"bytes", "Size", inprof::Format::kBytes},
      {"ratio", "Ratio", inprof::Format::kPercentage}};
  static constexpr std::string_view kTableLabel = "{marker.data.url}";
};

// Records every kind of marker as fast as it can until `done`; returns how many it recorded
// (or tried to: outside a session they cost nothing and go nowhere).
uint64_t marker_writer(const std::atomic<bool>& done, int id, inprof::Counter& counter) {
  static const inprof::Category kTorture =
      inprof::Category::define("Torture", inprof::Color::kMagenta);
  inprof::set_thread_name("marker-writer-" + std::to_string(id));
  uint64_t n = 0;
  std::string text;
  while (!done.load(std::memory_order_relaxed)) {
    INPROF_LABEL("writer-loop");
    INPROF_MARKER("instant");
    {
      INPROF_SCOPED_MARKER("scoped");
      (void)torture::mix(n, 200);
    }
    text.assign(static_cast<size_t>(n % 300), static_cast<char>('a' + n % 26));
    inprof::text_marker("text", text, kTorture);
    inprof::marker<RequestMarker>("request", inprof::kCategoryNetwork, "https://example.com/x", n,
                                  0.5);
    inprof::interval_start("pair");
    inprof::interval_end("pair");
    counter.add(1);
    n += 7;
  }
  return n / 7;
}

}  // namespace

// 250 start/stop cycles (and on to the deadline in soak mode: thousands) while two threads compute
// and write markers; every Status must be ok. A cycle sometimes pauses and resumes. The last
// session runs for a while so that its dump has samples to check.
TORTURE_SCENARIO(start_stop_loop) {
  inprof::Counter counter("torture-loop-counter");
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  std::atomic<uint64_t> written{0};
  for (int i = 0; i < 2; ++i) {
    writers.emplace_back([&, i] { written.fetch_add(marker_writer(done, i, counter)); });
  }
  // Each cycle waits for new threads to be scheduled: 1,000 took 50–75 s of a CI run beside the
  // other tests (native and ASan), for what the soak repeats far longer.
  constexpr int cycles = 250;  // soak mode goes on until its deadline
  std::mt19937 rng(1);
  torture::Deadline deadline(ctx.seconds);
  int n = 0;
  for (; n < cycles || (ctx.soak && !deadline.passed()); ++n) {
    torture::start(ctx);
    TT_CHECK(inprof::Profiler::is_running(), "not running after start");
    inprof::Status again = inprof::Profiler::start(torture::options(ctx));
    TT_CHECK(again.code() == inprof::Status::Code::kAlreadyRunning, "second start: %s",
             again.message().c_str());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
    if (n % 10 == 0) {
      TT_CHECK(inprof::Profiler::pause().ok(), "pause");
      TT_CHECK(inprof::Profiler::resume().ok(), "resume");
    }
    torture::stop();
    TT_CHECK(!inprof::Profiler::is_running(), "running after stop");
    TT_CHECK(inprof::Profiler::stop().code() == inprof::Status::Code::kNotRunning, "second stop");
  }
  torture::start(ctx);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  torture::stop();
  done.store(true);
  for (auto& t : writers) t.join();
  torture::report(ctx, "%d start/stop cycles, all ok; %llu marker rounds meanwhile", n + 1,
                  (unsigned long long)written.load());
  return 0;
}

// stop() from a thread of its own, at a random moment, while three threads write markers at
// full speed; repeated until the deadline. The last session's dump is checked.
TORTURE_SCENARIO(stop_during_markers) {
  inprof::Counter counter("torture-marker-counter");
  std::atomic<bool> done{false};
  std::atomic<uint64_t> written{0};
  std::vector<std::thread> writers;
  for (int i = 0; i < 3; ++i) {
    writers.emplace_back([&, i] { written.fetch_add(marker_writer(done, i, counter)); });
  }
  std::mt19937 rng(2);
  torture::Deadline deadline(ctx.seconds);
  int sessions = 0;
  while (!deadline.passed() || sessions < 50) {
    torture::start(ctx);
    const auto delay = std::chrono::microseconds(rng() % 20000);
    std::thread stopper([delay] {
      std::this_thread::sleep_for(delay);
      torture::stop();
    });
    stopper.join();
    ++sessions;
  }
  // The last one longer, so that its dump holds samples and markers.
  torture::start(ctx);
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    torture::stop();
  });
  stopper.join();
  done.store(true);
  for (auto& t : writers) t.join();
  TT_CHECK(written.load() > 0, "no markers written");
  torture::report(ctx, "%d sessions stopped from another thread during %llu marker rounds",
                  sessions + 1, (unsigned long long)written.load());
  return 0;
}
