// Reads a dump record by record, tolerating a file cut short or damaged in the middle: every
// complete, intact chunk is delivered and what was skipped is reported.
#ifndef INPROF_LIB_DUMP_DUMP_READER_H_
#define INPROF_LIB_DUMP_DUMP_READER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dump/dump_records.h"

namespace inprof::internal {

// Receives records in file order. Default implementations ignore a record.
class DumpVisitor {
 public:
  virtual ~DumpVisitor() = default;
  virtual void on_process(const ProcessRecord&) {}
  virtual void on_module_load(const ModuleRecord&) {}
  virtual void on_module_image(const ModuleImageRecord&) {}
  virtual void on_module_unload(const ModuleUnloadRecord&) {}
  virtual void on_thread_start(const ThreadRecord&) {}
  virtual void on_thread_name(const ThreadRecord&) {}
  virtual void on_thread_end(const ThreadEndRecord&) {}
  virtual void on_sample(const SampleRecord&) {}
  virtual void on_sample_repeat(const SampleRepeatRecord&) {}
  virtual void on_stats(const StatsRecord&) {}
  virtual void on_end(const EndRecord&) {}
  virtual void on_category(const CategoryRecord&) {}
  virtual void on_marker_schema(const MarkerSchemaRecord&) {}
  virtual void on_marker(const MarkerRecord&) {}
  virtual void on_string(const StringRecord&) {}
  virtual void on_counter(const CounterRecord&) {}
  virtual void on_counter_sample(const CounterSampleRecord&) {}
  virtual void on_pause(const PauseRecord&) {}
  virtual void on_resume(const PauseRecord&) {}
  virtual void on_jit_map(const JitMapRecord&) {}
  virtual void on_capture(const CaptureRecord&) {}
  virtual void on_allocation(const AllocationRecord&) {}
  virtual void on_free(const FreeRecord&) {}
  virtual void on_allocation_stats(const AllocationStatsRecord&) {}
};

struct DumpReadResult {
  // False only when nothing could be read: not a dump, unreadable file, unsupported version.
  bool ok = false;
  std::string error;                  // why, when !ok
  std::vector<std::string> warnings;  // damage that was skipped (the rest was delivered)
  bool complete = false;              // the end record was seen: the session stopped cleanly
  bool ended_by_exec = false;         // complete because the process exec'd (kExecEnd)
  // Finished by `inprof record` (kLanded): 1 + the records it wrote from the process's memory.
  uint64_t landed_records = 0;
  // Damage before the end (records lost in the middle: a chunk that does not decompress or holds
  // a malformed record, bytes skipped to the next chunk); a cut-off last chunk is not counted.
  uint64_t damaged = 0;
  uint32_t version = 0;
  bool raw = false;      // uncompressed records: a crash capture
  uint64_t records = 0;  // each sample of a sample batch (version 2) counts as one
  uint64_t chunks = 0;
};

// Reads a dump from memory.
DumpReadResult read_dump(std::span<const uint8_t> file, DumpVisitor& visitor);
// Reads a dump from a file; only regular files are opened.
DumpReadResult read_dump_file(const std::string& path, DumpVisitor& visitor);
// The same, reading the file a piece at a time: memory stays at about one chunk however large
// the file is. Delivers the same records and reports the same damage.
DumpReadResult read_dump_file_incrementally(const std::string& path, DumpVisitor& visitor);

}  // namespace inprof::internal

#endif  // INPROF_LIB_DUMP_DUMP_READER_H_
