// The markers, labels and counters API (include/inprof/markers.h).
#include "inprof/markers.h"

#include <new>
#include <thread>

#include "api/copies.h"
#include "dump/dump_records.h"
#include "markers/declarations.h"
#include "markers/label_stack.h"
#include "markers/marker_recorder.h"
#include "session/process_info.h"

namespace inprof {
namespace internal {

std::atomic<bool> g_recording{false};

MarkerRecorder& MarkerRecorder::instance() {
  static auto* r = new MarkerRecorder;  // leaked: markers may be recorded during exit
  return *r;
}

void MarkerRecorder::attach(RingBuffer* ring, uint64_t start_ns) {
  start_ns_.store(start_ns, std::memory_order_relaxed);
  ring_.store(ring, std::memory_order_release);
}

void MarkerRecorder::detach() { ring_.store(nullptr, std::memory_order_release); }

namespace {

// The thread id is read once per thread: a system call per marker would cost more than the rest.
uint64_t cached_thread_id() {
  thread_local uint64_t tid = current_thread_id();
  return tid;
}

constexpr size_t kMaxMarkerBytes = 4096;

}  // namespace

uint32_t here::register_marker_type(const MarkerSchemaDescription& schema) {
  return Declarations::instance().register_marker_type(schema);
}

uint32_t register_marker_type(const MarkerSchemaDescription& schema) {
  const CopyInterface* primary = primary_copy();
  return primary ? primary->register_marker_type(schema) : here::register_marker_type(schema);
}

void record_marker(std::string_view name, Category category, MarkerPhase phase, Timestamp start,
                   Timestamp end, uint32_t type, std::span<const FieldValue> fields) {
  if (const CopyInterface* primary = primary_copy()) {
    primary->record_marker(name, category, phase, start, end, type, fields);
    return;
  }
  here::record_marker(name, category, phase, start, end, type, fields);
}

uint16_t here::define_category(std::string_view name, Color color) {
  return Declarations::instance().define_category(name, color);
}

void here::label_push(const char* name, uint64_t key, uint16_t category, bool recorded) {
  LabelStack& stack = current_label_stack();
  if (!recorded && stack.off_stack_since_ns.load(std::memory_order_relaxed) == 0) {
    stack.off_stack_since_ns.store(monotonic_ns(), std::memory_order_relaxed);
  }
  stack.push({name, key, category});
}

void here::label_pop() { current_label_stack().pop(); }

std::pair<uint32_t, std::atomic<int64_t>*> here::register_counter(std::string_view name,
                                                                  std::string_view description,
                                                                  uint16_t category) {
  return Declarations::instance().register_counter(name, description, category);
}

void here::record_marker(std::string_view name, Category category, MarkerPhase phase,
                         Timestamp start, Timestamp end, uint32_t type,
                         std::span<const FieldValue> fields) {
  // Only the fields given are constructed: a default-initialised array of 64 views would cost
  // more than the rest of the marker.
  union Values {
    Values() {}
    MarkerValueView view[kMaxMarkerFields];
  } storage;
  MarkerValueView* values = storage.view;
  const size_t count = std::min(fields.size(), kMaxMarkerFields);
  for (size_t i = 0; i < count; ++i) {
    const FieldValue& f = fields[i];
    new (&values[i]) MarkerValueView{static_cast<uint8_t>(f.kind), f.integer, f.decimal,
                                     f.string.substr(0, kMaxMarkerBytes / 2)};
  }
  const uint64_t tid = cached_thread_id();
  MarkerRecorder::instance().with_ring([&](RingBuffer& ring, uint64_t start_ns) {
    uint8_t buffer[kMaxMarkerBytes];
    ByteWriter w(buffer);
    const uint64_t s = start > start_ns ? start - start_ns : 0;
    const uint64_t e = end > start_ns ? end - start_ns : 0;
    encode_marker(w, tid, category.id(), static_cast<uint8_t>(phase), s, e, name.substr(0, 256),
                  type, std::span<const MarkerValueView>(values, count));
    if (w.overflowed() || !ring.write(static_cast<uint8_t>(RecordType::kMarker), w.view())) {
      MarkerRecorder::instance().count_drop();
    }
  });
}

}  // namespace internal

Timestamp now() { return internal::monotonic_ns(); }

Category Category::define(std::string_view name, Color color) {
  const internal::CopyInterface* primary = internal::primary_copy();
  return Category(primary ? primary->define_category(name, color)
                          : internal::here::define_category(name, color));
}

namespace {
struct TextMarker {
  static constexpr std::string_view kName = "Text";
  static constexpr MarkerField kFields[] = {{"text", "Text", Format::kString}};
  static constexpr std::string_view kTableLabel = "{marker.name} — {marker.data.text}";
  static constexpr std::string_view kTooltipLabel = "{marker.name}: {marker.data.text}";
  static constexpr std::string_view kChartLabel = "{marker.data.text}";
};
}  // namespace

void text_marker(std::string_view name, std::string_view text, Category category) {
  marker<TextMarker>(name, category, text);
}

static_assert(sizeof(internal::LabelRecord) == sizeof(uint64_t[3]));

// A scope outside the thread's stack (on the heap, say) keeps no record: a copy of the stack
// would not hold it. The caller's frame lies above this function's, within the stack's reach.
static bool lives_in_callers_stack(uint64_t address, uint64_t frame) {
  return address > frame && address - frame < (uint64_t{64} << 20);
}

// A pushed scope without a record: a tag no record can have (it would be a kernel address).
static constexpr uint64_t kPushedWithoutRecord = 1;

LabelScope::LabelScope(const char* name, Category category) : record_{} {
  if (!is_recording()) return;
  const auto key = reinterpret_cast<uint64_t>(this);
  auto* record = reinterpret_cast<internal::LabelRecord*>(record_);
  const bool recorded =
      lives_in_callers_stack(key, reinterpret_cast<uint64_t>(__builtin_frame_address(0)));
  if (recorded) {
    internal::write_label_record(record, name, category.id());
  } else {
    record_[0] = kPushedWithoutRecord;
  }
  if (const internal::CopyInterface* primary = internal::primary_copy()) {
    primary->label_push(name, key, category.id(), recorded);
  } else {
    internal::here::label_push(name, key, category.id(), recorded);
  }
}

LabelScope::~LabelScope() {
  if (record_[0] == 0) return;
  internal::clear_label_record(reinterpret_cast<internal::LabelRecord*>(record_));
  if (const internal::CopyInterface* primary = internal::primary_copy()) {
    primary->label_pop();
  } else {
    internal::here::label_pop();
  }
}

Counter::Counter(std::string_view name, std::string_view description, Category category) {
  const internal::CopyInterface* primary = internal::primary_copy();
  value_ = (primary ? primary->register_counter(name, description, category.id())
                    : internal::here::register_counter(name, description, category.id()))
               .second;
}

}  // namespace inprof
