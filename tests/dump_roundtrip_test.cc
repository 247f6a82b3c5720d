#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "dump/byte_io.h"
#include "dump/dump_reader.h"
#include "dump/dump_records.h"
#include "dump/dump_writer.h"

namespace inprof::internal {
namespace {

void add_sample(DumpWriter& writer, uint64_t tid, uint64_t time_ns,
                std::optional<uint64_t> cpu_delta_ns, const std::vector<uint64_t>& frames) {
  std::vector<uint8_t> payload;
  {
    ByteWriter w(&payload);
    encode_sample(w, tid, time_ns, cpu_delta_ns, 0, frames, {});
  }
  writer.add_payload(RecordType::kSample, payload);
}

// The starts of the zstd frames (chunks) in a dump file.
std::vector<size_t> chunk_offsets(const std::vector<uint8_t>& bytes) {
  std::vector<size_t> out;
  for (size_t i = kDumpHeaderSize; i + 4 <= bytes.size(); ++i) {
    if (bytes[i] == 0x28 && bytes[i + 1] == 0xb5 && bytes[i + 2] == 0x2f && bytes[i + 3] == 0xfd) {
      out.push_back(i);
    }
  }
  return out;
}

struct Collected : DumpVisitor {
  std::vector<ProcessRecord> processes;
  std::vector<ModuleRecord> modules;
  std::vector<ModuleUnloadRecord> unloads;
  std::vector<ThreadRecord> threads, names;
  std::vector<ThreadEndRecord> ends;
  std::vector<SampleRecord> samples;
  std::vector<SampleRepeatRecord> repeats;
  std::vector<StatsRecord> stats;
  int end_records = 0;
  void on_process(const ProcessRecord& r) override { processes.push_back(r); }
  void on_module_load(const ModuleRecord& r) override { modules.push_back(r); }
  void on_module_unload(const ModuleUnloadRecord& r) override { unloads.push_back(r); }
  void on_thread_start(const ThreadRecord& r) override { threads.push_back(r); }
  void on_thread_name(const ThreadRecord& r) override { names.push_back(r); }
  void on_thread_end(const ThreadEndRecord& r) override { ends.push_back(r); }
  void on_sample(const SampleRecord& r) override { samples.push_back(r); }
  void on_sample_repeat(const SampleRepeatRecord& r) override { repeats.push_back(r); }
  void on_stats(const StatsRecord& r) override { stats.push_back(r); }
  void on_end(const EndRecord&) override { ++end_records; }
};

class DumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("inprof-dump-test-" + std::to_string(getpid()) + ".inprof"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Writes a dump with `chunks` chunks of `samples_per_chunk` samples, and optionally an end.
  void write_dump(int chunks, int samples_per_chunk, bool end,
                  uint32_t version = kDumpFormatVersion) {
    Status status;
    auto file = OutputFile::create(path_, &status);
    ASSERT_TRUE(file) << status.message();
    auto writer =
        DumpWriter::create(std::move(file), &status, DumpWriter::kDefaultCompressionLevel, version);
    ASSERT_TRUE(writer) << status.message();
    ProcessRecord p;
    p.pid = 42;
    p.start_unix_ns = 1700000000000000000ull;
    p.interval_ns = 1000000;
    p.arch = "x86_64";
    p.os = "linux";
    p.executable = "/usr/bin/app";
    p.command_line = {"/usr/bin/app", "--flag", ""};
    p.library_version = "0.1.0";
    writer->add(RecordType::kProcess, p);
    ModuleRecord m;
    m.id = 1;
    m.start = 0x555500000000;
    m.end = 0x555500100000;
    m.load_bias = 0x555500000000;
    m.file_offset = 0;
    m.flags = kModuleMainExecutable;
    m.path = "/usr/bin/app";
    m.build_id = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    writer->add(RecordType::kModuleLoad, m);
    writer->add(RecordType::kThreadStart, ThreadRecord{7, 0, kThreadMain, "main"});
    writer->add(RecordType::kThreadName, ThreadRecord{7, 5, 0, "renamed"});
    std::vector<uint8_t> buf(4096);
    for (int c = 0; c < chunks; ++c) {
      for (int i = 0; i < samples_per_chunk; ++i) {
        uint64_t n = uint64_t(c) * samples_per_chunk + i;
        std::vector<uint64_t> frames = {0x555500001234 + n, 0x555500002000, 0x7f0000001000, 1};
        LeafCandidate cand[] = {{0, 0x555500003000}, {2, 0x555500004000}};
        ByteWriter w(std::span<uint8_t>(buf.data(), buf.size()));
        encode_sample(w, 7, n * 1000000, n % 3 ? std::optional<uint64_t>(n * 1000) : std::nullopt,
                      kSampleFramePointerWalk, frames, cand);
        writer->add_payload(RecordType::kSample, w.view());
        writer->add(RecordType::kSampleRepeat, SampleRepeatRecord{7, n * 1000000 + 500, 0});
      }
      writer->add(RecordType::kStats, StatsRecord{uint64_t(c + 1) * samples_per_chunk, 3, 2, 1});
      if (c == chunks - 1) {
        writer->add(RecordType::kModuleUnload, ModuleUnloadRecord{1, 99});
        writer->add(RecordType::kThreadEnd, ThreadEndRecord{7, 100});
        if (end) writer->add(RecordType::kEnd, EndRecord{101});
      }
      ASSERT_TRUE(writer->flush().ok());
    }
    ASSERT_TRUE(writer->close().ok());
  }

  // A dump of `version` whose records `fill` adds; closed when it returns.
  template <typename Fill>
  void write_with(uint32_t version, Fill&& fill) {
    Status status;
    auto writer = DumpWriter::create(OutputFile::create(path_, &status), &status,
                                     DumpWriter::kDefaultCompressionLevel, version);
    ASSERT_TRUE(writer) << status.message();
    fill(*writer);
    ASSERT_TRUE(writer->close().ok());
  }

  std::vector<uint8_t> file_bytes() {
    std::ifstream in(path_, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
  }

  std::string path_;
};

TEST_F(DumpTest, EveryRecordSurvivesTheRoundTrip) {
  write_dump(3, 50, true);
  Collected c;
  DumpReadResult r = read_dump_file(path_, c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.chunks, 3u);
  ASSERT_EQ(c.processes.size(), 1u);
  EXPECT_EQ(c.processes[0].pid, 42u);
  EXPECT_EQ(c.processes[0].command_line, (std::vector<std::string>{"/usr/bin/app", "--flag", ""}));
  ASSERT_EQ(c.modules.size(), 1u);
  EXPECT_EQ(c.modules[0].end, 0x555500100000u);
  EXPECT_EQ(c.modules[0].build_id, (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}));
  EXPECT_EQ(c.modules[0].flags, uint32_t(kModuleMainExecutable));
  ASSERT_EQ(c.threads.size(), 1u);
  EXPECT_EQ(c.threads[0].name, "main");
  EXPECT_EQ(c.threads[0].flags, uint32_t(kThreadMain));
  ASSERT_EQ(c.names.size(), 1u);
  EXPECT_EQ(c.names[0].name, "renamed");
  ASSERT_EQ(c.samples.size(), 150u);
  const SampleRecord& s = c.samples[149];
  EXPECT_EQ(s.frames,
            (std::vector<uint64_t>{0x555500001234 + 149, 0x555500002000, 0x7f0000001000, 1}));
  EXPECT_EQ(s.time_ns, 149000000u);
  EXPECT_EQ(s.cpu_delta_ns, std::optional<uint64_t>(149000));
  EXPECT_EQ(c.samples[3].cpu_delta_ns, std::nullopt);
  EXPECT_EQ(s.flags, uint32_t(kSampleFramePointerWalk));
  ASSERT_EQ(s.leaf_candidates.size(), 2u);
  EXPECT_EQ(s.leaf_candidates[1].slot, 2);
  EXPECT_EQ(s.leaf_candidates[1].value, 0x555500004000u);
  EXPECT_EQ(c.repeats.size(), 150u);
  EXPECT_EQ(c.repeats[0].cpu_delta_ns, std::optional<uint64_t>(0));
  EXPECT_EQ(c.repeats[0].tid, 7u);
  EXPECT_EQ(c.repeats[2].time_ns, 2001000u);  // 2,000,500 ns, rounded up to the µs
  ASSERT_EQ(c.stats.size(), 3u);
  EXPECT_EQ(c.stats.back().samples_recorded, 150u);
  EXPECT_EQ(c.unloads.size(), 1u);
  EXPECT_EQ(c.ends.size(), 1u);
  EXPECT_EQ(c.end_records, 1);
}

TEST_F(DumpTest, FileIsPrivate) {
#if defined(_WIN32)
  GTEST_SKIP() << "Windows: the dump gets its directory's inherited ACL; an owner-only ACL is "
                  "not written yet (platform/windows/output_file_windows.cc)";
#endif
  write_dump(1, 1, true);
  auto perms = std::filesystem::status(path_).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST_F(DumpTest, RefusesASymlinkAtTheOutputPath) {
  std::string target = path_ + ".target";
  std::error_code ec;
  std::filesystem::create_symlink(target, path_, ec);
  if (ec) GTEST_SKIP() << "this system cannot create a symbolic link (Wine): " << ec.message();
  Status status;
  auto file = OutputFile::create(path_, &status);
  EXPECT_FALSE(file);
  EXPECT_NE(status.message().find("symbolic link"), std::string::npos) << status.message();
  EXPECT_FALSE(std::filesystem::exists(target));
}

// A process killed mid-run leaves a partial last chunk: every complete chunk is still read.
TEST_F(DumpTest, TruncatedDumpYieldsEveryCompleteChunk) {
  write_dump(3, 50, false);
  auto bytes = file_bytes();
  Collected whole;
  ASSERT_TRUE(read_dump(bytes, whole).ok);
  ASSERT_EQ(whole.samples.size(), 150u);
  // Cut into the last chunk: the two complete chunks before it are read in full.
  for (size_t cut = 1; cut < 20; ++cut) {
    Collected c;
    DumpReadResult r = read_dump(std::span<const uint8_t>(bytes.data(), bytes.size() - cut), c);
    ASSERT_TRUE(r.ok);
    EXPECT_FALSE(r.complete);
    EXPECT_EQ(c.samples.size(), 100u) << "cut " << cut;
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("cut short"), std::string::npos) << r.warnings[0];
  }
  // Cut anywhere: never a crash, never more than was written, and whole chunks only.
  for (size_t keep = 0; keep < bytes.size(); keep += 7) {
    Collected c;
    read_dump(std::span<const uint8_t>(bytes.data(), keep), c);
    EXPECT_EQ(c.samples.size() % 50, 0u);
  }
}

TEST_F(DumpTest, DamagedChunkIsSkippedAndTheRestRead) {
  write_dump(3, 50, true);
  auto bytes = file_bytes();
  // Flip bytes in the middle of the file (inside the second chunk or so).
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; ++i) bytes[i] ^= 0x5a;
  Collected c;
  DumpReadResult r = read_dump(bytes, c);
  ASSERT_TRUE(r.ok);
  EXPECT_FALSE(r.warnings.empty());
  EXPECT_GE(c.samples.size(), 50u);  // the first chunk at least
  EXPECT_LT(c.samples.size(), 150u);
}

TEST_F(DumpTest, RandomGarbageNeverCrashes) {
  write_dump(2, 20, true);
  auto original = file_bytes();
  std::mt19937 rng(1234);
  for (int round = 0; round < 300; ++round) {
    auto bytes = original;
    for (int k = 0; k < 5; ++k)
      bytes[kDumpHeaderSize + rng() % (bytes.size() - kDumpHeaderSize)] = rng();
    Collected c;
    DumpReadResult r = read_dump(bytes, c);
    EXPECT_TRUE(r.ok);
    EXPECT_LE(c.samples.size(), 40u);
  }
}

// Version 2: a chunk holds each distinct stack once; its samples refer to it. The reader gives
// every sample back whole, with the same stack key for the samples of one stack record.
TEST_F(DumpTest, SamplesOfAChunkShareItsStackRecords) {
  const std::vector<std::vector<uint64_t>> stacks = {
      {0x555500001000, 0x555500002000, 0x7f0000001000},
      {0x555500001010, 0x555500002000, 0x7f0000001000},
      {0x7f0000009000}};
  auto fill = [&](DumpWriter& w) {
    for (int chunk = 0; chunk < 2; ++chunk) {
      for (uint64_t i = 0; i < 300; ++i) {
        const uint64_t n = chunk * 300 + i;
        add_sample(w, 100000 + i % 200, n * 100000, 90000, stacks[n % 3]);
      }
      ASSERT_TRUE(w.flush().ok());
    }
  };
  write_with(1, fill);
  const size_t version1_size = file_bytes().size();
  write_with(kDumpFormatVersion, fill);
  auto bytes = file_bytes();
  EXPECT_EQ(bytes[8], kDumpFormatVersion);
  EXPECT_LT(bytes.size(), version1_size);

  Collected c;
  DumpReadResult r = read_dump(bytes, c);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.version, kDumpFormatVersion);
  ASSERT_EQ(c.samples.size(), 600u);
  std::set<uint64_t> keys;
  for (uint64_t n = 0; n < 600; ++n) {
    const SampleRecord& s = c.samples[n];
    EXPECT_EQ(s.tid, 100000 + n % 300 % 200);
    EXPECT_EQ(s.time_ns, n * 100000);
    EXPECT_EQ(s.cpu_delta_ns, std::optional<uint64_t>(90000));
    EXPECT_EQ(s.frames, stacks[n % 3]);
    EXPECT_NE(s.stack_key, 0u);
    EXPECT_EQ(s.stack_key, c.samples[n % 300 % 3 + (n / 300) * 300].stack_key);
    keys.insert(s.stack_key);
  }
  EXPECT_EQ(keys.size(), 6u);  // each chunk defines its three stacks again
}

