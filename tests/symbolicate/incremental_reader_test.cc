// read_dump_file_incrementally (the reader symbolicate uses: the file a piece at a time) must
// deliver exactly what read_dump delivers from the whole file in memory, including for dumps
// cut short or damaged anywhere, and across its read-ahead blocks (1 MiB).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "dump/dump_reader.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

// Every record as a line of text, in order: two readings agree when their logs are equal.
struct Log : DumpVisitor {
  std::vector<std::string> lines;
  size_t samples = 0;
  void on_process(const ProcessRecord& r) override { add("P " + std::to_string(r.pid)); }
  void on_module_load(const ModuleRecord& r) override { add("M " + r.path); }
  void on_thread_start(const ThreadRecord& r) override { add("T " + std::to_string(r.tid)); }
  void on_sample(const SampleRecord& r) override {
    std::string line = "S " + std::to_string(r.tid) + " " + std::to_string(r.time_ns);
    for (uint64_t f : r.frames) line += " " + std::to_string(f);
    add(line);
    ++samples;
  }
  void on_sample_repeat(const SampleRepeatRecord& r) override {
    add("R " + std::to_string(r.time_ns));
  }
  void on_end(const EndRecord& r) override { add("E " + std::to_string(r.time_ns)); }
  void add(std::string s) { lines.push_back(std::move(s)); }
};

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
}

