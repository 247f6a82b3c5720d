#include <inprof/profiler.h>

#include <cstdio>
#include <thread>

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "consumer.inprof";
  if (auto status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "start: %s\n", status.message().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  if (auto status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "stop: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("inprof %s: profile written\n", inprof::version());
  return 0;
}