// A sleeping thread's wait (the system call and what it waits on) goes with its stack, with or
// without labels, whole or through the chunk's stack records; two waits on different objects
// are two stacks.
TEST_F(DumpTest, WaitsTravelWithTheirStacks) {
  const std::vector<uint64_t> frames = {0x7f0000001000, 0x555500002000};
  const SampleLabel label{1, 3, 2};
  struct Case {
    std::optional<SampleWait> wait;
    std::vector<SampleLabel> labels;
  };
  const Case cases[] = {{SampleWait{202, 0x5555deadbee0}, {}},
                        {SampleWait{202, 0x5555deadbef0}, {label}},
                        {SampleWait{0, 5, 3}, {}},
                        {std::nullopt, {label}},
                        {std::nullopt, {}}};
  write_with(kDumpFormatVersion, [&](DumpWriter& w) {
    for (uint64_t n = 0; n < 10; ++n) {
      const Case& c = cases[n % 5];
      std::vector<uint8_t> payload;
      ByteWriter bw(&payload);
      // A stale wait flag without a wait is cleared, not written without its fields.
      encode_sample(bw, 7, (n + 1) * 1000000, 0, c.wait ? 0u : uint32_t{kSampleWait}, frames, {},
                    c.labels, c.wait);
      w.add_payload(RecordType::kSample, payload);
      if (n == 4) {
        ASSERT_TRUE(w.flush().ok());
      }
    }
  });
  Collected c;
  ASSERT_TRUE(read_dump(file_bytes(), c).ok);
  ASSERT_EQ(c.samples.size(), 10u);
  std::set<uint64_t> keys;
  for (size_t n = 0; n < 10; ++n) {
    const SampleRecord& s = c.samples[n];
    EXPECT_EQ(s.wait, cases[n % 5].wait) << n;
    EXPECT_EQ(s.labels.size(), cases[n % 5].labels.size()) << n;
    EXPECT_EQ((s.flags & kSampleWait) != 0, s.wait.has_value()) << n;
    EXPECT_EQ(s.frames, frames);
    if (n < 5) keys.insert(s.stack_key);
  }
  EXPECT_EQ(keys.size(), 5u);
}

