// symbolicate --format pprof, read by the real consumer: `go tool pprof` (Debian's golang-go,
// which tools/scripts/install-deps.sh installs; the tests skip when `go` is not on the PATH).
// Its -raw dump shows the sample types, labels, locations with their inline lines and the
// mappings with their build-ids; its -top ranking must be the summary's.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

using symtest::read_file;

// Runs a shell command; its standard output, and its exit status in *status.
std::string run(const std::string& command, int* status) {
  std::string out;
  std::FILE* p = popen(command.c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), p)) > 0) out.append(buffer.data(), n);
  *status = pclose(p);
  return out;
}

bool have_go() {
  int status = 0;
  run("command -v go >/dev/null 2>&1", &status);
  return status == 0;
}

std::string hex(const std::vector<uint8_t>& bytes) {
  std::string s;
  static const char kHex[] = "0123456789abcdef";
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

// Whether -raw lists a sample with these values ("  2  2000000  2000000  0: 1 2 3").
bool has_sample(const std::string& raw, uint64_t count, uint64_t cpu, uint64_t wall,
                uint64_t off_cpu) {
  std::istringstream in(raw);
  std::string line;
  const std::string want = std::to_string(count) + " " + std::to_string(cpu) + " " +
                           std::to_string(wall) + " " + std::to_string(off_cpu) + ":";
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string a, b, c, d;
    fields >> a >> b >> c >> d;
    if (a + " " + b + " " + c + " " + d == want) return true;
  }
  return false;
}

// A C++ name without its parameter list, as pprof shows functions.
std::string without_parameters(const std::string& name) {
  const size_t paren = name.find('(');
  return paren == std::string::npos ? name : name.substr(0, paren);
}

class PprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_go()) GTEST_SKIP() << "go is not installed (tools/scripts/install-deps.sh)";
  }

  // `go tool pprof ARGS PROFILE`, with its caches and settings in the scratch directory.
  std::string pprof(const std::string& args, const std::string& profile) {
    int status = 0;
    const std::string out =
        run("HOME='" + dir_.path("home") + "' GOCACHE='" + dir_.path("gocache") +
                "' PPROF_TMPDIR='" + dir_.path("tmp") + "' go tool pprof -symbolize=none " + args +
                " '" + profile + "' 2>&1",
            &status);
    EXPECT_EQ(status, 0) << out;
    return out;
  }

  std::string convert(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {dir_.path("d.inprof"), "--format", "pprof", "-o",
                                     dir_.path("p.pb.gz")};
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_EQ(symtest::run_symbolicate_binary(args, &err_), 0) << err_;
    return dir_.path("p.pb.gz");
  }

  symtest::TempDir dir_;
  std::string err_;
};

