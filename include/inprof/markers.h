// Markers, labels and counters: what the program was doing, beside where its time went.
//
// - A marker is a point (instant) or a span (interval) in time with a name, a category and
//   optionally a typed payload that the Firefox Profiler shows in its marker table, tooltip and
//   chart. Any thread may record markers; recording is lock-free.
// - A label names a phase of a thread's work: while a LabelScope lives, every sample of that
//   thread shows the label as a frame at its place in the stack, even without symbols.
// - A counter is a number that changes over time (bytes allocated, queue length); it becomes a
//   counter track.
//
//   INPROF_MARKER("cache-miss");
//   { INPROF_SCOPED_MARKER("LoadConfig"); load(); }
//   { INPROF_LABEL("Parse"); parse(); }
//   inprof::text_marker("log", "connected to db", inprof::kCategoryNetwork);
//
//   struct RequestMarker {                       // a typed marker, declared once
//     static constexpr std::string_view kName = "Request";
//     static constexpr inprof::MarkerField kFields[] = {
//         {"url", "URL", inprof::Format::kUrl}, {"bytes", "Size", inprof::Format::kBytes}};
//     static constexpr std::string_view kTableLabel = "{marker.data.url}";
//   };
//   inprof::marker<RequestMarker>("fetch", inprof::kCategoryNetwork, url, size);
//
// With INPROF_DISABLE defined, the INPROF_* macros compile to nothing. When no session runs,
// each costs one relaxed atomic load.
#ifndef INPROF_MARKERS_H_
#define INPROF_MARKERS_H_

#if __cplusplus < 202002L
#error \
    "inprof's C++ headers need C++20 (-std=c++20 or later); from C or C++17, use <inprof/inprof.h>"
#endif

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include "inprof/profiler.h"

namespace inprof {

// Nanoseconds on the profiler's clock (monotonic); what marker times are given in.
using Timestamp = uint64_t;
INPROF_API Timestamp now();

// The Firefox Profiler's category colours.
enum class Color : uint8_t {
  kGrey,
  kTransparent,
  kPurple,
  kGreen,
  kOrange,
  kYellow,
  kLightBlue,
  kBlue,
  kBrown,
  kMagenta,
  kRed,
  kLightRed,
  kDarkGrey,
};

// Groups markers and labels in the profile, by name and colour. The built-in ones are below; a
// program defines its own once: `static const inprof::Category kDb = inprof::Category::define(
// "Database", inprof::Color::kPurple);` (defining the same name again returns the same category).
class INPROF_API Category {
 public:
  static Category define(std::string_view name, Color color);
  constexpr uint16_t id() const { return id_; }
  constexpr explicit Category(uint16_t id) : id_(id) {}

