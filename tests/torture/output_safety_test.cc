// What happens to the dump when things go wrong outside the profiler: the process is killed
// mid-profile, the disk fills up, the output path is unwritable or booby-trapped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <inprof/profiler.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dump/dump_reader.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using inprof::Options;
using inprof::Profiler;
using inprof::Status;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "inprof-output-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs a program; returns its wait status. stdout and stderr go to files when given.
int run(const std::vector<std::string>& argv, const std::string& out_file = "",
        const std::string& err_file = "", pid_t* started = nullptr) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!out_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
  }
  if (!err_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  if (started) {
    *started = pid;
    return 0;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

uint64_t file_size(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

struct Counted : inprof::internal::DumpVisitor {
  uint64_t samples = 0, repeats = 0, markers = 0;
  void on_sample(const inprof::internal::SampleRecord&) override { ++samples; }
  void on_sample_repeat(const inprof::internal::SampleRepeatRecord&) override { ++repeats; }
  void on_marker(const inprof::internal::MarkerRecord&) override { ++markers; }
};

// SIGKILL mid-profile: the dump holds every chunk written before the kill, reads back with the
// cut reported, and converts to a valid profile holding every sample it read.
TEST(OutputSafety, KilledMidProfileLeavesAReadableDump) {
  TempDir dir;
  const std::string dump = dir.path("killed.inprof");
  pid_t pid = 0;
  ASSERT_EQ(run({KILLED_CHILD_BINARY, dump}, dir.path("child.out"), dir.path("child.err"), &pid),
            0);
  // Whatever fails below, the child does not outlive the test.
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } reaper{pid};
  // Wait until the writer has flushed a few chunks (the header alone is 16 bytes; it flushes at
  // least every 500 ms). The bound only keeps a broken child from hanging the test.
  int growths = 0;
  uint64_t last = 0;
  for (int i = 0; i < 6000 && growths < 4; ++i) {
    const uint64_t size = file_size(dump);
    if (size > 16 && size != last) ++growths;
    last = size;
    int status;
    ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0)
        << "the child ended early: " << read_text(dir.path("child.err"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  reaper.pid = 0;
  ASSERT_TRUE(growths >= 4) << "the dump never grew: " << read_text(dir.path("child.err"));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  Counted counted;
  const auto read = inprof::internal::read_dump_file(dump, counted);
  ASSERT_TRUE(read.ok) << read.error;
  EXPECT_FALSE(read.complete);  // no end record: the session never stopped
  EXPECT_GT(counted.samples, 0u);
  EXPECT_GT(counted.markers, 0u);
  for (const auto& w : read.warnings) {
    // The only damage a kill can do is a cut-off last chunk.
    EXPECT_NE(w.find("cut short"), std::string::npos) << w;
  }

  // symbolicate: exit 0 (documented: warnings possible), says the session did not stop cleanly.
  const std::string json = dir.path("killed.json");
  const int sym = run({SYMBOLICATE_BINARY, dump, "-o", json}, "", dir.path("sym.err"));
  const std::string sym_err = read_text(dir.path("sym.err"));
  ASSERT_TRUE(WIFEXITED(sym) && WEXITSTATUS(sym) == 0) << sym_err;
  EXPECT_NE(sym_err.find("warning: the dump has no end record"), std::string::npos) << sym_err;
  const int check = run({PROFILE_CHECK_BINARY, json}, dir.path("check.out"), dir.path("check.err"));
  ASSERT_TRUE(WIFEXITED(check) && WEXITSTATUS(check) == 0) << read_text(dir.path("check.out"));

  // Every complete sample record made it into the profile, beside those symbolicate adds (in
  // long sleeps, for CPU run unseen: Profile Info counts them).
  rapidjson::Document doc;
  doc.Parse(read_text(json).c_str());
  ASSERT_FALSE(doc.HasParseError());
  uint64_t json_samples = 0;
  for (const auto& thread : doc["threads"].GetArray()) {
    json_samples += thread["samples"]["length"].GetUint64();
  }
  uint64_t added = UINT64_MAX;
  for (const auto& e : doc["meta"]["extra"][0]["entries"].GetArray()) {
    if (std::string(e["label"].GetString()) ==
        "Samples added in long sleeps and for CPU run unseen") {
      added = e["value"].GetUint64();
    }
  }
  ASSERT_NE(added, UINT64_MAX) << "Profile Info does not count the samples symbolicate added";
  EXPECT_EQ(json_samples, counted.samples + counted.repeats + added);
}

Options options_for(const std::string& path) {
  Options o;
  o.output_path = path;
  o.interval = std::chrono::microseconds(200);
  return o;
}

// Keeps the calling thread busy for `cpu` of CPU time, so samples (and dump bytes) pile up.
void busy_for(std::chrono::milliseconds cpu) {
  timespec start{}, now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  volatile uint64_t x = 1;
  do {
    for (int i = 0; i < 10000; ++i) x = x * 3 + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 <
           cpu.count());
}

// A write that fails mid-session (a full disk: here the file-size limit, which fails write(2)
// the same way, with EFBIG instead of ENOSPC) is reported by stop(), not ignored.
TEST(OutputSafety, FailedWriteIsReportedByStop) {
  TempDir dir;
  const std::string dump = dir.path("full.inprof");
  struct sigaction ignore = {}, previous = {};
  ignore.sa_handler = SIG_IGN;  // the limit also raises SIGXFSZ, which would kill the test
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &previous), 0);
  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 64;  // room for the header, not for the first chunk
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);

  const Status started = Profiler::start(options_for(dump));
  Status stopped;
  if (started.ok()) {
    busy_for(std::chrono::milliseconds(200));
    stopped = Profiler::stop();
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  sigaction(SIGXFSZ, &previous, nullptr);

  ASSERT_TRUE(started.ok()) << started.message();
  EXPECT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.code(), Status::Code::kOutputError);
  EXPECT_NE(stopped.message().find(dump), std::string::npos) << stopped.message();
  EXPECT_NE(stopped.message().find("File too large"), std::string::npos) << stopped.message();
  EXPECT_FALSE(Profiler::is_running());
}

// A device such as /dev/full is not a dump file: start() refuses it rather than write into it.
TEST(OutputSafety, RefusesADeviceAsOutput) {
  const Status s = Profiler::start(options_for("/dev/full"));
  EXPECT_EQ(s.code(), Status::Code::kOutputError);
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
  EXPECT_FALSE(Profiler::is_running());
}

// Paths that cannot be created are reported by start() (root ignores permission bits, so these
// fail for reasons that hold for every user).
TEST(OutputSafety, UnwritablePathsAreReportedByStart) {
  TempDir dir;
  std::ofstream(dir.path("plain-file")) << "x";
  fs::create_directory(dir.path("a-directory"));
  for (const std::string& path : {dir.path("plain-file/x.inprof"), dir.path("a-directory"),
                                  dir.path("missing-dir/x.inprof")}) {
    const Status s = Profiler::start(options_for(path));
    EXPECT_EQ(s.code(), Status::Code::kOutputError) << path;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_FALSE(Profiler::is_running());
  }
}

// A symbolic link planted at the output path is never followed: start() fails and the file it
// points to keeps its content (or is not created).
TEST(OutputSafety, PlantedSymlinkIsNotFollowed) {
  TempDir dir;
  const std::string victim = dir.path("victim");
  std::ofstream(victim) << "precious";
  const std::string dump = dir.path("out.inprof");
  fs::create_symlink(victim, dump);
  Status s = Profiler::start(options_for(dump));
  EXPECT_EQ(s.code(), Status::Code::kOutputError);
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  EXPECT_EQ(read_text(victim), "precious");

  const std::string dangling = dir.path("dangling.inprof");
  fs::create_symlink(dir.path("would-be-created"), dangling);
  s = Profiler::start(options_for(dangling));
  EXPECT_EQ(s.code(), Status::Code::kOutputError);
  EXPECT_FALSE(fs::exists(dir.path("would-be-created")));
  EXPECT_FALSE(Profiler::is_running());
}

// The dump is private (0600) even when it replaces an existing world-readable file.
TEST(OutputSafety, DumpIsCreatedPrivate) {
  TempDir dir;
  const std::string fresh = dir.path("fresh.inprof");
  const std::string existing = dir.path("existing.inprof");
  std::ofstream(existing) << "old";
  ASSERT_EQ(chmod(existing.c_str(), 0644), 0);
  const mode_t old_umask = umask(0);  // the library must not rely on the umask
  for (const std::string& path : {fresh, existing}) {
    ASSERT_TRUE(Profiler::start(options_for(path)).ok());
    ASSERT_TRUE(Profiler::stop().ok());
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
  }
  umask(old_umask);
}

}  // namespace
