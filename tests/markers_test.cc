// Markers, labels, counters, pause/resume and fork, checked in the dump a real session writes.
#include "inprof/markers.h"

#include <gtest/gtest.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <thread>

#include "dump/dump_reader.h"
#include "inprof/profiler.h"
#include "markers/label_stack.h"
#include "session/process_info.h"
#include "test_util.h"

namespace inprof {
namespace {

using namespace internal;

struct MarkerDump : DumpVisitor {
  std::vector<MarkerRecord> markers;
  std::map<uint32_t, MarkerSchemaRecord> schemas;
  std::map<uint32_t, CategoryRecord> categories;
  std::map<uint64_t, std::string> strings;
  std::map<uint32_t, CounterRecord> counters;
  std::vector<CounterSampleRecord> counter_samples;
  std::vector<SampleRecord> samples;
  std::vector<SampleRepeatRecord> repeats;
  std::vector<uint64_t> pauses, resumes;
  StatsRecord stats;
  void on_marker(const MarkerRecord& r) override { markers.push_back(r); }
  void on_marker_schema(const MarkerSchemaRecord& r) override { schemas[r.type] = r; }
  void on_category(const CategoryRecord& r) override { categories[r.id] = r; }
  void on_string(const StringRecord& r) override { strings[r.id] = r.text; }
  void on_counter(const CounterRecord& r) override { counters[r.id] = r; }
  void on_counter_sample(const CounterSampleRecord& r) override { counter_samples.push_back(r); }
  void on_sample(const SampleRecord& r) override { samples.push_back(r); }
  void on_sample_repeat(const SampleRepeatRecord& r) override { repeats.push_back(r); }
  void on_pause(const PauseRecord& r) override { pauses.push_back(r.time_ns); }
  void on_resume(const PauseRecord& r) override { resumes.push_back(r.time_ns); }
  void on_stats(const StatsRecord& r) override { stats = r; }

  const MarkerRecord* find(std::string_view name) const {
    for (const auto& m : markers) {
      if (m.name == name) return &m;
    }
    return nullptr;
  }
};

class MarkersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("inprof-markers-test-" + std::to_string(getpid()) + ".inprof"))
                .string();
  }
  void TearDown() override {
    if (Profiler::is_running()) (void)Profiler::stop();
    std::filesystem::remove(path_);
  }
  void start() {
    Options o;
    o.output_path = path_;
    ASSERT_TRUE(Profiler::start(o));
  }
  MarkerDump stop_and_read() {
    EXPECT_TRUE(Profiler::stop());
    MarkerDump c;
    EXPECT_TRUE(read_dump_file(path_, c).ok);
    return c;
  }
  std::string path_;
};

struct RequestMarker {
  static constexpr std::string_view kName = "Request";
  static constexpr MarkerField kFields[] = {{"url", "URL", Format::kUrl},
                                            {"bytes", "Size", Format::kBytes},
                                            {"ratio", "Hit ratio", Format::kPercentage}};
  static constexpr std::string_view kTableLabel = "{marker.data.url}";
};