TEST_F(DumpTest, TimesAreKeptToTheMicrosecondAndCpuDeltasAddUp) {
  write_with(kDumpFormatVersion, [](DumpWriter& w) {
    add_sample(w, 5, 1500, 400, {0x1000});
    add_sample(w, 5, 2000, 400, {0x1000});
    add_sample(w, 5, 2001, std::nullopt, {0x1000});
    add_sample(w, 5, 3999, 400, {0x1000});
    w.add(RecordType::kSampleRepeat, SampleRepeatRecord{5, 4200, 400});
  });
  Collected c;
  ASSERT_TRUE(read_dump_file(path_, c).ok);
  ASSERT_EQ(c.samples.size(), 4u);
  ASSERT_EQ(c.repeats.size(), 1u);
  // Rounded up: a sample never moves before a record that was written ahead of it.
  EXPECT_EQ(c.samples[0].time_ns, 2000u);
  EXPECT_EQ(c.samples[1].time_ns, 2000u);
  EXPECT_EQ(c.samples[2].time_ns, 3000u);
  EXPECT_EQ(c.samples[3].time_ns, 4000u);
  EXPECT_EQ(c.repeats[0].time_ns, 5000u);
  EXPECT_EQ(c.samples[2].cpu_delta_ns, std::nullopt);
  // 1,600 ns in all: the deltas, in whole µs, add up to the total's whole µs.
  uint64_t total = 0;
  for (const auto* cpu : {&c.samples[0].cpu_delta_ns, &c.samples[1].cpu_delta_ns,
                          &c.samples[3].cpu_delta_ns, &c.repeats[0].cpu_delta_ns}) {
    ASSERT_TRUE(cpu->has_value());
    EXPECT_EQ(**cpu % 1000, 0u);
    total += **cpu;
  }
  EXPECT_EQ(total, 1000u);
}

