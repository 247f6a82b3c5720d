// Runs the built symbolicate binary: exit codes, messages, and module paths that must not hang.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

int run(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::string ignored;
  return symtest::run_symbolicate_binary(args, err ? err : &ignored);
}

void write_small_dump(const std::string& path, const std::vector<ModuleRecord>& modules,
                      const std::vector<uint64_t>& frames) {
  symtest::DumpFile d(path);
  d.process(symtest::test_process());
  for (const auto& m : modules) d.module(m);
  d.thread_start(1, 0, "main", kThreadMain);
  d.sample(1, 1'000'000, frames);
  d.end(2'000'000);
  d.close();
}

// Profile Info's entries (meta.extra), by label, as text.
std::map<std::string, std::string> profile_info(const rapidjson::Document& doc) {
  std::map<std::string, std::string> info;
  for (const auto& e : doc["meta"]["extra"][0]["entries"].GetArray()) {
    const auto& v = e["value"];
    info[e["label"].GetString()] = v.IsString() ? v.GetString() : std::to_string(v.GetUint64());
  }
  return info;
}

TEST(SymbolicateCli, HelpAndVersion) {
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_EQ(run({"--version"}), 0);
}

TEST(SymbolicateCli, WrongUsageExitsWithTwo) {
  std::string err;
  // One line each, that points at --help (issue 23, item 16).
  EXPECT_EQ(run({}, &err), 2);
  EXPECT_EQ(err, "symbolicate: no dump given (symbolicate --help shows the usage)\n");
  EXPECT_EQ(run({"dump.inprof"}, &err), 2);  // no -o
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run({"dump.inprof", "-o"}), 2);  // -o without a file
  EXPECT_EQ(run({"--bogus", "x", "-o", "y"}, &err), 2);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(run({"a", "-o", "y", "--split-at", "many"}, &err), 2);
  EXPECT_NE(err.find("--split-at needs an address count"), std::string::npos) << err;
}

TEST(SymbolicateCli, MissingOrInvalidDumpExitsWithOne) {
  symtest::TempDir dir;
  std::string err;
  EXPECT_EQ(run({dir.path("absent.inprof"), "-o", dir.path("o.json")}, &err), 1);
  EXPECT_EQ(err.rfind("symbolicate: error: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;

  std::string garbage = dir.path("garbage.inprof");
  std::ofstream(garbage) << "garbage that is long enough to have a header";
  EXPECT_EQ(run({garbage, "-o", dir.path("o.json")}, &err), 1);
  EXPECT_NE(err.find("not an inprof dump"), std::string::npos) << err;

  // A future format version.
  std::string future = dir.path("future.inprof");
  {
    std::ofstream f(future, std::ios::binary);
    f.write(reinterpret_cast<const char*>(kDumpMagic), 8);
    const char version_and_flags[8] = {99, 0, 0, 0, 0, 0, 0, 0};
    f.write(version_and_flags, 8);
  }
  EXPECT_EQ(run({future, "-o", dir.path("o.json")}, &err), 1);
  EXPECT_NE(err.find("version"), std::string::npos) << err;

  EXPECT_EQ(run({dir.path(""), "-o", dir.path("o.json")}, &err), 1);  // a directory
}

TEST(SymbolicateCli, UnwritableOutputExitsWithOne) {
  symtest::TempDir dir;
  std::string dump = dir.path("d.inprof");
  write_small_dump(dump, {}, {0x1234});
  std::string err;
  EXPECT_EQ(run({dump, "-o", dir.path("no/such/dir/out.json")}, &err), 1);
  EXPECT_EQ(err.find("symbolicate: error: "), err.rfind("symbolicate: error: ")) << err;
  EXPECT_NE(err.find("cannot write"), std::string::npos) << err;
}

// A full disk (/dev/full: every write fails with ENOSPC), in every output format: exit 1 with
// the reason, and the device is left alone (a failed write once removed the output path, the
// device node included when run as root).
TEST(SymbolicateCli, FullDeviceOutputExitsWithOneAndLeavesTheDevice) {
  struct stat st;
  if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) GTEST_SKIP() << "no /dev/full here";
  symtest::TempDir dir;
  std::string dump = dir.path("d.inprof");
  write_small_dump(dump, {}, {0x1234});
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, {"--gzip"}, {"--format", "folded"}, {"--format", "summary"}}) {
    std::vector<std::string> args = {dump, "-o", "/dev/full"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    EXPECT_EQ(run(args, &err), 1) << err;
    EXPECT_NE(err.find("cannot write '/dev/full'"), std::string::npos) << err;
    ASSERT_EQ(stat("/dev/full", &st), 0) << "the device node was removed";
    EXPECT_TRUE(S_ISCHR(st.st_mode));
  }
}

