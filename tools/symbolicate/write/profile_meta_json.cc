// The processed profile's meta object (product, times, categories, marker schemas, Profile Info)
// and its libs, as JSON (part of profile_json_writer.cc's output).
#include "write/profile_meta_json.h"

#include <string>

#include "write/profile_json_writer.h"

namespace inprof::symbolicate {
namespace {

void write_marker_schema(Emitter& e, const MarkerSchema& schema) {
  e.begin_object();
  e.key("name");
  e.str(schema.name);
  e.key("display");
  e.array(schema.display.size(), [&](size_t i) { e.str(schema.display[i]); });
  // An absent label makes the viewer fall back to the marker's name; an empty one shows nothing.
  const std::pair<const char*, const std::string*> labels[] = {
      {"chartLabel", &schema.chart_label},
      {"tableLabel", &schema.table_label},
      {"tooltipLabel", &schema.tooltip_label},
      {"description", &schema.description}};
  for (const auto& [key, value] : labels) {
    if (value->empty()) continue;
    e.key(key);
    e.str(*value);
  }
  e.key("fields");
  e.begin_array();
  for (const MarkerSchemaField& f : schema.fields) {
    e.begin_object();
    e.key("key");
    e.str(f.key);
    e.key("label");
    e.str(f.label);
    e.key("format");
    e.str(f.format);
    if (f.hidden) {
      e.key("hidden");
      e.boolean(true);
    }
    e.end_object();
  }
  e.end_array();
  if (!schema.color_field.empty()) {
    e.key("colorField");
    e.str(schema.color_field);
  }
  e.end_object();
}

// The machine the profile was taken on (Profile Info's OS, CPU and memory).
void write_machine(Emitter& e, const Meta& m) {
  if (!m.oscpu.empty()) {
    e.key("oscpu");
    e.str(m.oscpu);
  }
  if (!m.platform.empty()) {
    e.key("platform");
    e.str(m.platform);
  }
  if (!m.cpu_name.empty()) {
    e.key("CPUName");
    e.str(m.cpu_name);
  }
  for (const auto& [key, value] :
       {std::pair{"physicalCPUs", m.physical_cpus}, std::pair{"logicalCPUs", m.logical_cpus},
        std::pair{"mainMemory", m.main_memory}}) {
    if (value == 0) continue;
    e.key(key);
    e.u64(value);
  }
}

void write_categories(Emitter& e, const ProfileBuilder& p) {
  e.key("categories");
  e.begin_array();
  for (const Category& c : p.categories()) {
    e.begin_object();
    e.key("name");
    e.str(c.name);
    e.key("color");
    e.str(c.color);
    e.key("subcategories");
    e.array(c.subcategories.size(), [&](size_t i) { e.str(c.subcategories[i]); });
    e.end_object();
  }
  e.end_array();
}

// inprof's own figures, Profile Info's "inprof" section.
void write_extra(Emitter& e, const Meta& m) {
  e.key("extra");
  e.begin_array();
  e.begin_object();
  e.key("label");
  e.str("inprof");
  e.key("entries");
  e.begin_array();
  for (const ExtraEntry& x : m.extra) {
    e.begin_object();
    e.key("label");
    e.str(x.label);
    e.key("format");
    if (const auto* s = std::get_if<std::string>(&x.value)) {
      e.str("string");
      e.key("value");
      e.str(*s);
    } else if (const auto* n = std::get_if<uint64_t>(&x.value)) {
      e.str("integer");
      e.key("value");
      e.u64(*n);
    } else {
      e.str("string");
      e.key("value");
      e.str(std::get<bool>(x.value) ? "yes" : "no");
    }
    e.end_object();
  }
  e.end_array();
  e.end_object();
  e.end_array();
}

}  // namespace

void write_meta(Emitter& e, const ProfileBuilder& p) {
  const Meta& m = p.meta();
  e.key("meta");
  e.begin_object();
  e.key("version");
  e.u64(24);  // Gecko version; ignored for processed files, written as samply does
  e.key("preprocessedProfileVersion");
  e.u64(kProcessedProfileVersion);
  e.key("interval");
  e.ms(m.interval_ns);
  e.key("startTime");
  e.ms(m.start_unix_ns);
  e.key("processType");
  e.u64(0);
  e.key("product");
  e.str(m.product);
  e.key("stackwalk");
  e.u64(1);
  e.key("debug");
  e.boolean(false);
  e.key("symbolicated");
  e.boolean(m.symbolicated);
  e.key("usesOnlyOneStackType");
  e.boolean(true);
  e.key("sourceCodeIsNotOnSearchfox");
  e.boolean(true);
  e.key("arguments");
  e.str(m.arguments);
  write_machine(e, m);
  if (m.profiling_end_ns) {
    e.key("profilingStartTime");
    e.ms(m.profiling_start_ns);
    e.key("profilingEndTime");
    e.ms(*m.profiling_end_ns);
  }
  for (const auto& [key, field] :
       {std::pair{"initialVisibleThreads", &m.initial_visible_threads},
        std::pair{"initialSelectedThreads", &m.initial_selected_threads}}) {
    if (!*field) continue;
    e.key(key);
    const auto& list = **field;  // a plain name: clang before 16 cannot capture a binding
    e.array(list.size(), [&](size_t i) { e.u64(list[i]); });
  }
  e.key("importedFrom");
  e.str("inprof");
  e.key("sampleUnits");
  e.begin_object();
  e.key("time");
  e.str("ms");
  e.key("eventDelay");
  e.str("ms");
  e.key("threadCPUDelta");
  e.str("ns");
  e.end_object();
  write_categories(e, p);
  e.key("markerSchema");
  e.begin_array();
  for (const MarkerSchema& schema : p.marker_schemas()) write_marker_schema(e, schema);
  e.end_array();
  e.key("extensions");
  e.begin_object();
  e.key("length");
  e.u64(0);
  for (const char* k : {"baseURL", "id", "name"}) {
    e.key(k);
    e.begin_array();
    e.end_array();
  }
  e.end_object();
  if (!m.extra.empty()) write_extra(e, m);
  e.end_object();
}

void write_libs(Emitter& e, const ProfileBuilder& p) {
  e.key("libs");
  e.begin_array();
  for (const Lib& lib : p.libs()) {
    e.begin_object();
    e.key("name");
    e.str(lib.name);
    e.key("path");
    e.str(lib.path);
    e.key("debugName");
    e.str(lib.debug_name);
    e.key("debugPath");
    e.str(lib.debug_path);
    e.key("breakpadId");
    e.str(lib.breakpad_id);
    e.key("codeId");
    if (lib.code_id) {
      e.str(*lib.code_id);
    } else {
      e.null();
    }
    e.key("arch");
    e.str(lib.arch);
    e.end_object();
  }
  e.end_array();
}

}  // namespace inprof::symbolicate
