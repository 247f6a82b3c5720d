// Continuous mode (Options::rotate_interval): a rotating session of five windows or more over a
// known workload. Every sample the sampler wrote is in exactly one window's dump; each window's
// dump stands alone (its own process record, modules and threads, no repeat of a sample it does
// not hold, its time range stated) and symbolicates alone; keep_files removes the oldest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dump/dump_reader.h"
#include "inprof/profiler.h"
#include "session/process_info.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

std::atomic<bool> g_spin{true};

__attribute__((noinline)) void rotation_spinner() {
  while (g_spin.load(std::memory_order_relaxed)) {
    asm volatile("" ::: "memory");
  }
}

// One window's dump, read on its own.
struct Window : DumpVisitor {
  bool process = false;
  size_t modules = 0;
  std::set<uint64_t> started;                       // thread-start records
  std::map<uint64_t, std::vector<uint64_t>> times;  // by tid: samples and repeats, in order
  std::set<uint64_t> orphan_repeats;  // a repeat before any sample of its thread in this window
  std::optional<CaptureRecord> capture;
  StatsRecord stats;
  void on_process(const ProcessRecord&) override { process = true; }
  void on_module_load(const ModuleRecord&) override { ++modules; }
  void on_thread_start(const ThreadRecord& r) override { started.insert(r.tid); }
  void on_sample(const SampleRecord& r) override { times[r.tid].push_back(r.time_ns); }
  void on_sample_repeat(const SampleRepeatRecord& r) override {
    if (!times.count(r.tid)) orphan_repeats.insert(r.tid);
    times[r.tid].push_back(r.time_ns);
  }
  void on_capture(const CaptureRecord& r) override { capture = r; }
  void on_stats(const StatsRecord& r) override { stats = r; }
};

// The window dumps in `dir`, "w-N.inprof", by N.
std::map<uint64_t, std::string> window_files(const std::string& dir) {
  std::map<uint64_t, std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("w-", 0) != 0 || name.size() < 9) continue;
    if (name.compare(name.size() - 7, 7, ".inprof") != 0) continue;
    files[std::stoull(name.substr(2, name.size() - 9))] = e.path().string();
  }
  return files;
}

// Runs a rotating session until window `windows` has been opened, then stops it.
void run_session(const std::string& dir, std::chrono::milliseconds every, size_t keep,
                 size_t windows, uint64_t* spinner_tid) {
  g_spin = true;
  std::atomic<uint64_t> tid{0};
  std::thread spinner([&] {
    inprof::set_thread_name("rotation-spinner");
    tid = current_thread_id();
    rotation_spinner();
  });
  while (tid == 0) std::this_thread::yield();
  inprof::Options o;
  o.output_path = dir + "/w-%n.inprof";
  o.rotate_interval = every;
  o.keep_files = keep;
  inprof::Status started = inprof::Profiler::start(o);
  ASSERT_TRUE(started) << started.message();
  // Window N's file appears when window N-1 closes: no waiting on a clock, only on the files.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(dir + "/w-" + std::to_string(windows) + ".inprof") &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  inprof::Status stopped = inprof::Profiler::stop();
  g_spin = false;
  spinner.join();
  ASSERT_TRUE(stopped) << stopped.message();
  *spinner_tid = tid;
}