// Cut at every byte: the samples read are exactly those of the complete chunks, unchanged,
// although every chunk refers to the same stacks (each chunk defines them again).
TEST_F(DumpTest, CutAnywhereGivesTheCompleteChunksSamplesExactly) {
  write_dump(3, 50, false);
  const auto bytes = file_bytes();
  Collected whole;
  ASSERT_TRUE(read_dump(bytes, whole).ok);
  ASSERT_EQ(whole.samples.size(), 150u);
  const auto chunks = chunk_offsets(bytes);
  ASSERT_EQ(chunks.size(), 3u);
  for (size_t keep = 0; keep <= bytes.size(); ++keep) {
    Collected c;
    read_dump(std::span<const uint8_t>(bytes.data(), keep), c);
    const size_t complete = (keep >= chunks[1]) + (keep >= chunks[2]) + (keep == bytes.size());
    ASSERT_EQ(c.samples.size(), complete * 50) << "kept " << keep;
    for (size_t i = 0; i < c.samples.size(); ++i) {
      EXPECT_EQ(c.samples[i].frames, whole.samples[i].frames);
      EXPECT_EQ(c.samples[i].time_ns, whole.samples[i].time_ns);
      EXPECT_EQ(c.samples[i].cpu_delta_ns, whole.samples[i].cpu_delta_ns);
    }
  }
}

