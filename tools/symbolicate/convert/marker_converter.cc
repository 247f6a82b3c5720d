// The dump's categories, marker schemas and markers, as the profile's (part of Converter,
// converter.h).
#include <cmath>
#include <iterator>
#include <string>

#include "convert/converter.h"
#include "convert/graph_color.h"

namespace inprof::symbolicate {

namespace {

const char* color_name(uint8_t color) {
  static const char* const kColors[] = {"grey",   "transparent", "purple",  "green", "orange",
                                        "yellow", "lightblue",   "blue",    "brown", "magenta",
                                        "red",    "lightred",    "darkgrey"};
  return color < std::size(kColors) ? kColors[color] : "grey";
}

const char* format_name(uint8_t format) {
  static const char* const kFormats[] = {"string",      "integer",   "decimal",      "bytes",
                                         "percentage",  "duration",  "milliseconds", "microseconds",
                                         "nanoseconds", "file-path", "url"};
  return format < std::size(kFormats) ? kFormats[format] : "string";
}

}  // namespace

std::map<uint32_t, CategoryIndex> Converter::add_categories() {
  // Categories with a name the profile already has (Other, Idle) are merged into it, so there is
  // one grey Other at index 0 and one transparent Idle.
  std::map<std::string, CategoryIndex> by_name;
  std::map<uint32_t, CategoryIndex> by_dump_id;
  for (size_t i = 0; i < b_.categories().size(); ++i) {
    by_name.emplace(b_.categories()[i].name, static_cast<CategoryIndex>(i));
  }
  for (const auto& [id, record] : model_.categories()) {
    std::string name = record.name.empty() ? "Category " + std::to_string(id) : record.name;
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      it =
          by_name.emplace(name, b_.add_category({name, color_name(record.color), {"Other"}})).first;
    }
    by_dump_id[id] = it->second;
  }
  return by_dump_id;
}

void Converter::add_marker_schemas() {
  std::map<std::string, bool> written;
  for (const auto& [type, record] : model_.marker_schemas()) {
    std::string name = record.name.empty() ? "Type" + std::to_string(type) : record.name;
    schema_names_[type] = name;
    // Two types with one name (two copies of a library) share the first one's schema.
    if (!written.emplace(name, true).second) continue;
    MarkerSchema schema;
    schema.name = name;
    schema.display = {"marker-chart", "marker-table", "timeline-overview"};
    schema.chart_label = record.chart_label;
    schema.table_label = record.table_label;
    schema.tooltip_label = record.tooltip_label;
    schema.description = record.description;
    for (const internal::MarkerFieldRecord& f : record.fields) {
      schema.fields.push_back({f.key, f.label.empty() ? f.key : f.label, format_name(f.format)});
    }
    context_keys_[name] = add_context_fields(schema);
    b_.add_marker_schema(std::move(schema));
  }
}

const std::string& Converter::untyped_schema() {
  if (!untyped_schema_) {
    std::string name = "Marker";
    for (int n = 2; context_keys_.contains(name); ++n) name = "Marker " + std::to_string(n);
    MarkerSchema schema = untyped_marker_schema(name);
    context_keys_[name] = add_context_fields(schema);
    b_.add_marker_schema(std::move(schema));
    untyped_schema_ = name;
  }
  return *untyped_schema_;
}

std::optional<MarkerData> Converter::marker_data(const internal::MarkerRecord& m) {
  if (m.type == 0) return std::nullopt;
  auto schema = model_.marker_schemas().find(m.type);
  if (schema == model_.marker_schemas().end()) {
    ++untyped_markers_;
    return std::nullopt;
  }
  MarkerData data;
  data.type = schema_names_[m.type];
  const auto& fields = schema->second.fields;
  for (size_t i = 0; i < fields.size() && i < m.values.size(); ++i) {
    const internal::MarkerValue& v = m.values[i];
    MarkerValue value;
    switch (v.kind) {
      case internal::MarkerValue::kInteger:
        value = v.integer;
        break;
      case internal::MarkerValue::kDecimal:
        // JSON has no NaN or infinity.
        if (std::isfinite(v.decimal)) value = v.decimal;
        break;
      default:
        value = v.string;
        break;
    }
    data.fields.emplace_back(fields[i].key, std::move(value));
  }
  return data;
}

void Converter::add_markers() {
  // The viewer pairs interval starts and ends by name within one thread only; the library
  // matches them by name across threads. Pair them here, in time order, the latest open start
  // first (as the viewer does), and write each pair as one interval on the starting thread.
  std::vector<size_t> order(model_.markers().size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& markers = model_.markers();
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return markers[a].start_ns < markers[b].start_ns; });
  std::map<std::string, std::vector<size_t>> open;  // interval starts by name
  struct Out {
    size_t record;
    std::optional<uint64_t> start, end;
    MarkerPhase phase;
    std::optional<size_t> end_record;  // the phase-3 record of a pair
  };
  std::vector<Out> out;
  out.reserve(markers.size());
  for (size_t i : order) {
    const internal::MarkerRecord& m = markers[i];
    switch (m.phase) {
      case 1:
        out.push_back({i, m.start_ns, std::max(m.start_ns, m.end_ns), MarkerPhase::kInterval, {}});
        break;
      case 2:
        open[m.name].push_back(out.size());
        out.push_back({i, m.start_ns, std::nullopt, MarkerPhase::kIntervalStart, {}});
        break;
      case 3: {
        auto it = open.find(m.name);
        if (it != open.end() && !it->second.empty()) {
          Out& start = out[it->second.back()];
          it->second.pop_back();
          start.end = std::max(*start.start, m.start_ns);
          start.phase = MarkerPhase::kInterval;
          start.end_record = i;
        } else {
          // Its start was lost (or came before the session): the viewer starts it at the
          // beginning of the profile.
          out.push_back({i, std::nullopt, m.start_ns, MarkerPhase::kIntervalEnd, {}});
        }
        break;
      }
      default:  // 0, and unknown phases as instants
        out.push_back({i, m.start_ns, std::nullopt, MarkerPhase::kInstant, {}});
        break;
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Out& a, const Out& b) {
    return a.start.value_or(a.end.value_or(0)) < b.start.value_or(b.end.value_or(0));
  });
  for (const Out& o : out) {
    const internal::MarkerRecord& m = markers[o.record];
    auto thread = thread_by_tid_.find(m.tid);
    if (thread == thread_by_tid_.end()) continue;  // cannot happen: add_threads made one
    MarkerTable& t = b_.thread(thread->second).markers;
    t.name.push_back(b_.handle_for_string(m.name));
    t.start_ns.push_back(o.start);
    t.end_ns.push_back(o.end);
    t.phase.push_back(o.phase);
    const CategoryIndex cat = stacks_.category(m.category);
    t.category.push_back(cat);
    std::optional<MarkerData> data = marker_data(m);
    if (!data && o.end_record) data = marker_data(markers[*o.end_record]);
    // Every marker gets a payload: the viewer shows fields, colours and timeline entries only
    // for markers with one.
    if (!data) data = MarkerData{untyped_schema(), {}};
    add_context(*data, context_keys_.at(data->type), b_.categories()[raw(cat)], m.tid);
    t.data.push_back(std::move(data));
  }
  if (untyped_markers_) {
    diag_.warn(std::to_string(untyped_markers_) +
               " markers name a marker type the dump does not describe; their payload is dropped");
  }
}

}  // namespace inprof::symbolicate
