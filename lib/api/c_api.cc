// The C API (include/inprof/inprof.h), a thin layer over the C++ one.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "api/copies.h"
#include "dump/dump_records.h"
#include "inprof/inprof.h"
#include "inprof/markers.h"
#include "inprof/profiler.h"
#include "markers/label_stack.h"

namespace {

// A fixed buffer, not a std::string: MinGW-w64 frees a thread's thread_local storage before
// their destructors run (lib/threads/thread_exit_hook.h), so none of ours may have a destructor.
struct LastError {
  char text[512] = "";
  LastError& operator=(const std::string& message) {
    const size_t n = std::min(message.size(), sizeof(text) - 1);
    std::memcpy(text, message.data(), n);
    text[n] = '\0';
    return *this;
  }
  const char* c_str() const { return text; }
};
thread_local LastError t_last_error;

int report(const inprof::Status& status) {
  if (status.ok()) return 0;
  t_last_error = status.message();
  return -1;
}

inprof::Category category(uint16_t id) { return inprof::Category(id); }

// The size of inprof_options before it grew: what programs built with the first header pass
// to inprof_options_init and inprof_start.
// (Up to the end of its last field: on some 32-bit ABIs the new uint64_t adds padding before it.)
constexpr size_t kFirstOptionsSize = offsetof(inprof_options, crash_path) + sizeof(const char*);

}  // namespace

// The macros of the header are for callers; the library defines the functions themselves.
#undef inprof_options_init
#undef inprof_start

