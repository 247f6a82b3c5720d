#include "test_support.h"

#include <elf.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "session/output_file.h"
#include "symbolicate.h"

namespace symtest {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

using namespace inprof::internal;

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/symbolicate-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

namespace {
// The symbolicate binary's default symbol cache ($XDG_CACHE_HOME/inprof) is a scratch directory
// of this test process: the tests neither read nor fill the user's.
struct ScratchCacheHome {
  TempDir dir;
  ScratchCacheHome() { setenv("XDG_CACHE_HOME", dir.path("cache").c_str(), 1); }
} g_scratch_cache_home;
}  // namespace

DumpFile::DumpFile(const std::string& path) {
  inprof::Status status;
  auto file = OutputFile::create(path, &status);
  if (!file) throw std::runtime_error(status.message());
  writer_ = DumpWriter::create(std::move(file), &status);
  if (!writer_) throw std::runtime_error(status.message());
}

DumpFile::~DumpFile() {
  if (writer_) (void)writer_->close();
}

void DumpFile::process(const ProcessRecord& r) { writer_->add(RecordType::kProcess, r); }
void DumpFile::module(const ModuleRecord& r) { writer_->add(RecordType::kModuleLoad, r); }
void DumpFile::module_image(uint64_t id, const std::vector<uint8_t>& bytes) {
  writer_->add(RecordType::kModuleImage, ModuleImageRecord{id, bytes});
}
void DumpFile::module_unload(uint64_t id, uint64_t time_ns) {
  writer_->add(RecordType::kModuleUnload, ModuleUnloadRecord{id, time_ns});
}
void DumpFile::thread_start(uint64_t tid, uint64_t time_ns, const std::string& name,
                            uint32_t flags) {
  writer_->add(RecordType::kThreadStart, ThreadRecord{tid, time_ns, flags, name});
}
void DumpFile::thread_name(uint64_t tid, uint64_t time_ns, const std::string& name) {
  writer_->add(RecordType::kThreadName, ThreadRecord{tid, time_ns, 0, name});
}
void DumpFile::thread_end(uint64_t tid, uint64_t time_ns) {
  writer_->add(RecordType::kThreadEnd, ThreadEndRecord{tid, time_ns});
}
void DumpFile::sample(uint64_t tid, uint64_t time_ns, const std::vector<uint64_t>& frames,
                      uint32_t flags, std::optional<uint64_t> cpu_delta_ns,
                      const std::vector<LeafCandidate>& candidates,
                      const std::vector<SampleLabel>& labels) {
  std::vector<uint8_t> payload;
  ByteWriter w(&payload);
  encode_sample(w, tid, time_ns, cpu_delta_ns, flags, frames, candidates, labels);
  writer_->add_payload(RecordType::kSample, w.view());
}
void DumpFile::jit_map(const std::string& text) {
  writer_->add(RecordType::kJitMap, JitMapRecord{text});
}
void DumpFile::category(uint32_t id, uint8_t color, const std::string& name) {
  writer_->add(RecordType::kCategory, CategoryRecord{id, color, name});
}
void DumpFile::marker_schema(const MarkerSchemaRecord& r) {
  writer_->add(RecordType::kMarkerSchema, r);
}
void DumpFile::marker(const MarkerRecord& r) {
  std::vector<MarkerValueView> values;
  for (const MarkerValue& v : r.values) values.push_back({v.kind, v.integer, v.decimal, v.string});
  std::vector<uint8_t> payload;
  ByteWriter w(&payload);
  encode_marker(w, r.tid, r.category, r.phase, r.start_ns, r.end_ns, r.name, r.type, values);
  writer_->add_payload(RecordType::kMarker, w.view());
}
void DumpFile::string(uint64_t id, const std::string& text) {
  writer_->add(RecordType::kString, StringRecord{id, text});
}
void DumpFile::counter(uint32_t id, uint32_t category, const std::string& name,
                       const std::string& description) {
  writer_->add(RecordType::kCounter, CounterRecord{id, category, name, description});
}
void DumpFile::counter_sample(uint32_t id, uint64_t time_ns, int64_t value) {
  writer_->add(RecordType::kCounterSample, CounterSampleRecord{id, time_ns, value});
}
void DumpFile::pause(uint64_t time_ns) { writer_->add(RecordType::kPause, PauseRecord{time_ns}); }
void DumpFile::resume(uint64_t time_ns) { writer_->add(RecordType::kResume, PauseRecord{time_ns}); }
void DumpFile::repeat(uint64_t tid, uint64_t time_ns, std::optional<uint64_t> cpu_delta_ns) {
  writer_->add(RecordType::kSampleRepeat, SampleRepeatRecord{tid, time_ns, cpu_delta_ns});
}
void DumpFile::stats(const StatsRecord& r) { writer_->add(RecordType::kStats, r); }
void DumpFile::allocation_stats(const AllocationStatsRecord& r) {
  writer_->add(RecordType::kAllocationStats, r);
}
void DumpFile::end(uint64_t time_ns) { writer_->add(RecordType::kEnd, EndRecord{time_ns}); }
void DumpFile::flush() {
  if (!writer_->flush().ok()) throw std::runtime_error("dump flush failed");
}
void DumpFile::close() {
  if (!writer_->close().ok()) throw std::runtime_error("dump close failed");
}

ProcessRecord test_process() {
  ProcessRecord p;
  p.pid = 4242;
  p.start_unix_ns = 1'700'000'000'000'000'000ull;
  p.interval_ns = 1'000'000;
  p.arch = "x86_64";
  p.os = "linux";
  p.executable = self_path();
  p.command_line = {p.executable, "--flag", "value"};
  p.library_version = "0.1.0";
  return p;
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "/proc/self/exe" : p.string();
}

namespace {

struct SelfInfo {
  bool found = false;
  ModuleRecord record;
};

int find_self(struct dl_phdr_info* info, size_t, void* arg) {
  auto* self = static_cast<SelfInfo*>(arg);
  // The first object reported is the main program.
  uint64_t lo = UINT64_MAX, hi = 0, lo_offset = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      uint64_t start = ph.p_vaddr & ~uint64_t(ph.p_align ? ph.p_align - 1 : 0);
      if (start < lo) {
        lo = start;
        lo_offset = ph.p_offset & ~uint64_t(ph.p_align ? ph.p_align - 1 : 0);
      }
      hi = std::max<uint64_t>(hi, ph.p_vaddr + ph.p_memsz);
    } else if (ph.p_type == PT_NOTE) {
      const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
      const uint8_t* end = p + ph.p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
        const uint8_t* name = p + sizeof(ElfW(Nhdr));
        const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            std::memcmp(name, "GNU", 4) == 0 && desc + nh->n_descsz <= end) {
          self->record.build_id.assign(desc, desc + nh->n_descsz);
        }
        p = desc + ((nh->n_descsz + 3) & ~3u);
      }
    }
  }
  self->record.start = info->dlpi_addr + lo;
  self->record.end = info->dlpi_addr + ((hi + 4095) & ~uint64_t(4095));
  self->record.load_bias = info->dlpi_addr;
  self->record.file_offset = lo_offset;
  self->found = true;
  return 1;  // stop: only the first object
}

