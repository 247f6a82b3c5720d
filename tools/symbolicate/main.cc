// symbolicate DUMP -o OUT.json: turns an inprof dump into a Firefox Profiler profile.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "batch.h"
#include "serve/profile_server.h"
#if !defined(_WIN32)
#include "serve/symbol_server.h"
#endif
#include "symbolicate.h"
#include "symbolize/huge_page_heap.h"
#if defined(_WIN32)
#include "windows/compressed_chunk_check.h"
#endif

#ifndef INPROF_VERSION_STRING
#define INPROF_VERSION_STRING "unknown"
#endif

namespace {

using namespace inprof::symbolicate;

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

int usage_error(const std::string& message) {
  std::fprintf(stderr, "symbolicate: %s (symbolicate --help shows the usage)\n", message.c_str());
  return kExitUsage;
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

bool is_saved_profile_name(const std::string& path) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return path.size() > n && path.compare(path.size() - n, n, suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

// --load FILE (or FILE.json --open): a profile written before, served as it is. Its assembly
// view needs the dumps (a symbol server), which a saved profile no longer has.
int serve_saved_profile(const std::string& path, bool open_browser, const std::string& profiler_url,
                        int port) {
#if defined(_WIN32)
  (void)path, (void)open_browser, (void)profiler_url, (void)port;
  return usage_error(
      "--load is not available in the Windows build: load the file at "
      "https://profiler.firefox.com");
#else
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::fprintf(stderr, "symbolicate: error: %s: %s\n", path.c_str(),
                 std::filesystem::exists(path, ec) ? "not a regular file" : "no such file");
    return kExitError;
  }
  if (!is_saved_profile_name(path)) {
    return usage_error("--load serves a profile NAME.json or NAME.json.gz, not '" + path + "'");
  }
  ServeOptions serve;
  serve.file = path;
  serve.open_browser = open_browser;
  serve.profiler_url = profiler_url;
  serve.port = port;
  std::fprintf(stderr,
               "symbolicate: the assembly view needs the run's dumps (symbolicate DUMPS --open)\n");
  return serve_profile(serve) == 0 ? kExitOk : kExitError;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Huge pages for malloc's heaps, and freed memory kept for reuse (huge_page_heap.h).
  prepare_huge_page_heap();
  RunOptions options;
  bool have_dump = false, have_output = false, options_done = false;
  bool open = false, open_browser = true, progress = true, no_cache = false;
  bool folded_weight_given = false;
  std::string profiler_url = kProfilerOrigin;
  std::string load_path;  // --load: a saved profile to serve
  int port = 0;           // --port: 0 for any free one
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (!have_dump) options.dump_path = arg;
      options.dump_paths.push_back(arg);
      have_dump = true;
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      print_usage(stdout);
      return kExitOk;
    }
    if (arg == "-V" || arg == "--version") {
      std::printf("symbolicate (inprof) %s\n", INPROF_VERSION_STRING);
      return kExitOk;
    }
    // Flags.
    if (arg == "--gzip") {
      options.gzip = true;
      continue;
    }
    if (arg == "--summary") {
      options.format = find_output_format("summary");
      continue;
    }
    if (arg == "--open") {
#if defined(_WIN32)
      return usage_error(
          "--open is not available in the Windows build: write the profile with -o "
          "and load it at https://profiler.firefox.com");
#endif
      open = true;
      continue;
    }
    if (arg == "--no-browser") {
      open_browser = false;
      continue;
    }
    if (arg == "--sources" || arg == "--no-sources") {
      options.sources.enabled = arg == "--sources";
      continue;
    }
    if (arg == "--no-symbols") {
      options.no_symbols = true;
      continue;
    }
    if (arg == "--no-cache") {
      no_cache = true;
      continue;
    }
    if (arg == "--no-progress") {
      progress = false;
      continue;
    }
    if (arg == "--quiet-modules") {
      options.quiet_modules = true;
      continue;
    }
    if (arg == "-q" || arg == "--quiet") {
      options.quiet = options.quiet_modules = true;
      progress = false;
      continue;
    }
    // Options with a value: "--name VALUE", "--name=VALUE", "-o VALUE", "-oVALUE".
    static const char* const kWithValue[] = {"--output",
                                             "--format",
                                             "--folded-weight",
                                             "--top",
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
    std::string name, value;
    bool has_value = false;
    if (arg == "-o" || arg == "-j") {
      name = arg == "-o" ? "--output" : "--jobs";
    } else if (arg[1] != '-' && (arg[1] == 'o' || arg[1] == 'j')) {
      name = arg[1] == 'o' ? "--output" : "--jobs";
      value = arg.substr(2);
      has_value = true;
    } else {
      size_t eq = arg.find('=');
      name = arg.substr(0, eq);
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        has_value = true;
      }
    }
    bool known = false;
    for (const char* k : kWithValue) known = known || name == k;
    if (!known) return usage_error("unknown option '" + arg + "'");
    if (!has_value) {
      if (i + 1 >= argc) return usage_error("option '" + arg + "' needs a value");
      value = argv[++i];
    }
    if (name == "--output") {
      if (have_output) return usage_error("more than one output file given");
      if (value.empty()) return usage_error("empty output file name");
      options.output_path = value;
      have_output = true;
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
      folded_weight_given = true;
    } else if (name == "--top") {
      unsigned top;
      if (!parse_count(value, 100000, &top))
        return usage_error("--top needs a count, not '" + value + "'");
      options.top = top;
    } else if (name == "--jobs") {
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
        return usage_error(name + " needs a size (" +
                           (name == "--sources-max-file" ? "KiB" : "MiB") + "), not '" + value +
                           "'");
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
    } else if (name == "--port") {
      unsigned n;
      if (!parse_count(value, 65535, &n)) {
        return usage_error("--port needs a port from 1 to 65535, not '" + value + "'");
      }
      port = static_cast<int>(n);
    } else if (name == "--load") {
      if (value.empty()) return usage_error("empty file name for --load");
      load_path = value;
    } else if (name == "--profiler-url") {
      if (value.compare(0, 7, "http://") != 0 && value.compare(0, 8, "https://") != 0) {
        return usage_error("--profiler-url needs an http:// or https:// address, not '" + value +
                           "'");
      }
      while (value.size() > 1 && value.back() == '/') value.pop_back();
      profiler_url = value;
    } else if (name == "--system-debug-dir") {
      options.locate.system_debug_dir = value;
      if (!value.empty()) warn_if_not_directory(name, value);
    }
  }
  // A saved profile given where a dump goes, with --open: served as it is (samply load).
  if (load_path.empty() && open && options.dump_paths.size() == 1 &&
      is_saved_profile_name(options.dump_path)) {
    load_path = options.dump_path;
  }
  if (!load_path.empty()) return serve_saved_profile(load_path, open_browser, profiler_url, port);
  if (port != 0 && !open) return usage_error("--port goes with --open or --load");
  if (!have_dump) return usage_error("no dump given");
  for (const std::string& path : options.dump_paths) {
    // A FIFO or a device would be waited on, perhaps for ever: a dump is a file (or a directory
    // of them).
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!ec && status.type() != std::filesystem::file_type::regular &&
        status.type() != std::filesystem::file_type::directory) {
      std::fprintf(stderr, "symbolicate: error: %s: not a dump (not a regular file)\n",
                   path.c_str());
      return kExitError;
    }
  }
  if (options.format->not_json && is_saved_profile_name(options.output_path)) {
    return usage_error("-o " + options.output_path + ": " + options.format->not_json +
                       ", not JSON: give it another name (or no -o for the summary)");
  }
  if (folded_weight_given && !options.format->folded_weight) {
    return usage_error("--folded-weight goes with --format folded");
  }
  if (no_cache) {
    options.cache_dir.clear();
  } else if (options.cache_dir.empty()) {
    options.cache_dir = default_symbol_cache_dir();  // empty without HOME: no cache
  }
  if (open && !options.format->servable) {
    return usage_error("--open serves the JSON profile; it cannot go with --format " +
                       std::string(options.format->name));
  }
  if (open && options.output_path == "-") return usage_error("--open needs a file, not '-'");
  if (!have_output && !open) {
    // A summary is for reading: to the terminal unless told otherwise.
    if (!options.format->to_terminal) {
      return usage_error("no output file given (-o OUT.json)");
    }
    options.output_path = "-";
  }

