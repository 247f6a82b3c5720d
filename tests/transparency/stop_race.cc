// Item 13: every stop path ends with a complete dump, even when the process exits while the stop
// is under way. Each mode makes the race certain: one thread waits until the stop has begun
// (is_running() turns false before the dump is finished) and ends the process at once. A large
// JIT map (/tmp/perf-PID.map, copied into the dump at the end) makes the end of the stop long.
//   stop_race thread-stop   a thread calls stop(), main returns meanwhile
//   stop_race thread-exit   main calls stop(), another thread calls exit() meanwhile
//   stop_race duration      INPROF_DURATION's stopper stops, main returns meanwhile
//   stop_race signal        INPROF_SIGNAL_DUMP (SIGUSR2) stops, main returns meanwhile
//   stop_race fork DUMP     a forked child profiles itself (into DUMP), then thread-stop
//   stop_race jit-fifo      a FIFO at /tmp/perf-PID.map (anyone can make one): exit still ends
// The first four expect a session started by INPROF_STARTUP=1.
#include <inprof/profiler.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

constexpr int kJitLines = 300000;

// The map is left for the test script to remove: it must still be there while the stop reads it.
// It appears whole (rename): INPROF_DURATION's stop may come before it on a loaded machine, and
// then the dump rightly has no map; stderr says whether the session was still running after it.
void write_jit_map() {
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  std::FILE* f = std::fopen((path + ".tmp").c_str(), "w");
  if (!f) std::exit(90);
  for (int i = 0; i < kJitLines; ++i) {
    std::fprintf(f, "%x 10 jitted_function_number_%d\n", 0x10000000 + 16 * i, i);
  }
  std::fclose(f);
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) std::exit(94);
  std::fprintf(stderr, "jit map %s%s\n", path.c_str(),
               inprof::Profiler::is_running() ? ", before the stop" : "");
  std::printf("jit map lines: %d\n", kJitLines);
  std::fflush(stdout);
}

void busy(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile unsigned sink = 0;
  while (std::chrono::steady_clock::now() < end) sink = sink + 1;
}

void wait_until_stopping() {
  while (inprof::Profiler::is_running()) {
  }
}

int thread_stop() {
  write_jit_map();
  busy(50);
  std::thread([] { (void)inprof::Profiler::stop(); }).detach();
  wait_until_stopping();
  return 0;  // returning from main: exit() while the thread's stop() writes the dump
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "fork" && !inprof::Profiler::is_running()) {
    std::fprintf(stderr, "stop_race: no session (INPROF_STARTUP=1 expected)\n");
    return 91;
  }
  if (mode == "thread-stop") return thread_stop();
  if (mode == "thread-exit") {
    write_jit_map();
    busy(50);
    std::thread([] {
      wait_until_stopping();
      std::exit(0);
    }).detach();
    (void)inprof::Profiler::stop();
    for (;;) pause();  // the other thread's exit() ends the process
  }
  if (mode == "jit-fifo") {
    const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
    if (mkfifo(path.c_str(), 0600) != 0) return 95;
    std::fprintf(stderr, "jit map %s\n", path.c_str());
    std::printf("jit map lines: %d\n", kJitLines);  // what the script expects of every mode
    return 0;
  }
  if (mode == "duration" || mode == "signal") {
    write_jit_map();
    if (mode == "signal") {
      busy(50);
      raise(SIGUSR2);
    }
    wait_until_stopping();
    return 0;
  }
  if (mode == "fork" && argc > 2) {
    const pid_t pid = fork();
    if (pid == 0) {
      inprof::Options options;
      options.output_path = argv[2];
      if (!inprof::Profiler::start(options)) _exit(92);
      std::exit(thread_stop());
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 93;
    std::printf("child exit status: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
  }
  std::fprintf(stderr, "usage: stop_race thread-stop|thread-exit|duration|signal|fork DUMP\n");
  return 2;
}
