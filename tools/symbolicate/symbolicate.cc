#include "symbolicate.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "convert/process_merge.h"
#include "convert/profile_builder.h"
#include "convert/profile_converter.h"
#include "diagnostics.h"
#include "dump/dump_reader.h"
#include "read/dump_file_check.h"
#include "read/dump_file_read.h"
#include "read/dump_set.h"
#include "read/profile_model.h"
#include "symbolize/module_symbolizer.h"
#include "write/gzip_stream.h"

namespace inprof::symbolicate {
namespace {

int fail(std::FILE* err, const std::string& message) {
  std::fprintf(err, "symbolicate: error: %s\n", message.c_str());
  return kExitError;
}

// Up to three of `paths`, comma-separated, and "..." if there are more: a run's warning names a
// few of the dumps it counts.
std::string first_few(const std::vector<std::string>& paths) {
  std::string some;
  for (size_t i = 0; i < paths.size() && i < 3; ++i) some += (i ? ", " : "") + paths[i];
  return paths.size() > 3 ? some + ", ..." : some;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

const char* status_name(ModuleReport::Status s) {
  switch (s) {
    case ModuleReport::kDwarf:
      return "dwarf  ";
    case ModuleReport::kSymbolsOnly:
      return "symbols";
    default:
      return "none   ";
  }
}

// The per-module summary: one line per module that samples point into.
void print_module_summary(const ConversionSummary& summary, Diagnostics& diag) {
  size_t dwarf = 0, symbols = 0, none = 0;
  for (const ModuleReport& r : summary.modules) {
    (r.status == ModuleReport::kDwarf         ? dwarf
     : r.status == ModuleReport::kSymbolsOnly ? symbols
                                              : none)++;
  }
  diag.info("modules: " + std::to_string(dwarf) + " with debug info, " + std::to_string(symbols) +
            " with ELF symbols only, " + std::to_string(none) + " not symbolicated");
  for (const ModuleReport& r : summary.modules) {
    std::string line = std::string("  ") + status_name(r.status) + " " + r.path + " [" +
                       (r.build_id.empty() ? "no build-id" : r.build_id) + "] " +
                       std::to_string(r.addresses) + " addresses: ";
    if (r.status == ModuleReport::kNone) {
      line += r.detail;
    } else {
      line += r.source + " (" + r.detail + ")";
      for (const std::string& why : r.rejected) line += "; not used: " + why;
    }
    if (r.unnamed_frames) {
      // A module with no names at all has said why already.
      line += "; " + std::to_string(r.unnamed_frames) + " frame" +
              (r.unnamed_frames == 1 ? "" : "s") + " left as module+0x...";
      if (r.status != ModuleReport::kNone || r.unnamed_why == "--no-symbols") {
        line += " (" + r.unnamed_why + ")";
      }
    }
    diag.info(line);
  }
  if (summary.unmapped_frames) {
    diag.info("  " + std::to_string(summary.unmapped_frames) +
              (summary.unmapped_frames == 1 ? " frame address" : " frame addresses") +
              " in no module left as 0x... (no module was loaded there at the sample's time, "
              "and no JIT map names them)");
  }
}

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, bool enabled) : out_(out), enabled_(enabled) {}
  // Ends the bar's line, so that later messages start on their own.
  void finish() {
    if (shown_) std::fprintf(out_, "\n");
    shown_ = false;
    enabled_ = false;
  }
  void update(size_t done, size_t total) {
    // Only for work that takes a while: small dumps print nothing.
    if (!enabled_ || total < 20000) return;
    constexpr int kWidth = 30;
    int filled = static_cast<int>(kWidth * done / total);
    std::fprintf(out_, "\rsymbolicate: symbolizing [%.*s%*s] %zu/%zu addresses", filled,
                 "##############################", kWidth - filled, "", done, total);
    std::fflush(out_);
    shown_ = true;
  }