std::string read_stream(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

}  // namespace

ModuleRecord self_module(uint64_t id) {
  SelfInfo self;
  dl_iterate_phdr(find_self, &self);
  if (!self.found) throw std::runtime_error("dl_iterate_phdr found nothing");
  self.record.id = id;
  self.record.time_ns = 0;
  self.record.flags = kModuleMainExecutable;
  self.record.path = self_path();
  return self.record;
}

int symbolicate_in_process(const std::string& dump, const std::string& out, std::string* err) {
  std::FILE* f = std::tmpfile();
  inprof::symbolicate::RunOptions options;
  options.dump_path = dump;
  options.output_path = out;
  int rc = inprof::symbolicate::run_symbolicate(options, f);
  if (err) *err = read_stream(f);
  std::fclose(f);
  return rc;
}

int run_symbolicate_binary(const std::vector<std::string>& args, std::string* err,
                           int timeout_seconds) {
  TempDir dir;
  std::string err_path = dir.path("stderr");
  std::string cmd =
      "timeout " + std::to_string(timeout_seconds) + " " + shell_quote(SYMBOLICATE_BINARY);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >/dev/null 2>" + shell_quote(err_path);
  int status = std::system(cmd.c_str());
  if (err) {
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool load_json(const std::string& path, rapidjson::Document* doc) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  doc->Parse(ss.str().c_str());
  return !doc->HasParseError() && doc->IsObject();
}

namespace {

using rapidjson::Value;

class Checker {
 public:
  explicit Checker(std::vector<std::string>& problems) : problems_(problems) {}

  void fail(const std::string& what) { problems_.push_back(what); }

  // The table's length, after checking that every listed column has it.
  int64_t table(const Value& parent, const char* name, std::initializer_list<const char*> cols) {
    if (!parent.HasMember(name) || !parent[name].IsObject()) {
      fail(std::string("missing table ") + name);
      return -1;
    }
    const Value& t = parent[name];
    if (!t.HasMember("length") || !t["length"].IsUint64()) {
      fail(std::string(name) + ".length missing");
      return -1;
    }
    auto length = static_cast<int64_t>(t["length"].GetUint64());
    for (const char* c : cols) {
      if (!t.HasMember(c) || !t[c].IsArray()) {
        fail(std::string(name) + "." + c + " missing");
      } else if (static_cast<int64_t>(t[c].Size()) != length) {
        fail(std::string(name) + "." + c + " has the wrong length");
      }
    }
    return length;
  }

  // Every entry of column `col` is an index below `limit` (or null / -1 where allowed).
  void indices(const Value& t, const char* table_name, const char* col, int64_t limit,
               bool nullable, bool minus_one = false) {
    if (!t.HasMember(col) || !t[col].IsArray()) return;
    for (const Value& v : t[col].GetArray()) {
      if (v.IsNull() && nullable) continue;
      if (v.IsInt64() && v.GetInt64() == -1 && minus_one) continue;
      if (!v.IsInt64() || v.GetInt64() < 0 || v.GetInt64() >= limit) {
        fail(std::string(table_name) + "." + col + " has an out-of-range index");
        return;
      }
    }
  }

 private:
  std::vector<std::string>& problems_;
};

// Equality of two null-or-integer cells. (rapidjson 1.1's operator== recurses forever under
// C++20's rewritten comparisons, so it is not used.)
bool same(const Value& a, const Value& b) {
  if (a.IsNull() || b.IsNull()) return a.IsNull() && b.IsNull();
  return a.IsInt64() && b.IsInt64() && a.GetInt64() == b.GetInt64();
}

}  // namespace

std::vector<std::string> check_structure(const rapidjson::Document& doc) {
  std::vector<std::string> problems;
  Checker c(problems);
  if (!doc.IsObject()) return {"not an object"};
  for (const char* k :
       {"meta", "libs", "shared", "threads", "pages", "counters", "profilerOverhead"}) {
    if (!doc.HasMember(k)) problems.push_back(std::string("missing ") + k);
  }
  if (!problems.empty()) return problems;
  const Value& meta = doc["meta"];
  if (!meta.HasMember("preprocessedProfileVersion") ||
      !meta["preprocessedProfileVersion"].IsInt() ||
      meta["preprocessedProfileVersion"].GetInt() != 66) {
    c.fail("preprocessedProfileVersion is not 66");
  }
  if (!meta.HasMember("symbolicated") || !meta["symbolicated"].IsTrue()) {
    c.fail("not symbolicated");
  }
  for (const char* k : {"startTime", "interval", "product", "categories", "markerSchema",
                        "sampleUnits", "processType", "stackwalk"}) {
    if (!meta.HasMember(k)) c.fail(std::string("meta.") + k + " missing");
  }
  if (!problems.empty()) return problems;
  int64_t categories = meta["categories"].Size();
  const Value& sh = doc["shared"];
  auto strings = static_cast<int64_t>(sh["stringArray"].Size());
  int64_t libs = doc["libs"].Size();
  int64_t sources = c.table(
      sh, "sources", {"id", "filename", "startLine", "startColumn", "sourceMapURL", "content"});
  int64_t resources = c.table(sh, "resourceTable", {"lib", "name", "host", "type"});
  int64_t funcs = c.table(sh, "funcTable",
                          {"name", "isJS", "relevantForJS", "resource", "source", "lineNumber",
                           "columnNumber", "originalLocation"});
  int64_t symbols = c.table(sh, "nativeSymbols", {"libIndex", "address", "name", "functionSize"});
  int64_t frames = c.table(sh, "frameTable",
                           {"func", "address", "inlineDepth", "category", "subcategory",
                            "nativeSymbol", "innerWindowID", "line", "column", "originalLocation"});
  int64_t stacks = c.table(sh, "stackTable", {"frame", "prefixOffset"});
  c.table(sh, "sourceLocationTable", {"source", "line", "column"});
  if (!problems.empty()) return problems;
  c.indices(sh["sources"], "sources", "filename", strings, false);
  c.indices(sh["resourceTable"], "resourceTable", "lib", libs, false);
  c.indices(sh["resourceTable"], "resourceTable", "name", strings, false);
  c.indices(sh["funcTable"], "funcTable", "name", strings, false);
  c.indices(sh["funcTable"], "funcTable", "resource", resources, false, true);
  c.indices(sh["funcTable"], "funcTable", "source", sources, true);
  c.indices(sh["nativeSymbols"], "nativeSymbols", "libIndex", libs, false);
  c.indices(sh["nativeSymbols"], "nativeSymbols", "name", strings, false);
  c.indices(sh["frameTable"], "frameTable", "func", funcs, false);
  c.indices(sh["frameTable"], "frameTable", "nativeSymbol", symbols, true);
  c.indices(sh["frameTable"], "frameTable", "category", categories, false);
  c.indices(sh["stackTable"], "stackTable", "frame", frames, false);
  const Value& ft = sh["frameTable"];
  for (int64_t i = 0; i < frames; ++i) {
    if (!ft["subcategory"][i].IsUint()) {
      c.fail("frameTable.subcategory not a number");
      break;
    }
    const Value& cat = meta["categories"][ft["category"][i].GetUint()];
    if (ft["subcategory"][i].GetUint() >= cat["subcategories"].Size()) {
      c.fail("frameTable.subcategory out of range");
      break;
    }
  }
  const Value& st = sh["stackTable"];
  for (int64_t i = 0; i < stacks; ++i) {
    const Value& off = st["prefixOffset"][i];
    if (!off.IsInt64() || off.GetInt64() < 0 || off.GetInt64() > i) {
      c.fail("stackTable.prefixOffset[" + std::to_string(i) + "] out of range");
      break;
    }
    // An inlined frame sits on the frame it was inlined into.
    uint32_t f = st["frame"][i].GetUint();
    int64_t depth = ft["inlineDepth"][f].GetInt64();
    if (depth > 0) {
      int64_t parent = i - off.GetInt64();
      uint32_t pf = st["frame"][parent].GetUint();
      if (off.GetInt64() == 0 || ft["inlineDepth"][pf].GetInt64() != depth - 1 ||
          !same(ft["address"][pf], ft["address"][f]) ||
          !same(ft["nativeSymbol"][pf], ft["nativeSymbol"][f])) {
        c.fail("inline frame " + std::to_string(f) + " is not on its outer frame");
        break;
      }
    }
  }
  for (const Value& t : doc["threads"].GetArray()) {
    if (!t["pid"].IsString()) c.fail("pid is not a string");
    if (!t["tid"].IsNumber()) c.fail("tid is not a number");
    bool cpu = t["samples"].HasMember("threadCPUDelta");
    int64_t n = cpu ? c.table(t, "samples", {"stack", "timeDeltas", "threadCPUDelta"})
                    : c.table(t, "samples", {"stack", "timeDeltas"});
    c.table(t, "markers", {"name", "startTime", "endTime", "phase", "category", "data"});
    if (n < 0) continue;
    c.indices(t["samples"], "samples", "stack", stacks, true);
    for (const Value& d : t["samples"]["timeDeltas"].GetArray()) {
      if (!d.IsNumber() || d.GetDouble() < 0) c.fail("negative time delta");
    }
  }
  return problems;
}

int64_t sample_stack_index(const rapidjson::Document& doc, size_t thread, size_t sample) {
  const Value& s = doc["threads"][static_cast<rapidjson::SizeType>(thread)]["samples"]["stack"]
                      [static_cast<rapidjson::SizeType>(sample)];
  return s.IsNull() ? -1 : s.GetInt64();
}

std::vector<FrameView> sample_stack(const rapidjson::Document& doc, size_t thread, size_t sample) {
  const Value& sh = doc["shared"];
  const Value& strings = sh["stringArray"];
  const Value& ft = sh["frameTable"];
  const Value& fn = sh["funcTable"];
  std::vector<FrameView> out;
  int64_t stack = sample_stack_index(doc, thread, sample);
  while (stack >= 0) {
    auto s = static_cast<rapidjson::SizeType>(stack);
    uint32_t f = sh["stackTable"]["frame"][s].GetUint();
    uint32_t func = ft["func"][f].GetUint();
    FrameView v;
    v.func = strings[fn["name"][func].GetUint()].GetString();
    if (!fn["source"][func].IsNull()) {
      v.file =
          strings[sh["sources"]["filename"][fn["source"][func].GetUint()].GetUint()].GetString();
    }
    if (!fn["lineNumber"][func].IsNull()) v.func_line = fn["lineNumber"][func].GetInt64();
    if (!ft["line"][f].IsNull()) v.line = ft["line"][f].GetInt64();
    v.address = ft["address"][f].GetInt64();
    v.inline_depth = ft["inlineDepth"][f].GetInt64();
    if (ft["category"][f].IsUint()) {
      v.category = doc["meta"]["categories"][ft["category"][f].GetUint()]["name"].GetString();
    }
    int64_t res = fn["resource"][func].GetInt64();
    if (res >= 0) {
      uint32_t lib = sh["resourceTable"]["lib"][static_cast<rapidjson::SizeType>(res)].GetUint();
      v.lib = doc["libs"][lib]["name"].GetString();
    }
    out.push_back(v);
    int64_t off = sh["stackTable"]["prefixOffset"][s].GetInt64();
    stack = off == 0 ? -1 : stack - off;
  }
  return {out.rbegin(), out.rend()};
}

std::vector<FrameView> symbolicate_first_stack(const std::vector<std::string>& args,
                                               const std::string& json, std::string* err,
                                               std::string* why) {
  why->clear();
  if (run_symbolicate_binary(args, err) != 0) {
    *why = "symbolicate failed: " + *err;
    return {};
  }
  rapidjson::Document doc;
  if (!load_json(json, &doc)) {
    *why = "no profile in " + json;
    return {};
  }
  const std::vector<std::string> wrong = check_structure(doc);
  if (!wrong.empty()) {
    *why = "wrong structure: " + wrong.front();
    return {};
  }
  return sample_stack(doc, 0, 0);
}

}  // namespace symtest
