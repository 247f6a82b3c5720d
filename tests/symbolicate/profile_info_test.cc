// What the viewer's "Profile Info" shows (issue 22, item 8): the machine's facts from the process
// record, and nothing made up when a dump from an older library has none.
#include <gtest/gtest.h>

#include <string>

#include "dump/byte_io.h"
#include "session/output_file.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

class ProfileInfoTest : public ::testing::Test {
 protected:
  void convert() {
    std::string out = dir_.path("p.json");
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dir_.path("p.inprof"), out, &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }
  std::string extra(const std::string& label) {
    for (const auto& e : doc_["meta"]["extra"][0]["entries"].GetArray()) {
      if (label == e["label"].GetString()) return e["value"].GetString();
    }
    return "(none)";
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(ProfileInfoTest, MachineFactsAndCommandLine) {
  ProcessRecord p = symtest::test_process();
  p.executable = "/opt/app/bin/server";
  p.command_line = {"/opt/app/bin/server", "--name", "two words", "it's"};
  p.os_name = "Debian GNU/Linux 12 (bookworm)";
  p.os_release = "6.1.0-27-amd64";
  p.cpu_name = "Test CPU 9000";
  p.physical_cpus = 4;
  p.logical_cpus = 8;
  p.memory_bytes = 16ull << 30;
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(p);
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    d.end(2'000'000);
    d.close();
  }
  convert();
  const auto& meta = doc_["meta"];
  EXPECT_STREQ(meta["product"].GetString(), "server");
  EXPECT_STREQ(meta["arguments"].GetString(), "/opt/app/bin/server --name 'two words' 'it'\\''s'");
  EXPECT_STREQ(meta["oscpu"].GetString(), "Linux 6.1.0-27-amd64 x86_64");
  EXPECT_STREQ(meta["platform"].GetString(), "Linux");
  EXPECT_STREQ(meta["CPUName"].GetString(), "Test CPU 9000");
  EXPECT_EQ(meta["physicalCPUs"].GetUint(), 4u);
  EXPECT_EQ(meta["logicalCPUs"].GetUint(), 8u);
  EXPECT_EQ(meta["mainMemory"].GetUint64(), 16ull << 30);
  EXPECT_EQ(extra("Operating system"), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(extra("Executable"), "/opt/app/bin/server");
}

// A process record as libraries wrote it before the machine's facts: it ends after the library
// version. It still reads, and the facts are simply absent.
TEST_F(ProfileInfoTest, AnOlderProcessRecordStillReads) {
  const ProcessRecord p = symtest::test_process();
  {
    inprof::Status status;
    auto writer = DumpWriter::create(OutputFile::create(dir_.path("p.inprof"), &status), &status);
    ASSERT_TRUE(writer) << status.message();
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      w.varint(p.pid);
      w.varint(p.start_unix_ns);
      w.varint(p.interval_ns);
      w.string(p.arch);
      w.string(p.os);
      w.string(p.executable);
      w.varint(p.command_line.size());
      for (const auto& arg : p.command_line) w.string(arg);
      w.string(p.library_version);
    }
    writer->add_payload(RecordType::kProcess, payload);
    writer->add(RecordType::kThreadStart, ThreadRecord{1, 0, kThreadMain, "main"});
    writer->add(RecordType::kEnd, EndRecord{1'000'000});
    ASSERT_TRUE(writer->close().ok());
  }
  convert();
  const auto& meta = doc_["meta"];
  EXPECT_DOUBLE_EQ(meta["interval"].GetDouble(), 1.0);
  EXPECT_STREQ(meta["oscpu"].GetString(), "Linux x86_64");
  EXPECT_FALSE(meta.HasMember("CPUName"));
  EXPECT_FALSE(meta.HasMember("physicalCPUs"));
  EXPECT_FALSE(meta.HasMember("logicalCPUs"));
  EXPECT_FALSE(meta.HasMember("mainMemory"));
  EXPECT_EQ(extra("Operating system"), "(none)");
}

StatsRecord overhead_stats(uint64_t time_ns, uint64_t ticks, uint64_t sampler_cpu_ns,
                           uint64_t profiler_cpu_ns) {
  StatsRecord s{};
  s.profiler_cpu_ns = profiler_cpu_ns;
  s.time_ns = time_ns;
  s.sampler_ticks = ticks;
  s.sampler_cpu_ns = sampler_cpu_ns;
  s.tick_cpu_min_ns = 10'000;
  s.tick_cpu_max_ns = 90'000;
  s.tick_interval_min_ns = 900'000;
  s.tick_interval_max_ns = 1'500'000;
  return s;
}

// What the profiler cost (issue 40): Profile Info's "Profiler overhead" from the dump's
// statistics, one row per period between two of them.
TEST_F(ProfileInfoTest, ProfilerOverheadFromTheStatistics) {
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    d.stats(overhead_stats(500'000'000, 500, 10'000'000, 12'000'000));     // 20 us a tick
    d.stats(overhead_stats(1'000'000'000, 1000, 40'000'000, 45'000'000));  // then 60 us
    d.end(1'000'000'000);
    d.close();
  }
  convert();
  const auto& list = doc_["profilerOverhead"];
  ASSERT_EQ(list.Size(), 1u);
  const auto& o = list[0];
  EXPECT_STREQ(o["pid"].GetString(), "4242");
  EXPECT_EQ(o["mainThreadIndex"].GetUint(), 0u);
  const auto& samples = o["samples"];
  ASSERT_EQ(samples["length"].GetUint(), 2u);
  EXPECT_DOUBLE_EQ(samples["time"][1].GetDouble(), 1000.0);
  EXPECT_DOUBLE_EQ(samples["threads"][0].GetDouble(), 20.0);
  EXPECT_DOUBLE_EQ(samples["threads"][1].GetDouble(), 60.0);
  const auto& s = o["statistics"];
  EXPECT_EQ(s["samplingCount"].GetUint(), 1000u);
  EXPECT_DOUBLE_EQ(s["profiledDuration"].GetDouble(), 1'000'000.0);  // microseconds
  EXPECT_DOUBLE_EQ(s["overheadDurations"].GetDouble(), 45'000.0);    // sampler and writer
  EXPECT_DOUBLE_EQ(s["overheadPercentage"].GetDouble(), 0.045);
  EXPECT_DOUBLE_EQ(s["meanOverhead"].GetDouble(), 40.0);  // the sampler's, per tick
  EXPECT_DOUBLE_EQ(s["maxOverhead"].GetDouble(), 90.0);
  EXPECT_DOUBLE_EQ(s["meanInterval"].GetDouble(), 1000.0);
  EXPECT_DOUBLE_EQ(s["minInterval"].GetDouble(), 900.0);
  EXPECT_DOUBLE_EQ(s["meanLockings"].GetDouble(), 0.0);
}

// Where the kernel refused its sampling rings (another perf user held the user's allowance), the
// profile says so and why (issue 40): a costlier fallback is not left unexplained.
TEST_F(ProfileInfoTest, SaysWhyTheKernelGaveNoRings) {
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    StatsRecord s = overhead_stats(500'000'000, 500, 10'000'000, 12'000'000);
    s.rings_refused_allowance = 3;
    s.activity_followed = 2;
    d.stats(s);
    d.end(1'000'000'000);
    d.close();
  }
  convert();
  const std::string why = extra("Sampling without kernel rings");
  EXPECT_NE(why.find("Kernel sampling rings refused 3 times: 3 over the user's perf allowance "
                     "(kernel.perf_event_mlock_kb"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("idle threads' activity was asked of their clocks"), std::string::npos) << why;
  EXPECT_EQ(why.find("not permitted"), std::string::npos) << why;
}

// None refused: nothing said.
TEST_F(ProfileInfoTest, SaysNothingOfKernelRingsWhenNoneWasRefused) {
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    StatsRecord s = overhead_stats(500'000'000, 500, 10'000'000, 12'000'000);
    s.activity_followed = 1;
    d.stats(s);
    d.end(1'000'000'000);
    d.close();
  }
  convert();
  EXPECT_EQ(extra("Sampling without kernel rings"), "(none)");
}

// A dump from before these figures has none: an empty list, not zeros.
TEST_F(ProfileInfoTest, NoProfilerOverheadFromAnOlderDump) {
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    d.stats(StatsRecord{100, 7, 3, 1});
    d.end(2'000'000);
    d.close();
  }
  convert();
  EXPECT_EQ(doc_["profilerOverhead"].Size(), 0u);
}

}  // namespace
