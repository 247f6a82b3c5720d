// The pprof the library serves (lib/pprof/pprof_builder.h, lib/pull/scrape_window.h): built from
// records as the session's writer hands them over, read back with a small profile.proto reader.
#include "pprof/pprof_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "dump/byte_io.h"
#include "dump/dump_records.h"
#include "pull/scrape_window.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

// --- a reader of what the checks need --------------------------------------------------------
struct Field {
  uint32_t number;
  uint64_t value;     // varint
  std::string bytes;  // length-delimited
};

uint64_t read_varint(const std::string& s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < s.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[i++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) break;
  }
  return v;
}

std::vector<Field> read_fields(const std::string& s) {
  std::vector<Field> out;
  for (size_t i = 0; i < s.size();) {
    const uint64_t key = read_varint(s, i);
    Field f{static_cast<uint32_t>(key >> 3), 0, {}};
    if ((key & 7) == 0) {
      f.value = read_varint(s, i);
    } else {
      const uint64_t n = read_varint(s, i);
      f.bytes = s.substr(i, n);
      i += n;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<uint64_t> read_packed(const std::string& s) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < s.size();) out.push_back(read_varint(s, i));
  return out;
}

struct Sample {
  std::vector<uint64_t> location_ids;
  std::vector<uint64_t> values;
  std::map<std::string, std::vector<std::string>> labels;  // numbers as text
};

struct Profile {
  std::vector<std::string> strings;
  std::vector<Sample> samples;
  std::map<uint64_t, uint64_t> location_address, location_mapping;
  std::map<uint64_t, std::string> location_function;    // named locations
  std::vector<std::pair<uint64_t, uint64_t>> mappings;  // start, limit
  std::string default_type;
};

Profile read_profile(const std::string& bytes) {
  Profile p;
  const std::vector<Field> top = read_fields(bytes);
  for (const Field& f : top) {
    if (f.number == 6) p.strings.push_back(f.bytes);
  }
  std::map<uint64_t, uint64_t> function_name;
  for (const Field& f : top) {
    if (f.number == 5) {
      uint64_t id = 0, name = 0;
      for (const Field& g : read_fields(f.bytes)) {
        if (g.number == 1) id = g.value;
        if (g.number == 2) name = g.value;
      }
      function_name[id] = name;
    }
  }
  for (const Field& f : top) {
    if (f.number == 2) {
      Sample s;
      for (const Field& g : read_fields(f.bytes)) {
        if (g.number == 1) s.location_ids = read_packed(g.bytes);
        if (g.number == 2) s.values = read_packed(g.bytes);
        if (g.number == 3) {
          uint64_t key = 0, str = 0, num = 0;
          for (const Field& h : read_fields(g.bytes)) {
            if (h.number == 1) key = h.value;
            if (h.number == 2) str = h.value;
            if (h.number == 3) num = h.value;
          }
          s.labels[p.strings[key]].push_back(str ? p.strings[str] : std::to_string(num));
        }
      }
      p.samples.push_back(std::move(s));
    } else if (f.number == 3) {
      uint64_t start = 0, limit = 0;
      for (const Field& g : read_fields(f.bytes)) {
        if (g.number == 2) start = g.value;
        if (g.number == 3) limit = g.value;
      }
      p.mappings.emplace_back(start, limit);
    } else if (f.number == 4) {
      uint64_t id = 0;
      for (const Field& g : read_fields(f.bytes)) {
        if (g.number == 1) id = g.value;
        if (g.number == 2) p.location_mapping[id] = g.value;
        if (g.number == 3) p.location_address[id] = g.value;
        if (g.number == 4) {
          for (const Field& h : read_fields(g.bytes)) {
            if (h.number == 1) p.location_function[id] = p.strings[function_name[h.value]];
          }
        }
      }
    } else if (f.number == 14) {
      p.default_type = p.strings[f.value];
    }
  }
  return p;
}

// --- the builder -------------------------------------------------------------------------------
TEST(PprofBuilder, CallSitesAreLookedUpInsideTheCallAndSamplesSumByStackAndLabels) {
  PprofBuilder b({{"samples", "count"}, {"cpu", "nanoseconds"}}, "cpu", {"cpu", "nanoseconds"},
                 1000000);
  b.add_mapping({0x1000, 0x2000, 0, "/bin/a", "ab"});
  b.add_mapping({0x1800, 0x3000, 0, "/bin/overlaps", ""});  // dropped
  b.add_mapping({0x5000, 0x6000, 0x1000, "/lib/b.so", ""});
  // A leaf PC at the start of the next function's range stays; a return address right after a
  // call that ended its function is looked up one byte before, inside the caller.
  const uint64_t leaf = b.location(0x1100, false);
  const uint64_t caller = b.location(0x5000, true);
  const uint64_t unseen = b.named_location("[ran between samples]");
  const PprofLabel thread_a{b.string("thread_name"), b.string("a"), 0};
  const PprofLabel thread_b{b.string("thread_name"), b.string("b"), 0};
  const uint64_t stack[] = {leaf, caller};
  const int64_t one[] = {1, 1000};
  b.add_sample(stack, {&thread_a, 1}, one);
  b.add_sample(stack, {&thread_a, 1}, one);
  b.add_sample(stack, {&thread_b, 1}, one);
  const uint64_t unseen_stack[] = {unseen, leaf, caller};
  b.add_sample(unseen_stack, {&thread_a, 1}, one);
  const Profile p = read_profile(b.encode(1, 2));

  EXPECT_EQ(p.default_type, "cpu");
  ASSERT_EQ(p.mappings.size(), 2u);
  EXPECT_EQ(p.location_address.at(leaf), 0x1100u);
  EXPECT_EQ(p.location_mapping.at(leaf), 1u);
  EXPECT_EQ(p.location_address.at(caller), 0x4fffu);  // below b.so: no mapping
  EXPECT_EQ(p.location_mapping.count(caller), 0u);
  EXPECT_EQ(p.location_function.at(unseen), "[ran between samples]");
  EXPECT_EQ(p.location_address.count(unseen), 0u);
  ASSERT_EQ(p.samples.size(), 3u);
  uint64_t total = 0;
  for (const Sample& s : p.samples) {
    total += s.values[0];
    if (s.labels.at("thread_name")[0] == "a" && s.location_ids.size() == 2) {
      EXPECT_EQ(s.values, (std::vector<uint64_t>{2, 2000}));
    }
  }
  EXPECT_EQ(total, 4u);
}

// --- a scrape's window -----------------------------------------------------------------------
class ScrapeWindowTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kMs = 1000000;

  void SetUp() override {
    // The window opens at attach(): 100 ms into a session that started just then minus 100 ms.
    Options options;
    options.interval = std::chrono::milliseconds(1);
    window_.attached(monotonic_ns() - 100 * kMs, options);
    feed(RecordType::kThreadStart, ThreadRecord{7, 0, 0, "worker"});
    ModuleRecord m;
    m.id = 1;
    m.start = 0x10000;
    m.end = 0x20000;
    m.path = "/bin/service";
    feed(RecordType::kModuleLoad, m);
  }
  template <typename Record>
  void feed(RecordType type, const Record& record) {
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      encode(w, record);
    }
    window_.record(type, payload);
  }
  void sample(uint64_t time_ms, std::optional<uint64_t> cpu_ms, uint32_t flags,
              std::vector<uint64_t> frames) {
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      std::optional<uint64_t> cpu;
      if (cpu_ms) cpu = *cpu_ms * kMs;
      encode_sample(w, 7, time_ms * kMs, cpu, flags, frames, {});
    }
    window_.record(RecordType::kSample, payload);
  }
  void repeat(uint64_t time_ms, uint64_t cpu_ms) {
    feed(RecordType::kSampleRepeat, SampleRepeatRecord{7, time_ms * kMs, cpu_ms * kMs});
  }
  // cpu and wall (ms) by leaf address (named locations by name).
  std::map<std::string, std::pair<double, double>> by_leaf() {
    const Profile p = read_profile(window_.pprof(0, 1000 * kMs));
    std::map<std::string, std::pair<double, double>> out;
    for (const Sample& s : p.samples) {
      const uint64_t id = s.location_ids.front();
      const std::string key = p.location_function.count(id)
                                  ? p.location_function.at(id)
                                  : std::to_string(p.location_address.at(id));
      out[key].first += static_cast<double>(s.values[1]) / kMs;
      out[key].second += static_cast<double>(s.values[2]) / kMs;
      EXPECT_EQ(s.labels.at("thread_name")[0], "worker");
      EXPECT_EQ(s.labels.at("tid")[0], "7");
    }
    return out;
  }

  ScrapeWindow window_{1000 * kMs};
};

