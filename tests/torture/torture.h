// The torture suite's harness: every scenario runs its workload while inprof samples at 10 kHz,
// checks the workload's own results, and stops the profiler. run_torture.sh adds the watchdog and
// the checks of the dump and of the symbolicated profile.
#ifndef INPROF_TESTS_TORTURE_TORTURE_H_
#define INPROF_TESTS_TORTURE_TORTURE_H_

#include <inprof/profiler.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace torture {

// What a scenario gets from the command line and the environment.
struct Context {
  std::string name;
  std::string dump_path;
  double seconds = 1.5;  // workload length: CI default, INPROF_SOAK=1 or INPROF_TORTURE_SECONDS
  bool soak = false;
  std::string self_path;  // this executable, for fork+exec
};

using ScenarioFn = int (*)(const Context&);

// Registers a scenario at static-initialisation time (one per TORTURE_SCENARIO below).
struct Registrar {
  Registrar(const char* name, ScenarioFn fn);
};

#define TORTURE_SCENARIO(name)                                                          \
  static int torture_scenario_##name(const ::torture::Context&);                        \
  static ::torture::Registrar torture_registrar_##name(#name, torture_scenario_##name); \
  static int torture_scenario_##name(const ::torture::Context& ctx)

// Reports a failure and ends the process with status 1 at once: a broken workload must not go on
// to look like a pass. _Exit, because exit handlers may be what is broken.
[[noreturn]] void fail(const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

#define TT_CHECK(cond, ...)                                                                      \
  do {                                                                                           \
    if (!(cond)) ::torture::fail(__FILE__, __LINE__, "check failed: " #cond " -- " __VA_ARGS__); \
  } while (0)

// The options every scenario profiles with: 100 µs interval (10 kHz), the given dump.
inprof::Options options(const Context& ctx);
// Starts/stops the profiler; a non-ok Status fails the scenario.
void start(const Context& ctx);
void stop();

// The scenario's workload clock.
class Deadline {
 public:
  explicit Deadline(double seconds)
      : end_(std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                 std::chrono::duration<double>(seconds))) {}
  bool passed() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

// Deterministic CPU work the compiler cannot remove: the result depends on every step.
uint64_t mix(uint64_t seed, uint64_t rounds);

// The summary line of a scenario's workload (the driver adds the sample count from the dump).
void report(const Context& ctx, const char* format, ...) __attribute__((format(printf, 2, 3)));

uint64_t now_ns();

}  // namespace torture

#endif  // INPROF_TESTS_TORTURE_TORTURE_H_