TEST_F(MarkersTest, InstantIntervalTypedAndTextMarkers) {
  start();
  const Timestamp before = now();
  marker("instant-one", kCategoryIO);
  {
    MarkerScope scope("scoped", kCategoryNetwork);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  marker<RequestMarker>("fetch", kCategoryNetwork, std::string("https://example.org/a"), 2048,
                        0.25);
  text_marker("log", "hello world");
  INPROF_MARKER("macro-instant");
  { INPROF_SCOPED_MARKER("macro-scope"); }
  MarkerDump c = stop_and_read();

  const MarkerRecord* instant = c.find("instant-one");
  ASSERT_NE(instant, nullptr);
  EXPECT_EQ(instant->phase, 0);
  EXPECT_EQ(instant->category, kCategoryIO.id());
  EXPECT_EQ(instant->tid, current_thread_id());
  EXPECT_EQ(instant->type, 0u);

  const MarkerRecord* scoped = c.find("scoped");
  ASSERT_NE(scoped, nullptr);
  EXPECT_EQ(scoped->phase, 1);
  EXPECT_GE(scoped->end_ns - scoped->start_ns, 5000000u);  // it slept 5 ms inside
  EXPECT_GE(scoped->start_ns, instant->start_ns);

  const MarkerRecord* fetch = c.find("fetch");
  ASSERT_NE(fetch, nullptr);
  ASSERT_TRUE(c.schemas.count(fetch->type));
  const MarkerSchemaRecord& schema = c.schemas[fetch->type];
  EXPECT_EQ(schema.name, "Request");
  EXPECT_EQ(schema.table_label, "{marker.data.url}");
  ASSERT_EQ(schema.fields.size(), 3u);
  EXPECT_EQ(schema.fields[0].key, "url");
  EXPECT_EQ(schema.fields[1].format, static_cast<uint8_t>(Format::kBytes));
  ASSERT_EQ(fetch->values.size(), 3u);
  EXPECT_EQ(fetch->values[0].string, "https://example.org/a");
  EXPECT_EQ(fetch->values[1].integer, 2048);
  EXPECT_DOUBLE_EQ(fetch->values[2].decimal, 0.25);

  const MarkerRecord* log = c.find("log");
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(c.schemas[log->type].name, "Text");
  EXPECT_EQ(log->values.at(0).string, "hello world");

  EXPECT_NE(c.find("macro-instant"), nullptr);
  ASSERT_NE(c.find("macro-scope"), nullptr);
  EXPECT_EQ(c.find("macro-scope")->phase, 1);

  // The built-in categories are described in the dump.
  EXPECT_EQ(c.categories.at(kCategoryNetwork.id()).name, "Network");
  EXPECT_EQ(c.categories.at(kCategoryIdle.id()).color, static_cast<uint8_t>(Color::kTransparent));
  (void)before;
}

TEST_F(MarkersTest, IntervalAcrossThreadsAndUserCategories) {
  static const Category kDatabase = Category::define("Database", Color::kPurple);
  EXPECT_EQ(Category::define("Database", Color::kPurple).id(), kDatabase.id());
  start();
  interval_start("handoff", kDatabase);
  std::thread other([] { interval_end("handoff", kDatabase); });
  other.join();
  const Timestamp a = now();
  std::thread third([a] { interval_marker("measured", a, a + 1000000); });
  third.join();
  MarkerDump c = stop_and_read();
  const MarkerRecord* start_marker = nullptr;
  const MarkerRecord* end_marker = nullptr;
  for (const auto& m : c.markers) {
    if (m.name == "handoff" && m.phase == 2) start_marker = &m;
    if (m.name == "handoff" && m.phase == 3) end_marker = &m;
  }
  ASSERT_NE(start_marker, nullptr);
  ASSERT_NE(end_marker, nullptr);
  EXPECT_NE(start_marker->tid, end_marker->tid);
  EXPECT_LE(start_marker->start_ns, end_marker->start_ns);
  EXPECT_EQ(c.categories.at(kDatabase.id()).name, "Database");
  EXPECT_EQ(c.categories.at(kDatabase.id()).color, static_cast<uint8_t>(Color::kPurple));
  const MarkerRecord* measured = c.find("measured");
  ASSERT_NE(measured, nullptr);
  EXPECT_EQ(measured->end_ns - measured->start_ns, 1000000u);
}

TEST_F(MarkersTest, NothingIsRecordedWithoutASession) {
  EXPECT_FALSE(is_recording());
  marker("before");
  start();
  EXPECT_TRUE(is_recording());
  marker("during");
  MarkerDump c = stop_and_read();
  EXPECT_FALSE(is_recording());
  marker("after");
  EXPECT_EQ(c.find("before"), nullptr);
  EXPECT_NE(c.find("during"), nullptr);
  EXPECT_EQ(c.markers.size(), 1u);
}

// Many threads write markers while the session stops: nothing crashes, every marker in the
// dump is whole.
TEST_F(MarkersTest, StopWhileMarkersAreWritten) {
  for (int round = 0; round < 5; ++round) {
    start();
    std::atomic<bool> run{true};
    std::atomic<uint64_t> written{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&] {
        while (run.load()) {
          marker<RequestMarker>("spam", kCategoryOther, "x", 1, 0.5);
          written.fetch_add(1);
        }
      });
    }
    // The stop lands while they write (on a loaded machine they may not run for a while).
    while (written.load() < 100) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    MarkerDump c = stop_and_read();
    run = false;
    for (auto& w : writers) w.join();
    EXPECT_GT(c.markers.size(), 0u);
    for (const auto& m : c.markers) {
      ASSERT_EQ(m.name, "spam");
      ASSERT_EQ(m.values.size(), 3u);
    }
  }
}

