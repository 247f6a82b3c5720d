// Release builds symbolicated elsewhere: stripped binaries with their DWARF in separate debug
// files found by build-id, by .gnu_debuglink (CRC checked) or by name; binaries moved to another
// directory; a rebuilt binary (another build-id) that must never be used; libc through Debian's
// detached debug symbols (libc6-dbg).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "release_target_facts.h"
#include "symbolize/elf/debug_image.h"
#include "symbolize/elf/elf_file.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;
namespace fs = std::filesystem;

constexpr uint64_t kBias = 0x10000000;

using symtest::run_target;
using symtest::TargetFacts;

void sh(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command << " failed (binutils installed?)";
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string build_id_of(const std::string& path) {
  std::string why;
  auto info = inprof::symbolicate::inspect_elf_file(path, &why);
  return info ? info->build_id : std::string();
}

class ReleaseBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    facts_ = run_target(RELEASE_TARGET);
    ASSERT_NE(facts_.leaf, 0u);
    ASSERT_NE(facts_.inline_return, 0u);
    build_id_ = build_id_of(RELEASE_TARGET);
    ASSERT_EQ(build_id_.size(), 40u);
    // target.debug: the DWARF; bin/target: stripped, with a debuglink to target.debug.
    fs::create_directories(dir_.path("bin"));
    fs::create_directories(dir_.path("debug"));
    sh("objcopy --only-keep-debug '" + std::string(RELEASE_TARGET) + "' '" + debug_file() + "'");
    sh("strip --strip-all -o '" + stripped() + "' '" + std::string(RELEASE_TARGET) + "'");
    sh("cd '" + dir_.path("bin") + "' && objcopy --add-gnu-debuglink='" + debug_file() +
       "' target");
    fs::remove(debug_file() + ".tmp");
  }

  std::string debug_file() const { return dir_.path("target.debug"); }
  std::string stripped() const { return dir_.path("bin/target"); }

  // The program's module at `path`, with the original build-id unless another is given.
  ModuleRecord module(const std::string& path, const std::string& build_id = "") const {
    ModuleRecord m;
    m.id = 1;
    m.start = kBias;
    m.end = kBias + 0x1000000;
    m.load_bias = kBias;
    m.flags = kModuleMainExecutable;
    m.path = path;
    m.build_id = unhex(build_id.empty() ? build_id_ : build_id);
    return m;
  }

  // A dump whose module is `path` with the original build-id, sampling the leaf under the
  // inlined call.
  void write_dump(const std::string& path, const std::string& build_id = "") {
    symtest::DumpFile d(dir_.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(module(path, build_id));
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {kBias + facts_.leaf, kBias + facts_.inline_return});
    d.end(2'000'000);
    d.close();
  }

  // Runs the symbolicate binary; returns the sample's stack (root first).
  std::vector<symtest::FrameView> symbolicate(std::vector<std::string> options) {
    std::vector<std::string> args = {dir_.path("d.inprof"), "-o", dir_.path("o.json"),
                                     "--system-debug-dir", ""};
    args.insert(args.end(), options.begin(), options.end());
    std::string why;
    std::vector<symtest::FrameView> stack =
        symtest::symbolicate_first_stack(args, dir_.path("o.json"), &err_, &why);
    EXPECT_TRUE(why.empty()) << why;
    return stack;
  }

  // The full, right answer: outer function, the helper inlined into it, then the leaf.
  void expect_symbolicated(const std::vector<symtest::FrameView>& s) {
    ASSERT_EQ(s.size(), 3u) << err_;
    EXPECT_EQ(s[0].func, "release_outer()");
    EXPECT_EQ(s[0].inline_depth, 0);
    EXPECT_EQ(s[0].line, facts_.outer_line);
    EXPECT_EQ(s[1].func, "release_inlined_helper()");
    EXPECT_EQ(s[1].inline_depth, 1);
    EXPECT_EQ(s[1].line, facts_.helper_call_line);
    EXPECT_NE(s[1].file.find("release_target.cc"), std::string::npos) << s[1].file;
    EXPECT_EQ(s[2].func, "release_leaf(int)");
    EXPECT_EQ(s[2].func_line, facts_.leaf_line);
  }

  symtest::TempDir dir_;
  TargetFacts facts_;
  std::string build_id_;
  std::string err_;
};

