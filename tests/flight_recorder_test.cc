// Ring mode (the flight recorder): captures while sampling goes on, the capture's time window,
// options that need ring mode, bounded metadata and memory over a long run.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dump/dump_reader.h"
#include "inprof/markers.h"
#include "inprof/profiler.h"
#include "session/metadata_queue.h"
#include "test_util.h"

namespace inprof {
namespace {

volatile unsigned long g_sink;

void spin_a_little() {
  for (unsigned long i = 0; i < 100000; ++i) g_sink = g_sink + i;
}

// VmRSS of this process, in bytes.
size_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

struct CaptureContents : internal::DumpVisitor {
  bool has_process = false;
  size_t modules = 0, samples = 0, repeats = 0, markers = 0, threads = 0;
  std::vector<uint64_t> sample_times, marker_seqs;
  std::optional<internal::CaptureRecord> capture;
  std::optional<internal::StatsRecord> stats;
  bool ended = false;
  void on_stats(const internal::StatsRecord& r) override { stats = r; }
  void on_process(const internal::ProcessRecord&) override { has_process = true; }
  void on_module_load(const internal::ModuleRecord&) override { ++modules; }
  void on_thread_start(const internal::ThreadRecord&) override { ++threads; }
  void on_sample(const internal::SampleRecord& r) override {
    ++samples;
    sample_times.push_back(r.time_ns);
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& r) override {
    ++repeats;
    sample_times.push_back(r.time_ns);
  }
  void on_marker(const internal::MarkerRecord& r) override {
    ++markers;
    if (!r.values.empty()) marker_seqs.push_back(static_cast<uint64_t>(r.values[0].integer));
  }
  void on_capture(const internal::CaptureRecord& r) override { capture = r; }
  void on_end(const internal::EndRecord&) override { ended = true; }
};

struct SeqMarker {
  static constexpr std::string_view kName = "Seq";
  static constexpr MarkerField kFields[] = {{"seq", "Seq", Format::kInteger}};
};

class FlightRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("inprof-flight-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (Profiler::is_running()) (void)Profiler::stop();
    std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  Options ring_options() const {
    Options o;
    o.mode = Mode::kRing;
    o.output_path = path("final.inprof");
    o.buffer_size = 256u << 10;
    return o;
  }
  static CaptureContents read(const std::string& file) {
    CaptureContents c;
    internal::DumpReadResult r = internal::read_dump_file(file, c);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    EXPECT_TRUE(r.complete);
    return c;
  }
  std::filesystem::path dir_;
};

TEST_F(FlightRecorderTest, CapturesWhileSamplingGoesOn) {
  ASSERT_TRUE(Profiler::start(ring_options()));
  // Nothing is written while the session runs: the output exists, empty, until stop().
  EXPECT_EQ(std::filesystem::file_size(path("final.inprof")), 0u);
  std::atomic<bool> done{false};
  std::thread busy([&] {
    while (!done) spin_a_little();
  });
  int64_t seq = 0;
  for (int i = 0; i < 200; ++i) marker<SeqMarker>("Seq", kCategoryUser, ++seq);
  testing::wait_for_cpu(busy.native_handle(), std::chrono::milliseconds(100));
  ASSERT_TRUE(Profiler::capture(path("one.inprof")));
  for (int i = 0; i < 200; ++i) marker<SeqMarker>("Seq", kCategoryUser, ++seq);
  testing::wait_for_cpu(busy.native_handle(), std::chrono::milliseconds(100));
  ASSERT_TRUE(Profiler::capture(path("two.inprof")));
  done = true;
  busy.join();
  ASSERT_TRUE(Profiler::stop());

  const CaptureContents one = read(path("one.inprof"));
  const CaptureContents two = read(path("two.inprof"));
  const CaptureContents final = read(path("final.inprof"));
  for (const CaptureContents* c : {&one, &two, &final}) {
    EXPECT_TRUE(c->has_process);
    EXPECT_GT(c->modules, 0u);
    EXPECT_GT(c->samples, 0u);
    ASSERT_TRUE(c->capture.has_value());
    EXPECT_LE(c->capture->start_ns, c->capture->end_ns);
    for (uint64_t t : c->sample_times) EXPECT_GE(t, c->capture->start_ns);
  }
  EXPECT_EQ(one.capture->reason, internal::CaptureReason::kRequest);
  EXPECT_EQ(final.capture->reason, internal::CaptureReason::kStop);
  EXPECT_LT(one.capture->end_ns, two.capture->end_ns);
  // The second capture saw the markers recorded after the first (the ring is big enough to hold
  // all 400), in order.
  ASSERT_EQ(two.marker_seqs.size(), 400u);
  for (size_t i = 0; i < two.marker_seqs.size(); ++i) EXPECT_EQ(two.marker_seqs[i], i + 1);
  EXPECT_EQ(one.marker_seqs.size(), 200u);
}

TEST_F(FlightRecorderTest, OverwritesTheOldestAndStatesTheRange) {
  Options o = ring_options();
  o.buffer_size = 64u << 10;  // the smallest: overwritten many times below
  ASSERT_TRUE(Profiler::start(o));
  int64_t seq = 0;
  for (int i = 0; i < 20000; ++i) marker<SeqMarker>("Seq", kCategoryUser, ++seq);
  ASSERT_TRUE(Profiler::capture(path("c.inprof")));
  ASSERT_TRUE(Profiler::stop());
  const CaptureContents c = read(path("c.inprof"));
  ASSERT_FALSE(c.marker_seqs.empty());
  EXPECT_LT(c.marker_seqs.size(), 20000u);
  // The newest markers, in order, ending with the last one; contiguous but for the markers the
  // capture says were dropped (a marker is dropped, not written over a record whose writer has
  // not finished it: the sampler's, preempted mid-write, which a slow machine or qemu shows).
  EXPECT_EQ(c.marker_seqs.back(), 20000u);
  uint64_t missing = 0;
  for (size_t i = 1; i < c.marker_seqs.size(); ++i) {
    ASSERT_GT(c.marker_seqs[i], c.marker_seqs[i - 1]);
    missing += c.marker_seqs[i] - c.marker_seqs[i - 1] - 1;
  }
  ASSERT_TRUE(c.stats.has_value());
  EXPECT_LE(missing, c.stats->markers_dropped);
  ASSERT_TRUE(c.capture.has_value());
  EXPECT_GT(c.capture->records_overwritten, 0u);
  EXPECT_GT(c.capture->start_ns, 0u);
}

TEST_F(FlightRecorderTest, RingSecondsCutsOlderRecords) {
  Options o = ring_options();
  o.buffer_size = 4u << 20;
  o.ring_seconds = std::chrono::seconds(1);
  ASSERT_TRUE(Profiler::start(o));
  marker<SeqMarker>("Seq", kCategoryUser, 1);
  // Wait (a sleep is the point here: the window is wall-clock time) until the first marker is
  // more than a second old, then record another.
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  marker<SeqMarker>("Seq", kCategoryUser, 2);
  ASSERT_TRUE(Profiler::capture(path("c.inprof")));
  ASSERT_TRUE(Profiler::stop());
  const CaptureContents c = read(path("c.inprof"));
  ASSERT_EQ(c.marker_seqs, std::vector<uint64_t>{2});
  ASSERT_TRUE(c.capture.has_value());
  EXPECT_EQ(c.capture->end_ns - c.capture->start_ns, 1000000000u);
}

TEST_F(FlightRecorderTest, CaptureSignalWritesNumberedCaptures) {
  // A signal no other test of this process handles (the unwinder tests keep one on SIGUSR2).
  const int signal = SIGRTMIN + 7;
  Options o = ring_options();
  o.capture_signal = signal;
  const Status started = Profiler::start(o);
  ASSERT_TRUE(started) << started.message();
  marker<SeqMarker>("Seq", kCategoryUser, 1);
  ASSERT_EQ(kill(getpid(), signal), 0);
  const std::string first = path("final-capture-1.inprof");
  for (int i = 0; i < 2000 && !std::filesystem::exists(first); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(Profiler::stop());  // waits for a capture under way
  const CaptureContents c = read(first);
  ASSERT_TRUE(c.capture.has_value());
  EXPECT_EQ(c.capture->reason, internal::CaptureReason::kSignal);
  EXPECT_EQ(c.marker_seqs, std::vector<uint64_t>{1});
  // The signal is the program's again.
  struct sigaction now = {};
  sigaction(signal, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST_F(FlightRecorderTest, CrashFileIsRemovedWhenNothingCrashed) {
  struct sigaction before = {};
  sigaction(SIGSEGV, nullptr, &before);  // a sanitizer may have its own handler there
  Options o = ring_options();
  o.crash_capture = true;
  ASSERT_TRUE(Profiler::start(o));
  struct sigaction during = {};
  sigaction(SIGSEGV, nullptr, &during);
  EXPECT_TRUE(during.sa_flags & SA_SIGINFO);
  EXPECT_NE(reinterpret_cast<void*>(during.sa_sigaction),
            reinterpret_cast<void*>(before.sa_sigaction));
  EXPECT_TRUE(std::filesystem::exists(path("final-crash.inprof")));
  ASSERT_TRUE(Profiler::stop());
  EXPECT_FALSE(std::filesystem::exists(path("final-crash.inprof")));
  struct sigaction now = {};
  sigaction(SIGSEGV, nullptr, &now);
  EXPECT_EQ(reinterpret_cast<void*>(now.sa_sigaction),
            reinterpret_cast<void*>(before.sa_sigaction));
}

TEST_F(FlightRecorderTest, RingOnlyOptionsAreRefusedWhenStreaming) {
  Options o;
  o.output_path = path("s.inprof");
  o.capture_signal = SIGUSR2;
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  o.capture_signal = 0;
  o.crash_capture = true;
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  o.crash_capture = false;
  o.ring_seconds = std::chrono::seconds(5);
  EXPECT_EQ(Profiler::start(o).code(), Status::Code::kInvalidOption);
  o.ring_seconds = std::chrono::seconds(0);
  ASSERT_TRUE(Profiler::start(o));
  const Status s = Profiler::capture(path("c.inprof"));
  EXPECT_EQ(s.code(), Status::Code::kInvalidOption);
  EXPECT_NE(s.message().find("ring"), std::string::npos);
  ASSERT_TRUE(Profiler::stop());
  EXPECT_EQ(Profiler::capture(path("c.inprof")).code(), Status::Code::kNotRunning);
}

TEST_F(FlightRecorderTest, CaptureToAnUnwritablePathFailsAndSamplingGoesOn) {
  ASSERT_TRUE(Profiler::start(ring_options()));
  const Status s = Profiler::capture(path("no/such/dir/c.inprof"));
  EXPECT_EQ(s.code(), Status::Code::kOutputError);
  EXPECT_TRUE(Profiler::is_running());
  ASSERT_TRUE(Profiler::capture(path("c.inprof")));
  ASSERT_TRUE(Profiler::stop());
}

// Thread churn and a marker storm over a small ring: the metadata kept for captures stays
// bounded (old ended threads are pruned) and so does the process's memory.
TEST_F(FlightRecorderTest, MemoryStaysFlatOverALongRun) {
#if defined(__SANITIZE_ADDRESS__) || defined(INPROF_ASAN) || defined(__SANITIZE_THREAD__) || \
    defined(INPROF_TSAN)
  GTEST_SKIP()
      << "a sanitizer's allocator keeps freed memory (quarantine, shadow): RSS says nothing";
#endif
  if (testing::emulator()) {
    // The resident memory measured would be the emulator's: qemu-user 7.2 keeps about 250 KiB of
    // its own heap per guest thread that ever ran (540 MB over this test's 2,000 threads).
    GTEST_SKIP() << "under qemu-user the process's RSS grows with every thread created";
  }
  Options o = ring_options();
  o.buffer_size = 1u << 20;
  ASSERT_TRUE(Profiler::start(o));
  auto churn = [](int batches) {
    for (int i = 0; i < batches; ++i) {
      std::vector<std::thread> batch;
      for (int j = 0; j < 8; ++j) {
        batch.emplace_back([] {
          for (int k = 0; k < 1000; ++k) marker<SeqMarker>("Seq", kCategoryUser, k);
          std::this_thread::sleep_for(std::chrono::milliseconds(6));  // seen by the sampler
        });
      }
      for (auto& t : batch) t.join();
    }
  };
  churn(40);  // warm-up: the ring fills, allocator pools settle
  const size_t before = resident_bytes();
  churn(250);  // 2,000 threads: enough to prune the kept metadata several times
  const size_t after = resident_bytes();
  ASSERT_TRUE(Profiler::capture(path("c.inprof")));
  ASSERT_TRUE(Profiler::stop());
  EXPECT_LT(after, before + (4u << 20))
      << "resident memory grew from " << before << " to " << after;
  const CaptureContents c = read(path("c.inprof"));
  // Each thread has at least a start and an end record, and pruning keeps the records under
  // kPruneAt, so far fewer than the 2,300 threads that ran are described.
  EXPECT_GT(c.threads, 0u);
  EXPECT_LE(c.threads, internal::MetadataQueue::kPruneAt / 2);
}

// 20,000 threads alive at once: nothing to prune, and the kept records are not scanned again at
// every push (each scan went over all of them: the writer's CPU grew with the square of the
// threads, ~1 s for 10,000).
TEST(MetadataQueue, LiveThreadsAreNotScannedAtEveryPush) {
  using internal::MetadataQueue;
  using internal::RecordType;
  MetadataQueue q(MetadataQueue::Mode::kRetain);
  for (uint64_t tid = 1; tid <= 20000; ++tid) {
    q.push(RecordType::kThreadStart, internal::ThreadRecord{tid, tid, 0, "t"});
  }
  EXPECT_EQ(q.retained(), 20000u);
  EXPECT_LE(q.prunes(), 5u);
}

TEST(MetadataQueue, RetainPrunesOldEndedThreadsAndKeepsDeclarations) {
  using internal::MetadataQueue;
  using internal::RecordType;
  MetadataQueue q(MetadataQueue::Mode::kRetainWithCrashImage);
  q.push(RecordType::kCategory, internal::CategoryRecord{7, 3, "Mine"});
  for (uint64_t tid = 1; tid <= 5000; ++tid) {
    q.push(RecordType::kThreadStart, internal::ThreadRecord{tid, tid, 0, "t"});
    q.push(RecordType::kThreadEnd, internal::ThreadEndRecord{tid, tid + 1});
  }
  EXPECT_LT(q.retained(), MetadataQueue::kPruneAt);
  uint64_t next = 0;
  auto kept = q.snapshot(0, &next);
  EXPECT_EQ(kept.front().first, RecordType::kCategory);
  // The newest threads are the ones kept.
  EXPECT_EQ(kept.back().first, RecordType::kThreadEnd);
  // The crash image holds the same records, framed.
  const auto image = q.crash_image();
  struct Count : internal::DumpVisitor {
    size_t categories = 0, starts = 0;
    void on_category(const internal::CategoryRecord&) override { ++categories; }
    void on_thread_start(const internal::ThreadRecord&) override { ++starts; }
  } count;
  std::vector<uint8_t> file(internal::kDumpHeaderSize, 0);
  std::memcpy(file.data(), internal::kDumpMagic, 8);
  file[8] = 1;
  file[12] = internal::kDumpFlagRaw;
  file.insert(file.end(), image.begin(), image.end());
  internal::DumpReadResult r = internal::read_dump(file, count);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(count.categories, 1u);
  EXPECT_EQ(count.starts * 2 + 1, kept.size());
  // Snapshots from a sequence number give only what came after.
  q.push(RecordType::kThreadStart, internal::ThreadRecord{9999, 1, 0, "late"});
  auto late = q.snapshot(next, &next);
  ASSERT_EQ(late.size(), 1u);
}

}  // namespace
}  // namespace inprof