// A damaged chunk is skipped whole (its frame's checksum fails); the chunks after it, whose
// samples have the same stacks, are read exactly.
TEST_F(DumpTest, DamagedChunkLeavesTheOtherChunksSamplesExact) {
  write_dump(3, 50, true);
  auto bytes = file_bytes();
  Collected whole;
  ASSERT_TRUE(read_dump(bytes, whole).ok);
  const auto chunks = chunk_offsets(bytes);
  ASSERT_EQ(chunks.size(), 3u);
  for (size_t at = chunks[1] + 4; at < chunks[2]; at += 5) {
    auto damaged = bytes;
    damaged[at] ^= 0x21;
    Collected c;
    DumpReadResult r = read_dump(damaged, c);
    ASSERT_TRUE(r.ok);
    EXPECT_FALSE(r.warnings.empty()) << "damage at " << at;
    ASSERT_EQ(c.samples.size(), 100u) << "damage at " << at;
    for (size_t i = 0; i < 100; ++i) {
      const SampleRecord& original = whole.samples[i < 50 ? i : i + 50];
      EXPECT_EQ(c.samples[i].frames, original.frames);
      EXPECT_EQ(c.samples[i].time_ns, original.time_ns);
    }
  }
}

// Version 1 dumps (every sample written whole) are still read, exactly as written.
TEST_F(DumpTest, Version1DumpIsStillRead) {
  write_dump(3, 50, true, 1);
  const auto bytes = file_bytes();
  EXPECT_EQ(bytes[8], 1);
  Collected c;
  DumpReadResult r = read_dump(bytes, c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.version, 1u);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(c.samples.size(), 150u);
  ASSERT_EQ(c.repeats.size(), 150u);
  EXPECT_EQ(c.samples[149].frames,
            (std::vector<uint64_t>{0x555500001234 + 149, 0x555500002000, 0x7f0000001000, 1}));
  EXPECT_EQ(c.samples[149].stack_key, 0u);    // written whole
  EXPECT_EQ(c.repeats[2].time_ns, 2000500u);  // nanoseconds, as written
}