class IncrementalReader : public ::testing::Test {
 protected:
  // A dump of several MiB in many chunks: random frames barely compress, so chunks straddle the
  // reader's 1 MiB blocks, and the last chunk is larger than a block.
  void SetUp() override {
    symtest::DumpFile d(dir_.path("big.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main");
    std::mt19937_64 rng(7);
    uint64_t t = 0;
    for (int chunk = 0; chunk < 40; ++chunk) {
      for (int i = 0; i < 1500; ++i) {
        std::vector<uint64_t> frames(8);
        for (uint64_t& f : frames) f = rng();
        d.sample(1, t += 1000, frames);
        if (i % 7 == 0) d.repeat(1, t += 1000);
      }
      d.flush();
    }
    // One chunk bigger than a read-ahead block (~2.4 MB compressed).
    for (int i = 0; i < 30000; ++i) {
      std::vector<uint64_t> frames(8);
      for (uint64_t& f : frames) f = rng();
      d.sample(1, t += 1000, frames);
    }
    d.end(t + 1);
    d.close();
    bytes_ = read_bytes(dir_.path("big.inprof"));
  }

  // Reads the first `n` bytes of `bytes` both ways and expects the same outcome.
  void expect_same(const std::vector<uint8_t>& bytes, size_t n, const std::string& what) {
    std::string path = dir_.path("cut.inprof");
    write_bytes(path, bytes, n);
    Log whole, incremental;
    DumpReadResult a = read_dump(std::span<const uint8_t>(bytes.data(), n), whole);
    DumpReadResult b = read_dump_file_incrementally(path, incremental);
    ASSERT_EQ(a.ok, b.ok) << what;
    EXPECT_EQ(a.error, b.error) << what;
    EXPECT_EQ(a.warnings, b.warnings) << what;
    EXPECT_EQ(a.complete, b.complete) << what;
    EXPECT_EQ(a.records, b.records) << what;
    EXPECT_EQ(a.chunks, b.chunks) << what;
    EXPECT_EQ(whole.samples, incremental.samples) << what;
    EXPECT_TRUE(whole.lines == incremental.lines) << what;
  }

  symtest::TempDir dir_;
  std::vector<uint8_t> bytes_;
};

TEST_F(IncrementalReader, ReadsAWholeDumpOfManyChunksLikeReadDump) {
  ASSERT_GT(bytes_.size(), 3u << 20) << "the dump must span several read-ahead blocks";
  Log log;
  DumpReadResult r = read_dump_file_incrementally(dir_.path("big.inprof"), log);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_EQ(log.samples, 40u * 1500u + 30000u);
  EXPECT_GE(r.chunks, 40u);
  expect_same(bytes_, bytes_.size(), "whole file");
}

// A process that died mid-write: every complete chunk is still delivered, whatever the cut.
TEST_F(IncrementalReader, TruncatedAnywhereDeliversEveryCompleteChunk) {
  std::mt19937_64 rng(11);
  std::vector<size_t> cuts = {0,
                              5,
                              kDumpHeaderSize,
                              kDumpHeaderSize + 1,
                              bytes_.size() - 1,
                              bytes_.size() - 1000,
                              (1u << 20) - 1,
                              1u << 20,
                              (1u << 20) + 1,
                              (2u << 20) + 3};
  for (int i = 0; i < 12; ++i) cuts.push_back(kDumpHeaderSize + rng() % (bytes_.size() - 16));
  for (size_t n : cuts) {
    if (n > bytes_.size()) continue;
    expect_same(bytes_, n, "cut at " + std::to_string(n));
  }
}

// Damage in the middle of the file, small or larger than a read-ahead block, and at a block
// boundary: the damaged chunks are skipped, all others delivered, with read_dump's warnings.
TEST_F(IncrementalReader, DamagedChunksAreSkippedLikeReadDump) {
  struct Damage {
    size_t at, length;
  };
  const Damage damages[] = {{bytes_.size() / 2, 16},
                            {(1u << 20) - 8, 16},
                            {(2u << 20) + 100, 3u << 19},  // 1.5 MiB of garbage
                            {kDumpHeaderSize, 4},
                            {bytes_.size() - (1u << 20), 64}};  // inside the big last chunk
  std::mt19937_64 rng(5);
  for (const Damage& d : damages) {
    std::vector<uint8_t> bytes = bytes_;
    for (size_t i = d.at; i < d.at + d.length && i < bytes.size(); ++i) {
      bytes[i] = static_cast<uint8_t>(rng() | 1);  // never a whole zstd magic number by chance
    }
    expect_same(bytes, bytes.size(), "damage at " + std::to_string(d.at));
    Log log;
    write_bytes(dir_.path("damaged.inprof"), bytes, bytes.size());
    DumpReadResult r = read_dump_file_incrementally(dir_.path("damaged.inprof"), log);
    EXPECT_FALSE(r.warnings.empty());
    EXPECT_GT(log.samples, 0u);
    EXPECT_LT(log.samples, 40u * 1500u + 30000u);
  }
}

TEST_F(IncrementalReader, RefusesWhatIsNotADumpWithReadDumpsMessages) {
  expect_same(bytes_, 3, "3 bytes");
  std::vector<uint8_t> bytes = bytes_;
  bytes[8] = 99;  // a future format version
  expect_same(bytes, bytes.size(), "version 99");
  Log log;
  DumpReadResult r = read_dump_file_incrementally("/nonexistent/x.inprof", log);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no such file"), std::string::npos) << r.error;
  r = read_dump_file_incrementally("/tmp", log);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not a regular file"), std::string::npos) << r.error;
}

// symbolicate itself on a truncated dump: every sample of the complete chunks is in the profile.
TEST_F(IncrementalReader, SymbolicateKeepsEverySampleOfTheCompleteChunks) {
  const size_t n = bytes_.size() * 2 / 3;
  write_bytes(dir_.path("cut.inprof"), bytes_, n);
  Log whole;
  read_dump(std::span<const uint8_t>(bytes_.data(), n), whole);
  size_t repeats = 0;
  for (const std::string& line : whole.lines) repeats += line[0] == 'R';
  std::string err;
  ASSERT_EQ(symtest::run_symbolicate_binary(
                {dir_.path("cut.inprof"), "-o", dir_.path("cut.json"), "--quiet-modules"}, &err),
            0)
      << err;
  EXPECT_NE(err.find("cut short"), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(whole.samples + repeats) + " samples"), std::string::npos)
      << err;
}

}  // namespace
