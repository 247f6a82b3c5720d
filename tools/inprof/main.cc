// inprof record [options] -- PROGRAM [ARGS...]
//
// Runs PROGRAM with libinprof preloaded and profiling from start to exit: the same as setting
// LD_PRELOAD and the INPROF_* variables by hand (INPROF_HELP=1 lists them).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "child_program.h"
#include "lifeboat_dock.h"
#include "options/env_options.h"
#include "preload_check.h"
#include "record_args.h"

namespace {

constexpr const char* kUsage =
    "usage: inprof record [options] PROGRAM [ARGS...]\n"
    "       inprof load PROFILE.json[.gz] [--port N] [--no-browser]\n"
    "\n"
    "Runs PROGRAM with the profiler preloaded, and every process it starts; when it ends,\n"
    "writes one Firefox Profiler profile of them all (a process track each), symbolicated\n"
    "here: profile.json.gz unless -o says otherwise. Open it with `inprof load FILE`, or\n"
    "load it at https://profiler.firefox.com. Options stop at PROGRAM (or at '--').\n"
    "\n"
    "options (durations need a unit: ns, us, ms or s):\n"
    "  -o, --output PATH     NAME.json or NAME.json.gz: the profile (default profile.json.gz);\n"
    "                        NAME.inprof: raw dumps instead (as --raw), %p = process id; a\n"
    "                        process PROGRAM starts writes NAME-PID.inprof. Relative: from\n"
    "                        the current directory\n"
    "      --raw             write raw dumps, to symbolicate later or elsewhere (release\n"
    "                        builds): default a directory inprof-PID/ with a PID.inprof per\n"
    "                        process (inprof-PID.inprof with --no-children)\n"
    "      --no-children     profile PROGRAM only, not the processes it starts\n"
    "      --open            when PROGRAM ends, also open the profile in the Firefox Profiler\n"
    "                        (served until Ctrl-C; the file stays)\n"
    "      --port N          with --open: serve on 127.0.0.1:N (default: a free port)\n"
    "      --no-browser      with --open: print the profile's address, open no browser\n"
    "  -q, --quiet           nothing on stderr from inprof but warnings and errors\n"
    "  -i, --interval DUR    sampling interval, 100us to 1s, e.g. 250us (default 1ms)\n"
    "  -d, --duration DUR    stop after this long, e.g. 10s (default: at exit)\n"
    "  -t, --threads LIST    only threads whose name contains one of these (comma-separated)\n"
    "  -u, --unwinder KIND   auto, dwarf or fp (default auto)\n"
    "      --dump-signal SIG write the dump when the program receives SIG (e.g. SIGUSR2)\n"
    "      --allocations[=BYTES]  also record sampled native allocations and what stays\n"
    "                        allocated: one per BYTES allocated on average (default 512K;\n"
    "                        1: every allocation). Preloads libinprof_allocations.so, which\n"
    "                        replaces malloc, free and operator new/delete in PROGRAM\n"
    "      --no-cpu          no CPU samples: with --allocations, a memory-only profile (no\n"
    "                        thread is interrupted, no signal handler installed)\n"
    "\n"
    "continuous and flight-recorder modes (raw dumps):\n"
    "      --rotate DUR      a new dump every DUR (e.g. 60s), each complete; PATH may hold\n"
    "                        %n (window number) and %t (its start, UTC), else -%n goes\n"
    "                        before the extension\n"
    "      --keep N          with --rotate: keep only the newest N dumps of each process\n"
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
    "exit status: PROGRAM's (killed by a signal: the same signal), or 1 if PROGRAM succeeded\n"
    "but its profile could not be written (the dumps are kept, and said where); 2 for a usage\n"
    "error or a PROGRAM that cannot be profiled; 126 if PROGRAM is not executable, 127 if it\n"
    "or the library cannot be found.\n";

// One line, naming what was wrong; the help text is one --help away.
int usage_error(const std::string& message) {
  std::fprintf(stderr, "inprof: %s\n", message.c_str());
  return 2;
}

constexpr const char* kLoadUsage =
    "usage: inprof load PROFILE.json[.gz] [--port N] [--no-browser]\n"
    "\n"
    "Serves a saved profile on 127.0.0.1 and opens it in the Firefox Profiler (until\n"
    "Ctrl-C). --port N: serve on that port (say, one forwarded over SSH); --no-browser:\n"
    "print the address only. The assembly view needs the run's dumps: it works in\n"
    "`inprof record --open` and `symbolicate DUMPS --open`, not here.\n";

// `path` as a user would type it from here: relative when it is under the current directory.
std::string shown_path(const std::string& path) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  if (ec) return path;
  const auto relative = std::filesystem::path(path).lexically_relative(cwd);
  if (relative.empty() || relative.string().rfind("..", 0) == 0) return path;
  return relative.string();
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
std::vector<std::string> dumps_of_run(const inprof::launcher::RecordCommand& command) {
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
  return found;
}

// symbolicate's arguments to serve or write a run's profile.
std::vector<std::string> symbolicate_args(const inprof::launcher::RecordCommand& command,
                                          const std::vector<std::string>& dumps) {
  std::vector<std::string> args = {find_symbolicate()};
  args.insert(args.end(), dumps.begin(), dumps.end());
  if (!command.profile.empty()) {
    args.insert(args.end(), {"-o", command.profile});
  }
  args.push_back("--quiet");  // the launcher says where the profile went; warnings remain
  if (command.open) {
    args.push_back("--open");
    if (!command.open_browser) args.push_back("--no-browser");
    if (!command.port.empty()) args.insert(args.end(), {"--port", command.port});
  }
  return args;
}

// PROGRAM as a child (its pid is not ours), then its profile: written to command.profile from
// the run's temporary dumps (then removed), and/or served (--open, until Ctrl-C).
[[noreturn]] void record_then_profile(const inprof::launcher::RecordCommand& command,
                                      const std::optional<std::string>& old_preload) {
  using inprof::launcher::ChildEnd;
  // Takes the unwritten records of the processes that leave without stopping the profiler.
  auto dock = inprof::launcher::LifeboatDock::open();
  const ChildEnd end = inprof::launcher::run_child_program(command.program);
  if (dock) dock->finish();
  const bool temporary = !command.profile.empty() && !command.run_directory.empty();
  const std::vector<std::string> dumps =
      end.started ? dumps_of_run(command) : std::vector<std::string>{};
  if (dumps.empty() || (temporary && std::filesystem::is_empty(command.run_directory))) {
    if (end.started) {
      std::fprintf(stderr, "inprof: no dump to %s (looked for %s)\n",
                   command.open ? "open" : "make a profile of", command.output.c_str());
    }
    if (!command.run_directory.empty()) rmdir(command.run_directory.c_str());
    inprof::launcher::end_like(end, end.status ? end.status : 1);
  }
  std::vector<std::string> unset;
  for (const auto& [name, value] : command.variables) unset.push_back(name);
  unset.push_back("INPROF_ROOT_PID");
  unset.push_back("INPROF_LIFEBOAT");
  // symbolicate runs as it would have without us: not preloaded, not profiled.
  const int status = inprof::launcher::run_tool(symbolicate_args(command, dumps), unset,
                                                old_preload ? &*old_preload : nullptr);
  // 3: written, but a dump had lost records (symbolicate said which).
  const bool written = status == 0 || status == 3 || (command.open && status == 128 + SIGINT);
  if (!written) {
    std::fprintf(
        stderr, "inprof: symbolicate failed (exit %d); the dumps are kept in %s\n", status,
        command.run_directory.empty() ? command.output.c_str() : command.run_directory.c_str());
    inprof::launcher::end_like(end, end.status ? end.status : 1);
  }
  if (temporary) {
    std::error_code ec;
    std::filesystem::remove_all(command.run_directory, ec);
  }
  if (!command.profile.empty() && !command.quiet && !command.open) {
    std::fprintf(stderr, "inprof: wrote %s (inprof load %s opens it in the Firefox Profiler)\n",
                 shown_path(command.profile).c_str(), shown_path(command.profile).c_str());
  }
  inprof::launcher::end_like(end, end.status);
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

// Why PROGRAM cannot be run, as a shell would say it, with the shell's status (127: not found,
// 126: found but not executable); nothing if it can.
std::optional<std::pair<int, std::string>> program_problem(const std::string& program) {
  if (inprof::launcher::find_program(program)) return std::nullopt;
  struct stat st;
  if (program.find('/') == std::string::npos || stat(program.c_str(), &st) != 0) {
    return std::pair(127, "cannot run '" + program + "': not found");
  }
  return std::pair(126, "cannot run '" + program +
                            "': " + (S_ISDIR(st.st_mode) ? "it is a directory" : "not executable"));
}

// inprof load FILE [--port N] [--no-browser]: a saved profile served to the Firefox Profiler.
int load(const std::vector<std::string>& args) {
  std::vector<std::string> tool = {find_symbolicate()};
  std::string file;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--no-browser") {
      tool.push_back(args[i]);
    } else if (args[i] == "--port" && i + 1 < args.size()) {
      tool.insert(tool.end(), {"--port", args[++i]});
    } else if (args[i].rfind("--port=", 0) == 0) {
      tool.insert(tool.end(), {"--port", args[i].substr(7)});
    } else if (args[i] == "-h" || args[i] == "--help") {
      std::fputs(kLoadUsage, stdout);
      return 0;
    } else if (!args[i].empty() && args[i][0] == '-') {
      return usage_error("load: unknown option '" + args[i] + "' (inprof load --help)");
    } else if (file.empty()) {
      file = args[i];
    } else {
      return usage_error("load: one profile at a time ('" + args[i] + "')");
    }
  }
  if (file.empty()) return usage_error("load: which profile? (inprof load PROFILE.json[.gz])");
  tool.insert(tool.begin() + 1, {"--load", file});
  std::vector<char*> argv;
  for (std::string& a : tool) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  std::fprintf(stderr, "inprof: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  return 127;
}

// Says, once, where the output goes when the user did not name it, and what a dump signal does.
void announce(const inprof::launcher::RecordCommand& command, bool output_defaulted) {
  if (command.quiet) return;
  if (!command.profile.empty()) return;  // said when it is written
  if (!command.run_directory.empty()) {
    const std::string shown = std::filesystem::path(command.run_directory).filename().string();
    std::fprintf(stderr,
                 "inprof: a dump per process goes to %s/ (then: symbolicate %s -o profile.json)\n",
                 shown.c_str(), shown.c_str());
  } else if (output_defaulted) {
    const std::string dump = inprof::internal::expand_output_path(command.output, getpid());
    std::fprintf(stderr, "inprof: the dump goes to %s\n", shown_path(dump).c_str());
  }
  if (auto it = command.variables.find("INPROF_SIGNAL_DUMP"); it != command.variables.end()) {
    std::fprintf(stderr, "inprof: on %s a process stops profiling and writes its dump\n",
                 it->second.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage_error("missing command: inprof record [options] PROGRAM [ARGS...]");
  if (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "--version") {
    std::printf("inprof %s\n", INPROF_VERSION_STRING);
    return 0;
  }
  if (args[0] == "load") return load({args.begin() + 1, args.end()});
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
  if (auto problem = program_problem(program)) {
    std::fprintf(stderr, "inprof: %s\n", problem->second.c_str());
    return problem->first;
  }
  if (const auto why =
          inprof::launcher::preload_obstacle(*inprof::launcher::find_program(program))) {
    std::fprintf(stderr, "inprof: cannot profile '%s': %s\n", program.c_str(), why->c_str());
    return 2;
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

  if (!command->run_directory.empty() && mkdir(command->run_directory.c_str(), 0777) != 0) {
    std::fprintf(stderr, "inprof: cannot create %s: %s\n", command->run_directory.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const bool output_defaulted =
      !std::getenv("INPROF_OUTPUT") &&
      std::none_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "-o" || a == "--output" || a.rfind("--output=", 0) == 0;
      });
  announce(*command, output_defaulted);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [name, value] : command->variables) setenv(name.c_str(), value.c_str(), 1);
  if (!command->profile.empty() || command->open) record_then_profile(*command, old_preload);

  std::vector<char*> child;
  for (const std::string& arg : command->program) child.push_back(const_cast<char*>(arg.c_str()));
  child.push_back(nullptr);
  execvp(child[0], child.data());
  std::fprintf(stderr, "inprof: cannot run '%s': %s\n", child[0], std::strerror(errno));
  if (!command->run_directory.empty()) rmdir(command->run_directory.c_str());
  return errno == ENOENT ? 127 : 126;
}