TEST_F(ReleaseBuildTest, SeparateDebugFileByBuildIdInADebugDir) {
  std::string ids = dir_.path("debug/.build-id/" + build_id_.substr(0, 2));
  fs::create_directories(ids);
  fs::copy_file(debug_file(), ids + "/" + build_id_.substr(2) + ".debug");
  fs::remove(debug_file());  // the debuglink must not be what finds it
  write_dump(stripped());
  expect_symbolicated(symbolicate({"--debug-dir", dir_.path("debug")}));
  EXPECT_NE(err_.find("  dwarf   " + stripped() + " [" + build_id_ + "]"), std::string::npos)
      << err_;
  EXPECT_NE(err_.find("(build-id in " + dir_.path("debug") + ")"), std::string::npos) << err_;
}

TEST_F(ReleaseBuildTest, SeparateDebugFileByDebuglinkNextToTheBinaryAndInDotDebug) {
  fs::copy_file(debug_file(), dir_.path("bin/target.debug"));
  write_dump(stripped());
  expect_symbolicated(symbolicate({}));
  EXPECT_NE(err_.find("(debuglink next to the binary)"), std::string::npos) << err_;

  fs::create_directories(dir_.path("bin/.debug"));
  fs::rename(dir_.path("bin/target.debug"), dir_.path("bin/.debug/target.debug"));
  expect_symbolicated(symbolicate({}));
  EXPECT_NE(err_.find("(debuglink in .debug/)"), std::string::npos) << err_;
}

TEST_F(ReleaseBuildTest, DebuglinkWithTheWrongCrcIsNotUsed) {
  // The rebuild's debug file under the debuglink's name: another build, another CRC.
  sh("objcopy --only-keep-debug '" + std::string(RELEASE_TARGET_REBUILT) + "' '" +
     dir_.path("bin/target.debug") + "'");
  write_dump(stripped());
  auto s = symbolicate({});
  ASSERT_EQ(s.size(), 2u) << err_;
  EXPECT_EQ(s[1].func.rfind("unnamed function at target+0x", 0), 0u) << s[1].func;
  EXPECT_NE(err_.find("build-id mismatch: " + dir_.path("bin/target.debug")), std::string::npos)
      << err_;
}

TEST_F(ReleaseBuildTest, ARebuiltBinaryIsNeverUsed) {
  // The recorded path holds a rebuild (same code, another build-id), and so does the debug dir.
  std::string rebuilt = dir_.path("rebuilt/target");
  fs::create_directories(dir_.path("rebuilt"));
  fs::copy_file(RELEASE_TARGET_REBUILT, rebuilt);
  sh("objcopy --only-keep-debug '" + std::string(RELEASE_TARGET_REBUILT) + "' '" +
     dir_.path("debug/target.debug") + "'");
  write_dump(rebuilt);
  auto s = symbolicate({"--debug-dir", dir_.path("debug")});
  ASSERT_EQ(s.size(), 2u) << err_;
  char leaf[64];
  std::snprintf(leaf, sizeof leaf, "target+0x%llx", static_cast<unsigned long long>(facts_.leaf));
  EXPECT_EQ(s[1].func, leaf);
  EXPECT_NE(err_.find("warning: module '" + rebuilt + "'"), std::string::npos) << err_;
  EXPECT_NE(err_.find("build-id mismatch: " + rebuilt + " has 0123456789abcdef"), std::string::npos)
      << err_;
  EXPECT_NE(err_.find("  none    " + rebuilt), std::string::npos) << err_;
  EXPECT_NE(err_.find("0 with debug info, 0 with ELF symbols only, 1 not symbolicated"),
            std::string::npos)
      << err_;
}