 private:
  std::FILE* out_;
  bool enabled_;
  bool shown_ = false;
};

// Adds one process's conversion summary to the run's.
void add_summary(ConversionSummary& total, ConversionSummary part) {
  total.modules_used += part.modules_used;
  total.modules_symbolicated += part.modules_symbolicated;
  total.leaf_callers_inserted += part.leaf_callers_inserted;
  total.jit_frames += part.jit_frames;
  total.unmapped_frames += part.unmapped_frames;
  total.unique_addresses += part.unique_addresses;
  total.symbolize_seconds += part.symbolize_seconds;
  total.symbolize_cpu_seconds += part.symbolize_cpu_seconds;
  total.threads = std::max(total.threads, part.threads);
  total.cache_hits += part.cache_hits;
  total.cache_indexed += part.cache_indexed;
  total.modules_opened += part.modules_opened;
  total.cache_misses += part.cache_misses;
  for (ModuleReport& m : part.modules) total.modules.push_back(std::move(m));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The process's CPU time so far, all threads: unlike wall time it barely depends on what else
// the machine is running.
double cpu_seconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Each lib's frame addresses, sorted: the addresses the profile holds, which alone may prove
// that a source file is the profile's (serve/symbol_server.h).
std::vector<std::vector<uint64_t>> frame_addresses_by_lib(const ProfileBuilder& b) {
  std::vector<std::vector<uint64_t>> by_lib(b.libs().size());
  const FrameTable& frames = b.frames();
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!frames.address[i]) continue;
    const std::optional<ResourceIndex> resource = b.funcs().resource[raw(frames.func[i])];
    if (!resource) continue;
    by_lib[raw(b.resources().lib[raw(*resource)])].push_back(*frames.address[i]);
  }
  for (std::vector<uint64_t>& v : by_lib) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return by_lib;
}

// Wall and CPU time since a phase of the run began.
class Stopwatch {
 public:
  struct Time {
    double seconds = 0, cpu = 0;
  };
  Time elapsed() const { return {seconds_since(wall_start_), cpu_seconds() - cpu_start_}; }

 private:
  std::chrono::steady_clock::time_point wall_start_ = std::chrono::steady_clock::now();
  double cpu_start_ = cpu_seconds();
};

// A bad output path fails before the dumps are read, which can take a while.
std::optional<std::string> check_output_directory(const std::string& output_path) {
  if (output_path == "-") return std::nullopt;
  const std::filesystem::path parent = std::filesystem::path(output_path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return "cannot write '" + output_path + "': " +
           (std::filesystem::exists(parent, ec) ? "not a directory: " : "no such directory: ") +
           parent.string();
  }
  return std::nullopt;
}

// The dumps read, and what was lost or left out on the way.
struct ReadDumps {
  size_t dump_count = 0;
  bool many = false;  // several dumps (a program and the processes it started): merged
  // On the heap, so that a caller about to exit can leave them to the operating system.
  std::vector<std::unique_ptr<ProfileModel>> models;
  size_t damaged = 0, without_process = 0, stack_count = 0;
  std::vector<std::string> unended;  // of a run's dumps, those without an end record
  std::vector<std::string> empty;    // of a run's dumps, those that hold nothing
  std::unordered_set<const ProfileModel*> empty_models;
};

// What the dump's own statistics say of the sampling.
void report_dump_statistics(const ProfileModel& model, const std::string& who, Diagnostics& diag) {
  const auto& s = model.stats();
  if (!s) return;
  diag.info(who + "dump statistics: " + std::to_string(s->samples_recorded) +
            " samples recorded, " + std::to_string(s->samples_dropped) +
            " dropped (buffer full), " + std::to_string(s->threads_timed_out) +
            " sampling attempts timed out, " + std::to_string(s->samples_given_up) +
            " given up (running threads that could not be interrupted unnoticed), " +
            std::to_string(s->ticks_late) + " ticks late; the profiler's own threads used " +
            profiler_cpu_text(s->profiler_cpu_ns, model.end_ns()) + tick_cost_text(*s));
  if (const std::string rings = kernel_rings_text(*s); !rings.empty()) diag.info(who + rings);
  if (s->sleep_stacks_unread) {
    diag.info(who + std::to_string(s->sleep_stacks_unread) +
              " threads ended before the profiler read where they waited after their last wake "
              "(a wake storm, past its budget of 4 % of a CPU for reading sleeping threads "
              "again): that wait is counted in the one before it, its CPU above it under [ran "
              "between samples]");
  }
  if (s->sampler_cut_at_exit) {
    diag.info(who +
              "the process exited while the profiler's sampler had no CPU (the program's "
              "threads kept every CPU busy): the samples of its last tick are missing");
  }
}

