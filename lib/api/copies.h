// Several copies of inprof in one process (the program links the static library and `inprof
// record` preloads the shared one; or two shared objects each link it statically) make one
// profiler: the first copy to need the profiler becomes the primary, and every other copy
// forwards its API calls to it (sessions, markers, labels, counters, categories, thread names),
// so the program's own instrumentation lands in the one session that runs.
//
// The rendezvous is a process-wide lookup of the exported symbol `inprof_copy_interface_v1`
// (platform: dlsym): every copy finds the same one, the holder, whose slot elects the primary.
// Copies of other inprof versions never cooperate (the interface passes C++ types).
#ifndef INPROF_LIB_COPIES_H_
#define INPROF_LIB_COPIES_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "inprof/markers.h"
#include "inprof/profiler.h"

namespace inprof::internal {

class RecordTap;

inline constexpr uint32_t kCopyInterfaceLayout = 2;

struct CopyInterface {
  uint32_t layout;      // kCopyInterfaceLayout
  uint32_t size;        // sizeof(CopyInterface)
  const char* version;  // the library's version: only an identical one cooperates
  std::atomic<const CopyInterface*>* primary;  // the holder's election slot
  Status (*start)(const Options& options);
  Status (*stop)();
  bool (*is_running)();
  Status (*pause)();
  Status (*resume)();
  Status (*capture)(const std::string& path);
  uint16_t (*define_category)(std::string_view name, Color color);
  uint32_t (*register_marker_type)(const MarkerSchemaDescription& schema);
  void (*record_marker)(std::string_view name, Category category, MarkerPhase phase,
                        Timestamp start, Timestamp end, uint32_t type,
                        std::span<const FieldValue> fields);
  // `recorded`: the caller keeps the label's LabelRecord at `key`, in its stack.
  void (*label_push)(const char* name, uint64_t key, uint16_t category, bool recorded);
  void (*label_pop)();
  std::pair<uint32_t, std::atomic<int64_t>*> (*register_counter)(std::string_view name,
                                                                 std::string_view description,
                                                                 uint16_t category);
  void (*set_thread_name)(std::string_view name);
  void (*register_thread)(std::string_view name);
  void (*unregister_thread)();
};

// This copy's own implementations (profiler.cc, markers.cc), which the API calls when this copy
// is the primary, and which the other copies reach through own_copy_interface().
namespace here {
Status start(const Options& options);
Status stop();
bool is_running();
Status pause();
Status resume();
Status capture(const std::string& path);
uint16_t define_category(std::string_view name, Color color);
uint32_t register_marker_type(const MarkerSchemaDescription& schema);
void record_marker(std::string_view name, Category category, MarkerPhase phase, Timestamp start,
                   Timestamp end, uint32_t type, std::span<const FieldValue> fields);
void label_push(const char* name, uint64_t key, uint16_t category, bool recorded);
void label_pop();
std::pair<uint32_t, std::atomic<int64_t>*> register_counter(std::string_view name,
                                                            std::string_view description,
                                                            uint16_t category);
void set_thread_name(std::string_view name);
void register_thread(std::string_view name);
void unregister_thread();
// Pull mode (pull/pull_server.h): a scrape's tap on the running stream, or on a session started
// for scrapes alone (`options`), which finish_scrape() stops after the last of them.
// finish_scrape() first has the writer drain what was reserved (`drain`), then detaches the tap.
Status attach_scrape(RecordTap* tap, const Options& options);
void finish_scrape(RecordTap* tap, bool drain);
// Pull mode's heap: a tap attached to every streaming session that records allocations, the
// running one at once (null: none from now on; the one attached is detached).
void set_allocation_tap(RecordTap* tap);
// INPROF_PULL with INPROF_STARTUP and no INPROF_OUTPUT: a session that runs for the scrapes and
// writes no dump (stopped at exit, not by the scrapes).
Status start_for_scrapes(const Options& options);
}  // namespace here

// This copy's interface: its own implementations, never forwarded.
const CopyInterface& own_copy_interface();

// The copy to forward to, or null when this copy is the primary (or alone). Decided once, at the
// first call; after that one relaxed load.
const CopyInterface* primary_copy();

// Platform: the interface the process-wide symbol lookup finds (null if none is visible).
const CopyInterface* find_copy_holder();

}  // namespace inprof::internal

#endif  // INPROF_LIB_COPIES_H_