TEST(SymbolicateCli, ConvertsAGoodDump) {
  symtest::TempDir dir;
  std::string dump = dir.path("d.inprof");
  std::string out = dir.path("out.json");
  uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  write_small_dump(dump, {symtest::self_module()}, {leaf, symtest::caller_function()});
  std::string err;
  ASSERT_EQ(run({dump, "-o", out}, &err), 0) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(out, &doc));
  EXPECT_TRUE(symtest::check_structure(doc).empty());
  auto s = symtest::sample_stack(doc, 0, 0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].func, "symtest::leaf_function(int)");
}

TEST(SymbolicateCli, TruncatedDumpExitsWithZero) {
  symtest::TempDir dir;
  std::string dump = dir.path("d.inprof");
  {
    symtest::DumpFile d(dump);
    d.process(symtest::test_process());
    d.sample(1, 1'000'000, {0x1234});
    d.flush();
    for (int i = 0; i < 100; ++i) d.sample(1, 2'000'000 + i, {0x1234 + uint64_t(i)});
    d.close();
  }
  std::ifstream in(dump, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dump, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size() - 10);
  std::string err;
  EXPECT_EQ(run({dump, "-o", dir.path("o.json")}, &err), 0) << err;
  EXPECT_NE(err.find("cut short"), std::string::npos) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("o.json"), &doc));
  ASSERT_TRUE(symtest::check_structure(doc).empty());
  ASSERT_EQ(doc["threads"].Size(), 1u) << err;
  EXPECT_EQ(doc["threads"][0]["samples"]["length"].GetUint(), 1u);
}

// Module paths that are not regular files must neither hang nor crash symbolicate.
TEST(SymbolicateCli, StrangeModulePathsAreSkippedWithAWarning) {
  symtest::TempDir dir;
  std::string fifo = dir.path("fifo.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string text = dir.path("text.so");
  std::ofstream(text) << "not an ELF file";
  std::string empty = dir.path("empty.so");
  std::ofstream(empty).flush();
  std::string loop = dir.path("loop.so");  // loop.so -> loop2.so -> loop.so
  ASSERT_EQ(symlink(dir.path("loop2.so").c_str(), loop.c_str()), 0);
  ASSERT_EQ(symlink(loop.c_str(), dir.path("loop2.so").c_str()), 0);

  std::vector<std::string> paths = {fifo,  dir.path(""), "/dev/zero",           text,
                                    empty, loop,         dir.path("missing.so")};
  std::vector<ModuleRecord> modules;
  std::vector<uint64_t> frames;
  for (size_t i = 0; i < paths.size(); ++i) {
    ModuleRecord m;
    m.id = i + 1;
    m.start = 0x10000000 * (i + 1);
    m.end = m.start + 0x1000;
    m.load_bias = m.start;
    m.path = paths[i];
    modules.push_back(m);
    frames.push_back(m.start + 0x10);
  }
  std::string dump = dir.path("d.inprof");
  write_small_dump(dump, modules, frames);
  std::string err;
  ASSERT_EQ(symtest::run_symbolicate_binary({dump, "-o", dir.path("o.json")}, &err, 30), 0) << err;
  for (const auto& p : paths) EXPECT_NE(err.find(p), std::string::npos) << p << "\n" << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("o.json"), &doc));
  auto s = symtest::sample_stack(doc, 0, 0);
  ASSERT_EQ(s.size(), paths.size());
  EXPECT_EQ(s.back().func, "fifo.so+0x10");  // frames[0] is the leaf, last in root-first order
}

}  // namespace