std::atomic<bool> g_label_spin{true};

__attribute__((noinline)) void spin_in_label() {
  INPROF_LABEL("InnerPhase");
  while (g_label_spin.load(std::memory_order_relaxed)) {
  }
}

__attribute__((noinline)) void labelled_work() {
  LabelScope outer("OuterPhase", kCategoryUser);
  spin_in_label();
  asm volatile("" ::: "memory");
}

// While its label is pushed, a label scope holds a record a copy of the stack shows (the kernel's
// copies carry no label stack); it is cleared before the label is popped.
TEST_F(MarkersTest, ALabelScopeHoldsItsRecordWhilePushed) {
  start();
  uint64_t words[3];
  {
    LabelScope scope("Recorded", kCategoryUser);
    std::memcpy(words, &scope, sizeof(words));
    EXPECT_EQ(words[0], internal::kLabelRecordMagic ^ reinterpret_cast<uint64_t>(&scope));
    EXPECT_STREQ(reinterpret_cast<const char*>(words[1]), "Recorded");
    EXPECT_EQ(words[2], kCategoryUser.id());
    EXPECT_EQ(internal::current_label_stack().off_stack_since_ns.load(), 0u);
  }
#if defined(__linux__)
  // A scope outside the stack keeps none, and the thread's label stack says so. (Linux only,
  // where the kernel's copies read records: elsewhere the heap may lie just above the stack,
  // and a record there is harmless.)
  auto* heap = new LabelScope("OnTheHeap");
  std::memcpy(words, heap, sizeof(words));
  EXPECT_NE(words[0], internal::kLabelRecordMagic ^ reinterpret_cast<uint64_t>(heap));
  EXPECT_NE(internal::current_label_stack().off_stack_since_ns.load(), 0u);
  delete heap;
#endif
  stop_and_read();
}

TEST_F(MarkersTest, LabelsAppearInSamplesInStackOrder) {
  // Sessions of 200 ms of the worker's CPU each until more than 20 of its samples are in: one
  // was enough for that natively, but under Wine beside two busy loops it gave 19.
  size_t with_both = 0, total = 0;
  for (int session = 0; session < 20 && total <= 20; ++session) {
    start();
    g_label_spin = true;
    std::atomic<uint64_t> tid{0};
    std::thread worker([&] {
      tid = current_thread_id();
      labelled_work();
    });
    testing::wait_for_cpu(worker.native_handle(), std::chrono::milliseconds(200));
    g_label_spin = false;
    worker.join();
    MarkerDump c = stop_and_read();
    // The spin: from the first sample with both labels to the last (before it, the thread was
    // still starting; after it, ending: on a loaded machine several samples may land there).
    std::vector<const SampleRecord*> samples;
    for (const auto& s : c.samples) {
      if (s.tid == tid) samples.push_back(&s);
    }
    std::sort(samples.begin(), samples.end(),
              [](const SampleRecord* a, const SampleRecord* b) { return a->time_ns < b->time_ns; });
    auto both = [](const SampleRecord* s) { return s->labels.size() == 2; };
    const auto first = std::find_if(samples.begin(), samples.end(), both);
    const auto last = std::find_if(samples.rbegin(), samples.rend(), both).base();
    for (auto it = first; it < last; ++it) {
      const SampleRecord& s = **it;
      ++total;
      if (!both(&s)) continue;
      const auto& outer = s.labels[0];
      const auto& inner = s.labels[1];
      EXPECT_EQ(c.strings[outer.string_id], "OuterPhase");
      EXPECT_EQ(c.strings[inner.string_id], "InnerPhase");
      EXPECT_EQ(outer.category, kCategoryUser.id());
      // Leaf-first positions: the inner label sits closer to the leaf than the outer one, and
      // both inside the stack.
      EXPECT_LT(inner.position, outer.position)
          << s.frames.size() << " frames, flags " << s.flags << ", sample at " << s.time_ns;
      EXPECT_LT(outer.position, s.frames.size());
      ++with_both;
    }
  }
  ASSERT_GT(total, 20u);
  EXPECT_GT(with_both * 10, total * 9) << with_both << " of " << total;
}

