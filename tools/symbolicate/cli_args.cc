#include "cli_args.h"

#include <cstdlib>
#include <filesystem>

#ifndef INPROF_VERSION_STRING
#define INPROF_VERSION_STRING "unknown"
#endif

namespace inprof::symbolicate {
namespace {

// A mistyped directory would otherwise only show as modules left without symbols.
void warn_if_not_directory(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return;
  std::fprintf(stderr, "symbolicate: warning: %s %s: %s\n", flag.c_str(), dir.c_str(),
               std::filesystem::exists(dir, ec) ? "not a directory" : "no such directory");
}

void print_usage(std::FILE* f) {
  std::fprintf(
      f,
      "usage: symbolicate DUMP... -o OUT.json [options]\n"
      "       symbolicate DUMP... --open [options]\n"
      "       symbolicate --load PROFILE.json[.gz] [--port N] [--no-browser]\n"
      "\n"
      "Reads an inprof dump and writes a symbolicated Firefox Profiler profile\n"
      "(processed format), to open at https://profiler.firefox.com.\n"
      "Several dumps, or a directory of them (what `inprof record` writes for a program\n"
      "and the processes it starts), make one profile with a process track each.\n"
      "\n"
      "output:\n"
      "  -o, --output FILE       where to write ('-' for standard output); FILE.gz is gzipped\n"
      "                          with --format pprof, a directory (OUT/ or an existing one):\n"
      "                          each dump converted alone to OUT/NAME.pb.gz (batch)\n"
      "      --gzip              gzip the output whatever its name\n"
      "      --format FORMAT     json (default), folded (flame graph tools), summary, or pprof\n"
      "                          (gzipped profile.proto: go tool pprof, Pyroscope, Parca)\n"
      "      --folded-weight W   with --format folded, what a line counts: samples (CPU\n"
      "                          samples, the default), alloc-bytes (estimated bytes of the\n"
      "                          sampled allocations made at the stack: record --allocations)\n"
      "                          or retained-bytes (the same, of those never freed)\n"
      "      --summary           the same as --format summary: hottest functions per thread\n"
      "      --wait-markers MS   a marker in its thread's track for every wait of MS ms or\n"
      "                          more, with its reason and stack (default 10; 0: every wait\n"
      "                          seen; off: none)"
      "      --top N             functions listed per ranking in the summary (default 15)\n"
      "      --open              serve the profile on 127.0.0.1 and open it in the Firefox\n"
      "                          Profiler; stops on Ctrl-C (-o optional: a temporary file)\n"
      "      --no-browser        with --open: print the address, do not run xdg-open\n"
      "      --port N            with --open: serve on port N (default: a free one)\n"
      "      --load FILE         serve a saved profile (FILE.json[.gz]) as --open does, with\n"
      "                          no dump (also: symbolicate FILE.json --open)\n"
      "      --profiler-url URL  with --open: the Firefox Profiler to open the profile in\n"
      "                          (default https://profiler.firefox.com; a self-hosted copy)\n"
      "source and assembly views:\n"
      "      --sources           embed the text of the source files that the profile's\n"
      "                          functions come from, when readable here (the default)\n"
      "      --no-sources        do not\n"
      "      --sources-max-file KIB   leave out a file larger than this (default 2048)\n"
      "      --sources-max-total MIB  stop embedding at this total (default 64)\n"
      "      --no-symbols        name native frames module+0x... only (fast); with --open the\n"
      "                          viewer symbolicates them through symbolicate's symbol server\n"
      "debug information (each module's files must have the build-id the dump recorded):\n"
      "      --debug-dir DIR     look for debug files in DIR: DIR/.build-id/xx/rest.debug or\n"
      "                          by file name (repeatable; searched before the system's)\n"
      "      --binary-dir DIR    look for the binaries in DIR when they are not at the paths\n"
      "                          the dump recorded, e.g. on another machine (repeatable)\n"
      "      --system-debug-dir DIR  instead of /usr/lib/debug ('' for none)\n"
      "      (debuginfod is asked last when DEBUGINFOD_URLS is set)\n"
      "symbol cache (symbolized addresses kept per module build-id, for the next dump):\n"
      "      --cache-dir DIR     where (default $XDG_CACHE_HOME/inprof, ~/.cache/inprof)\n"
      "      --cache-max SIZE    evict the least recently used files beyond SIZE (default 512M)\n"
      "      --no-cache          neither read nor write the cache\n"
      "other:\n"
      "  -j, --jobs N            symbolizing threads (default: one per CPU)\n"
      "      --split-at N        split a module between threads, by compilation unit, only\n"
      "                          when it has at least N addresses (default 1024: each thread's\n"
      "                          libdw handle costs set-up time of its own)\n"
      "      --no-progress       no progress bar (shown on a terminal for large dumps)\n"
      "      --quiet-modules     leave out the per-module summary on stderr\n"
      "  -q, --quiet             warnings and errors only on stderr\n"
      "  -h, --help              show this help and exit\n"
      "  -V, --version           show the version and exit\n"
      "\n"
      "exit status: 0 success (warnings possible), 1 error, 2 wrong usage, 3 output written\n"
      "but records were lost (a damaged dump, or one without its process record)\n");
}

bool parse_count(const std::string& text, unsigned max, unsigned* out) {
  if (text.empty() || text.size() > 6) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  unsigned long v = std::strtoul(text.c_str(), nullptr, 10);
  if (v == 0 || v > max) return false;
  *out = static_cast<unsigned>(v);
  return true;
}

// Flags, which take no value. Returns kGoOn, an exit status, or kNotFlag.
constexpr int kNotFlag = -2;
int parse_flag(const std::string& arg, CliArgs& a) {
  if (arg == "-h" || arg == "--help") {
    print_usage(stdout);
    return kExitOk;
  }
  if (arg == "-V" || arg == "--version") {
    std::printf("symbolicate (inprof) %s\n", INPROF_VERSION_STRING);
    return kExitOk;
  }
  if (arg == "--gzip") {
    a.run.gzip = true;
  } else if (arg == "--summary") {
    a.run.format = find_output_format("summary");
  } else if (arg == "--open") {
#if defined(_WIN32)
    return usage_error(
        "--open is not available in the Windows build: write the profile with -o "
        "and load it at https://profiler.firefox.com");
#endif
    a.open = true;
  } else if (arg == "--no-browser") {
    a.open_browser = false;
  } else if (arg == "--sources" || arg == "--no-sources") {
    a.run.sources.enabled = arg == "--sources";
  } else if (arg == "--no-symbols") {
    a.run.no_symbols = true;
  } else if (arg == "--no-cache") {
    a.no_cache = true;
  } else if (arg == "--no-progress") {
    a.progress = false;
  } else if (arg == "--quiet-modules") {
    a.run.quiet_modules = true;
  } else if (arg == "-q" || arg == "--quiet") {
    a.run.quiet = a.run.quiet_modules = true;
    a.progress = false;
  } else {
    return kNotFlag;
  }
  return kGoOn;
}

// An option with a value: "--name VALUE", "--name=VALUE", "-o VALUE", "-oVALUE". Sets `name`
// and `value`, taking the next argument (++*i) when the value is not in `arg`.
int split_option(const std::string& arg, int argc, char** argv, int* i, std::string* name,
                 std::string* value) {
  static const char* const kWithValue[] = {"--output",
                                           "--format",
                                           "--folded-weight",
                                           "--top",
                                           "--wait-markers",
                                           "--debug-dir",
                                           "--binary-dir",
                                           "--system-debug-dir",
                                           "--jobs",
                                           "--split-at",
                                           "--profiler-url",
                                           "--sources-max-file",
                                           "--sources-max-total",
                                           "--cache-dir",
                                           "--cache-max",
                                           "--port",
                                           "--load"};
  bool has_value = false;
  if (arg == "-o" || arg == "-j") {
    *name = arg == "-o" ? "--output" : "--jobs";
  } else if (arg[1] != '-' && (arg[1] == 'o' || arg[1] == 'j')) {
    *name = arg[1] == 'o' ? "--output" : "--jobs";
    *value = arg.substr(2);
    has_value = true;
  } else {
    size_t eq = arg.find('=');
    *name = arg.substr(0, eq);
    if (eq != std::string::npos) {
      *value = arg.substr(eq + 1);
      has_value = true;
    }
  }
  bool known = false;
  for (const char* k : kWithValue) known = known || *name == k;
  if (!known) return usage_error("unknown option '" + arg + "'");
  if (!has_value) {
    if (*i + 1 >= argc) return usage_error("option '" + arg + "' needs a value");
    *value = argv[++*i];
  }
  return kGoOn;
}

// The options of what is written, and where: kGoOn, a usage error, or kNotFlag if not one.
int apply_output_option(const std::string& name, std::string value, CliArgs& a) {
  RunOptions& options = a.run;
  if (name == "--output") {
    if (a.have_output) return usage_error("more than one output file given");
    if (value.empty()) return usage_error("empty output file name");
    options.output_path = value;
    a.have_output = true;
  } else if (name == "--format") {
    const OutputFormatSpec* format = find_output_format(value);
    if (!format) {
      return usage_error("unknown format '" + value + "' (" + output_format_names() + ")");
    }
    options.format = format;
  } else if (name == "--folded-weight") {
    if (value == "samples") {
      options.folded_weight = FoldedWeight::kSamples;
    } else if (value == "alloc-bytes") {
      options.folded_weight = FoldedWeight::kAllocatedBytes;
    } else if (value == "retained-bytes") {
      options.folded_weight = FoldedWeight::kRetainedBytes;
    } else {
      return usage_error("unknown --folded-weight '" + value +
                         "' (samples, alloc-bytes or retained-bytes)");
    }
    a.folded_weight_given = true;
  } else if (name == "--top") {
    unsigned top;
    if (!parse_count(value, 100000, &top))
      return usage_error("--top needs a count, not '" + value + "'");
    options.top = top;
  } else if (name == "--wait-markers") {
    unsigned ms = 0;
    if (value == "off") {
      options.wait_marker_ns.reset();
    } else if (value == "0" || parse_count(value, 1u << 20, &ms)) {
      options.wait_marker_ns = uint64_t{ms} * 1'000'000;
    } else {
      return usage_error("--wait-markers needs whole milliseconds or 'off', not '" + value + "'");
    }
  } else if (name == "--port") {
    unsigned n;
    if (!parse_count(value, 65535, &n)) {
      return usage_error("--port needs a port from 1 to 65535, not '" + value + "'");
    }
    a.port = static_cast<int>(n);
  } else if (name == "--load") {
    if (value.empty()) return usage_error("empty file name for --load");
    a.load_path = value;
  } else if (name == "--profiler-url") {
    if (value.compare(0, 7, "http://") != 0 && value.compare(0, 8, "https://") != 0) {
      return usage_error("--profiler-url needs an http:// or https:// address, not '" + value +
                         "'");
    }
    while (value.size() > 1 && value.back() == '/') value.pop_back();
    a.profiler_url = value;
  } else {
    return kNotFlag;
  }
  return kGoOn;
}

// The options of how the dumps are symbolized: kGoOn or a usage error.
int apply_symbol_option(const std::string& name, const std::string& value, RunOptions& options) {
  if (name == "--jobs") {
    if (!parse_count(value, 1024, &options.jobs)) {
      return usage_error("--jobs needs a thread count from 1 to 1024, not '" + value + "'");
    }
  } else if (name == "--split-at") {
    unsigned split;
    if (!parse_count(value, 1u << 30, &split)) {
      return usage_error("--split-at needs an address count, not '" + value + "'");
    }
    options.min_addresses_per_handle = split;
  } else if (name == "--debug-dir" || name == "--binary-dir") {
    if (value.empty()) return usage_error("empty directory for " + name);
    (name == "--debug-dir" ? options.locate.debug_dirs : options.locate.binary_dirs)
        .push_back(value);
    warn_if_not_directory(name, value);
  } else if (name == "--sources-max-file" || name == "--sources-max-total") {
    unsigned n;
    if (!parse_count(value, 1u << 20, &n)) {
      return usage_error(name + " needs a size (" + (name == "--sources-max-file" ? "KiB" : "MiB") +
                         "), not '" + value + "'");
    }
    if (name == "--sources-max-file") {
      options.sources.max_file_bytes = size_t{n} << 10;
    } else {
      options.sources.max_total_bytes = size_t{n} << 20;
    }
  } else if (name == "--cache-dir") {
    if (value.empty()) return usage_error("empty directory for --cache-dir");
    options.cache_dir = value;
  } else if (name == "--cache-max") {
    if (!parse_byte_size(value, &options.cache_max_bytes)) {
      return usage_error("--cache-max needs a size such as 512M or 2G, not '" + value + "'");
    }
  } else if (name == "--system-debug-dir") {
    options.locate.system_debug_dir = value;
    if (!value.empty()) warn_if_not_directory(name, value);
  }
  return kGoOn;
}

}  // namespace

int usage_error(const std::string& message) {
  std::fprintf(stderr, "symbolicate: %s (symbolicate --help shows the usage)\n", message.c_str());
  return kExitUsage;
}

int parse_cli_args(int argc, char** argv, CliArgs* args) {
  CliArgs& a = *args;
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (!a.have_dump) a.run.dump_path = arg;
      a.run.dump_paths.push_back(arg);
      a.have_dump = true;
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (int status = parse_flag(arg, a); status != kNotFlag) {
      if (status != kGoOn) return status;
      continue;
    }
    std::string name, value;
    if (int status = split_option(arg, argc, argv, &i, &name, &value); status != kGoOn) {
      return status;
    }
    int status = apply_output_option(name, value, a);
    if (status == kNotFlag) status = apply_symbol_option(name, value, a.run);
    if (status != kGoOn) return status;
  }
  return kGoOn;
}

}  // namespace inprof::symbolicate
