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

namespace {

constexpr const char* kUsage =
    "usage: inprof record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the profiler preloaded; the dump is written when it exits.\n"
    "Then: symbolicate DUMP -o profile.json, and open it on https://profiler.firefox.com\n"
    "\n"
    "options:\n"
    "  -o, --output PATH     dump path, %p = process id (default inprof-%p.inprof)\n"
    "  -i, --interval DUR    sampling interval, e.g. 1ms, 250us (default 1ms)\n"
    "  -d, --duration DUR    stop after this long, e.g. 10s (default: at exit)\n"
    "  -t, --threads LIST    only threads whose name contains one of these (comma-separated)\n"
    "  -u, --unwinder KIND   auto, dwarf or fp (default auto)\n"
    "      --dump-signal SIG write the dump when the program receives SIG (e.g. SIGUSR2)\n"
    "\n"
    "flight recorder (keep the last records in memory; write them on demand):\n"
    "      --ring            ring mode: nothing is written until a capture or exit\n"
    "      --ring-seconds N  captures hold at most the last N seconds\n"
    "      --capture-signal SIG  on SIG, write the ring to OUTPUT-capture-N (e.g. SIGUSR1)\n"
    "      --crash           on a crash, write the ring to OUTPUT-crash\n"
    "  -h, --help            this text\n"
    "      --version         the version\n"
    "\n"
    "exit status: PROGRAM's, or 2 for a usage error, 127 if PROGRAM cannot be run.\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "inprof: %s\n%s", message.c_str(), kUsage);
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
  if (args.empty()) return usage_error("missing command");
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "--version") {
    std::printf("inprof %s\n", INPROF_VERSION_STRING);
    return 0;
  }
  if (args[0] != "record") return usage_error("unknown command '" + args[0] + "'");

  std::vector<std::pair<std::string, std::string>> env = {{"INPROF_STARTUP", "1"}};
  size_t i = 1;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* variable) -> bool {
      if (i + 1 >= args.size() || args[i + 1] == "--") return false;
      env.emplace_back(variable, args[++i]);
      return true;
    };
    bool ok;
    if (a == "-o" || a == "--output")
      ok = value("INPROF_OUTPUT");
    else if (a == "-i" || a == "--interval")
      ok = value("INPROF_INTERVAL");
    else if (a == "-d" || a == "--duration")
      ok = value("INPROF_DURATION");
    else if (a == "-t" || a == "--threads")
      ok = value("INPROF_THREADS");
    else if (a == "-u" || a == "--unwinder")
      ok = value("INPROF_UNWINDER");
    else if (a == "--dump-signal")
      ok = value("INPROF_SIGNAL_DUMP");
    else if (a == "--ring") {
      env.emplace_back("INPROF_MODE", "ring");
      ok = true;
    } else if (a == "--ring-seconds")
      ok = value("INPROF_RING_SECONDS");
    else if (a == "--capture-signal")
      ok = value("INPROF_SIGNAL_CAPTURE");
    else if (a == "--crash") {
      env.emplace_back("INPROF_CRASH", "1");
      ok = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      return usage_error("unknown option '" + a + "'");
    }
    if (!ok) return usage_error("option '" + a + "' needs a value");
  }
  if (i >= args.size()) return usage_error("missing '--' before the program");
  if (i + 1 >= args.size()) return usage_error("missing program after '--'");

  const std::string library = find_library();
  if (!std::filesystem::is_regular_file(library)) {
    std::fprintf(stderr, "inprof: cannot find libinprof.so (looked at %s); set INPROF_LIBRARY\n",
                 library.c_str());
    return 127;
  }
  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);

  std::vector<char*> child;
  for (size_t k = i + 1; k < args.size(); ++k) child.push_back(args[k].data());
  child.push_back(nullptr);
  execvp(child[0], child.data());
  std::fprintf(stderr, "inprof: cannot run '%s': %s\n", child[0], std::strerror(errno));
  return 127;
}
