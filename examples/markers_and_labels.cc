// Markers, labels and a counter: what the program was doing, shown beside its samples.
//
//   ./markers_and_labels [output.inprof]
//   symbolicate output.inprof -o profile.json    # the Marker Chart and Marker Table show them
#include <inprof/markers.h>
#include <inprof/profiler.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

// A typed marker: declared once, its fields show in the marker table and tooltip.
struct FileLoad {
  static constexpr std::string_view kName = "FileLoad";
  static constexpr inprof::MarkerField kFields[] = {{"path", "Path", inprof::Format::kFilePath},
                                                    {"bytes", "Size", inprof::Format::kBytes}};
  static constexpr std::string_view kTableLabel = "{marker.data.path}";
  static constexpr std::string_view kChartLabel = "{marker.data.path}";
};

const inprof::Category kDatabase = inprof::Category::define("Database", inprof::Color::kPurple);
inprof::Counter g_queue("queue length", "requests waiting");

__attribute__((noipa)) uint64_t checksum(const std::vector<uint8_t>& data) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : data) h = (h ^ b) * 1099511628211ull;
  return h;
}

__attribute__((noipa)) void load_file(const std::string& path, size_t size) {
  INPROF_LABEL("LoadFile");  // every sample in here shows this frame
  const inprof::Timestamp start = inprof::now();
  std::vector<uint8_t> data(size, 7);
  volatile uint64_t sink = 0;
  for (int i = 0; i < 20; ++i) sink = sink + checksum(data);
  inprof::marker<FileLoad>("load", inprof::kCategoryIO, path, size);  // instant, typed
  inprof::interval_marker("load-interval", start, inprof::now(), inprof::kCategoryIO);
}

__attribute__((noipa)) void query_database(int n) {
  INPROF_SCOPED_MARKER("query");  // an interval marker around the scope
  inprof::text_marker("sql", "SELECT * FROM items WHERE id = " + std::to_string(n), kDatabase);
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
}

}  // namespace

int main(int argc, char** argv) {
  inprof::Options options;
  options.output_path = argc > 1 ? argv[1] : "markers_and_labels.inprof";
  if (auto status = inprof::Profiler::start(options); !status) {
    std::fprintf(stderr, "cannot start the profiler: %s\n", status.message().c_str());
    return 1;
  }
  std::thread db([] {
    inprof::set_thread_name("database");
    for (int i = 0; i < 20; ++i) {
      g_queue.add(-1);
      query_database(i);
    }
  });
  for (int i = 0; i < 20; ++i) {
    g_queue.add(1);
    load_file("/data/file" + std::to_string(i) + ".bin", 4u << 20);
  }
  db.join();
  if (auto status = inprof::Profiler::stop(); !status) {
    std::fprintf(stderr, "profile incomplete: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("profile written to %s\n", options.output_path.c_str());
  return 0;
}