TEST_F(ScrapeWindowTest, OnCpuSamplesWeighTheirCpuAndSleepingOnesOnlyWallTime) {
  sample(50, 1, kSampleOnCpu, {0x10100});    // before the window: weighs nothing, sets the clock
  sample(110, 1, kSampleOnCpu, {0x10100});   // 1 ms of CPU, 60 ms since the previous
  repeat(111, 1);                            // the same stack, 1 ms more
  sample(120, 0, 0, {0x10200, 0x10300});     // asleep: no CPU, 9 ms of wall
  sample(2000, 5, kSampleOnCpu, {0x10100});  // after the window's end: not in it
  const auto leaves = by_leaf();
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10100)).first, 2.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10100)).second, 61.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10200)).first, 0.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10200)).second, 9.0);
  EXPECT_EQ(window_.samples(), 3u);
}

TEST_F(ScrapeWindowTest, CpuRunUnseenGoesUnderItsOwnFrameAndALongGapsToo) {
  sample(101, 3, kSampleRanUnseen, {0x10200});  // asleep, after 3 ms no sample saw
  sample(102, 40, kSampleOnCpu, {0x10100});     // 40 ms of CPU: at most 16 intervals on it
  // Copied asleep in a system call, 2 ms run since the sample before: the sleep, and 2 ms above.
  std::vector<uint8_t> payload;
  {
    ByteWriter w(&payload);
    const uint64_t frames[] = {0x10300};
    encode_sample(w, 7, 110 * kMs, 2 * kMs, 0, frames, {}, {}, SampleWait{202, 0x1000, 0});
  }
  window_.record(RecordType::kSample, payload);
  const auto leaves = by_leaf();
  // 3 ms unseen before the first sample, the 24 ms past the cap, the 2 ms before the sleep:
  // every millisecond of the 45 is in the profile.
  EXPECT_DOUBLE_EQ(leaves.at("[ran between samples]").first, 29.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10100)).first, 16.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10300)).first, 0.0);
  EXPECT_DOUBLE_EQ(leaves.at(std::to_string(0x10300)).second, 8.0);
}

