// Built with INPROF_DISABLE and without the library: every call compiles to nothing and links.
#include <inprof/inprof.h>
#include <inprof/markers.h>
#include <inprof/profiler.h>

#include <cstdio>

struct Payload {
  static constexpr std::string_view kName = "Payload";
  static constexpr inprof::MarkerField kFields[] = {{"n", "N", inprof::Format::kInteger}};
};

int main() {
  inprof::Options options;
  inprof::Status status = inprof::Profiler::start(options);
  if (status.code() != inprof::Status::Code::kDisabled) return 1;
  { inprof::ProfileScope scope(options); }
  inprof::set_thread_name("main");
  inprof::register_thread("main");
  inprof::unregister_thread();
  INPROF_MARKER("m");
  INPROF_TEXT_MARKER("t", "text");
  { INPROF_SCOPED_MARKER("s"); }
  { INPROF_LABEL("label"); }
  inprof::marker<Payload>("p", inprof::kCategoryOther, 1);
  static const inprof::Category kMine = inprof::Category::define("Mine", inprof::Color::kRed);
  inprof::marker("m2", kMine);
  static inprof::Counter counter("c");
  counter.add(1);
  if (inprof::is_recording() || inprof::Profiler::is_running()) return 2;
  std::puts("disabled build: ok");
  return 0;
}
