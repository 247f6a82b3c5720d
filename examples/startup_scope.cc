// Profiles only a program's start-up: the ProfileScope starts the profiler in its constructor
// and writes the dump in its destructor; the rest of the run is not profiled.
//
//   ./startup_scope [output.inprof]
#include <inprof/profiler.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

__attribute__((noipa)) std::map<std::string, int> load_configuration() {
  std::map<std::string, int> config;
  for (int i = 0; i < 300000; ++i) config["key" + std::to_string(i % 5000)] += i;
  return config;
}

__attribute__((noipa)) std::vector<double> build_lookup_tables() {
  std::vector<double> table(4000000);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i * i % 977) / 3.0;
  return table;
}

__attribute__((noipa)) void warm_caches(const std::vector<double>& table) {
  volatile double sum = 0;
  for (int round = 0; round < 20; ++round) {
    for (double v : table) sum = sum + v;
  }
}

}  // namespace

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "startup.inprof";
  {
    inprof::ProfileScope startup(options);
    if (!startup.status()) {
      std::fprintf(stderr, "profiling disabled: %s\n", startup.status().message().c_str());
    }
    auto config = load_configuration();
    auto table = build_lookup_tables();
    warm_caches(table);
    std::printf("start-up done: %zu keys\n", config.size());
  }                                                            // the dump is complete here
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // "the rest of the program"
  std::printf("start-up profile written to %s\n", options.output_path.c_str());
  return 0;
}