// What reading one dump found worth saying; a run's unended dumps are kept to be said once.
void report_dump(const std::string& dump_path, const internal::DumpReadResult& read,
                 const ProfileModel& model, ReadDumps& r, Diagnostics& diag) {
  const std::string who = r.many ? dump_path + ": " : "";
  for (const std::string& w : read.warnings) diag.warn(who + w);
  if (read.raw) {
    diag.info(who +
              "a crash capture: the ring as it was when the process crashed (see the Crash "
              "marker)");
  } else if (read.ended_by_exec) {
    diag.info(who +
              "the process replaced this program with another (exec): no exit code ran, so "
              "the last moments before the exec (at most the writer's last half second) are "
              "not in the dump; the next image wrote a dump of its own");
  } else if (read.landed_records) {
    diag.info(who +
              "the process ended without stopping the profiler (_exit or a signal): "
              "inprof record finished its dump with the " +
              std::to_string(read.landed_records - 1) +
              " records it had not yet written, from the memory it left");
  } else if (!read.complete && r.many) {
    r.unended.push_back(dump_path);  // said once for the run, below
  } else if (!read.complete) {
    diag.warn(who +
              "the dump has no end record (its process is still running, or did not stop "
              "cleanly: killed, _exit); using every complete record");
  }
  if (model.threads().empty()) {
    // A dump cut before its first records holds no thread whatever the filters.
    diag.warn(who + (read.complete ? "the profile has no thread: none was sampled (a thread "
                                     "filter, -t or INPROF_THREADS, that matches no thread "
                                     "name?)"
                                   : "the profile has no thread: the dump ends before any "
                                     "thread was recorded"));
  }
  if (model.orphan_repeats()) {
    diag.warn(who + std::to_string(model.orphan_repeats()) +
              " repeat samples had no earlier sample on their thread; they have no stack");
  }
  report_dump_statistics(model, who, diag);
}

// Reads one dump into a model of `r`; the error message if it cannot be read.
std::optional<std::string> read_one_dump(const std::string& dump_path, ReadDumps& r,
                                         Diagnostics& diag) {
  const std::string who = r.many ? dump_path + ": " : "";
  // A small dump is read whole (dump_file_read.h), a large one a chunk at a time.
  const std::optional<WholeDumpFile> whole = read_small_dump_file(dump_path);
  if (auto why = whole ? why_not_a_dump(dump_path, whole->bytes()) : why_not_a_dump(dump_path)) {
    return why;
  }
  r.models.push_back(std::make_unique<ProfileModel>());
  ProfileModel& model = *r.models.back();
  internal::DumpReadResult read = whole ? internal::read_dump(whole->bytes(), model)
                                        : internal::read_dump_file_incrementally(dump_path, model);
  if (!read.ok) return who + read.error;
  r.damaged += read.damaged;
  // A process of a run that ended before its writer wrote anything (a shell's short child,
  // leaving through _exit within the first half second): nothing to show, nothing damaged.
  if (r.many && !model.process() && model.threads().empty() && !read.damaged) {
    r.empty.push_back(dump_path);
    r.empty_models.insert(&model);
    return std::nullopt;
  }
  r.without_process += !model.process();
  r.stack_count += model.stack_count();
  report_dump(dump_path, read, model, r, diag);
  return std::nullopt;
}

// The run's empty dumps left out and its unended ones named, each said once; an error if every
// dump is empty.
std::optional<std::string> report_run_dumps(ReadDumps& r, Diagnostics& diag) {
  if (!r.empty.empty() && r.empty.size() < r.dump_count) {
    // Left out, said once; the model kept for it is dropped.
    std::erase_if(r.models, [&](const std::unique_ptr<ProfileModel>& m) {
      return r.empty_models.count(m.get()) != 0;
    });
    diag.warn(std::to_string(r.empty.size()) + " of " + std::to_string(r.dump_count) +
              " processes ended before their profiler wrote anything (its first records go out "
              "within half a second; a process that leaves sooner through _exit, as a shell's "
              "short children do, leaves an empty dump): they are not in the profile: " +
              first_few(r.empty));
  } else if (!r.empty.empty()) {
    return "no process of the run wrote anything: every dump is empty (" +
           std::to_string(r.empty.size()) +
           " processes that ended within their profiler's first half second)";
  }
  if (!r.unended.empty()) {
    // One line for a run (a build's shells leave through _exit by the dozen), naming a few.
    diag.warn(std::to_string(r.unended.size()) + " of " + std::to_string(r.dump_count) +
              " dumps have no end record (their processes are still running, or did not stop "
              "cleanly: killed, or _exit, as shells leave); each at most its last half second "
              "is missing: " +
              first_few(r.unended));
  }
  return std::nullopt;
}