extern "C" {

void inprof_options_init_sized(inprof_options* options, size_t size) {
  if (options == nullptr) return;
  const inprof_options defaults{};
  std::memcpy(static_cast<void*>(options), &defaults, std::min(size, sizeof defaults));
  if (size > sizeof defaults) {
    std::memset(reinterpret_cast<char*>(options) + sizeof defaults, 0, size - sizeof defaults);
  }
}

void inprof_options_init(inprof_options* options) {
  inprof_options_init_sized(options, kFirstOptionsSize);
}

int inprof_start(const inprof_options* options) {
  return inprof_start_sized(options, kFirstOptionsSize);
}

int inprof_start_sized(const inprof_options* options, size_t size) {
  inprof::Options o;
  if (options != nullptr) {
    if (size < kFirstOptionsSize) {
      t_last_error = "inprof_start_sized: the options struct is smaller than any inprof_options";
      return -1;
    }
    if (size > sizeof(inprof_options)) {
      const auto* extra = reinterpret_cast<const unsigned char*>(options) + sizeof(inprof_options);
      if (std::any_of(extra, extra + (size - sizeof(inprof_options)),
                      [](unsigned char b) { return b != 0; })) {
        t_last_error =
            "inprof_start: the options set fields this inprof library does not know (the "
            "program was built with a newer inprof.h)";
        return -1;
      }
    }
    // The caller's fields; those its struct does not have keep their defaults.
    inprof_options copy{};
    std::memcpy(static_cast<void*>(&copy), options, std::min(size, sizeof copy));
    const inprof_options* c = &copy;
    if (c->interval_ns) o.interval = std::chrono::nanoseconds(c->interval_ns);
    if (c->output_path) o.output_path = c->output_path;
    if (c->buffer_size) o.buffer_size = c->buffer_size;
    if (c->stack_copy_size) o.stack_copy_size = c->stack_copy_size;
    if (c->max_frames) o.max_frames = c->max_frames;
    o.sample_signal = c->sample_signal;
    if (c->unwinder < 0 || c->unwinder > 2) {
      t_last_error = "unwinder must be 0 (auto), 1 (dwarf) or 2 (frame pointers)";
      return -1;
    }
    o.unwinder = static_cast<inprof::UnwindMethod>(c->unwinder);
    if (c->mode < 0 || c->mode > 1) {
      t_last_error = "mode must be 0 (stream) or 1 (ring)";
      return -1;
    }
    o.mode = static_cast<inprof::Mode>(c->mode);
    o.ring_seconds = std::chrono::seconds(c->ring_seconds);
    o.capture_signal = c->capture_signal;
    o.crash_capture = c->crash_capture != 0;
    if (c->crash_path) o.crash_path = c->crash_path;
    if (c->thread_filters) {
      std::stringstream ss(c->thread_filters);
      std::string part;
      while (std::getline(ss, part, ',')) {
        if (!part.empty()) o.thread_filters.push_back(part);
      }
    }
    o.rotate_interval = std::chrono::nanoseconds(c->rotate_interval_ns);
    o.keep_files = c->keep_files;
  }
  return report(inprof::Profiler::start(o));
}

int inprof_stop(void) { return report(inprof::Profiler::stop()); }
int inprof_is_running(void) { return inprof::Profiler::is_running() ? 1 : 0; }
int inprof_pause(void) { return report(inprof::Profiler::pause()); }
int inprof_resume(void) { return report(inprof::Profiler::resume()); }
int inprof_capture(const char* path) {
  if (path == nullptr) {
    t_last_error = "capture needs a path";
    return -1;
  }
  return report(inprof::Profiler::capture(path));
}
int inprof_serve_pprof(const char* address) {
  if (address == nullptr) {
    t_last_error = "serve_pprof needs an address";
    return -1;
  }
  return report(inprof::serve_pprof(address));
}
int inprof_stop_serving_pprof(void) { return report(inprof::stop_serving_pprof()); }
const char* inprof_last_error(void) { return t_last_error.c_str(); }

void inprof_set_thread_name(const char* name) {
  if (name) inprof::set_thread_name(name);
}

void inprof_register_thread(const char* name) { inprof::register_thread(name ? name : ""); }
void inprof_unregister_thread(void) { inprof::unregister_thread(); }

uint64_t inprof_now(void) { return inprof::now(); }

uint16_t inprof_define_category(const char* name, int color) {
  if (name == nullptr || color < 0 || color > static_cast<int>(inprof::Color::kDarkGrey)) return 0;
  return inprof::Category::define(name, static_cast<inprof::Color>(color)).id();
}

void inprof_marker(const char* name, uint16_t c) {
  if (name) inprof::marker(name, category(c));
}

void inprof_text_marker(const char* name, const char* text, uint16_t c) {
  if (name && text && inprof::is_recording()) inprof::text_marker(name, text, category(c));
}

void inprof_interval_marker(const char* name, uint64_t start, uint64_t end, uint16_t c) {
  if (name) inprof::interval_marker(name, start, end, category(c));
}

void inprof_interval_start(const char* name, uint16_t c) {
  if (name) inprof::interval_start(name, category(c));
}

void inprof_interval_end(const char* name, uint16_t c) {
  if (name) inprof::interval_end(name, category(c));
}

uint32_t inprof_define_marker_type(const char* name, const inprof_marker_field* fields,
                                   size_t count, const char* table_label) {
  if (name == nullptr || (count && fields == nullptr) || count > inprof::internal::kMaxMarkerFields)
    return 0;
  std::vector<inprof::MarkerField> converted;
  for (size_t i = 0; i < count; ++i) {
    const inprof_marker_field& f = fields[i];
    if (f.key == nullptr || f.format < INPROF_FORMAT_STRING || f.format > INPROF_FORMAT_URL) {
      return 0;
    }
    converted.push_back({f.key, f.label ? f.label : f.key, static_cast<inprof::Format>(f.format)});
  }
  inprof::internal::MarkerSchemaDescription schema;
  schema.name = name;
  schema.fields = converted;
  if (table_label) schema.table_label = table_label;
  return inprof::internal::register_marker_type(schema);
}

void inprof_typed_marker(const char* name, uint16_t c, uint32_t type,
                         const inprof_marker_value* values, size_t count) {
  if (name == nullptr || (count && values == nullptr) || !inprof::is_recording()) return;
  count = std::min(count, inprof::internal::kMaxMarkerFields);
  std::vector<inprof::internal::FieldValue> fields;
  for (size_t i = 0; i < count; ++i) {
    const inprof_marker_value& v = values[i];
    using Kind = inprof::internal::FieldValue::Kind;
    if (v.string) {
      fields.push_back({Kind::kString, 0, 0, v.string});
    } else if (v.decimal != 0) {
      fields.push_back({Kind::kDecimal, 0, v.decimal, {}});
    } else {
      fields.push_back({Kind::kInteger, v.integer, 0, {}});
    }
  }
  const inprof::Timestamp t = inprof::now();
  inprof::internal::record_marker(name, category(c), inprof::internal::MarkerPhase::kInstant, t, t,
                                  type, fields);
}

inprof_counter* inprof_counter_create(const char* name, const char* description, uint16_t c) {
  if (name == nullptr) return nullptr;
  // Leaked on purpose: a counter lives for the program.
  return reinterpret_cast<inprof_counter*>(
      new inprof::Counter(name, description ? description : "", category(c)));
}

void inprof_counter_add(inprof_counter* counter, int64_t delta) {
  if (counter) reinterpret_cast<inprof::Counter*>(counter)->add(delta);
}

void inprof_counter_set(inprof_counter* counter, int64_t value) {
  if (counter) reinterpret_cast<inprof::Counter*>(counter)->set(value);
}

int inprof_label_push(const char* name, uint16_t c) {
  if (name == nullptr || !inprof::is_recording()) return 0;
  // The label belongs to the caller's frame: this function's CFA is the caller's SP at the
  // call, an address inside the caller's frame for as long as the label is pushed.
  const auto key = reinterpret_cast<uint64_t>(__builtin_dwarf_cfa());
  if (const inprof::internal::CopyInterface* primary = inprof::internal::primary_copy()) {
    primary->label_push(name, key, c, false);
  } else {
    inprof::internal::here::label_push(name, key, c, false);
  }
  return 1;
}

void inprof_label_pop(int token) {
  if (!token) return;
  if (const inprof::internal::CopyInterface* primary = inprof::internal::primary_copy()) {
    primary->label_pop();
  } else {
    inprof::internal::here::label_pop();
  }
}

}  // extern "C"