TEST_F(MarkersTest, CountersBecomeTimeSeries) {
  static Counter queue_length("queue length", "items waiting");
  queue_length.set(0);
  start();
  for (int i = 1; i <= 5; ++i) {
    queue_length.add(10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  queue_length.add(10);  // just before stop(): no tick has seen it
  MarkerDump c = stop_and_read();
  uint32_t id = UINT32_MAX;
  for (const auto& [cid, rec] : c.counters) {
    if (rec.name == "queue length") id = cid;
  }
  ASSERT_NE(id, UINT32_MAX);
  EXPECT_EQ(c.counters[id].description, "items waiting");
  std::vector<int64_t> values;
  for (const auto& s : c.counter_samples) {
    if (s.id == id) values.push_back(s.value);
  }
  // The values seen rise in steps of 10 to the last one (a tick may miss a value on an
  // overloaded machine, never invent one; stop() records the final value whatever the ticks).
  ASSERT_FALSE(values.empty());
  EXPECT_EQ(values.back(), 60);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(values[i] % 10, 0);
    if (i > 0) {
      EXPECT_GT(values[i], values[i - 1]);
    }
  }
  EXPECT_GE(values.size(), 2u);
}

TEST_F(MarkersTest, PausedRangesHaveNoSamplesOrMarkers) {
  start();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ASSERT_TRUE(Profiler::pause());
  marker("while-paused");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(Profiler::resume());
  marker("after-resume");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  MarkerDump c = stop_and_read();
  ASSERT_EQ(c.pauses.size(), 1u);
  ASSERT_EQ(c.resumes.size(), 1u);
  const uint64_t p = c.pauses[0], r = c.resumes[0];
  EXPECT_GE(r - p, 50000000u);
  for (const auto& s : c.samples) EXPECT_FALSE(s.time_ns > p && s.time_ns < r);
  for (const auto& s : c.repeats)
    EXPECT_FALSE(s.time_ns > p && s.time_ns < r)
        << s.time_ns << " in [" << p << ", " << r << "] tid " << s.tid;
  EXPECT_EQ(c.find("while-paused"), nullptr);
  EXPECT_NE(c.find("after-resume"), nullptr);
}

// A busy thread's CPU deltas add up to about its wall time; a sleeping one's to about nothing.
TEST_F(MarkersTest, CpuDeltasMatchWhatThreadsDid) {
  std::atomic<bool> run{true};
  std::atomic<uint64_t> busy_tid{0}, idle_tid{0};
  std::thread busy([&] {
    busy_tid = current_thread_id();
    while (run.load(std::memory_order_relaxed)) {
    }
  });
  std::thread idle([&] {
    idle_tid = current_thread_id();
    while (run.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  while (busy_tid == 0 || idle_tid == 0) std::this_thread::yield();
  const auto busy_before = testing::thread_cpu_time(busy.native_handle());
  start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  testing::wait_for_cpu(busy.native_handle(), std::chrono::milliseconds(300));
  MarkerDump c = stop_and_read();
  const uint64_t busy_actual =
      (testing::thread_cpu_time(busy.native_handle()) - busy_before).count();
  run = false;
  busy.join();
  idle.join();
  uint64_t busy_cpu = 0, idle_cpu = 0;
  for (const auto& s : c.samples) {
    if (s.tid == busy_tid && s.cpu_delta_ns) busy_cpu += *s.cpu_delta_ns;
    if (s.tid == idle_tid && s.cpu_delta_ns) idle_cpu += *s.cpu_delta_ns;
  }
  for (const auto& s : c.repeats) {
    if (s.tid == busy_tid && s.cpu_delta_ns) busy_cpu += *s.cpu_delta_ns;
    if (s.tid == idle_tid && s.cpu_delta_ns) idle_cpu += *s.cpu_delta_ns;
  }
  // The deltas add up to the busy thread's real CPU time, less what it used before its first
  // sample and after its last (one sampler gap each; long only on an overloaded machine), and
  // never more. The sleeper woke every 50 ms for microseconds: a tenth of the busy thread's
  // time at most, which leaves room for a thread CPU clock that counts in whole ticks (under Wine
  // 10 ms: one tick charged to the sleeper made exactly 10 ms, over a fixed 10-ms bound).
  EXPECT_GT(busy_cpu, busy_actual / 2) << busy_cpu << " of " << busy_actual;
  EXPECT_LE(busy_cpu, busy_actual);
  EXPECT_LT(idle_cpu, busy_actual / 10) << idle_cpu << " against " << busy_actual;
}

TEST_F(MarkersTest, ThreadFiltersSelectThreadsByName) {
  std::atomic<bool> run{true};
  std::atomic<uint64_t> wanted{0}, other{0}, renamed{0};
  auto spin = [&](std::atomic<uint64_t>* tid, const char* name, const char* later) {
    set_thread_name(name);
    *tid = current_thread_id();
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    if (later) set_thread_name(later);
    while (run.load(std::memory_order_relaxed)) {
    }
  };
  std::thread a(spin, &wanted, "worker-io-1", nullptr);
  std::thread b(spin, &other, "compute", nullptr);
  std::thread c(spin, &renamed, "unnamed", "worker-io-2");
  while (!wanted || !other || !renamed) std::this_thread::yield();
  Options o;
  o.output_path = path_;
  o.thread_filters = {"io-"};
  ASSERT_TRUE(Profiler::start(o));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the rename happens at 60 ms
  testing::wait_for_cpu(a.native_handle(), std::chrono::milliseconds(50));
  testing::wait_for_cpu(c.native_handle(), std::chrono::milliseconds(50));
  MarkerDump collected = stop_and_read();
  run = false;
  a.join();
  b.join();
  c.join();
  std::map<uint64_t, size_t> per_thread;
  for (const auto& s : collected.samples) ++per_thread[s.tid];
  EXPECT_GT(per_thread[wanted], 0u);
  EXPECT_EQ(per_thread.count(other), 0u);
  EXPECT_GT(per_thread[renamed], 0u);  // selected once it took a matching name
}

TEST_F(MarkersTest, RegisteredThreadsAreSampledWhateverTheFilters) {
  std::atomic<bool> run{true};
  std::atomic<uint64_t> registered{0}, unregistered{0};
  std::thread a([&] {
    register_thread("special");  // the filter below does not match its name
    registered = current_thread_id();
    while (run.load(std::memory_order_relaxed)) {
    }
  });
  std::thread b([&] {
    set_thread_name("io-but-opted-out");
    unregister_thread();  // the filter matches, but it opted out
    unregistered = current_thread_id();
    while (run.load(std::memory_order_relaxed)) {
    }
  });
  while (!registered || !unregistered) std::this_thread::yield();
  Options o;
  o.output_path = path_;
  o.thread_filters = {"io-"};
  ASSERT_TRUE(Profiler::start(o));
  // Under qemu-user the sampler's first ticks are slow, and on a busy machine 50 ms of the
  // spinning thread's CPU could pass before one of them reached it (2 runs in 15 failed so).
  testing::wait_for_cpu(a.native_handle(),
                        std::chrono::milliseconds(testing::emulator() ? 500 : 50));
  MarkerDump collected = stop_and_read();
  run = false;
  a.join();
  b.join();
  std::map<uint64_t, size_t> per_thread;
  for (const auto& s : collected.samples) ++per_thread[s.tid];
  EXPECT_GT(per_thread[registered], 0u);
  EXPECT_EQ(per_thread.count(unregistered), 0u);
}

#if !defined(_WIN32)  // Windows has no fork()
// fork(): the child has no half-running profiler (and can start its own); the parent goes on.
TEST_F(MarkersTest, ForkLeavesTheParentProfilingAndTheChildClean) {
  if (testing::emulator()) {
    // qemu-user 7.2 aborts a forked child of a threaded program when it creates a thread
    // ("qemu_plugin_vcpu_init_hook: assertion failed"), profiler or not.
    GTEST_SKIP() << "a thread created after fork() crashes qemu-user 7.2 itself";
  }
  start();
  const std::string child_path = path_ + ".child";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    if (Profiler::is_running() || is_recording()) code = 10;
    Options o;
    o.output_path = child_path;
    if (code == 0 && !Profiler::start(o)) code = 11;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (code == 0 && !Profiler::stop()) code = 12;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Profiler::is_running());
  marker("parent-after-fork");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  MarkerDump c = stop_and_read();
  EXPECT_NE(c.find("parent-after-fork"), nullptr);
  MarkerDump child;
  DumpReadResult r = read_dump_file(child_path, child);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.complete);
  std::filesystem::remove(child_path);
}
#endif  // !_WIN32

}  // namespace
}  // namespace inprof