// Reads every dump; the error message of the first that cannot be read.
std::optional<std::string> read_dumps(const std::vector<std::string>& dumps, ReadDumps& r,
                                      Diagnostics& diag) {
  r.dump_count = dumps.size();
  r.many = dumps.size() > 1;
  for (const std::string& dump_path : dumps) {
    if (auto why = read_one_dump(dump_path, r, diag)) return why;
  }
  return report_run_dumps(r, diag);
}

struct OutputFile {
  std::FILE* out = nullptr;
  bool to_stdout = false;
  bool gzip = false;
  bool remove_on_failure = false;
};

// Opens the output before the slow part, so a bad path fails at once.
std::optional<std::string> open_output(const RunOptions& options, OutputFile& f) {
  f.to_stdout = options.output_path == "-";
  // A format that is always gzipped (pprof) is written plain in the Windows build, which has no
  // gzip output: its readers take that too.
  f.gzip = options.gzip || ends_with(options.output_path, ".gz") ||
           (options.format->always_gzip && kHaveGzipOutput);
  if (f.to_stdout) {
    f.out = f.gzip ? open_gzip_stream(fileno(stdout), /*close_fd=*/false) : stdout;
  } else {
    f.out = f.gzip ? open_gzip_file(options.output_path)
                   : std::fopen(options.output_path.c_str(), "wb");
  }
  if (!f.out) return "cannot write '" + options.output_path + "': " + std::strerror(errno);
  // What a failed write leaves is removed only if it is a regular file: never a device (-o
  // /dev/full once deleted the device node, run as root), a FIFO, or what a link points to.
  std::error_code no_throw;
  f.remove_on_failure =
      !f.to_stdout && std::filesystem::is_regular_file(
                          std::filesystem::symlink_status(options.output_path, no_throw));
  return std::nullopt;
}

// Flushes or closes the output; on failure (`ok` false: the writer's) removes what it left.
std::optional<std::string> close_output(const OutputFile& f, const std::string& path, bool ok) {
  int close_error = 0;
  if (f.to_stdout && !f.gzip) {
    ok = std::fflush(f.out) == 0 && ok;
  } else if (std::fclose(f.out) != 0) {
    close_error = errno;
    ok = false;
  }
  if (ok) return std::nullopt;
  std::string why = close_error ? std::strerror(close_error) : "write error";
  if (f.remove_on_failure) std::remove(path.c_str());
  return "cannot write '" + path + "': " + why;
}

// The module (and the dump's image of it) behind each lib, by (path, breakpad id): a merged
// profile has each library once, under the key the merge uses.
using LibOrigins =
    std::map<std::pair<std::string, std::string>,
             std::pair<internal::ModuleRecord, std::shared_ptr<const std::vector<uint8_t>>>>;

// The models turned into one profile's tables (several processes merged).
struct Converted {
  std::vector<std::unique_ptr<ProfileBuilder>> builders;  // the profile, front()
  ConversionSummary summary;
  LibOrigins lib_origin;
  bool cached = false;  // the symbol cache was used
  std::optional<SourceEmbedReport> sources_report;
};

ConvertOptions convert_options_of(const RunOptions& options, ProgressBar& bar) {
  ConvertOptions c;
  c.locate = options.locate;
  c.jobs = options.jobs;
  c.min_addresses_per_handle = options.min_addresses_per_handle;
  c.exiting_after = options.exiting_after;
  c.no_symbols = options.no_symbols;
  c.wait_marker_ns = options.wait_marker_ns;
  c.progress = [&bar](size_t done, size_t total) { bar.update(done, total); };
  if (!options.cache_dir.empty() && !options.no_symbols) {
    c.cache = std::make_shared<const SymbolCache>(options.cache_dir, options.cache_max_bytes);
  }
  return c;
}

