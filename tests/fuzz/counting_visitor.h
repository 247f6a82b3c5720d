// A DumpVisitor that looks at every field it is given, so that a record decoded from bad memory
// or with inconsistent sizes shows up under ASan, and checks what the decoder promises.
#ifndef INPROF_TESTS_FUZZ_COUNTING_VISITOR_H_
#define INPROF_TESTS_FUZZ_COUNTING_VISITOR_H_

#include <cstdint>
#include <cstdlib>

#include "dump/dump_reader.h"

namespace inprof::fuzz {

class CountingVisitor final : public internal::DumpVisitor {
 public:
  uint64_t records = 0;
  uint64_t checksum = 0;

  void on_process(const internal::ProcessRecord& r) override {
    ++records;
    add(r.executable.size() + r.arch.size() + r.os.size() + r.library_version.size());
    for (const auto& arg : r.command_line) add(arg.size());
  }
  void on_module_load(const internal::ModuleRecord& r) override {
    ++records;
    if (r.end < r.start) std::abort();  // the decoder rejects a size that wraps
    add(r.path.size() + r.build_id.size());
  }
  void on_module_unload(const internal::ModuleUnloadRecord& r) override {
    ++records;
    add(r.id);
  }
  void on_thread_start(const internal::ThreadRecord& r) override {
    ++records;
    add(r.name.size());
  }
  void on_thread_name(const internal::ThreadRecord& r) override {
    ++records;
    add(r.name.size());
  }
  void on_thread_end(const internal::ThreadEndRecord& r) override {
    ++records;
    add(r.tid);
  }
  void on_sample(const internal::SampleRecord& r) override {
    ++records;
    for (uint64_t f : r.frames) add(f);
    for (const auto& c : r.leaf_candidates) add(c.slot + c.value);
    add(r.labels.size());
  }
  void on_sample_repeat(const internal::SampleRepeatRecord& r) override {
    ++records;
    add(r.tid);
  }
  void on_stats(const internal::StatsRecord& r) override {
    ++records;
    add(r.samples_recorded);
  }
  void on_end(const internal::EndRecord& r) override {
    ++records;
    add(r.time_ns);
  }
  void on_category(const internal::CategoryRecord& r) override {
    ++records;
    add(r.name.size());
  }
  void on_marker_schema(const internal::MarkerSchemaRecord& r) override {
    ++records;
    add(r.name.size() + r.fields.size());
    for (const auto& f : r.fields) add(f.key.size() + f.label.size());
  }
  void on_marker(const internal::MarkerRecord& r) override {
    ++records;
    add(r.name.size());
    for (const auto& v : r.values) add(v.string.size());
  }
  void on_string(const internal::StringRecord& r) override {
    ++records;
    add(r.text.size());
  }
  void on_counter(const internal::CounterRecord& r) override {
    ++records;
    add(r.name.size());
  }
  void on_counter_sample(const internal::CounterSampleRecord& r) override {
    ++records;
    add(r.id);
  }
  void on_pause(const internal::PauseRecord& r) override {
    ++records;
    add(r.time_ns);
  }
  void on_resume(const internal::PauseRecord& r) override {
    ++records;
    add(r.time_ns);
  }
  void on_jit_map(const internal::JitMapRecord& r) override {
    ++records;
    add(r.text.size());
  }

 private:
  void add(uint64_t v) { checksum = checksum * 31 + v; }
};

}  // namespace inprof::fuzz

#endif  // INPROF_TESTS_FUZZ_COUNTING_VISITOR_H_