TEST_F(PprofTest, GoToolPprofReadsTypesLabelsInlineFramesAndMappings) {
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  const uint64_t caller_ra = symtest::caller_function();
  const uint64_t inline_ra = symtest::outer_with_inline();
  const ModuleRecord self = symtest::self_module();
  {
    symtest::DumpFile d(dir_.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(self);
    d.thread_start(7, 0, "main", kThreadMain);
    d.sample(7, 1'000'000, {leaf, caller_ra}, 0, 1'000'000);
    d.sample(7, 2'000'000, {leaf, caller_ra}, 0, 1'000'000);
    d.sample(7, 3'000'000, {leaf, inline_ra}, 0, 1'000'000);
    d.sample(7, 4'000'000, {symtest::after_syscall_address()}, 0, 10'000);  // idle
    d.end(5'000'000);
    d.close();
  }
  const std::string profile = convert();
  const std::string bytes = read_file(profile);
  ASSERT_GT(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzipped
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);

  const std::string raw = pprof("-raw", profile);
  EXPECT_NE(raw.find("PeriodType: cpu nanoseconds"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Period: 1000000"), std::string::npos) << raw;
  // cpu is the default sample type.
  EXPECT_NE(raw.find("samples/count cpu/nanoseconds[dflt] wall/nanoseconds off_cpu/nanoseconds"),
            std::string::npos)
      << raw;
  EXPECT_NE(raw.find("thread_name:[main]"), std::string::npos) << raw;
  EXPECT_NE(raw.find("tid:[7]"), std::string::npos) << raw;
  // The two caller_function samples are one pprof sample: 2 samples, 2 ms of CPU, 2 ms of wall,
  // none off CPU.
  EXPECT_TRUE(has_sample(raw, 2, 2'000'000, 2'000'000, 0)) << raw;
  // The idle sample: no CPU, 1 ms of wall time, all of it off CPU.
  EXPECT_TRUE(has_sample(raw, 1, 0, 1'000'000, 1'000'000)) << raw;
  // The inlined call: one location, the inlinee's line first, then its caller's.
  const size_t helper = raw.find("symtest::inlined_helper()");
  ASSERT_NE(helper, std::string::npos) << raw;
  const size_t next_line = raw.find('\n', helper);
  ASSERT_NE(next_line, std::string::npos);
  const std::string after = raw.substr(next_line + 1, raw.find('\n', next_line + 1) - next_line);
  EXPECT_NE(after.find("symtest::outer_with_inline()"), std::string::npos) << raw;
  EXPECT_EQ(after.find(" M="), std::string::npos) << "not a location of its own:\n" << raw;
  EXPECT_NE(raw.find("test_targets.cc:" + std::to_string(symtest::kInlinedCallLine)),
            std::string::npos)
      << raw;
  // The test executable's mapping: its load range, build-id and what was found in it.
  ASSERT_FALSE(self.build_id.empty());
  char range[64];
  std::snprintf(range, sizeof range, "%#llx/%#llx/", static_cast<unsigned long long>(self.start),
                static_cast<unsigned long long>(self.end));
  const size_t mapping = raw.find(range);
  ASSERT_NE(mapping, std::string::npos) << range << "\n" << raw;
  const std::string mapping_line = raw.substr(mapping, raw.find('\n', mapping) - mapping);
  EXPECT_NE(mapping_line.find(hex(self.build_id)), std::string::npos) << mapping_line;
  EXPECT_NE(mapping_line.find("[FN][FL][LN][IN]"), std::string::npos) << mapping_line;
}

// Thousands of addresses all over the test executable, each sample weighing a different CPU
// time: pprof's ranking by flat CPU must be the summary's by self time.
TEST_F(PprofTest, TopFunctionsAreTheSummarys) {
  const ModuleRecord self = symtest::self_module();
  {
    symtest::DumpFile d(dir_.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(self);
    d.thread_start(1, 0, "main", kThreadMain);
    uint64_t t = 0;
    for (uint64_t a = self.start + 0x1000, i = 0; a < self.end && i < 3000; a += 397, ++i) {
      // Weights from 1 to 16 intervals' worth of microseconds, uneven so that few tie.
      d.sample(1, t += 1'000'000, {a, a + 13}, 0, 1000 + (i * 7919) % 900'000);
    }
    d.end(t + 1);
    d.close();
  }
  const std::string profile = convert();
  std::string summary_path = dir_.path("s.txt");
  ASSERT_EQ(symtest::run_symbolicate_binary(
                {dir_.path("d.inprof"), "--summary", "--top", "10", "-o", summary_path}, &err_),
            0)
      << err_;
  // The summary's "by self time" rows: "  self ms self% total ms total%  function".
  std::vector<std::string> by_summary;
  {
    std::istringstream in(read_file(summary_path));
    std::string line;
    bool in_self = false;
    while (std::getline(in, line)) {
      if (line.find("by self time") != std::string::npos) {
        in_self = true;
        std::getline(in, line);  // the header
        continue;
      }
      if (line.find("by total time") != std::string::npos) break;
      if (!in_self) continue;
      const size_t name = line.find("%  ", line.find('%') + 1);
      if (name != std::string::npos)
        by_summary.push_back(without_parameters(line.substr(name + 3)));
    }
  }
  ASSERT_EQ(by_summary.size(), 10u) << read_file(summary_path);
  // pprof -top: "flat flat% sum% cum cum% name".
  // (-nodefraction=0: where the addresses have no names, as in a sanitizer build, each is a node
  // of its own, below pprof's default cut of 0.5 %.)
  const std::string top = pprof("-top -nodecount=10 -nodefraction=0 -sample_index=cpu", profile);
  std::vector<std::string> by_pprof;
  {
    std::istringstream in(top);
    std::string line;
    bool rows = false;
    while (std::getline(in, line)) {
      if (line.find("flat%") != std::string::npos) {
        rows = true;
        continue;
      }
      if (!rows) continue;
      std::istringstream fields(line);
      std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
      fields >> flat >> flat_pct >> sum_pct >> cum >> cum_pct;
      std::getline(fields, name);
      name.erase(0, name.find_first_not_of(' '));
      by_pprof.push_back(without_parameters(name));
    }
  }
  EXPECT_EQ(by_pprof, by_summary) << top << "\n" << read_file(summary_path);
}

// symbolicate DIR --format pprof -o OUT/: each dump alone, to OUT/NAME.pb.gz.
TEST_F(PprofTest, BatchWritesOnePprofPerDump) {
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  std::filesystem::create_directories(dir_.path("in"));
  for (const char* name : {"app-1", "app-2"}) {
    symtest::DumpFile d(dir_.path(std::string("in/") + name + ".inprof"));
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, name, kThreadMain);
    d.sample(1, 1'000'000, {leaf}, 0, 1'000'000);
    d.end(2'000'000);
    d.close();
  }
  ASSERT_EQ(symtest::run_symbolicate_binary(
                {dir_.path("in"), "--format", "pprof", "-o", dir_.path("out/")}, &err_),
            0)
      << err_;
  for (const char* name : {"app-1", "app-2"}) {
    const std::string raw = pprof("-raw", dir_.path(std::string("out/") + name + ".pb.gz"));
    EXPECT_NE(raw.find(std::string("thread_name:[") + name + "]"), std::string::npos) << raw;
  }
  // A directory that cannot be made: one line, exit 1.
  std::ofstream(dir_.path("file")) << "x";
  EXPECT_EQ(symtest::run_symbolicate_binary(
                {dir_.path("in"), "--format", "pprof", "-o", dir_.path("file/sub/")}, &err_),
            1);
  EXPECT_NE(err_.find("symbolicate: error: cannot create the output directory"), std::string::npos)
      << err_;
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
}

// Needs no go: a bad --format is refused by symbolicate itself.
TEST(PprofFormat, UnknownFormatIsOneClearLine) {
  symtest::TempDir dir;
  std::string err;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.end(1);
    d.close();
  }
  EXPECT_EQ(symtest::run_symbolicate_binary(
                {dir.path("d.inprof"), "--format", "proto", "-o", dir.path("x")}, &err),
            2);
  EXPECT_NE(err.find("unknown format 'proto' (json, folded, summary or pprof)"), std::string::npos)
      << err;
}

}  // namespace
