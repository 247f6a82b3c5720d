// Helpers shared by the symbolicate tests: writing dumps, describing the test executable as a
// module, running the symbolicate binary and inspecting the JSON it writes.
#ifndef INPROF_TESTS_SYMBOLICATE_TEST_SUPPORT_H_
#define INPROF_TESTS_SYMBOLICATE_TEST_SUPPORT_H_

#include <rapidjson/document.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dump/dump_records.h"
#include "dump/dump_writer.h"

namespace symtest {

constexpr uint64_t kMs = 1'000'000;

// A whole file's bytes ("" if it cannot be read); a file written with exactly `bytes`.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// A scratch directory removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// Writes a dump record by record. Each flush() ends a chunk (one zstd frame).
class DumpFile {
 public:
  explicit DumpFile(const std::string& path);
  ~DumpFile();

  void process(const inprof::internal::ProcessRecord& r);
  void module(const inprof::internal::ModuleRecord& r);
  void module_unload(uint64_t id, uint64_t time_ns);
  void module_image(uint64_t id, const std::vector<uint8_t>& bytes);
  void thread_start(uint64_t tid, uint64_t time_ns, const std::string& name, uint32_t flags = 0);
  void thread_name(uint64_t tid, uint64_t time_ns, const std::string& name);
  void thread_end(uint64_t tid, uint64_t time_ns);
  void sample(uint64_t tid, uint64_t time_ns, const std::vector<uint64_t>& frames,
              uint32_t flags = 0, std::optional<uint64_t> cpu_delta_ns = std::nullopt,
              const std::vector<inprof::internal::LeafCandidate>& candidates = {},
              const std::vector<inprof::internal::SampleLabel>& labels = {});
  void repeat(uint64_t tid, uint64_t time_ns, std::optional<uint64_t> cpu_delta_ns = std::nullopt);
  void stats(const inprof::internal::StatsRecord& r);
  void allocation_stats(const inprof::internal::AllocationStatsRecord& r);
  void category(uint32_t id, uint8_t color, const std::string& name);
  void marker_schema(const inprof::internal::MarkerSchemaRecord& r);
  void marker(const inprof::internal::MarkerRecord& r);  // through encode_marker, as the library
  void string(uint64_t id, const std::string& text);
  void counter(uint32_t id, uint32_t category, const std::string& name,
               const std::string& description = {});
  void counter_sample(uint32_t id, uint64_t time_ns, int64_t value);
  void pause(uint64_t time_ns);
  void resume(uint64_t time_ns);
  void jit_map(const std::string& text);  // one piece of /tmp/perf-<pid>.map
  void end(uint64_t time_ns);
  void flush();
  void close();

 private:
  std::unique_ptr<inprof::internal::DumpWriter> writer_;
};

// A typical process record (pid 4242, x86_64, 1 ms interval).
inprof::internal::ProcessRecord test_process();

// The test executable as the dump's module record: its real load address, bias and build-id.
inprof::internal::ModuleRecord self_module(uint64_t id = 1);

// The executable's real path (readlink /proc/self/exe).
std::string self_path();

// Runs `symbolicate` in-process (run_symbolicate). Returns its exit status; stderr text in *err.
int symbolicate_in_process(const std::string& dump, const std::string& out, std::string* err);

// Runs the built symbolicate binary with `args` (shell-quoted here), under a time limit that only
// catches a hang, just inside ctest's 300 s for these tests (so the failure says what hung): a
// TSan build reading this test's own debug information on a loaded machine took more than 60 s
// (IncrementalReader.SymbolicateKeepsEverySampleOfTheCompleteChunks, beside other test loops),
// where it takes seconds alone. Returns the exit status (124 on timeout); stderr text in *err.
int run_symbolicate_binary(const std::vector<std::string>& args, std::string* err,
                           int timeout_seconds = 280);

bool load_json(const std::string& path, rapidjson::Document* doc);

// Structural checks on a processed profile: columns match lengths, every index is in range,
// stack prefixes come first. Returns the problems found (empty: fine).
std::vector<std::string> check_structure(const rapidjson::Document& doc);

// A frame as the viewer would list it.
struct FrameView {
  std::string func;
  std::string file;        // funcTable.source's filename, "" if none
  int64_t func_line = -1;  // funcTable.lineNumber, -1 if null
  int64_t line = -1;       // frameTable.line, -1 if null
  int64_t address = -1;
  int64_t inline_depth = 0;
  std::string lib;       // libs[resourceTable.lib].name, "" if none
  std::string category;  // meta.categories[frameTable.category].name
};

// The stack of sample `sample` of thread `thread`, root first. Empty for a null stack.
std::vector<FrameView> sample_stack(const rapidjson::Document& doc, size_t thread, size_t sample);
int64_t sample_stack_index(const rapidjson::Document& doc, size_t thread, size_t sample);
// The symbolicate binary run with `args` (its output to `json`), and the stack of thread 0's
// first sample in the profile it wrote. Empty, with what went wrong in `*why`, where it failed,
// its output did not load, or its structure is wrong.
std::vector<FrameView> symbolicate_first_stack(const std::vector<std::string>& args,
                                               const std::string& json, std::string* err,
                                               std::string* why);

}  // namespace symtest

#endif  // INPROF_TESTS_SYMBOLICATE_TEST_SUPPORT_H_