namespace {

// A process's dump: pid, start time, command line, one main thread with one sample at 1 ms.
void write_process_dump(const std::string& path, uint64_t pid, uint64_t start_offset_ns,
                        const std::string& program, uint64_t cpu_ns = 0) {
  symtest::DumpFile d(path);
  ProcessRecord p = symtest::test_process();
  p.pid = pid;
  p.start_unix_ns += start_offset_ns;
  p.executable = program;
  p.command_line = {program, "arg-of-" + std::to_string(pid)};
  d.process(p);
  d.module(symtest::self_module());
  d.thread_start(pid, 0, "main", kThreadMain);
  d.sample(pid, 1'000'000, {reinterpret_cast<uintptr_t>(&symtest::leaf_function)});
  if (cpu_ns > 0) {
    d.sample(pid, 1'500'000, {reinterpret_cast<uintptr_t>(&symtest::leaf_function)}, 0, cpu_ns);
  }
  d.end(2'000'000);
  d.close();
}

}  // namespace

// issue 23, item 1: a program's dump and its children's (a directory, as `inprof record` writes
// them, or files) make one profile: a process each, named by its command line, time-aligned.
TEST(SymbolicateCli, MergesSeveralDumpsIntoOneProfileAProcessEach) {
  symtest::TempDir dir;
  std::filesystem::create_directory(dir.path("run"));
  write_process_dump(dir.path("run/100.inprof"), 100, 0, "/bin/sh");
  write_process_dump(dir.path("run/101.inprof"), 101, 5'000'000, "/usr/bin/sort");
  write_process_dump(dir.path("run/102.inprof"), 102, 9'000'000, "/usr/bin/gzip");
  std::ofstream(dir.path("run/empty.inprof"));  // an empty file holds nothing: skipped
  std::string err;
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{dir.path("run")},
        std::vector<std::string>{dir.path("run/102.inprof"), dir.path("run/100.inprof"),
                                 dir.path("run/101.inprof")}}) {
    std::vector<std::string> args = inputs;
    args.insert(args.end(), {"-o", dir.path("merged.json")});
    ASSERT_EQ(run(args, &err), 0) << err;
    rapidjson::Document doc;
    ASSERT_TRUE(symtest::load_json(dir.path("merged.json"), &doc));
    EXPECT_TRUE(symtest::check_structure(doc).empty());
    const auto& threads = doc["threads"];
    ASSERT_EQ(threads.Size(), 3u);
    // The first to start leads; each thread keeps its process's pid and command line.
    EXPECT_STREQ(threads[0]["pid"].GetString(), "100");
    EXPECT_STREQ(threads[1]["pid"].GetString(), "101");
    EXPECT_STREQ(threads[2]["pid"].GetString(), "102");
    EXPECT_STREQ(threads[0]["processName"].GetString(), "sh arg-of-100");
    EXPECT_STREQ(threads[1]["processName"].GetString(), "sort arg-of-101");
    EXPECT_STREQ(threads[2]["processName"].GetString(), "gzip arg-of-102");
    // Times on the first process's clock: sort started 5 ms later, gzip 9 ms.
    EXPECT_DOUBLE_EQ(
        threads[1]["registerTime"].GetDouble() - threads[0]["registerTime"].GetDouble(), 5.0);
    EXPECT_DOUBLE_EQ(
        threads[2]["registerTime"].GetDouble() - threads[0]["registerTime"].GetDouble(), 9.0);
    EXPECT_EQ(doc["meta"]["initialVisibleThreads"].Size(), 3u);
    // Profile Info counts the run's samples and losses, not the first process's alone.
    std::map<std::string, std::string> info = profile_info(doc);
    EXPECT_EQ(info["Samples in this profile"], "3");
    EXPECT_EQ(info["Processes"], "3");
    EXPECT_EQ(info["Dump complete"], "yes");
  }
  // A directory without dumps: one line naming it.
  std::filesystem::create_directory(dir.path("none"));
  EXPECT_EQ(run({dir.path("none"), "-o", dir.path("x.json")}, &err), 1);
  EXPECT_EQ(
      err, "symbolicate: error: '" + dir.path("none") + "' is a directory without .inprof dumps\n");
}