 private:
  uint16_t id_;
};

inline constexpr Category kCategoryOther{0};
inline constexpr Category kCategoryIdle{1};
inline constexpr Category kCategoryIO{2};
inline constexpr Category kCategoryNetwork{3};
inline constexpr Category kCategoryGraphics{4};
inline constexpr Category kCategoryMemory{5};
inline constexpr Category kCategoryUser{6};

// How a payload field is shown (the Firefox Profiler's marker formats).
enum class Format : uint8_t {
  kString,
  kInteger,
  kDecimal,
  kBytes,
  kPercentage,
  kDuration,
  kMilliseconds,
  kMicroseconds,
  kNanoseconds,
  kFilePath,
  kUrl,
};

struct MarkerField {
  std::string_view key;    // the payload's property name
  std::string_view label;  // what the marker table shows
  Format format;
};

namespace internal {

// True while a session records. One relaxed load: the whole cost of a marker when it does not.
INPROF_API extern std::atomic<bool> g_recording;

enum class MarkerPhase : uint8_t {
  kInstant = 0,
  kInterval = 1,
  kIntervalStart = 2,
  kIntervalEnd = 3
};

// A payload value as recorded: integers, decimals and strings.
struct FieldValue {
  enum class Kind : uint8_t { kInteger, kDecimal, kString } kind;
  int64_t integer = 0;
  double decimal = 0;
  std::string_view string;
};

template <typename V>
FieldValue field_value(const V& v) {
  if constexpr (std::is_integral_v<V> || std::is_enum_v<V>) {
    return {FieldValue::Kind::kInteger, static_cast<int64_t>(v), 0, {}};
  } else if constexpr (std::is_floating_point_v<V>) {
    return {FieldValue::Kind::kDecimal, 0, static_cast<double>(v), {}};
  } else {
    static_assert(std::is_convertible_v<const V&, std::string_view>,
                  "marker fields take integers, floating-point numbers or strings");
    return {FieldValue::Kind::kString, 0, 0, std::string_view(v)};
  }
}

struct MarkerSchemaDescription {
  std::string_view name;
  std::span<const MarkerField> fields;
  std::string_view table_label, tooltip_label, chart_label, description;
};

// Registers a marker type once; returns its id (0 is "no payload").
INPROF_API uint32_t register_marker_type(const MarkerSchemaDescription& schema);

INPROF_API void record_marker(std::string_view name, Category category, MarkerPhase phase,
                              Timestamp start, Timestamp end, uint32_t type,
                              std::span<const FieldValue> fields);

template <typename T>
constexpr std::string_view table_label() {
  if constexpr (requires { T::kTableLabel; })
    return T::kTableLabel;
  else
    return {};
}
template <typename T>
constexpr std::string_view tooltip_label() {
  if constexpr (requires { T::kTooltipLabel; })
    return T::kTooltipLabel;
  else
    return {};
}
template <typename T>
constexpr std::string_view chart_label() {
  if constexpr (requires { T::kChartLabel; })
    return T::kChartLabel;
  else
    return {};
}
template <typename T>
constexpr std::string_view description() {
  if constexpr (requires { T::kDescription; })
    return T::kDescription;
  else
    return {};
}

template <typename T>
uint32_t marker_type_id() {
  static const uint32_t id =
      register_marker_type({T::kName, std::span<const MarkerField>(T::kFields), table_label<T>(),
                            tooltip_label<T>(), chart_label<T>(), description<T>()});
  return id;
}

template <typename T, typename... Values>
void record_typed(std::string_view name, Category category, MarkerPhase phase, Timestamp start,
                  Timestamp end, const Values&... values) {
  static_assert(sizeof...(Values) == std::size(T::kFields),
                "give one value per field of the marker type, in order");
  const FieldValue fields[] = {field_value(values)..., FieldValue{}};
  record_marker(name, category, phase, start, end, marker_type_id<T>(),
                std::span<const FieldValue>(fields, sizeof...(Values)));
}

}  // namespace internal

// Whether markers are being recorded now.
inline bool is_recording() {
#if defined(INPROF_DISABLE)
  return false;
#else
  return internal::g_recording.load(std::memory_order_relaxed);
#endif
}

// An instant marker, now.
inline void marker(std::string_view name, Category category = kCategoryOther) {
  if (!is_recording()) return;
  const Timestamp t = now();
  internal::record_marker(name, category, internal::MarkerPhase::kInstant, t, t, 0, {});
}

// An instant marker with a typed payload (one value per field of T, in order).
template <typename T, typename... Values>
void marker(std::string_view name, Category category, const Values&... values) {
  if (!is_recording()) return;
  const Timestamp t = now();
  internal::record_typed<T>(name, category, internal::MarkerPhase::kInstant, t, t, values...);
}

// An interval marker whose ends are already known; any thread may record it.
inline void interval_marker(std::string_view name, Timestamp start, Timestamp end,
                            Category category = kCategoryOther) {
  if (!is_recording()) return;
  internal::record_marker(name, category, internal::MarkerPhase::kInterval, start, end, 0, {});
}

template <typename T, typename... Values>
void interval_marker(std::string_view name, Category category, Timestamp start, Timestamp end,
                     const Values&... values) {
  if (!is_recording()) return;
  internal::record_typed<T>(name, category, internal::MarkerPhase::kInterval, start, end,
                            values...);
}

// A marker with free text (the simple case of a typed marker).
INPROF_API void text_marker(std::string_view name, std::string_view text,
                            Category category = kCategoryOther);

// The two ends of an interval recorded separately, possibly on different threads; they are
// matched by name.
inline void interval_start(std::string_view name, Category category = kCategoryOther) {
  if (!is_recording()) return;
  const Timestamp t = now();
  internal::record_marker(name, category, internal::MarkerPhase::kIntervalStart, t, t, 0, {});
}
inline void interval_end(std::string_view name, Category category = kCategoryOther) {
  if (!is_recording()) return;
  const Timestamp t = now();
  internal::record_marker(name, category, internal::MarkerPhase::kIntervalEnd, t, t, 0, {});
}

// Records an interval marker from its construction to its destruction. `name` must outlive it
// (a string literal, typically).
class MarkerScope {
 public:
  explicit MarkerScope(std::string_view name, Category category = kCategoryOther)
      : name_(name), category_(category), start_(is_recording() ? now() : 0) {}
  ~MarkerScope() {
    if (start_ != 0 && is_recording()) interval_marker(name_, start_, now(), category_);
  }
  MarkerScope(const MarkerScope&) = delete;
  MarkerScope& operator=(const MarkerScope&) = delete;