#if defined(_WIN32)
  // gzip_stream.cc needs glibc's fopencookie (pprof is then written as plain protobuf).
  if (options.gzip ||
      (options.output_path.size() > 3 &&
       options.output_path.compare(options.output_path.size() - 3, 3, ".gz") == 0)) {
    return usage_error("gzip output is not available in the Windows build: write .json");
  }
#else
  // debuginfod is asked only when the user configured it; a server that does not answer must
  // not hold symbolicate for libdebuginfod's default 90 s.
  if (const char* urls = std::getenv("DEBUGINFOD_URLS"); urls && *urls) {
    options.locate.debuginfod = true;
    setenv("DEBUGINFOD_TIMEOUT", "15", /*overwrite=*/0);
  }
#endif
  options.progress = progress && isatty(STDERR_FILENO);

  std::string temporary;
#if !defined(_WIN32)  // --open is refused above on Windows
  if (open && !have_output) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/symbolicate-XXXXXX.json.gz";
    int fd = mkstemps(pattern.data(), 8);
    if (fd < 0) {
      std::fprintf(stderr, "symbolicate: error: cannot create a temporary file: %s\n",
                   std::strerror(errno));
      return kExitError;
    }
    ::close(fd);
    temporary = pattern;
    options.output_path = temporary;
  }
#endif
  options.exiting_after = !open;  // --open serves the file for a while after
#if defined(__SANITIZE_ADDRESS__)
  options.exiting_after = false;  // LeakSanitizer would report the tables left to the OS
#endif
#if defined(_WIN32)
  if (std::optional<std::string> why = find_compressed_chunk(options.dump_path)) {
    std::fprintf(stderr, "symbolicate: error: %s\n", why->c_str());
    return kExitError;
  }
#endif
  if (options.format->batch && is_output_directory(options.output_path)) {
    return run_symbolicate_batch(options, stderr);
  }
  ProfileSymbolInfo symbol_info;
  int status = run_symbolicate(options, stderr, open ? &symbol_info : nullptr);
  if ((status == kExitOk || status == kExitDamaged) && open) {
    ServeOptions serve;
    serve.file = options.output_path;
    serve.open_browser = open_browser;
    serve.profiler_url = profiler_url;
    serve.port = port;
#if !defined(_WIN32)
    SymbolServer symbols(std::move(symbol_info));
    serve.symbols = &symbols;
#endif
    if (serve_profile(serve) != 0) status = kExitError;
  }
  if (!temporary.empty()) std::remove(temporary.c_str());
  return status;
}
