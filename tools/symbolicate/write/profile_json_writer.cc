#include "write/profile_json_writer.h"

#include <rapidjson/filewritestream.h>
#include <rapidjson/writer.h>

#include <vector>

#include "convert/sample_weight.h"
#include "write/json_emitter.h"
#include "write/profile_meta_json.h"
#include "write/profiler_overhead_json.h"
#include "write/stack_walk.h"

namespace inprof::symbolicate {
namespace {

void write_sources(Emitter& e, const ProfileBuilder& p) {
  const SourceTable& src = p.sources();
  e.key("sources");
  e.begin_object();
  e.key("length");
  e.u64(src.size());
  e.key("id");
  e.null_column(src.size());
  e.key("filename");
  e.array(src.size(), [&](size_t i) { e.index(src.filename[i]); });
  e.key("startLine");
  e.uint_column(src.size(), 1);
  e.key("startColumn");
  e.uint_column(src.size(), 1);
  e.key("sourceMapURL");
  e.null_column(src.size());
  e.key("content");
  if (src.content.empty()) {
    e.null_column(src.size());
  } else {
    e.array(src.size(), [&](size_t i) {
      if (src.content[i]) {
        e.str(*src.content[i]);
      } else {
        e.null();
      }
    });
  }
  e.end_object();

  e.key("sourceLocationTable");
  e.begin_object();
  e.key("length");
  e.u64(0);
  for (const char* k : {"source", "line", "column"}) {
    e.key(k);
    e.begin_array();
    e.end_array();
  }
  e.end_object();
}

void write_resource_table(Emitter& e, const ProfileBuilder& p) {
  const ResourceTable& res = p.resources();
  e.key("resourceTable");
  e.begin_object();
  e.key("length");
  e.u64(res.size());
  e.key("lib");
  e.array(res.size(), [&](size_t i) { e.index(res.lib[i]); });
  e.key("name");
  e.array(res.size(), [&](size_t i) { e.index(res.name[i]); });
  e.key("host");
  e.null_column(res.size());
  e.key("type");
  e.uint_column(res.size(), 1);  // library
  e.end_object();
}

void write_func_table(Emitter& e, const ProfileBuilder& p) {
  const FuncTable& fn = p.funcs();
  e.key("funcTable");
  e.begin_object();
  e.key("length");
  e.u64(fn.size());
  e.key("name");
  e.array(fn.size(), [&](size_t i) { e.index(fn.name[i]); });
  e.key("isJS");
  e.bool_column(fn.size(), false);
  e.key("relevantForJS");
  e.bool_column(fn.size(), false);
  e.key("resource");
  e.array(fn.size(), [&](size_t i) {
    if (fn.resource[i]) {
      e.index(*fn.resource[i]);
    } else {
      e.i64(-1);
    }
  });
  e.key("source");
  e.array(fn.size(), [&](size_t i) { e.opt_index(fn.source[i]); });
  e.key("lineNumber");
  e.array(fn.size(), [&](size_t i) { e.opt_u64(fn.line_number[i]); });
  e.key("columnNumber");
  e.null_column(fn.size());
  e.key("originalLocation");
  e.null_column(fn.size());
  e.end_object();
}

void write_native_symbols(Emitter& e, const ProfileBuilder& p) {
  const NativeSymbolTable& ns = p.native_symbols();
  e.key("nativeSymbols");
  e.begin_object();
  e.key("length");
  e.u64(ns.size());
  e.key("libIndex");
  e.array(ns.size(), [&](size_t i) { e.index(ns.lib[i]); });
  e.key("address");
  e.array(ns.size(), [&](size_t i) { e.u64(ns.address[i]); });
  e.key("name");
  e.array(ns.size(), [&](size_t i) { e.index(ns.name[i]); });
  e.key("functionSize");
  e.array(ns.size(), [&](size_t i) { e.opt_u64(ns.function_size[i]); });
  e.end_object();
}

void write_frame_table(Emitter& e, const ProfileBuilder& p) {
  const FrameTable& fr = p.frames();
  e.key("frameTable");
  e.begin_object();
  e.key("length");
  e.u64(fr.size());
  e.key("func");
  e.array(fr.size(), [&](size_t i) { e.index(fr.func[i]); });
  e.key("address");
  e.array(fr.size(), [&](size_t i) {
    if (fr.address[i]) {
      e.u64(*fr.address[i]);
    } else {
      e.i64(-1);
    }
  });
  e.key("inlineDepth");
  e.array(fr.size(), [&](size_t i) { e.u64(fr.inline_depth[i]); });
  e.key("category");
  e.array(fr.size(), [&](size_t i) { e.index(fr.category[i]); });
  e.key("subcategory");
  e.array(fr.size(), [&](size_t i) { e.u64(fr.subcategory[i]); });
  e.key("nativeSymbol");
  e.array(fr.size(), [&](size_t i) { e.opt_index(fr.native_symbol[i]); });
  e.key("innerWindowID");
  e.uint_column(fr.size(), 0);
  e.key("line");
  e.array(fr.size(), [&](size_t i) { e.opt_u64(fr.line[i]); });
  e.key("column");
  e.null_column(fr.size());
  e.key("originalLocation");
  e.null_column(fr.size());
  e.end_object();
}

void write_stack_table(Emitter& e, const ProfileBuilder& p) {
  const StackTable& st = p.stacks();
  e.key("stackTable");
  e.begin_object();
  e.key("length");
  e.u64(st.size());
  e.key("frame");
  e.array(st.size(), [&](size_t i) { e.index(st.frame[i]); });
  e.key("prefixOffset");
  e.array(st.size(), [&](size_t i) { e.u64(st.prefix[i] ? i - raw(*st.prefix[i]) : 0); });
  e.end_object();
}

// The tables every thread indexes into (the processed format's "shared").
void write_shared(Emitter& e, const ProfileBuilder& p) {
  e.key("shared");
  e.begin_object();
  e.key("stringArray");
  e.array(p.strings().size(), [&](size_t i) { e.str(p.strings()[i]); });
  write_sources(e, p);
  write_resource_table(e, p);
  write_func_table(e, p);
  write_native_symbols(e, p);
  write_frame_table(e, p);
  write_stack_table(e, p);
  e.end_object();
}

void write_samples(Emitter& e, const Thread& t, const ProfileBuilder& profile) {
  const bool cpu_deltas = profile.meta().has_cpu_deltas;
  const SampleTable& s = t.samples;
  e.key("samples");
  e.begin_object();
  e.key("length");
  e.u64(s.size());
  e.key("stack");
  e.begin_array();
  s.for_each([&](const SampleTable::Sample& x) { e.opt_index(x.stack); });
  e.end_array();
  e.key("timeDeltas");
  e.begin_array();
  uint64_t previous = 0;
  s.for_each([&](const SampleTable::Sample& x) {
    e.ms(x.time_ns - previous);  // times never decrease in a SampleTable
    previous = x.time_ns;
  });
  e.end_array();
  // With CPU times, each sample weighs the time it stands for (convert/sample_weight.h): on-CPU
  // views add up CPU time, idle samples the time slept; in whole units (WholeUnitWeights).
  WholeUnitWeights whole(profile.meta().interval_ns);
  e.key("weight");
  if (cpu_deltas) {
    SampleWeigher weigher(profile.meta(), t);
    e.begin_array();
    s.for_each([&](const SampleTable::Sample& x) {
      const bool idle = x.stack && is_idle_leaf(profile, *x.stack);
      e.u64(whole.units(weigher.weight_ns(x, idle), idle));
    });
    e.end_array();
  } else {
    e.null();
  }
  e.key("weightType");
  e.str(cpu_deltas ? whole.weight_type() : "samples");
  if (cpu_deltas) {
    e.key("threadCPUDelta");
    e.begin_array();
    s.for_each([&](const SampleTable::Sample& x) { e.opt_u64(x.cpu_delta_ns); });
    e.end_array();
  }
  e.end_object();
}

void write_native_allocations(Emitter& e, const Thread& t) {
  // Sampled allocations: the "Native Allocations" and "Retained Memory" views (only present when
  // the thread has rows).
  if (const NativeAllocationTable& a = t.allocations; a.size() > 0) {
    e.key("nativeAllocations");
    e.begin_object();
    e.key("length");
    e.u64(a.size());
    e.key("time");
    e.array(a.size(), [&](size_t i) { e.ms(a.time_ns[i]); });
    e.key("weight");
    e.array(a.size(), [&](size_t i) { e.i64(a.weight[i]); });
    e.key("weightType");
    e.str("bytes");
    e.key("stack");
    e.array(a.size(), [&](size_t i) { e.opt_index(a.stack[i]); });
    e.key("memoryAddress");
    e.array(a.size(), [&](size_t i) { e.u64(a.address[i]); });
    e.key("threadId");
    e.array(a.size(), [&](size_t i) { e.u64(a.thread_id[i]); });
    e.end_object();
  }
}

void write_markers(Emitter& e, const Thread& t) {
  const MarkerTable& m = t.markers;
  auto opt_ms = [&](const std::optional<uint64_t>& ns) {
    if (ns) {
      e.ms(*ns);
    } else {
      e.null();
    }
  };
  e.key("markers");
  e.begin_object();
  e.key("length");
  e.u64(m.size());
  e.key("name");
  e.array(m.size(), [&](size_t i) { e.index(m.name[i]); });
  e.key("startTime");
  e.array(m.size(), [&](size_t i) { opt_ms(m.start_ns[i]); });
  e.key("endTime");
  e.array(m.size(), [&](size_t i) { opt_ms(m.end_ns[i]); });
  e.key("phase");
  e.array(m.size(), [&](size_t i) { e.u64(static_cast<uint8_t>(m.phase[i])); });
  e.key("category");
  e.array(m.size(), [&](size_t i) { e.index(m.category[i]); });
  e.key("data");
  e.array(m.size(), [&](size_t i) {
    if (!m.data[i]) {
      e.null();
      return;
    }
    const MarkerData& d = *m.data[i];
    e.begin_object();
    e.key("type");
    e.str(d.type);
    for (const auto& [key, value] : d.fields) {
      if (key == "type") continue;  // would clash with the schema name
      e.str_key(key);
      if (const auto* n = std::get_if<int64_t>(&value)) {
        e.i64(*n);
      } else if (const auto* x = std::get_if<double>(&value)) {
        e.num(*x);
      } else if (const auto* s = std::get_if<std::string>(&value)) {
        e.str(*s);
      } else {
        e.null();
      }
    }
    if (d.cause_stack) {
      e.key("cause");
      e.begin_object();
      e.key("time");
      opt_ms(d.cause_ns);
      e.key("stack");
      e.index(*d.cause_stack);
      e.end_object();
    }
    e.end_object();
  });
  e.end_object();
}

void write_thread(Emitter& e, const Thread& t, const ProfileBuilder& profile) {
  e.begin_object();
  e.key("name");
  e.str(t.name);
  e.key("isMainThread");
  e.boolean(t.is_main);
  e.key("processType");
  e.str("default");
  e.key("processName");
  e.str(t.process_name);
  e.key("pid");
  e.str(std::to_string(t.pid));
  e.key("tid");
  e.u64(t.tid);
  e.key("processStartupTime");
  e.u64(0);
  e.key("processShutdownTime");
  e.null();
  e.key("registerTime");
  e.ms(t.register_ns);
  e.key("unregisterTime");
  if (t.unregister_ns) {
    e.ms(*t.unregister_ns);
  } else {
    e.null();
  }
  e.key("pausedRanges");
  e.begin_array();
  for (const PausedRange& r : t.paused_ranges) {
    e.begin_object();
    e.key("startTime");
    e.ms(r.start_ns);
    e.key("endTime");
    e.ms(r.end_ns);
    e.end_object();
  }
  e.end_array();
  if (t.markers.size() > 0) {
    e.key("showMarkersInTimeline");
    e.boolean(true);
  }

  write_samples(e, t, profile);
  write_native_allocations(e, t);
  write_markers(e, t);
  e.end_object();
}

void write_counter(Emitter& e, const Counter& c) {
  e.begin_object();
  e.key("name");
  e.str(c.name);
  e.key("category");
  e.str(c.category);
  e.key("description");
  e.str(c.description);
  e.key("pid");
  e.str(std::to_string(c.pid));
  e.key("mainThreadIndex");
  e.index(c.main_thread);
  // How the track is drawn; required since processed version 62 (older files get it from the
  // upgraders).
  e.key("display");
  e.begin_object();
  e.key("graphType");
  e.str(c.graph_type);
  e.key("unit");
  e.str(c.unit);
  e.key("color");
  e.str(c.color);
  e.key("markerSchemaLocation");
  e.null();
  e.key("sortWeight");
  e.u64(50);
  e.key("label");
  e.str(c.name);
  // The counter's own value first (samples.number, see Counter::value), then its change. The
  // running total less its minimum ("accumulated") is what the graph draws, but it is not the
  // value as soon as the counter goes below zero.
  e.key("tooltipRows");
  e.begin_array();
  const std::pair<const char*, const char*> rows[] = {
      {"sample-number", "value at this time"}, {"count", "change since the previous sample"}};
  for (const auto& [source, label] : rows) {
    e.begin_object();
    e.key("type");
    e.str("value");
    e.key("source");
    e.str(source);
    e.key("format");
    e.begin_object();
    e.key("unit");
    e.str(c.unit == "bytes" ? "bytes" : "number");
    e.end_object();
    e.key("label");
    e.str(label);
    e.end_object();
  }
  e.end_array();
  e.end_object();
  e.key("samples");
  e.begin_object();
  e.key("length");
  e.u64(c.size());
  e.key("time");
  e.array(c.size(), [&](size_t i) { e.ms(c.time_ns[i]); });
  e.key("count");
  e.array(c.size(), [&](size_t i) { e.i64(c.count[i]); });
  e.key("number");
  e.array(c.size(), [&](size_t i) { e.i64(c.value[i]); });
  e.end_object();
  e.end_object();
}

}  // namespace

bool write_profile_json(const ProfileBuilder& profile, std::FILE* out) {
  std::vector<char> buffer(1 << 16);
  rapidjson::FileWriteStream stream(out, buffer.data(), buffer.size());
  JsonWriter writer(stream);
  Emitter e(writer);
  e.begin_object();
  write_meta(e, profile);
  write_libs(e, profile);
  e.key("pages");
  e.begin_array();
  e.end_array();
  e.key("profilerOverhead");
  e.begin_array();
  for (const ProfilerOverhead& o : profile.overheads()) write_profiler_overhead(e, o);
  e.end_array();
  e.key("counters");
  e.begin_array();
  for (const Counter& c : profile.counters()) write_counter(e, c);
  e.end_array();
  write_shared(e, profile);
  e.key("threads");
  e.begin_array();
  for (const Thread& t : profile.threads()) write_thread(e, t, profile);
  e.end_array();
  e.end_object();
  stream.Flush();
  return writer.IsComplete() && !std::ferror(out);
}

}  // namespace inprof::symbolicate