 private:
  std::string_view name_;
  Category category_;
  Timestamp start_;
};

// Pushes a label onto the calling thread's label stack for its lifetime: samples of the thread
// show it as a frame, placed where the scope lives in the stack. `name` must be a string with
// static storage (a literal): only its address is stored.
class INPROF_API LabelScope {
 public:
  explicit LabelScope(const char* name, Category category = kCategoryOther);
  ~LabelScope();
  LabelScope(const LabelScope&) = delete;
  LabelScope& operator=(const LabelScope&) = delete;

 private:
  // A record the library fills while the label is pushed (zero when it is not): it lives in the
  // thread's stack, so a stack copy the kernel takes carries the labels with it.
  uint64_t record_[3];
};

// A number that changes over time, shown as a counter track. Create it once (it lives for the
// program); add() and set() are lock-free and callable from any thread. Its value is recorded
// at each sampler tick where it changed, and once more when profiling stops.
class INPROF_API Counter {
 public:
  explicit Counter(std::string_view name, std::string_view description = {},
                   Category category = kCategoryOther);
  void add(int64_t delta) { value_->fetch_add(delta, std::memory_order_relaxed); }
  void set(int64_t value) { value_->store(value, std::memory_order_relaxed); }
  int64_t value() const { return value_->load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t>* value_;  // owned by the counter registry, never freed
};

#if defined(INPROF_DISABLE)
// Compiled out: nothing is recorded and nothing needs the library.
inline Timestamp now() { return 0; }
inline Category Category::define(std::string_view, Color) { return kCategoryOther; }
inline uint32_t internal::register_marker_type(const MarkerSchemaDescription&) { return 0; }
inline void internal::record_marker(std::string_view, Category, MarkerPhase, Timestamp, Timestamp,
                                    uint32_t, std::span<const FieldValue>) {}
inline void text_marker(std::string_view, std::string_view, Category) {}
inline LabelScope::LabelScope(const char*, Category) : record_{} {}
inline LabelScope::~LabelScope() {}
inline Counter::Counter(std::string_view, std::string_view, Category) {
  static std::atomic<int64_t> unused{0};
  value_ = &unused;
}
#endif

}  // namespace inprof

#define INPROF_CONCAT_INNER(a, b) a##b
#define INPROF_CONCAT(a, b) INPROF_CONCAT_INNER(a, b)

#if defined(INPROF_DISABLE)
#define INPROF_MARKER(name) ((void)0)
#define INPROF_TEXT_MARKER(name, text) ((void)0)
#define INPROF_SCOPED_MARKER(name) ((void)0)
#define INPROF_LABEL(name) ((void)0)
#else
#define INPROF_MARKER(name) ::inprof::marker(name)
#define INPROF_TEXT_MARKER(name, text)                               \
  do {                                                               \
    if (::inprof::is_recording()) ::inprof::text_marker(name, text); \
  } while (0)
#define INPROF_SCOPED_MARKER(name) \
  ::inprof::MarkerScope INPROF_CONCAT(inprof_marker_scope_, __LINE__)(name)
// A label keeps only the address of its name: the name must be a constant (a string literal);
// a run-time string (`s.c_str()`) does not compile (error: call to consteval function
// 'inprof::internal::label_literal' is not a constant expression).
#define INPROF_LABEL(name)                                \
  ::inprof::LabelScope INPROF_CONCAT(inprof_label_scope_, \
                                     __LINE__)(::inprof::internal::label_literal(name))
#endif

namespace inprof::internal {
// INPROF_LABEL's check that its name is a constant with static storage.
consteval const char* label_literal(const char* name) { return name; }
}  // namespace inprof::internal

#endif  // INPROF_MARKERS_H_