// issue 45, item 1: a run opens on the thread that used the most CPU, in whichever process (a
// shell that ran xz opened on the shell, 100 % blocked).
TEST(SymbolicateCli, AMergedProfileOpensOnItsBusiestThread) {
  symtest::TempDir dir;
  std::filesystem::create_directory(dir.path("run"));
  write_process_dump(dir.path("run/100.inprof"), 100, 0, "/bin/sh", 10'000);
  write_process_dump(dir.path("run/101.inprof"), 101, 5'000'000, "/usr/bin/xz", 400'000);
  write_process_dump(dir.path("run/102.inprof"), 102, 9'000'000, "/usr/bin/gzip", 200'000);
  std::string err;
  ASSERT_EQ(run({dir.path("run"), "-o", dir.path("merged.json")}, &err), 0) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("merged.json"), &doc));
  const auto& selected = doc["meta"]["initialSelectedThreads"];
  ASSERT_EQ(selected.Size(), 1u);
  EXPECT_STREQ(doc["threads"][selected[0].GetUint()]["pid"].GetString(), "101");
}

// issue 41, item 8: a merged run states its allocation sampling rate, not the sum of its
// processes' (20 processes at 512K said 10485760); a FIFO given as a dump is refused, not waited
// on; a summary is never written into a .json; a dump cut before its first thread says so,
// without suggesting a thread filter.
TEST(SymbolicateCli, WrongFiguresAndHangsOfTheFirstHour) {
  symtest::TempDir dir;
  std::filesystem::create_directory(dir.path("run"));
  for (uint64_t pid : {100, 101, 102}) {
    symtest::DumpFile d(dir.path("run/" + std::to_string(pid) + ".inprof"));
    ProcessRecord p = symtest::test_process();
    p.pid = pid;
    p.start_unix_ns += pid * 1'000;
    d.process(p);
    d.module(symtest::self_module());
    d.thread_start(pid, 0, "main", kThreadMain);
    d.sample(pid, 1'000'000, {reinterpret_cast<uintptr_t>(&symtest::leaf_function)});
    AllocationStatsRecord a;
    a.sample_bytes = 524288;
    a.sampled = 10;
    d.allocation_stats(a);
    d.end(2'000'000);
    d.close();
  }
  std::string err;
  ASSERT_EQ(run({dir.path("run"), "--summary"}, &err), 0) << err;
  ASSERT_EQ(run({dir.path("run"), "-o", dir.path("merged.json")}, &err), 0) << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("merged.json"), &doc));
  std::map<std::string, std::string> info = profile_info(doc);
  EXPECT_EQ(info["Allocation sampling (mean bytes between samples)"], "524288");
  EXPECT_EQ(info["Allocations sampled"], "30");

  const std::string fifo = dir.path("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(run({fifo, "-o", dir.path("f.json")}, &err), 1);
  EXPECT_EQ(err, "symbolicate: error: " + fifo + ": not a dump (not a regular file)\n");

  EXPECT_EQ(run({dir.path("run"), "--summary", "-o", dir.path("s.json")}, &err), 2);
  EXPECT_NE(err.find("a summary is text, not JSON"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.path("s.json")));

  // The first 20 bytes of a dump: its header and the start of a chunk.
  {
    std::ifstream in(dir.path("run/100.inprof"), std::ios::binary);
    std::string head(20, '\0');
    in.read(head.data(), 20);
    std::ofstream(dir.path("cut.inprof"), std::ios::binary) << head;
  }
  run({dir.path("cut.inprof"), "-o", dir.path("cut.json")}, &err);
  EXPECT_NE(err.find("the dump ends before any thread was recorded"), std::string::npos) << err;
  EXPECT_EQ(err.find("thread filter"), std::string::npos) << err;
}

