// inprof record [options] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with libinprof preloaded and profiling from start to exit: the same as setting
// LD_PRELOAD and the INPROF_* variables by hand (INPROF_HELP=1 lists them).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "preload_check.h"
#include "record_args.h"

namespace {

constexpr const char* kUsage =
    "usage: inprof record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the profiler preloaded, and every process it starts; each writes its\n"
    "dump when it exits. Then: symbolicate DIR-OR-DUMPS -o profile.json (one profile, a\n"
    "process track each), and open it on https://profiler.firefox.com\n"
    "\n"
    "options (durations need a unit: ns, us, ms or s):\n"
    "  -o, --output PATH     PROGRAM's dump, %p = process id; a process it starts writes\n"
    "                        PATH-PID (or PATH with its %p). Default: a directory\n"
    "                        inprof-PID/ with a PID.inprof per process (inprof-%p.inprof\n"
    "                        with --no-children). Relative: from the current directory\n"
    "      --no-children     profile PROGRAM only, not the processes it starts\n"
    "      --open            when PROGRAM ends, symbolicate its dumps and open the profile\n"
    "                        in the Firefox Profiler (served until Ctrl-C)\n"
    "      --no-browser      with --open: print the profile's address, open no browser\n"
    "  -i, --interval DUR    sampling interval, 100us to 1s, e.g. 250us (default 1ms)\n"
    "  -d, --duration DUR    stop after this long, e.g. 10s (default: at exit)\n"
    "  -t, --threads LIST    only threads whose name contains one of these (comma-separated)\n"
    "  -u, --unwinder KIND   auto, dwarf or fp (default auto)\n"
    "      --dump-signal SIG write the dump when the program receives SIG (e.g. SIGUSR2)\n"
    "      --rotate DUR      continuous mode: a new dump every DUR (e.g. 60s), each complete;\n"
    "                        PATH may hold %n (window number) and %t (its start, UTC), else\n"
    "                        -%n goes before the extension\n"
    "      --keep N          with --rotate: keep only the newest N dumps of each process\n"
    "      --allocations[=BYTES]  also record sampled native allocations and what stays\n"
    "                        allocated: one per BYTES allocated on average (default 512K;\n"
    "                        1: every allocation). Preloads libinprof_allocations.so, which\n"
    "                        replaces malloc, free and operator new/delete in PROGRAM\n"
    "      --no-cpu          no CPU samples: with --allocations, a memory-only profile (no\n"
    "                        thread is interrupted, no signal handler installed)\n"
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

// The symbolicate beside this program (installed, or in the build tree), or $INPROF_SYMBOLICATE.
std::string find_symbolicate() {
  if (const char* env = std::getenv("INPROF_SYMBOLICATE"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "symbolicate";
    if (std::filesystem::is_regular_file(beside, ec)) return beside.string();
  }
  return INPROF_BUILD_TREE_SYMBOLICATE;
}

// The dumps a run left: the run's directory, else PROGRAM's dump and its children's (PATH-PID,
// or the files PATH's %p matches).
std::vector<std::string> dumps_of_run(const inprof::launcher::RecordCommand& command,
                                      pid_t program) {
  if (!command.run_directory.empty()) return {command.run_directory};
  namespace fs = std::filesystem;
  const fs::path pattern(command.output);
  const std::string name = pattern.filename().string();
  std::string regex;
  if (name.find("%p") != std::string::npos) {
    for (size_t i = 0; i < name.size(); ++i) {
      if (name.compare(i, 2, "%p") == 0) {
        regex += "[0-9]+";
        ++i;
      } else {
        regex += std::string(std::strchr(".^$|()[]{}*+?\\", name[i]) ? "\\" : "") + name[i];
      }
    }
  } else {
    const size_t dot = name.rfind('.');
    const std::string stem = dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
    const std::string ext = stem.size() == name.size() ? "" : name.substr(stem.size());
    auto quote = [](const std::string& t) {
      std::string q;
      for (char c : t) q += std::string(std::strchr(".^$|()[]{}*+?\\", c) ? "\\" : "") + c;
      return q;
    };
    regex = quote(stem) + "(-[0-9]+)?" + quote(ext);
  }
  std::vector<std::string> found;
  const std::regex match(regex);
  std::error_code ec;
  for (fs::directory_iterator it(pattern.parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    if (std::regex_match(it->path().filename().string(), match)) found.push_back(it->path());
  }
  (void)program;
  return found;
}

// Waits for `pid`; its exit status as a shell gives it (128 + signal for a killed one).
int wait_status(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// --open: PROGRAM runs as a child (its pid is not ours), then symbolicate serves the profile.
int record_and_open(const inprof::launcher::RecordCommand& command, std::vector<char*>& argv,
                    bool open_browser, const std::optional<std::string>& old_preload) {
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "inprof: cannot start '%s': %s\n", argv[0], std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    setenv("INPROF_ROOT_PID", std::to_string(getpid()).c_str(), 1);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "inprof: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  // Ctrl-C goes to PROGRAM (the terminal's whole foreground group gets it); we stay to finish.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  const int program_status = wait_status(child);
  if (program_status == 127 && !command.run_directory.empty()) rmdir(command.run_directory.c_str());
  const std::vector<std::string> dumps = dumps_of_run(command, child);
  if (dumps.empty()) {
    std::fprintf(stderr, "inprof: no dump to open (looked for %s)\n", command.output.c_str());
    return program_status ? program_status : 1;
  }
  const std::string symbolicate = find_symbolicate();
  std::vector<std::string> args = {symbolicate};
  args.insert(args.end(), dumps.begin(), dumps.end());
  args.push_back("--open");
  if (!open_browser) args.push_back("--no-browser");
  std::vector<char*> sargv;
  for (std::string& a : args) sargv.push_back(a.data());
  sargv.push_back(nullptr);
  const pid_t server = fork();
  if (server == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    // symbolicate runs as it would have without us: not preloaded, not profiled.
    for (const auto& [name, value] : command.variables) unsetenv(name.c_str());
    if (old_preload) {
      setenv("LD_PRELOAD", old_preload->c_str(), 1);
    } else {
      unsetenv("LD_PRELOAD");
    }
    execv(sargv[0], sargv.data());
    std::fprintf(stderr, "inprof: cannot run '%s': %s\n", sargv[0], std::strerror(errno));
    _exit(127);
  }
  const int server_status = server < 0 ? 127 : wait_status(server);
  if (program_status) return program_status;
  // Ctrl-C is how the server is meant to end.
  return server_status == 128 + SIGINT ? 0 : server_status;
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
  if (command->variables.count("INPROF_ALLOCATIONS")) {
    // The allocation interposer lives beside the library (libinprof_allocations.so).
    const std::string interposer =
        (std::filesystem::path(library).parent_path() / "libinprof_allocations.so").string();
    if (!std::filesystem::is_regular_file(interposer)) {
      std::fprintf(stderr, "inprof: --allocations: cannot find %s\n", interposer.c_str());
      return 127;
    }
    preload = interposer + ":" + preload;
  }
  std::optional<std::string> old_preload;
  if (const char* old = std::getenv("LD_PRELOAD"); old) old_preload = old;
  if (old_preload && !old_preload->empty()) preload += ":" + *old_preload;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [name, value] : command->variables) setenv(name.c_str(), value.c_str(), 1);

  if (!command->run_directory.empty()) {
    if (mkdir(command->run_directory.c_str(), 0777) != 0) {
      std::fprintf(stderr, "inprof: cannot create %s: %s\n", command->run_directory.c_str(),
                   std::strerror(errno));
      return 1;
    }
    const std::string shown = std::filesystem::path(command->run_directory).filename().string();
    std::fprintf(stderr,
                 "inprof: a dump per process goes to %s/ (then: symbolicate %s -o profile.json)\n",
                 shown.c_str(), shown.c_str());
  }

  std::vector<char*> child;
  for (const std::string& arg : command->program) child.push_back(const_cast<char*>(arg.c_str()));
  child.push_back(nullptr);
  if (command->open) {
    return record_and_open(*command, child, command->open_browser, old_preload);
  }
  execvp(child[0], child.data());
  std::fprintf(stderr, "inprof: cannot run '%s': %s\n", child[0], std::strerror(errno));
  if (!command->run_directory.empty()) rmdir(command->run_directory.c_str());
  return 127;
}