void convert_models(const ReadDumps& r, const RunOptions& options, Diagnostics& diag,
                    std::FILE* err, Converted& c) {
  ProgressBar bar(err, options.progress);
  const ConvertOptions convert_options = convert_options_of(options, bar);
  c.cached = convert_options.cache != nullptr;
  for (const auto& model : r.models) {
    c.builders.push_back(std::make_unique<ProfileBuilder>());
    ConversionSummary part = convert_profile(*model, *c.builders.back(), diag, convert_options);
    const std::vector<Lib>& libs = c.builders.back()->libs();
    for (size_t i = 0; i < libs.size() && i < part.lib_modules.size(); ++i) {
      c.lib_origin.try_emplace(std::make_pair(libs[i].path, libs[i].breakpad_id),
                               part.lib_modules[i],
                               i < part.lib_images.size() ? part.lib_images[i] : nullptr);
    }
    add_summary(c.summary, std::move(part));
  }
  if (r.many) {
    std::vector<const ProfileBuilder*> parts;
    for (const auto& b : c.builders) parts.push_back(b.get());
    auto merged = std::make_unique<ProfileBuilder>();
    merge_processes(parts, *merged);
    c.builders.clear();
    c.builders.push_back(std::move(merged));
  }
  ProfileBuilder& builder = *c.builders.front();
  bar.finish();
  if (options.no_symbols) builder.meta().symbolicated = false;
  if (options.format->embeds_sources && options.sources.enabled) {
    c.sources_report = embed_sources(builder, options.sources);
  }
}

// The module and image behind each lib of the written profile, by LibIndex: for pprof's
// Mappings and --open's symbol server.
void lib_modules_of(const ProfileBuilder& builder, const LibOrigins& lib_origin,
                    ProfileSymbolInfo& info) {
  for (const Lib& l : builder.libs()) {
    auto it = lib_origin.find(std::make_pair(l.path, l.breakpad_id));
    info.lib_modules.push_back(it != lib_origin.end() ? it->second.first
                                                      : internal::ModuleRecord{});
    info.lib_images.push_back(it != lib_origin.end() ? it->second.second : nullptr);
  }
}

struct PhaseTimes {
  Stopwatch::Time read, convert, write;
};

// The statistics of a run that wrote its output.
void report_run(const RunOptions& options, const ReadDumps& r, const Converted& c,
                const PhaseTimes& t, Diagnostics& diag) {
  const ProfileBuilder& builder = *c.builders.front();
  const ConversionSummary& summary = c.summary;
  size_t samples = 0;
  for (const Thread& th : builder.threads()) samples += th.samples.size();
  diag.info("wrote " + options.output_path + ": " + std::to_string(builder.threads().size()) +
            " threads, " + std::to_string(samples) + " samples, " + std::to_string(r.stack_count) +
            " distinct stacks, " + std::to_string(summary.unique_addresses) +
            " distinct addresses, " + std::to_string(summary.modules_symbolicated) + " of " +
            std::to_string(summary.modules_used) + " modules in use symbolicated" +
            (r.many ? ", " + std::to_string(r.dump_count) + " processes" : ""));
  auto per = [&](double seconds) {
    return seconds > 0 ? double(summary.unique_addresses) / seconds : 0.0;
  };
  // Wall time, then CPU time (all threads) of each phase.
  diag.info("time: read " + fixed(t.read.seconds, 2) + " s (" + fixed(t.read.cpu, 2) +
            " s CPU), symbolize " + fixed(summary.symbolize_seconds, 2) + " s (" +
            fixed(summary.symbolize_cpu_seconds, 2) + " s CPU; " + std::to_string(summary.threads) +
            (summary.threads == 1 ? " thread, " : " threads, ") +
            fixed(per(summary.symbolize_seconds), 0) + " addresses/s, " +
            fixed(per(summary.symbolize_cpu_seconds), 0) + " addresses/CPU-s), profile tables " +
            fixed(t.convert.seconds - summary.symbolize_seconds, 2) + " s (" +
            fixed(t.convert.cpu - summary.symbolize_cpu_seconds, 2) + " s CPU), write " +
            fixed(t.write.seconds, 2) + " s (" + fixed(t.write.cpu, 2) + " s CPU)");
  if (c.cached) {
    diag.info("symbol cache " + options.cache_dir + ": " + std::to_string(summary.cache_hits) +
              " addresses found, " + std::to_string(summary.cache_misses) + " symbolized (" +
              std::to_string(summary.cache_indexed) + " found by the module index), " +
              std::to_string(summary.modules_opened) +
              (summary.modules_opened == 1 ? " module opened" : " modules opened"));
  }
  for (const auto& model : r.models) {
    if (const JitMap& jit = model->jit_map(); jit.lines()) {
      diag.info("JIT map: " + std::to_string(jit.range_count()) + " code ranges, " +
                std::to_string(summary.jit_frames) + " frame addresses named by it");
    }
  }
}

