// Runs the built symbolicate binary: exit codes, messages, and module paths that must not hang.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

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

TEST(SymbolicateCli, HelpAndVersion) {
  EXPECT_EQ(run({"--help"}), 0);
  EXPECT_EQ(run({"--version"}), 0);
}

TEST(SymbolicateCli, WrongUsageExitsWithTwo) {
  std::string err;
  EXPECT_EQ(run({}, &err), 2);
  EXPECT_NE(err.find("usage:"), std::string::npos) << err;
  EXPECT_EQ(run({"dump.inprof"}), 2);        // no -o
  EXPECT_EQ(run({"dump.inprof", "-o"}), 2);  // -o without a file
  EXPECT_EQ(run({"--bogus", "x", "-o", "y"}), 2);
  EXPECT_EQ(run({"a", "b", "-o", "y"}), 2);
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
