// inprof record [options] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with libinprof preloaded and profiling from start to exit: the same as setting
// LD_PRELOAD and the INPROF_* variables by hand (INPROF_HELP=1 lists them).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "preload_check.h"
#include "record_args.h"

namespace {

constexpr const char* kUsage =
    "usage: inprof record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the profiler preloaded; the dump is written when it exits.\n"
    "Then: symbolicate DUMP -o profile.json, and open it on https://profiler.firefox.com\n"
    "\n"
    "options (durations need a unit: ns, us, ms or s):\n"
    "  -o, --output PATH     dump path, %p = process id (default inprof-%p.inprof); a relative\n"
    "                        path is taken from the current directory\n"
    "  -i, --interval DUR    sampling interval, 100us to 1s, e.g. 250us (default 1ms)\n"
    "  -d, --duration DUR    stop after this long, e.g. 10s (default: at exit)\n"
    "  -t, --threads LIST    only threads whose name contains one of these (comma-separated)\n"
    "  -u, --unwinder KIND   auto, dwarf or fp (default auto)\n"
    "      --dump-signal SIG write the dump when the program receives SIG (e.g. SIGUSR2)\n"
    "\n"
    "flight recorder (keep the last records in memory; write them on demand):\n"
    "      --ring            ring mode: nothing is written until a capture or exit\n"
    "      --ring-seconds N  captures hold at most the last N seconds (implies --ring)\n"
    "      --capture-signal SIG  on SIG, write the ring to OUTPUT-capture-N (implies --ring)\n"
    "      --crash           on a crash, write the ring to OUTPUT-crash (implies --ring)\n"
    "  -h, --help            this text\n"
    "      --version         the version\n"
    "\n"
    "Every value is checked before PROGRAM runs; so is PROGRAM (a statically linked one\n"
    "cannot be profiled by preloading).\n"
    "\n"
    "exit status: PROGRAM's; 2 for a usage error or a PROGRAM that cannot be profiled;\n"
    "127 if PROGRAM or the library cannot be found.\n";

// One line, naming what was wrong; the help text is one --help away.
int usage_error(const std::string& message) {
  std::fprintf(stderr, "inprof: %s\n", message.c_str());
  return 2;
}

// The shared library to preload: $INPROF_LIBRARY, else the installed one beside this program
// (bin/../lib/...), else the one from the build tree this launcher was built in.
std::string find_library() {
  if (const char* env = std::getenv("INPROF_LIBRARY"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = self.parent_path().parent_path() / INPROF_INSTALLED_LIBRARY;
    if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
  }
  return INPROF_BUILD_TREE_LIBRARY;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage_error("missing command: inprof record [options] -- PROGRAM [ARGS...]");
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "--version") {
    std::printf("inprof %s\n", INPROF_VERSION_STRING);
    return 0;
  }
  if (args[0] != "record") return usage_error("unknown command '" + args[0] + "'");

  args.erase(args.begin());
  std::string error;
  const auto command = inprof::launcher::parse_record_args(
      args, [](const char* name) { return std::getenv(name); }, static_cast<uint64_t>(getpid()),
      &error);
  if (!command) return usage_error(error);
  if (command->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::string& program = command->program[0];
  if (const auto path = inprof::launcher::find_program(program)) {
    if (const auto why = inprof::launcher::preload_obstacle(*path)) {
      std::fprintf(stderr, "inprof: cannot profile '%s': %s\n", program.c_str(), why->c_str());
      return 2;
    }
  }

  const std::string library = find_library();
  if (!std::filesystem::is_regular_file(library)) {
    std::fprintf(stderr, "inprof: cannot find libinprof.so (looked at %s); set INPROF_LIBRARY\n",
                 library.c_str());
    return 127;
  }
  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [name, value] : command->variables) setenv(name.c_str(), value.c_str(), 1);

  std::vector<char*> child;
  for (const std::string& arg : command->program) child.push_back(const_cast<char*>(arg.c_str()));
  child.push_back(nullptr);
  execvp(child[0], child.data());
  std::fprintf(stderr, "inprof: cannot run '%s': %s\n", child[0], std::strerror(errno));
  return 127;
}