TEST(RotationTest, EverySampleIsInExactlyOneWindowAndEachWindowStandsAlone) {
  symtest::TempDir dir;
  uint64_t spinner = 0;
  ASSERT_NO_FATAL_FAILURE(
      run_session(dir.path("."), std::chrono::milliseconds(300), 0, 5, &spinner));
  const std::map<uint64_t, std::string> files = window_files(dir.path("."));
  ASSERT_GE(files.size(), 5u);
  // Numbered 1, 2, 3, ... with no gap.
  EXPECT_EQ(files.begin()->first, 1u);
  EXPECT_EQ(files.rbegin()->first, files.size());

  std::vector<Window> windows(files.size());
  size_t i = 0;
  for (const auto& [number, path] : files) {
    Window& w = windows[i++];
    const DumpReadResult r = read_dump_file(path, w);
    ASSERT_TRUE(r.ok) << path << ": " << r.error;
    EXPECT_TRUE(r.complete) << path;
    EXPECT_TRUE(r.warnings.empty()) << path << ": " << r.warnings.front();
    EXPECT_TRUE(w.process) << path;
    EXPECT_GT(w.modules, 0u) << path;
    ASSERT_TRUE(w.capture) << path;
    EXPECT_EQ(w.capture->reason, CaptureReason::kRotation);
    EXPECT_TRUE(w.orphan_repeats.empty()) << path << ": a repeat of a sample in another window";
    for (const auto& [tid, times] : w.times) {
      EXPECT_TRUE(w.started.count(tid)) << path << ": thread " << tid << " has no start record";
      for (uint64_t t : times) {
        // A window ends after the samples it holds were taken (a sample taken just before the
        // boundary but stored just after it is the next window's).
        EXPECT_LE(t, w.capture->end_ns) << path;
      }
    }
  }
  // The windows follow each other with neither gap nor overlap.
  for (size_t k = 1; k < windows.size(); ++k) {
    EXPECT_EQ(windows[k].capture->start_ns, windows[k - 1].capture->end_ns);
  }
  // Every sample (and repeat) the sampler wrote, once: the last window's statistics count them
  // all, for the whole session.
  uint64_t total = 0;
  std::map<uint64_t, std::vector<uint64_t>> all;  // by tid, windows in order
  for (const Window& w : windows) {
    for (const auto& [tid, times] : w.times) {
      total += times.size();
      all[tid].insert(all[tid].end(), times.begin(), times.end());
    }
  }
  EXPECT_EQ(total, windows.back().stats.samples_recorded);
  // No sample twice: each thread's times only grow, across the boundaries too.
  for (const auto& [tid, times] : all) {
    EXPECT_TRUE(std::adjacent_find(times.begin(), times.end(), std::greater_equal<uint64_t>()) ==
                times.end())
        << "thread " << tid;
  }
  // Each window symbolicates alone: the summary of a window that holds samples of the workload
  // names its thread, and the window with the most names its function too. (How many samples
  // each window gets depends on the machine's load: a window may hold none.)
  size_t busiest = 0, spinner_samples = 0;
  for (size_t k = 0; k < windows.size(); ++k) {
    spinner_samples += windows[k].times[spinner].size();
    if (windows[k].times[spinner].size() > windows[busiest].times[spinner].size()) busiest = k;
  }
  EXPECT_GT(spinner_samples, 0u);
  size_t k = 0;
  for (const auto& [number, path] : files) {
    std::string err;
    const std::string out = dir.path("s-" + std::to_string(number) + ".txt");
    ASSERT_EQ(symtest::run_symbolicate_binary({path, "--summary", "-o", out}, &err), 0) << err;
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    if (!windows[k].times[spinner].empty()) {
      EXPECT_NE(text.str().find("Thread \"rotation-spinner\""), std::string::npos) << text.str();
    }
    if (k == busiest) {
      EXPECT_NE(text.str().find("rotation_spinner()"), std::string::npos) << text.str();
    }
    ++k;
  }
}

TEST(RotationTest, KeepFilesLeavesTheNewest) {
  symtest::TempDir dir;
  uint64_t spinner = 0;
  ASSERT_NO_FATAL_FAILURE(
      run_session(dir.path("."), std::chrono::milliseconds(150), 2, 5, &spinner));
  const std::map<uint64_t, std::string> files = window_files(dir.path("."));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_GE(files.begin()->first, 4u);
  EXPECT_EQ(files.rbegin()->first, files.begin()->first + 1);
}

TEST(RotationTest, SettingsOutOfRangeAreRefused) {
  inprof::Options o;
  o.rotate_interval = std::chrono::milliseconds(10);
  inprof::Status s = inprof::Profiler::start(o);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("rotate_interval"), std::string::npos) << s.message();
  o.rotate_interval = {};
  o.keep_files = 3;
  s = inprof::Profiler::start(o);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("keep_files needs rotate_interval"), std::string::npos) << s.message();
  o.keep_files = 0;
  o.mode = inprof::Mode::kRing;
  o.rotate_interval = std::chrono::seconds(1);
  s = inprof::Profiler::start(o);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("rotate_interval needs mode = Mode::kStream"), std::string::npos)
      << s.message();
}

}  // namespace