TEST_F(ScrapeWindowTest, IntervalMarkersLabelTheSamplesTheyCoverWhicheverComesFirst) {
  auto marker = [&](uint8_t phase, uint64_t start_ms, uint64_t end_ms, const char* name) {
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      encode_marker(w, 7, 0, phase, start_ms * kMs, end_ms * kMs, name, 0, {});
    }
    window_.record(RecordType::kMarker, payload);
  };
  sample(110, 1, kSampleOnCpu, {0x10110});  // before its marker, recorded at the end
  marker(1, 105, 115, "request");
  marker(1, 125, 135, "parse");
  sample(130, 1, kSampleOnCpu, {0x10130});  // after its marker: a collection's lag
  sample(140, 1, kSampleOnCpu, {0x10140});  // in none
  marker(2, 150, 150, "phase");
  sample(155, 1, kSampleOnCpu, {0x10155});  // inside an interval still open
  marker(3, 160, 160, "phase");
  sample(165, 1, kSampleOnCpu, {0x10165});  // after it closed
  marker(0, 166, 166, "instant");
  sample(166, 1, kSampleOnCpu, {0x10166});  // an instant covers nothing
  const Profile p = read_profile(window_.pprof(0, 1000 * kMs));
  std::map<uint64_t, std::vector<std::string>> markers;
  for (const Sample& s : p.samples) {
    const uint64_t leaf = p.location_address.at(s.location_ids.front());
    auto it = s.labels.find("marker");
    markers[leaf] = it == s.labels.end() ? std::vector<std::string>{} : it->second;
  }
  using Names = std::vector<std::string>;
  EXPECT_EQ(markers.at(0x10110), Names{"request"});
  EXPECT_EQ(markers.at(0x10130), Names{"parse"});
  EXPECT_EQ(markers.at(0x10140), Names{});
  EXPECT_EQ(markers.at(0x10155), Names{"phase"});
  EXPECT_EQ(markers.at(0x10165), Names{});
  EXPECT_EQ(markers.at(0x10166), Names{});
}

}  // namespace
}  // namespace inprof::internal