// The writer's stack table is bounded: past kMaxStacksPerChunk distinct stacks it starts a new
// chunk by itself, and every sample still reads back.
TEST_F(DumpTest, StackTableIsBoundedPerChunk) {
  const uint64_t count = kMaxStacksPerChunk + 10;
  write_with(kDumpFormatVersion, [&](DumpWriter& w) {
    for (uint64_t n = 0; n < count; ++n) add_sample(w, 1, n * 1000, std::nullopt, {0x10000 + n});
  });
  Collected c;
  DumpReadResult r = read_dump_file(path_, c);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(r.chunks, 2u);
  ASSERT_EQ(c.samples.size(), count);
  for (uint64_t n = 0; n < count; n += 997) {
    EXPECT_EQ(c.samples[n].frames, std::vector<uint64_t>{0x10000 + n});
    EXPECT_EQ(c.samples[n].time_ns, n * 1000);
  }
}

TEST_F(DumpTest, RejectsWhatIsNotADump) {
  Collected c;
  std::vector<uint8_t> junk = {'h', 'e', 'l', 'l', 'o'};
  DumpReadResult r = read_dump(junk, c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not an inprof dump"), std::string::npos);

  write_dump(1, 1, true);
  auto bytes = file_bytes();
  bytes[8] = 99;  // a future format version
  r = read_dump(bytes, c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("version 99"), std::string::npos) << r.error;

  r = read_dump_file("/nonexistent/x.inprof", c);
  EXPECT_FALSE(r.ok);
  r = read_dump_file("/tmp", c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace inprof::internal

namespace {

// The machine's facts follow library_version in the process record: they round-trip, a record
// without them (an older library's) still decodes, and the older fields come first unchanged, so
// an older reader, which stops after library_version, reads the new record as before.
TEST(ProcessRecordTest, MachineFactsAreAppendedCompatibly) {
  using namespace inprof::internal;
  ProcessRecord p;
  p.pid = 7;
  p.interval_ns = 1000;
  p.arch = "x86_64";
  p.os = "linux";
  p.executable = "/bin/app";
  p.command_line = {"app", "-v"};
  p.library_version = "0.1.0";
  std::vector<uint8_t> old_payload;
  {
    ByteWriter w(&old_payload);
    encode(w, p);
  }
  p.os_name = "Debian GNU/Linux 12 (bookworm)";
  p.os_release = "6.1.0-27-amd64";
  p.cpu_name = "Test CPU";
  p.physical_cpus = 2;
  p.logical_cpus = 4;
  p.memory_bytes = 1ull << 33;
  std::vector<uint8_t> payload;
  {
    ByteWriter w(&payload);
    encode(w, p);
  }
  ProcessRecord back;
  ByteReader r(payload);
  ASSERT_TRUE(decode(r, back));
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(back.os_name, p.os_name);
  EXPECT_EQ(back.os_release, p.os_release);
  EXPECT_EQ(back.cpu_name, p.cpu_name);
  EXPECT_EQ(back.physical_cpus, 2u);
  EXPECT_EQ(back.logical_cpus, 4u);
  EXPECT_EQ(back.memory_bytes, 1ull << 33);
  EXPECT_EQ(back.library_version, "0.1.0");

  // An older record: everything up to library_version. Empty facts are six zero bytes (three
  // empty strings, three zero counts) at the end.
  const size_t old_size = old_payload.size() - 6;
  ASSERT_TRUE(std::equal(old_payload.begin(), old_payload.begin() + old_size, payload.begin()));
  ProcessRecord old;
  ByteReader old_reader(std::span<const uint8_t>(payload.data(), old_size));
  ASSERT_TRUE(decode(old_reader, old));
  EXPECT_EQ(old.library_version, "0.1.0");
  EXPECT_EQ(old.command_line, p.command_line);
  EXPECT_TRUE(old.os_name.empty());
  EXPECT_EQ(old.logical_cpus, 0u);
}

}  // namespace

namespace {

std::vector<uint8_t> encoded(const inprof::internal::StatsRecord& r) {
  std::vector<uint8_t> bytes;
  {
    inprof::internal::ByteWriter w(&bytes);
    inprof::internal::encode(w, r);
  }
  return bytes;
}

}  // namespace

// The stats record grows by trailing fields; a reader takes every prefix an older dump wrote.
TEST(DumpRoundTrip, StatsRecordKeepsEveryFieldAndReadsOlderPrefixes) {
  using inprof::internal::StatsRecord;
  StatsRecord full{10, 9, 8, 7, 6, 5, 100, 1};
  full.time_ns = 101;
  full.sampler_ticks = 102;
  full.sampler_cpu_ns = 103;
  full.tick_cpu_min_ns = 104;
  full.tick_cpu_max_ns = 105;
  full.tick_interval_min_ns = 106;
  full.tick_interval_max_ns = 107;
  full.rings_refused_allowance = 108;
  full.rings_refused_permission = 109;
  full.rings_refused_other = 110;
  full.activity_followed = 2;
  full.sleep_stacks_unread = 111;
  const std::vector<uint8_t> bytes = encoded(full);
  ASSERT_EQ(bytes.size(), 20u);  // one byte per field: each value is under 128
  for (size_t fields = 4; fields <= 20; ++fields) {
    inprof::internal::ByteReader prefix(std::span<const uint8_t>(bytes.data(), fields));
    StatsRecord read;
    read.sampler_cut_at_exit = 99;
    read.tick_interval_max_ns = 99;
    ASSERT_TRUE(inprof::internal::decode(prefix, read)) << fields;
    EXPECT_EQ(read.ticks_late, 7u) << fields;
    EXPECT_EQ(read.samples_given_up, fields >= 6 ? 5u : 0u) << fields;
    EXPECT_EQ(read.profiler_cpu_ns, fields >= 7 ? 100u : 0u) << fields;
    EXPECT_EQ(read.sampler_cut_at_exit, fields >= 8 ? 1u : 0u) << fields;
    EXPECT_EQ(read.time_ns, fields >= 9 ? 101u : 0u) << fields;
    EXPECT_EQ(read.sampler_ticks, fields >= 10 ? 102u : 0u) << fields;
    EXPECT_EQ(read.tick_interval_max_ns, fields >= 15 ? 107u : 0u) << fields;
    EXPECT_EQ(read.rings_refused_allowance, fields >= 16 ? 108u : 0u) << fields;
    EXPECT_EQ(read.activity_followed, fields >= 19 ? 2u : 0u) << fields;
    EXPECT_EQ(read.sleep_stacks_unread, fields == 20 ? 111u : 0u) << fields;
  }
}
