// symbolicate DUMP -o OUT.json: turns an inprof dump into a Firefox Profiler profile.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "symbolicate.h"

#ifndef INPROF_VERSION_STRING
#define INPROF_VERSION_STRING "unknown"
#endif

namespace {

using namespace inprof::symbolicate;

void print_usage(std::FILE* f) {
  std::fprintf(f,
               "usage: symbolicate DUMP -o OUT.json\n"
               "\n"
               "Reads an inprof dump and writes a symbolicated Firefox Profiler profile\n"
               "(processed format), to open at https://profiler.firefox.com.\n"
               "\n"
               "options:\n"
               "  -o, --output FILE   where to write the JSON ('-' for standard output)\n"
               "  -h, --help          show this help and exit\n"
               "  -V, --version       show the version and exit\n"
               "\n"
               "exit status: 0 success (warnings possible), 1 error, 2 wrong usage\n");
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "symbolicate: %s\n", message.c_str());
  print_usage(stderr);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  RunOptions options;
  bool have_dump = false, have_output = false, options_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!options_done && (arg == "-h" || arg == "--help")) {
      print_usage(stdout);
      return kExitOk;
    }
    if (!options_done && (arg == "-V" || arg == "--version")) {
      std::printf("symbolicate (inprof) %s\n", INPROF_VERSION_STRING);
      return kExitOk;
    }
    if (!options_done && (arg == "-o" || arg == "--output" || arg.rfind("--output=", 0) == 0 ||
                          (arg.size() > 2 && arg.rfind("-o", 0) == 0))) {
      std::string value;
      if (arg == "-o" || arg == "--output") {
        if (i + 1 >= argc) return usage_error("option '" + arg + "' needs a file name");
        value = argv[++i];
      } else if (arg[1] == 'o') {
        value = arg.substr(2);
      } else {
        value = arg.substr(std::strlen("--output="));
      }
      if (have_output) return usage_error("more than one output file given");
      if (value.empty()) return usage_error("empty output file name");
      options.output_path = value;
      have_output = true;
      continue;
    }
    if (!options_done && arg == "--") {
      options_done = true;
      continue;
    }
    if (!options_done && arg.size() > 1 && arg[0] == '-') {
      return usage_error("unknown option '" + arg + "'");
    }
    if (have_dump) return usage_error("more than one dump given");
    options.dump_path = arg;
    have_dump = true;
  }
  if (!have_dump) return usage_error("no dump given");
  if (!have_output) return usage_error("no output file given (-o OUT.json)");

  // An offline tool: never wait on a debuginfod server for separate debug files.
  unsetenv("DEBUGINFOD_URLS");
  return run_symbolicate(options, stderr);
}
