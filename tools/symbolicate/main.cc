// symbolicate DUMP -o OUT.json: turns an inprof dump into a Firefox Profiler profile.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include "batch.h"
#include "cli_args.h"
#include "serve/profile_server.h"
#if !defined(_WIN32)
#include "serve/symbol_server.h"
#endif
#include "symbolicate.h"
#include "symbolize/huge_page_heap.h"
#if defined(_WIN32)
#include "windows/compressed_chunk_check.h"
#endif

namespace {

using namespace inprof::symbolicate;

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

// A FIFO or a device would be waited on, perhaps for ever: a dump is a file (or a directory of
// them).
int check_dump_files(const RunOptions& options) {
  for (const std::string& path : options.dump_paths) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!ec && status.type() != std::filesystem::file_type::regular &&
        status.type() != std::filesystem::file_type::directory) {
      std::fprintf(stderr, "symbolicate: error: %s: not a dump (not a regular file)\n",
                   path.c_str());
      return kExitError;
    }
  }
  return kGoOn;
}

// How the arguments go together; settles the cache directory and a summary's standard output.
int check_args(CliArgs& a) {
  RunOptions& options = a.run;
  if (a.port != 0 && !a.open) return usage_error("--port goes with --open or --load");
  if (!a.have_dump) return usage_error("no dump given");
  if (int status = check_dump_files(options); status != kGoOn) return status;
  if (options.format->not_json && is_saved_profile_name(options.output_path)) {
    return usage_error("-o " + options.output_path + ": " + options.format->not_json +
                       ", not JSON: give it another name (or no -o for the summary)");
  }
  if (a.folded_weight_given && !options.format->folded_weight) {
    return usage_error("--folded-weight goes with --format folded");
  }
  if (a.no_cache) {
    options.cache_dir.clear();
  } else if (options.cache_dir.empty()) {
    options.cache_dir = default_symbol_cache_dir();  // empty without HOME: no cache
  }
  if (a.open && !options.format->servable) {
    return usage_error("--open serves the JSON profile; it cannot go with --format " +
                       std::string(options.format->name));
  }
  if (a.open && options.output_path == "-") return usage_error("--open needs a file, not '-'");
  if (!a.have_output && !a.open) {
    // A summary is for reading: to the terminal unless told otherwise.
    if (!options.format->to_terminal) {
      return usage_error("no output file given (-o OUT.json)");
    }
    options.output_path = "-";
  }
  return kGoOn;
}

// What the platform allows or needs: no gzip on Windows, debuginfod's timeout elsewhere.
int prepare_platform(CliArgs& a) {
  RunOptions& options = a.run;
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
  options.progress = a.progress && isatty(STDERR_FILENO);
  return kGoOn;
}

// --open with no -o: the profile goes to a temporary file, named in `temporary`.
int create_temporary_output(CliArgs& a, std::string* temporary) {
#if defined(_WIN32)  // --open is refused on Windows
  (void)a, (void)temporary;
#else
  if (a.open && !a.have_output) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/symbolicate-XXXXXX.json.gz";
    int fd = mkstemps(pattern.data(), 8);
    if (fd < 0) {
      std::fprintf(stderr, "symbolicate: error: cannot create a temporary file: %s\n",
                   std::strerror(errno));
      return kExitError;
    }
    ::close(fd);
    *temporary = pattern;
    a.run.output_path = *temporary;
  }
#endif
  return kGoOn;
}

// The normal run: the dumps converted into one output, then served with --open.
int convert_and_serve(const CliArgs& a) {
  ProfileSymbolInfo symbol_info;
  int status = run_symbolicate(a.run, stderr, a.open ? &symbol_info : nullptr);
  if ((status == kExitOk || status == kExitDamaged) && a.open) {
    ServeOptions serve;
    serve.file = a.run.output_path;
    serve.open_browser = a.open_browser;
    serve.profiler_url = a.profiler_url;
    serve.port = a.port;
#if !defined(_WIN32)
    SymbolServer symbols(std::move(symbol_info));
    serve.symbols = &symbols;
#endif
    if (serve_profile(serve) != 0) status = kExitError;
  }
  return status;
}

// The dumps converted: each alone into a directory (batch), or together into one output.
int run(CliArgs& a) {
  std::string temporary;
  if (int status = create_temporary_output(a, &temporary); status != kGoOn) return status;
  a.run.exiting_after = !a.open;  // --open serves the file for a while after
#if defined(__SANITIZE_ADDRESS__) || defined(INPROF_ASAN)
  a.run.exiting_after = false;  // LeakSanitizer would report the tables left to the OS
#endif
#if defined(_WIN32)
  if (std::optional<std::string> why = find_compressed_chunk(a.run.dump_path)) {
    std::fprintf(stderr, "symbolicate: error: %s\n", why->c_str());
    return kExitError;
  }
#endif
  if (a.run.format->batch && is_output_directory(a.run.output_path)) {
    return run_symbolicate_batch(a.run, stderr);
  }
  const int status = convert_and_serve(a);
  if (!temporary.empty()) std::remove(temporary.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // Huge pages for malloc's heaps, and freed memory kept for reuse (huge_page_heap.h).
  prepare_huge_page_heap();
  CliArgs args;
  if (int status = parse_cli_args(argc, argv, &args); status != kGoOn) return status;
  // A saved profile given where a dump goes, with --open: served as it is (samply load).
  if (args.load_path.empty() && args.open && args.run.dump_paths.size() == 1 &&
      is_saved_profile_name(args.run.dump_path)) {
    args.load_path = args.run.dump_path;
  }
  if (!args.load_path.empty()) {
    return serve_saved_profile(args.load_path, args.open_browser, args.profiler_url, args.port);
  }
  if (int status = check_args(args); status != kGoOn) return status;
  if (int status = prepare_platform(args); status != kGoOn) return status;
  return run(args);
}
