#include "convert/marker_context.h"

#include <algorithm>
#include <utility>

#include "convert/graph_color.h"

namespace inprof::symbolicate {
namespace {

// A key for `base` that none of the schema's fields has yet: a user's own "category" field
// keeps its meaning.
std::string free_key(const MarkerSchema& schema, std::string base) {
  auto taken = [&](const std::string& key) {
    return std::any_of(schema.fields.begin(), schema.fields.end(),
                       [&](const MarkerSchemaField& f) { return f.key == key; });
  };
  // "type" is the payload's schema name.
  while (base == "type" || taken(base)) base += '_';
  return base;
}

}  // namespace

MarkerContextKeys add_context_fields(MarkerSchema& schema) {
  MarkerContextKeys keys;
  keys.category = free_key(schema, "category");
  schema.fields.push_back({keys.category, "Category", "string"});
  keys.thread = free_key(schema, "thread");
  // "tid": the viewer shows the thread's name with its id.
  schema.fields.push_back({keys.thread, "Thread", "tid"});
  keys.color = free_key(schema, "color");
  schema.fields.push_back({keys.color, "Colour", "string", /*hidden=*/true});
  schema.color_field = keys.color;
  // Without a table label the marker table's description column would be empty.
  if (schema.table_label.empty()) schema.table_label = "{marker.category}";
  return keys;
}

MarkerSchema untyped_marker_schema(std::string name) {
  MarkerSchema schema;
  schema.name = std::move(name);
  schema.display = {"marker-chart", "marker-table", "timeline-overview"};
  return schema;
}

void add_context(MarkerData& data, const MarkerContextKeys& keys, const Category& category,
                 uint64_t tid) {
  data.fields.emplace_back(keys.category, category.name);
  data.fields.emplace_back(keys.thread, static_cast<int64_t>(tid));
  data.fields.emplace_back(keys.color, std::string(graph_color_for(category.color)));
}

}  // namespace inprof::symbolicate
