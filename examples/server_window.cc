// A server-like program that is profiled only for a window of time, on request: SIGUSR1 starts a
// 2-second profile while the server keeps serving (a real server would use its admin endpoint).
//
//   ./server_window [seconds-to-run] [output.inprof]   (default: 6 s; profiles itself at 2 s)
//   kill -USR1 <pid>                                    # another window, another dump
#include <inprof/markers.h>
#include <inprof/profiler.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_profile_requested{false};
void on_usr1(int) { g_profile_requested = true; }

__attribute__((noipa)) uint64_t handle_request(uint64_t id) {
  INPROF_SCOPED_MARKER("request");
  uint64_t x = id;
  for (int i = 0; i < 200000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

void worker(int index, std::atomic<bool>& running) {
  inprof::set_thread_name("worker-" + std::to_string(index));
  uint64_t id = 0;
  volatile uint64_t sink = 0;
  while (running) {
    sink = sink + handle_request(id++);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // waiting for the next request
  }
}

// Profiles the next `window`, writing `path`; the server is not paused meanwhile.
void profile_window(const std::string& path, std::chrono::seconds window) {
  inprof::Options options;
  options.output_path = path;
  if (auto s = inprof::Profiler::start(options); !s) {
    std::fprintf(stderr, "profiling unavailable: %s\n", s.message().c_str());
    return;
  }
  std::this_thread::sleep_for(window);
  if (auto s = inprof::Profiler::stop(); !s) std::fprintf(stderr, "%s\n", s.message().c_str());
  std::printf("profiled %llds into %s\n", static_cast<long long>(window.count()), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 6;
  const std::string base = argc > 2 ? argv[2] : "server_window.inprof";
  signal(SIGUSR1, on_usr1);
  std::atomic<bool> running{true};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) workers.emplace_back(worker, i, std::ref(running));
  std::printf("serving as pid %d; kill -USR1 %d to profile 2 s\n", getpid(), getpid());
  int windows = 0;
  for (int t = 0; t < seconds * 10; ++t) {
    if (t == 20) g_profile_requested = true;  // the demo asks once by itself
    if (g_profile_requested.exchange(false)) {
      profile_window(windows == 0 ? base : base + "." + std::to_string(windows),
                     std::chrono::seconds(2));
      ++windows;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  running = false;
  for (auto& w : workers) w.join();
  return 0;
}