// The profile holds what could be read, but a script must not take it for the whole run: the
// lost records named, or empty.
std::string lost_records(const ReadDumps& r) {
  std::string lost;
  if (r.damaged) {
    lost = std::to_string(r.damaged) + (r.damaged == 1 ? " damaged part" : " damaged parts");
  }
  if (r.without_process) {
    lost += std::string(lost.empty() ? "" : " and ") +
            (r.many ? std::to_string(r.without_process) + " without a process record"
                    : std::string("no process record"));
  }
  return lost;
}

}  // namespace

int run_symbolicate(const RunOptions& options, std::FILE* err, ProfileSymbolInfo* symbol_info) {
  // Debug images kept for the next run are written meanwhile (prepare_for_handles), and in the
  // cache when this returns, whichever way it does.
  struct WaitForImageSaves {
    ~WaitForImageSaves() { wait_for_debug_image_saves(); }
  } wait_for_image_saves;
  const Stopwatch read_time;
  Diagnostics diag(err, options.quiet);
  std::string expand_error;
  const auto dumps = expand_dump_paths(
      options.dump_paths.empty() ? std::vector<std::string>{options.dump_path} : options.dump_paths,
      &expand_error);
  if (!dumps) return fail(err, expand_error);
  if (auto why = check_output_directory(options.output_path)) return fail(err, *why);
  ReadDumps read;
  if (auto why = read_dumps(*dumps, read, diag)) return fail(err, *why);
  OutputFile output;
  if (auto why = open_output(options, output)) return fail(err, *why);
  PhaseTimes times;
  times.read = read_time.elapsed();

  const Stopwatch convert_time;
  Converted converted;
  convert_models(read, options, diag, err, converted);
  const ProfileBuilder& builder = *converted.builders.front();
  times.convert = convert_time.elapsed();

  const Stopwatch write_time;
  ProfileSymbolInfo info;
  lib_modules_of(builder, converted.lib_origin, info);
  const WriteInput input{.profile = builder,
                         .lib_modules = info.lib_modules,
                         .top = options.top,
                         .folded_weight = options.folded_weight};
  const bool written = options.format->write(input, output.out);
  if (auto why = close_output(output, options.output_path, written)) return fail(err, *why);
  times.write = write_time.elapsed();

  if (!options.quiet_modules) print_module_summary(converted.summary, diag);
  if (converted.sources_report && converted.sources_report->files) {
    diag.info(converted.sources_report->summary());
  }
  if (symbol_info) {
    info.libs = builder.libs();
    info.lib_frame_addresses = frame_addresses_by_lib(builder);
    info.locate = options.locate;
    *symbol_info = std::move(info);
  }
  report_run(options, read, converted, times, diag);
  const std::string lost = lost_records(read);
  if (options.exiting_after) {
    // Freeing the tables' millions of small blocks one by one took ~10% of a run: they are kept
    // until the process ends, reachable (a leak checker must not take them for lost).
    struct KeptUntilExit {
      std::vector<std::unique_ptr<ProfileModel>> models;
      std::vector<std::unique_ptr<ProfileBuilder>> builders;
    };
    static auto* kept = new KeptUntilExit;  // never destroyed
    for (auto& model : read.models) kept->models.push_back(std::move(model));
    for (auto& b : converted.builders) kept->builders.push_back(std::move(b));
  }
  if (!lost.empty()) {
    std::fprintf(err,
                 "symbolicate: error: records were lost: the dump has %s (two processes writing "
                 "one file, or a damaged copy); the profile holds the rest\n",
                 lost.c_str());
    return kExitDamaged;
  }
  return kExitOk;
}

}  // namespace inprof::symbolicate