// issue 41, item 6: a run whose shells left through _exit says so once, not once per dump, and
// those that left before anything was written are left out, said once, not as lost records.
TEST(SymbolicateCli, ARunsUnendedDumpsAreOneLine) {
  symtest::TempDir dir;
  std::filesystem::create_directory(dir.path("run"));
  for (uint64_t pid : {100, 101, 102}) {
    symtest::DumpFile d(dir.path("run/" + std::to_string(pid) + ".inprof"));
    ProcessRecord p = symtest::test_process();
    p.pid = pid;
    d.process(p);
    d.thread_start(pid, 0, "main", kThreadMain);
    d.sample(pid, 1'000'000, {reinterpret_cast<uintptr_t>(&symtest::leaf_function)});
    if (pid == 100) d.end(2'000'000);
    d.close();
  }
  // Two short children that left before their writer wrote anything: a header, no records.
  for (uint64_t pid : {103, 104})
    symtest::DumpFile(dir.path("run/" + std::to_string(pid) + ".inprof")).close();
  std::string err;
  // Written, nothing lost that a dump held: exit 0, not 3.
  ASSERT_EQ(run({dir.path("run"), "-o", dir.path("o.json")}, &err), 0) << err;
  EXPECT_NE(err.find("warning: 2 of 5 processes ended before their profiler wrote anything"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("no process record"), std::string::npos) << err;
  size_t lines = 0;
  for (size_t at = err.find("no end record"); at != std::string::npos;
       at = err.find("no end record", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << err;
  EXPECT_NE(err.find("warning: 2 of 5 dumps have no end record"), std::string::npos) << err;
}

// issue 23, item 16: a file that is not a dump is named, with what it is and what to do; a bad
// output path fails before the dump is read; every error is one line.
TEST(SymbolicateCli, NotADumpSaysWhatTheFileIs) {
  symtest::TempDir dir;
  const std::string out = dir.path("o.json");
  std::string err;
  auto one_error_line = [&](const std::string& file, const std::string& expected) {
    EXPECT_EQ(run({file, "-o", out}, &err), 1) << file;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_EQ(err.rfind("symbolicate: error: '" + file + "' ", 0), 0u) << err;
    EXPECT_NE(err.find(expected), std::string::npos) << err;
  };
  std::ofstream(dir.path("empty.inprof"));
  one_error_line(dir.path("empty.inprof"), "is empty: its process wrote nothing yet");
  std::ofstream(dir.path("short.inprof")) << "\x89IN";
  one_error_line(dir.path("short.inprof"), "cut short inside its header (3 bytes)");
  std::ofstream(dir.path("p.json")) << "{\"meta\": {}}";
  one_error_line(dir.path("p.json"), "is JSON, not an inprof dump");
  std::ofstream(dir.path("p.json.gz")) << "\x1f\x8b\x08\x00rest";
  one_error_line(dir.path("p.json.gz"), "is gzip-compressed, not an inprof dump");

  const std::string dump = dir.path("d.inprof");
  write_small_dump(dump, {symtest::self_module()}, {symtest::caller_function()});
  EXPECT_EQ(run({dump, "-o", "/nonexistent/x.json"}, &err), 1);
  EXPECT_EQ(err,
            "symbolicate: error: cannot write '/nonexistent/x.json': no such directory: "
            "/nonexistent\n");
}