// strip --strip-all leaves only the dynamic symbols, which cover none of the program's own
// functions: its frames are unnamed, and the module is not counted as symbolicated. Each address
// is named by the start of the function .eh_frame says holds it (issue 45, item 3): the addresses
// of one function are one row, in a form that says it has no name, never a neighbour's name.
TEST_F(ReleaseBuildTest, AStrippedBinaryWithoutItsDebugFileIsNotCountedAsSymbolicated) {
  fs::remove(debug_file());
  write_dump(stripped());
  auto s = symbolicate({});
  ASSERT_EQ(s.size(), 2u) << err_;
  const std::string prefix = "unnamed function at target+0x";
  ASSERT_EQ(s[1].func.rfind(prefix, 0), 0u) << s[1].func;
  ASSERT_EQ(s[0].func.rfind(prefix, 0), 0u) << s[0].func;
  EXPECT_NE(s[0].func, s[1].func);  // the caller is another function
  const uint64_t start = std::stoull(s[1].func.substr(prefix.size()), nullptr, 16);
  EXPECT_LE(start, facts_.leaf);
  EXPECT_GT(start + 4096, facts_.leaf);
  // Two addresses of the leaf's function: one function in the profile.
  {
    symtest::DumpFile d(dir_.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(module(stripped()));
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {kBias + facts_.leaf, kBias + facts_.inline_return});
    d.sample(1, 2'000'000, {kBias + start, kBias + facts_.inline_return});
    d.end(3'000'000);
    d.close();
  }
  ASSERT_EQ(
      symtest::run_symbolicate_binary({dir_.path("d.inprof"), "-o", dir_.path("o.json")}, &err_), 0)
      << err_;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir_.path("o.json"), &doc));
  const auto first = symtest::sample_stack(doc, 0, 0);
  const auto second = symtest::sample_stack(doc, 0, 1);
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(first[1].func, second[1].func);
  EXPECT_NE(err_.find("  none    " + stripped()), std::string::npos) << err_;
  EXPECT_NE(err_.find("no symbol covers any of its sampled addresses"), std::string::npos) << err_;
  EXPECT_NE(err_.find("0 of 1 modules in use symbolicated"), std::string::npos) << err_;
}

TEST_F(ReleaseBuildTest, BinariesFoundInABinaryDirOnAnotherMachine) {
  // Recorded at a path that does not exist here; the binary and its debug file sit elsewhere.
  fs::copy_file(debug_file(), dir_.path("bin/target.debug"));
  write_dump("/opt/shipped/app/target");
  expect_symbolicated(symbolicate({"--binary-dir", dir_.path("bin")}));
  EXPECT_NE(err_.find("dwarf   /opt/shipped/app/target"), std::string::npos) << err_;
}

TEST_F(ReleaseBuildTest, TheDebugFileAloneIsEnough) {
  std::string ids = dir_.path("debug/.build-id/" + build_id_.substr(0, 2));
  fs::create_directories(ids);
  fs::copy_file(debug_file(), ids + "/" + build_id_.substr(2) + ".debug");
  write_dump("/nowhere/target");
  expect_symbolicated(symbolicate({"--debug-dir", dir_.path("debug")}));
}

// A debuginfod server (here a minimal one in a child process) asked through libdebuginfod when
// DEBUGINFOD_URLS is set, as the last resort.
TEST_F(ReleaseBuildTest, DebugFileFromDebuginfod) {
  std::string body;
  {
    std::ifstream in(debug_file(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    body = ss.str();
  }
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string wanted = "GET /buildid/" + build_id_ + "/debuginfo ";
  pid_t server = fork();
  ASSERT_GE(server, 0);
  if (server == 0) {
    for (int i = 0; i < 20; ++i) {  // a few requests, then done
      int c = accept(listener, nullptr, nullptr);
      if (c < 0) _exit(0);
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        request.append(buffer, size_t(n));
      }
      std::string reply =
          request.rfind(wanted, 0) == 0
              ? "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n" + body
              : std::string(
                    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      close(c);
    }
    _exit(0);
  }
  close(listener);
  fs::remove(debug_file());  // only the server has it now
  write_dump(stripped());
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  setenv("DEBUGINFOD_URLS", url.c_str(), 1);
  setenv("DEBUGINFOD_CACHE_PATH", dir_.path("cache").c_str(), 1);
  auto s = symbolicate({});
  unsetenv("DEBUGINFOD_URLS");
  unsetenv("DEBUGINFOD_CACHE_PATH");
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  expect_symbolicated(s);
  EXPECT_NE(err_.find("(debuginfod)"), std::string::npos) << err_;
}

// Debian's debug files compress their DWARF sections. symbolicate inflates them once into an
// in-memory image that every libdw handle reads (debug_image.h); zstd too, which Debian 12's libdw
// cannot inflate itself. Both, on one thread and with the module split between threads by unit.
TEST_F(ReleaseBuildTest, CompressedDebugFilesZlibAndZstd) {
  std::string ids = dir_.path("debug/.build-id/" + build_id_.substr(0, 2));
  fs::create_directories(ids);
  const std::string by_id = ids + "/" + build_id_.substr(2) + ".debug";
  for (const char* kind : {"zlib", "zstd"}) {
    fs::remove(by_id);
    sh("objcopy --compress-debug-sections=" + std::string(kind) + " '" + debug_file() + "' '" +
       by_id + "'");
    write_dump(stripped());
    for (std::vector<std::string> jobs : {std::vector<std::string>{"-j", "1"},
                                          std::vector<std::string>{"-j", "2", "--split-at", "1"}}) {
      jobs.insert(jobs.begin(), {"--debug-dir", dir_.path("debug")});
      SCOPED_TRACE(std::string(kind) + " " + jobs[3]);
      expect_symbolicated(symbolicate(jobs));
    }
  }
}

// The section headers of an ELF file by name, and a section's bytes.
struct ElfSections {
  explicit ElfSections(int fd) : fd_(fd) {
    elf_version(EV_CURRENT);
    elf_ = elf_begin(fd_, ELF_C_READ, nullptr);
    size_t names = 0;
    if (!elf_ || elf_getshdrstrndx(elf_, &names) != 0) return;
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      const char* name = elf_strptr(elf_, names, shdr.sh_name);
      if (name) by_name[name] = {scn, shdr};
    }
  }
  ~ElfSections() {
    if (elf_) elf_end(elf_);
    close(fd_);
  }
  std::string bytes(const std::string& name) {
    auto it = by_name.find(name);
    if (it == by_name.end()) return {};
    Elf_Data* data = elf_rawdata(it->second.first, nullptr);
    return data && data->d_buf ? std::string(static_cast<char*>(data->d_buf), data->d_size) : "";
  }
  std::map<std::string, std::pair<Elf_Scn*, GElf_Shdr>> by_name;

 private:
  int fd_;
  Elf* elf_ = nullptr;
};

TEST_F(ReleaseBuildTest, DebugImageHoldsTheInflatedSectionsAndLeavesOutLocationLists) {
  using inprof::symbolicate::DebugImage;
  const std::string raw = dir_.path("raw.debug"), zlib = dir_.path("zlib.debug");
  sh("objcopy --decompress-debug-sections '" + debug_file() + "' '" + raw + "'");
  sh("objcopy --compress-debug-sections=zlib '" + raw + "' '" + zlib + "'");
  std::string why;
  EXPECT_EQ(DebugImage::plan(raw, &why), nullptr) << "nothing compressed: nothing to gain";
  EXPECT_EQ(why, "");
  std::unique_ptr<DebugImage> image = DebugImage::plan(zlib, &why);
  ASSERT_NE(image, nullptr) << why;
  ASSERT_GT(image->task_count(), 2u);  // at least .debug_info, .debug_abbrev, .debug_line
  for (size_t t = 0; t < image->task_count(); ++t) image->run_task(t);
  ASSERT_TRUE(image->finish(&why)) << why;

  ElfSections original(open(raw.c_str(), O_RDONLY | O_CLOEXEC));
  ElfSections inflated(fcntl(image->fd(), F_DUPFD_CLOEXEC, 0));
  ASSERT_EQ(original.by_name.size(), inflated.by_name.size());
  for (const char* name : {".debug_info", ".debug_abbrev", ".debug_line", ".debug_str"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(inflated.by_name.count(name));
    EXPECT_EQ(inflated.by_name[name].second.sh_flags & SHF_COMPRESSED, 0u);
    EXPECT_FALSE(original.bytes(name).empty());
    EXPECT_EQ(inflated.bytes(name), original.bytes(name));
  }
  ASSERT_TRUE(original.by_name.count(".debug_loclists")) << "-O2 code has location lists";
  EXPECT_EQ(inflated.by_name[".debug_loclists"].second.sh_type, uint32_t(SHT_NOBITS));
  // Everything else is where it was: the build-id note (read through the program headers too).
  EXPECT_EQ(inflated.bytes(".symtab"), original.bytes(".symtab"));
  EXPECT_EQ(build_id_of("/proc/self/fd/" + std::to_string(image->fd())), build_id_);
}

TEST_F(ReleaseBuildTest, DamagedCompressedSectionIsReportedNotTrusted) {
  using inprof::symbolicate::DebugImage;
  const std::string zlib = dir_.path("zlib.debug");
  sh("objcopy --compress-debug-sections=zlib '" + debug_file() + "' '" + zlib + "'");
  uint64_t offset = 0, size = 0;
  {
    ElfSections sections(open(zlib.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(sections.by_name.count(".debug_info"));
    offset = sections.by_name[".debug_info"].second.sh_offset;
    size = sections.by_name[".debug_info"].second.sh_size;
  }
  ASSERT_GT(size, 64u);
  {
    std::fstream f(zlib, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset + size / 2));
    const char junk[16] = {'\xff', 0, '\xff', 0, '\xff', 0, '\xff', 0};
    f.write(junk, sizeof junk);
  }
  std::string why;
  std::unique_ptr<DebugImage> image = DebugImage::plan(zlib, &why);
  ASSERT_NE(image, nullptr) << why;
  for (size_t t = 0; t < image->task_count(); ++t) image->run_task(t);
  EXPECT_FALSE(image->finish(&why));
  EXPECT_NE(why.find("do not inflate"), std::string::npos) << why;

  // symbolicate then leaves the file to libdw, which refuses it: no crash, the profile written.
  std::string ids = dir_.path("debug/.build-id/" + build_id_.substr(0, 2));
  fs::create_directories(ids);
  fs::copy_file(zlib, ids + "/" + build_id_.substr(2) + ".debug");
  write_dump(stripped());
  for (const char* jobs : {"1", "2"}) {
    auto s = symbolicate({"--debug-dir", dir_.path("debug"), "-j", jobs, "--split-at", "1"});
    EXPECT_EQ(s.size(), 2u) << err_;
  }
}

TEST(DebugImage, FilesItDoesNotRewrite) {
  using inprof::symbolicate::DebugImage;
  symtest::TempDir dir;
  std::string why;
  EXPECT_EQ(DebugImage::plan(dir.path("missing"), &why), nullptr);
  EXPECT_NE(why, "");
  for (const std::string& content :
       {std::string("not an ELF file at all, but long enough to be read "
                    "as a header of sixty-four bytes or more"),
        std::string{'\x7f', 'E', 'L', 'F', 2, 1, 1}}) {  // a 64-bit header, cut short
    std::ofstream(dir.path("f"), std::ios::binary | std::ios::trunc) << content;
    EXPECT_EQ(DebugImage::plan(dir.path("f"), &why), nullptr);
  }
  EXPECT_EQ(DebugImage::plan("/dev/zero", &why), nullptr);
  EXPECT_EQ(DebugImage::plan(dir.path(""), &why), nullptr);  // a directory
}

// Debian 12 ships libc's DWARF by build-id in libc6-dbg (/usr/lib/debug/.build-id/...).
TEST(LibcDebugSymbols, LibcFramesGetFunctionFileAndLineFromLibc6Dbg) {
  // libc's own qsort, not a sanitizer's interceptor of the same name.
  void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc_handle, nullptr);
  void* qsort_address = dlsym(libc_handle, "qsort");
  ASSERT_NE(qsort_address, nullptr);
  Dl_info info;
  ASSERT_NE(dladdr(qsort_address, &info), 0);
  std::string libc = fs::canonical(info.dli_fname);
  std::string id = build_id_of(libc);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(
      fs::exists("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"))
      << "libc's debug file is missing: install the Debian package libc6-dbg";
  struct Found {
    uint64_t bias = 0, low = UINT64_MAX, high = 0;
  } found;
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* data) {
        if (!i->dlpi_name || !std::strstr(i->dlpi_name, "libc.so.6")) return 0;
        auto* f = static_cast<Found*>(data);
        f->bias = i->dlpi_addr;
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          if (i->dlpi_phdr[k].p_type != PT_LOAD) continue;
          uint64_t a = i->dlpi_addr + i->dlpi_phdr[k].p_vaddr;
          f->low = std::min<uint64_t>(f->low, a & ~uint64_t{4095});
          f->high = std::max<uint64_t>(f->high, a + i->dlpi_phdr[k].p_memsz);
        }
        return 1;
      },
      &found);
  ASSERT_LT(found.low, found.high);
  ModuleRecord m;
  m.id = 1;
  m.start = found.low;
  m.end = found.high;
  m.load_bias = found.bias;
  m.path = libc;
  m.build_id = unhex(id);

  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(m);
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {reinterpret_cast<uintptr_t>(qsort_address) + 4});
    d.end(2'000'000);
    d.close();
  }
  std::string err;
  ASSERT_EQ(symtest::run_symbolicate_binary({dir.path("d.inprof"), "-o", dir.path("o.json")}, &err),
            0)
      << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("o.json"), &doc));
  auto s = symtest::sample_stack(doc, 0, 0);
  ASSERT_FALSE(s.empty()) << err;
  EXPECT_NE(s.back().func.find("qsort"), std::string::npos) << s.back().func;
  // A file and a line only DWARF can give: libc.so.6 itself has neither.
  EXPECT_NE(s.back().file.find(".c"), std::string::npos) << s.back().file;
  EXPECT_GT(s.back().line, 0);
  EXPECT_NE(err.find("dwarf   " + libc + " [" + id + "]"), std::string::npos) << err;
  EXPECT_NE(err.find("(build-id in /usr/lib/debug)"), std::string::npos) << err;
}

}  // namespace
