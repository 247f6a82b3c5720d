#include "profile_checker.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace inprof::test_support {
namespace {

using rapidjson::Value;

// Element problems reported per column before the rest are only counted: a systematic bug in a
// large profile would otherwise print one line per row.
constexpr size_t kReportsPerColumn = 5;

const std::set<std::string> kColors = {"transparent", "purple",   "green", "orange",  "yellow",
                                       "lightblue",   "blue",     "brown", "magenta", "red",
                                       "lightred",    "darkgrey", "grey"};
// The marker chart's colours (GraphColor), fewer than the category colours; a colorField value
// outside them silently leaves the marker in the default blue.
const std::set<std::string> kGraphColors = {"blue",   "green",  "grey", "ink",  "magenta",
                                            "orange", "purple", "red",  "teal", "yellow"};
const std::set<std::string> kCounterTooltipSources = {"count",          "rate",
                                                      "cpu-ratio",      "accumulated",
                                                      "count-range",    "selection-total",
                                                      "selection-rate", "committed-range-total",
                                                      "sample-number"};
const std::set<std::string> kDisplayLocations = {
    "marker-chart", "marker-table",    "timeline-overview", "timeline-memory",
    "timeline-ipc", "timeline-fileio", "timeline-network"};
const std::set<std::string> kFieldFormats = {"string",
                                             "unique-string",
                                             "url",
                                             "file-path",
                                             "sanitized-string",
                                             "flow-id",
                                             "terminating-flow-id",
                                             "duration",
                                             "time",
                                             "seconds",
                                             "milliseconds",
                                             "microseconds",
                                             "nanoseconds",
                                             "bytes",
                                             "percentage",
                                             "integer",
                                             "decimal",
                                             "hexadecimal",
                                             "pid",
                                             "tid",
                                             "list"};
const std::set<std::string> kCpuDeltaUnits = {"ns", "µs", "variable CPU cycles"};
const std::set<std::string> kWeightTypes = {"samples", "tracing-ms", "bytes"};

// A short rendering of a JSON value for messages.
std::string show(const Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  std::string s = buffer.GetString();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

const Value* member(const Value& object, const char* key) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(key);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

// A struct-of-arrays table whose `length` and columns were found sound; a column that is missing
// or has the wrong length is reported once and then left out of `columns`.
struct Table {
  std::string path;
  bool ok = false;  // an object with a valid length
  size_t length = 0;
  std::map<std::string, const Value*> columns;

  const Value* column(const std::string& name) const {
    auto it = columns.find(name);
    return it == columns.end() ? nullptr : it->second;
  }
  // The table's row count for index checks, or nothing when the table itself is broken.
  std::optional<size_t> bound() const { return ok ? std::optional<size_t>(length) : std::nullopt; }
};

enum class Null { kRejected, kAllowed };

class Checker {
 public:
  std::vector<std::string> run(const Value& root);

 private:
  void problem(const std::string& path, const std::string& what) {
    problems_.push_back(path + ": " + what);
  }
  // A problem with one element of a column; only the first few per column are listed.
  void element_problem(const std::string& column_path, size_t i, const std::string& what) {
    if (++column_reports_[column_path] <= kReportsPerColumn) problem(at(column_path, i), what);
  }

  const Value* require(const Value& object, const std::string& path, const char* key);
  bool require_string(const Value& object, const std::string& path, const char* key);
  bool require_number(const Value& object, const std::string& path, const char* key,
                      Null null = Null::kRejected);

  Table open_table(const Value* parent, const std::string& parent_path, const char* key,
                   std::initializer_list<const char*> required);

  void check_index_column(const Table& t, const char* name, std::optional<size_t> bound, Null null,
                          bool minus_one_allowed = false);
  void check_number_column(const Table& t, const char* name, Null null, bool non_negative,
                           bool integer = false);
  void check_bool_column(const Table& t, const char* name);
  bool valid_string_index(const Value& v) const {
    return v.IsUint64() && strings_ && v.GetUint64() < *strings_;
  }

  void check_meta(const Value& meta);
  void check_categories(const Value& meta);
  void check_marker_schema(const Value& meta);
  void check_libs(const Value& root);
  void check_shared(const Value& shared);
  void check_inline_placement();
  void check_thread(const Value& thread, const std::string& path);
  void check_samples(const Value& thread, const std::string& path);
  void check_markers(const Value& thread, const std::string& path);
  void check_marker_data(const Value& data, const std::string& path);
  void check_paused_ranges(const Value& thread, const std::string& path);
  void check_counters(const Value& root);
  void check_profiler_overhead(const Value& root);

  std::vector<std::string> problems_;
  std::map<std::string, size_t> column_reports_;

  // What later checks index into; nullopt when that part is broken (and already reported).
  std::optional<size_t> strings_;
  std::optional<size_t> libs_;
  std::optional<std::vector<size_t>> subcategories_;  // per category
  std::map<std::string, const Value*> schemas_;
  std::set<std::string> category_names_;
  Table sources_, resources_, funcs_, native_symbols_, frames_, stacks_;
  bool any_cpu_delta_ = false;
};

const Value* Checker::require(const Value& object, const std::string& path, const char* key) {
  const Value* v = member(object, key);
  if (!v) problem(path + "." + key, "missing");
  return v;
}

bool Checker::require_string(const Value& object, const std::string& path, const char* key) {
  const Value* v = require(object, path, key);
  if (v && !v->IsString()) problem(path + "." + key, "expected a string, got " + show(*v));
  return v && v->IsString();
}

bool Checker::require_number(const Value& object, const std::string& path, const char* key,
                             Null null) {
  const Value* v = require(object, path, key);
  if (!v) return false;
  if (v->IsNumber() || (null == Null::kAllowed && v->IsNull())) return true;
  problem(path + "." + key, std::string("expected a number") +
                                (null == Null::kAllowed ? " or null" : "") + ", got " + show(*v));
  return false;
}

Table Checker::open_table(const Value* parent, const std::string& parent_path, const char* key,
                          std::initializer_list<const char*> required) {
  Table t;
  t.path = parent_path + "." + key;
  const Value* v = parent ? member(*parent, key) : nullptr;
  if (!v) {
    problem(t.path, "missing");
    return t;
  }
  if (!v->IsObject()) {
    problem(t.path, "expected an object, got " + show(*v));
    return t;
  }
  const Value* length = member(*v, "length");
  if (!length || !length->IsUint64()) {
    problem(t.path + ".length",
            length ? "expected a non-negative integer, got " + show(*length) : "missing");
    return t;
  }
  t.ok = true;
  t.length = static_cast<size_t>(length->GetUint64());
  for (const char* name : required) {
    if (!member(*v, name)) problem(t.path + "." + name, "missing column");
  }
  // Every array in a table is a column, required or not, and must match the length.
  for (const auto& m : v->GetObject()) {
    std::string name = m.name.GetString();
    if (name == "length") continue;
    bool is_required = false;
    for (const char* r : required) is_required |= name == r;
    if (!m.value.IsArray()) {
      if (is_required) problem(t.path + "." + name, "expected an array, got " + show(m.value));
      continue;
    }
    if (m.value.Size() != t.length) {
      problem(t.path + "." + name, "has " + std::to_string(m.value.Size()) +
                                       " entries but the table's length is " +
                                       std::to_string(t.length));
      continue;
    }
    t.columns[name] = &m.value;
  }
  return t;
}

void Checker::check_index_column(const Table& t, const char* name, std::optional<size_t> bound,
                                 Null null, bool minus_one_allowed) {
  const Value* col = t.column(name);
  if (!col) return;
  std::string path = t.path + "." + name;
  for (size_t i = 0; i < col->Size(); ++i) {
    const Value& v = (*col)[static_cast<rapidjson::SizeType>(i)];
    if (v.IsNull() && null == Null::kAllowed) continue;
    if (minus_one_allowed && v.IsInt64() && v.GetInt64() == -1) continue;
    if (!v.IsUint64()) {
      element_problem(path, i, "expected an index, got " + show(v));
    } else if (bound && v.GetUint64() >= *bound) {
      element_problem(path, i,
                      show(v) + " is out of range (table has " + std::to_string(*bound) + " rows)");
    }
  }
}

void Checker::check_number_column(const Table& t, const char* name, Null null, bool non_negative,
                                  bool integer) {
  const Value* col = t.column(name);
  if (!col) return;
  std::string path = t.path + "." + name;
  for (size_t i = 0; i < col->Size(); ++i) {
    const Value& v = (*col)[static_cast<rapidjson::SizeType>(i)];
    if (v.IsNull() && null == Null::kAllowed) continue;
    if (!v.IsNumber() || (integer && !v.IsInt64() && !v.IsUint64())) {
      element_problem(
          path, i,
          std::string(integer ? "expected an integer" : "expected a number") + ", got " + show(v));
    } else if (non_negative && v.GetDouble() < 0) {
      element_problem(path, i, "is negative: " + show(v));
    }
  }
}

void Checker::check_bool_column(const Table& t, const char* name) {
  const Value* col = t.column(name);
  if (!col) return;
  std::string path = t.path + "." + name;
  for (size_t i = 0; i < col->Size(); ++i) {
    const Value& v = (*col)[static_cast<rapidjson::SizeType>(i)];
    if (!v.IsBool()) element_problem(path, i, "expected a boolean, got " + show(v));
  }
}

std::vector<std::string> Checker::run(const Value& root) {
  if (!root.IsObject()) {
    problem("(root)", "expected an object");
    return problems_;
  }
  const Value* meta = require(root, "(root)", "meta");
  if (meta && meta->IsObject()) {
    check_meta(*meta);
  } else if (meta) {
    problem("meta", "expected an object");
  }
  check_libs(root);
  for (const char* key : {"pages", "counters", "profilerOverhead"}) {
    const Value* v = member(root, key);
    if (v && !v->IsArray()) problem(key, "expected an array, got " + show(*v));
  }
  const Value* shared = require(root, "(root)", "shared");
  if (shared && shared->IsObject()) {
    check_shared(*shared);
  } else if (shared) {
    problem("shared", "expected an object");
  }
  const Value* threads = require(root, "(root)", "threads");
  if (threads && !threads->IsArray()) {
    problem("threads", "expected an array");
  } else if (threads && threads->Empty()) {
    problem("threads", "no threads");
  } else if (threads) {
    for (size_t i = 0; i < threads->Size(); ++i) {
      check_thread((*threads)[static_cast<rapidjson::SizeType>(i)], at("threads", i));
    }
  }
  check_counters(root);
  check_profiler_overhead(root);
  // The CPU graph needs the unit as soon as any thread carries CPU deltas.
  if (any_cpu_delta_ && meta) {
    const Value* units = member(*meta, "sampleUnits");
    const Value* unit = units ? member(*units, "threadCPUDelta") : nullptr;
    if (units && units->IsObject() &&
        (!unit || !unit->IsString() || !kCpuDeltaUnits.count(unit->GetString()))) {
      problem("meta.sampleUnits.threadCPUDelta",
              "threads carry threadCPUDelta, so this must be \"ns\", \"µs\" or "
              "\"variable CPU cycles\"" +
                  (unit ? ", got " + show(*unit) : std::string(", it is missing")));
    }
  }
  for (const auto& [path, count] : column_reports_) {
    if (count > kReportsPerColumn) {
      problem(path, std::to_string(count - kReportsPerColumn) + " more bad entries not listed");
    }
  }
  return problems_;
}

void Checker::check_meta(const Value& meta) {
  const Value* version = require(meta, "meta", "preprocessedProfileVersion");
  if (version && (!version->IsInt() || version->GetInt() != kProcessedProfileVersion)) {
    problem("meta.preprocessedProfileVersion",
            "expected " + std::to_string(kProcessedProfileVersion) + ", got " + show(*version));
  }
  const Value* symbolicated = require(meta, "meta", "symbolicated");
  if (symbolicated && !symbolicated->IsTrue()) {
    problem("meta.symbolicated",
            "must be true, or the viewer asks a symbol server; got " + show(*symbolicated));
  }
  require_number(meta, "meta", "startTime");
  if (require_number(meta, "meta", "interval") && meta["interval"].GetDouble() <= 0) {
    problem("meta.interval", "must be positive, got " + show(meta["interval"]));
  }
  const Value* units = require(meta, "meta", "sampleUnits");
  if (units && !units->IsObject()) {
    problem("meta.sampleUnits", "expected an object, got " + show(*units));
  } else if (units) {
    for (const char* key : {"time", "eventDelay"}) {
      const Value* u = member(*units, key);
      if (u && (!u->IsString() || std::string(u->GetString()) != "ms")) {
        problem(std::string("meta.sampleUnits.") + key, "expected \"ms\", got " + show(*u));
      }
    }
    const Value* cpu = member(*units, "threadCPUDelta");
    if (cpu && (!cpu->IsString() || !kCpuDeltaUnits.count(cpu->GetString()))) {
      problem("meta.sampleUnits.threadCPUDelta", "unknown unit " + show(*cpu));
    }
  }
  check_categories(meta);
  check_marker_schema(meta);
}

void Checker::check_categories(const Value& meta) {
  const Value* categories = require(meta, "meta", "categories");
  if (!categories) return;
  if (!categories->IsArray() || categories->Empty()) {
    problem("meta.categories", "expected a non-empty array, got " + show(*categories));
    return;
  }
  std::vector<size_t> subcategories;
  bool any_grey = false;
  for (size_t i = 0; i < categories->Size(); ++i) {
    const Value& c = (*categories)[static_cast<rapidjson::SizeType>(i)];
    std::string path = at("meta.categories", i);
    size_t count = 0;
    if (!c.IsObject()) {
      problem(path, "expected an object, got " + show(c));
      subcategories.push_back(0);
      continue;
    }
    bool named = require_string(c, path, "name");
    if (require_string(c, path, "color")) {
      std::string color = c["color"].GetString();
      if (!kColors.count(color)) problem(path + ".color", "unknown colour \"" + color + "\"");
      any_grey |= color == "grey";
      if (named) category_names_.insert(c["name"].GetString());
      if (named && std::string(c["name"].GetString()) == "Idle" && color != "transparent") {
        problem(path + ".color",
                "the Idle category should be transparent so idle samples do not fill the graph");
      }
    }
    const Value* subs = require(c, path, "subcategories");
    if (subs && (!subs->IsArray() || subs->Empty())) {
      problem(path + ".subcategories", "expected a non-empty array, got " + show(*subs));
    } else if (subs) {
      for (size_t j = 0; j < subs->Size(); ++j) {
        if (!(*subs)[static_cast<rapidjson::SizeType>(j)].IsString()) {
          problem(at(path + ".subcategories", j), "expected a string");
        }
      }
      count = subs->Size();
    }
    subcategories.push_back(count);
  }
  if (!any_grey) problem("meta.categories", "no category is grey (the default colour)");
  subcategories_ = std::move(subcategories);
}

void Checker::check_marker_schema(const Value& meta) {
  const Value* schemas = require(meta, "meta", "markerSchema");
  if (!schemas) return;
  if (!schemas->IsArray()) {
    problem("meta.markerSchema", "expected an array, got " + show(*schemas));
    return;
  }
  for (size_t i = 0; i < schemas->Size(); ++i) {
    const Value& s = (*schemas)[static_cast<rapidjson::SizeType>(i)];
    std::string path = at("meta.markerSchema", i);
    if (!s.IsObject()) {
      problem(path, "expected an object");
      continue;
    }
    if (require_string(s, path, "name")) {
      std::string name = s["name"].GetString();
      if (!schemas_.emplace(name, &s).second) problem(path + ".name", "duplicate \"" + name + "\"");
    }
    for (const char* label : {"tooltipLabel", "tableLabel", "chartLabel", "description"}) {
      const Value* v = member(s, label);
      if (v && !v->IsString()) problem(path + "." + label, "expected a string, got " + show(*v));
    }
    const Value* display = require(s, path, "display");
    if (display && !display->IsArray()) {
      problem(path + ".display", "expected an array");
    } else if (display) {
      for (size_t j = 0; j < display->Size(); ++j) {
        const Value& d = (*display)[static_cast<rapidjson::SizeType>(j)];
        if (!d.IsString() || !kDisplayLocations.count(d.GetString())) {
          problem(at(path + ".display", j), "unknown display location " + show(d));
        }
      }
    }
    if (member(s, "data")) problem(path + ".data", "the processed format spells this \"fields\"");
    const Value* fields = require(s, path, "fields");
    if (fields && !fields->IsArray()) {
      problem(path + ".fields", "expected an array");
    } else if (fields) {
      for (size_t j = 0; j < fields->Size(); ++j) {
        const Value& f = (*fields)[static_cast<rapidjson::SizeType>(j)];
        std::string fpath = at(path + ".fields", j);
        if (!f.IsObject()) {
          problem(fpath, "expected an object");
          continue;
        }
        require_string(f, fpath, "key");
        const Value* format = require(f, fpath, "format");
        if (!format) continue;
        bool table = format->IsObject() && member(*format, "type") &&
                     (*format)["type"] == "table" && member(*format, "columns") &&
                     (*format)["columns"].IsArray();
        if (!table && (!format->IsString() || !kFieldFormats.count(format->GetString()))) {
          problem(fpath + ".format", "unknown format " + show(*format));
        }
      }
    }
    if (const Value* color = member(s, "colorField")) {
      bool named = false;
      if (color->IsString() && fields && fields->IsArray()) {
        for (const Value& f : fields->GetArray()) {
          const Value* key = member(f, "key");
          named |= key && *key == *color;
        }
      }
      if (!named) problem(path + ".colorField", show(*color) + " names none of the fields");
    }
  }
}

void Checker::check_libs(const Value& root) {
  const Value* libs = require(root, "(root)", "libs");
  if (!libs) return;
  if (!libs->IsArray()) {
    problem("libs", "expected an array");
    return;
  }
  for (size_t i = 0; i < libs->Size(); ++i) {
    const Value& lib = (*libs)[static_cast<rapidjson::SizeType>(i)];
    std::string path = at("libs", i);
    if (!lib.IsObject()) {
      problem(path, "expected an object");
      continue;
    }
    for (const char* key : {"name", "path", "debugName", "debugPath", "breakpadId"}) {
      require_string(lib, path, key);
    }
    const Value* code_id = member(lib, "codeId");
    if (code_id && !code_id->IsString() && !code_id->IsNull()) {
      problem(path + ".codeId", "expected a string or null");
    }
  }
  libs_ = libs->Size();
}

void Checker::check_shared(const Value& shared) {
  const Value* strings = require(shared, "shared", "stringArray");
  if (strings && !strings->IsArray()) {
    problem("shared.stringArray", "expected an array");
  } else if (strings) {
    for (size_t i = 0; i < strings->Size(); ++i) {
      const Value& s = (*strings)[static_cast<rapidjson::SizeType>(i)];
      if (!s.IsString()) element_problem("shared.stringArray", i, "expected a string");
    }
    strings_ = strings->Size();
  }

  sources_ = open_table(&shared, "shared", "sources",
                        {"id", "filename", "startLine", "startColumn", "sourceMapURL", "content"});
  check_index_column(sources_, "filename", strings_, Null::kRejected);

  Table locations =
      open_table(&shared, "shared", "sourceLocationTable", {"source", "line", "column"});
  check_index_column(locations, "source", sources_.bound(), Null::kRejected);

  resources_ = open_table(&shared, "shared", "resourceTable", {"lib", "name", "host", "type"});
  check_index_column(resources_, "lib", libs_, Null::kAllowed);
  check_index_column(resources_, "name", strings_, Null::kRejected);
  check_index_column(resources_, "host", strings_, Null::kAllowed);
  check_index_column(resources_, "type", 6, Null::kRejected);  // 0..5

  funcs_ = open_table(&shared, "shared", "funcTable",
                      {"name", "isJS", "relevantForJS", "resource", "source", "lineNumber",
                       "columnNumber", "originalLocation"});
  check_index_column(funcs_, "name", strings_, Null::kRejected);
  check_bool_column(funcs_, "isJS");
  check_bool_column(funcs_, "relevantForJS");
  check_index_column(funcs_, "resource", resources_.bound(), Null::kRejected, true);
  check_index_column(funcs_, "source", sources_.bound(), Null::kAllowed);
  check_number_column(funcs_, "lineNumber", Null::kAllowed, true, true);
  check_number_column(funcs_, "columnNumber", Null::kAllowed, true, true);

  native_symbols_ = open_table(&shared, "shared", "nativeSymbols",
                               {"libIndex", "address", "name", "functionSize"});
  check_index_column(native_symbols_, "libIndex", libs_, Null::kRejected);
  check_number_column(native_symbols_, "address", Null::kRejected, true, true);
  check_index_column(native_symbols_, "name", strings_, Null::kRejected);
  check_number_column(native_symbols_, "functionSize", Null::kAllowed, true, true);

  frames_ = open_table(&shared, "shared", "frameTable",
                       {"func", "address", "inlineDepth", "category", "subcategory", "nativeSymbol",
                        "innerWindowID", "line", "column", "originalLocation"});
  if (frames_.column("lib")) {
    problem(frames_.path + ".lib", "is not part of version 66 (libraries go in resourceTable)");
  }
  check_index_column(frames_, "func", funcs_.bound(), Null::kRejected);
  check_number_column(frames_, "address", Null::kRejected, false, true);
  if (const Value* address = frames_.column("address")) {
    for (size_t i = 0; i < address->Size(); ++i) {
      const Value& a = (*address)[static_cast<rapidjson::SizeType>(i)];
      if (a.IsInt64() && a.GetInt64() < -1) {
        element_problem(frames_.path + ".address", i, "must be an address or -1, got " + show(a));
      }
    }
  }
  check_number_column(frames_, "inlineDepth", Null::kRejected, true, true);
  std::optional<size_t> category_count;
  if (subcategories_) category_count = subcategories_->size();
  check_index_column(frames_, "category", category_count, Null::kAllowed);
  check_index_column(frames_, "nativeSymbol", native_symbols_.bound(), Null::kAllowed);
  check_number_column(frames_, "innerWindowID", Null::kAllowed, true, true);
  check_number_column(frames_, "line", Null::kAllowed, true, true);
  check_number_column(frames_, "column", Null::kAllowed, true, true);
  const Value* category = frames_.column("category");
  const Value* subcategory = frames_.column("subcategory");
  if (category && subcategory && subcategories_) {
    for (size_t i = 0; i < frames_.length; ++i) {
      const Value& c = (*category)[static_cast<rapidjson::SizeType>(i)];
      const Value& s = (*subcategory)[static_cast<rapidjson::SizeType>(i)];
      if (!c.IsUint64() || c.GetUint64() >= subcategories_->size()) {
        if (!s.IsNull() && !s.IsUint64()) {
          element_problem(frames_.path + ".subcategory", i, "expected an index, got " + show(s));
        }
        continue;
      }
      size_t count = (*subcategories_)[c.GetUint64()];
      if (!s.IsUint64() || s.GetUint64() >= count) {
        element_problem(frames_.path + ".subcategory", i,
                        show(s) + " is not a subcategory of category " + show(c) + " (it has " +
                            std::to_string(count) + ")");
      }
    }
  }

  stacks_ = open_table(&shared, "shared", "stackTable", {"frame", "prefixOffset"});
  if (stacks_.column("prefix")) {
    problem(stacks_.path + ".prefix", "is the pre-66 column; version 66 uses prefixOffset");
  }
  check_index_column(stacks_, "frame", frames_.bound(), Null::kRejected);
  if (const Value* offsets = stacks_.column("prefixOffset")) {
    for (size_t i = 0; i < offsets->Size(); ++i) {
      const Value& o = (*offsets)[static_cast<rapidjson::SizeType>(i)];
      if (!o.IsUint64() || o.GetUint64() > i) {
        element_problem(stacks_.path + ".prefixOffset", i,
                        show(o) + " is not in [0, " + std::to_string(i) +
                            "]: a parent must come before its child");
      }
    }
  }
  check_inline_placement();
}

// An inlined frame (depth d > 0) must sit directly on the frame it was inlined into: same address,
// same native symbol, depth d - 1.
void Checker::check_inline_placement() {
  const Value* stack_frame = stacks_.column("frame");
  const Value* offsets = stacks_.column("prefixOffset");
  const Value* depth = frames_.column("inlineDepth");
  const Value* address = frames_.column("address");
  const Value* symbol = frames_.column("nativeSymbol");
  if (!stack_frame || !offsets || !depth || !address || !symbol) return;
  auto frame_of = [&](size_t stack) -> std::optional<size_t> {
    const Value& f = (*stack_frame)[static_cast<rapidjson::SizeType>(stack)];
    if (!f.IsUint64() || f.GetUint64() >= frames_.length) return std::nullopt;
    return static_cast<size_t>(f.GetUint64());
  };
  auto get = [](const Value* col, size_t i) -> const Value& {
    return (*col)[static_cast<rapidjson::SizeType>(i)];
  };
  std::string path = stacks_.path;
  for (size_t i = 0; i < stacks_.length; ++i) {
    std::optional<size_t> f = frame_of(i);
    if (!f || !get(depth, *f).IsUint64() || get(depth, *f).GetUint64() == 0) continue;
    uint64_t d = get(depth, *f).GetUint64();
    const Value& o = get(offsets, i);
    if (!o.IsUint64() || o.GetUint64() > i) continue;  // already reported
    if (o.GetUint64() == 0) {
      element_problem(path, i,
                      "frame " + std::to_string(*f) + " is inlined (depth " + std::to_string(d) +
                          ") but is a root");
      continue;
    }
    std::optional<size_t> parent = frame_of(i - static_cast<size_t>(o.GetUint64()));
    if (!parent) continue;
    bool placed = get(depth, *parent).IsUint64() && get(depth, *parent).GetUint64() == d - 1 &&
                  get(address, *parent) == get(address, *f) &&
                  get(symbol, *parent) == get(symbol, *f);
    if (!placed) {
      element_problem(path, i,
                      "inlined frame " + std::to_string(*f) + " (depth " + std::to_string(d) +
                          ", address " + show(get(address, *f)) + ") sits on frame " +
                          std::to_string(*parent) + " (depth " + show(get(depth, *parent)) +
                          ", address " + show(get(address, *parent)) +
                          "); it must sit on the frame it was inlined into");
    }
  }
}

void Checker::check_thread(const Value& thread, const std::string& path) {
  if (!thread.IsObject()) {
    problem(path, "expected an object");
    return;
  }
  require_string(thread, path, "name");
  require_string(thread, path, "processType");
  const Value* main = require(thread, path, "isMainThread");
  if (main && !main->IsBool()) problem(path + ".isMainThread", "expected a boolean");
  const Value* pid = require(thread, path, "pid");
  if (pid && !pid->IsString()) {
    problem(path + ".pid", "expected a string (tracks are grouped by it), got " + show(*pid));
  }
  const Value* tid = require(thread, path, "tid");
  if (tid && !tid->IsNumber()) problem(path + ".tid", "expected a number, got " + show(*tid));
  require_number(thread, path, "processStartupTime");
  require_number(thread, path, "processShutdownTime", Null::kAllowed);
  require_number(thread, path, "registerTime");
  require_number(thread, path, "unregisterTime", Null::kAllowed);
  check_paused_ranges(thread, path);
  check_samples(thread, path);
  check_markers(thread, path);
}

void Checker::check_samples(const Value& thread, const std::string& path) {
  Table samples = open_table(&thread, path, "samples", {"stack"});
  if (!samples.ok) return;
  const Value& object = thread["samples"];
  check_index_column(samples, "stack", stacks_.bound(), Null::kAllowed);

  bool deltas = member(object, "timeDeltas") != nullptr;
  bool times = member(object, "time") != nullptr;
  if (deltas == times) {
    problem(samples.path,
            deltas ? "has both time and timeDeltas; write one" : "has neither time nor timeDeltas");
  }
  check_number_column(samples, "timeDeltas", Null::kRejected, true);
  check_number_column(samples, "time", Null::kRejected, false);
  if (const Value* time = samples.column("time")) {
    for (size_t i = 1; i < time->Size(); ++i) {
      const Value& a = (*time)[static_cast<rapidjson::SizeType>(i - 1)];
      const Value& b = (*time)[static_cast<rapidjson::SizeType>(i)];
      if (a.IsNumber() && b.IsNumber() && b.GetDouble() < a.GetDouble()) {
        element_problem(samples.path + ".time", i, "goes back in time");
      }
    }
  }

  const Value* weight = member(object, "weight");
  if (!weight) {
    problem(samples.path + ".weight", "missing (write null for unweighted samples)");
  } else if (!weight->IsNull()) {
    if (weight->IsArray()) {
      // Whole numbers, as inprof writes them: the viewer adds weights up in floating point and
      // prints some sums as they are (16.333999999999996 in the source view).
      check_number_column(samples, "weight", Null::kRejected, true, /*integer=*/true);
    } else {
      problem(samples.path + ".weight", "expected null or an array, got " + show(*weight));
    }
  }
  const Value* weight_type = require(object, samples.path, "weightType");
  if (weight_type && (!weight_type->IsString() || !kWeightTypes.count(weight_type->GetString()))) {
    problem(samples.path + ".weightType", "unknown weight type " + show(*weight_type));
  }
  if (member(object, "threadCPUDelta")) {
    any_cpu_delta_ = true;
    check_number_column(samples, "threadCPUDelta", Null::kAllowed, true, /*integer=*/true);
  }
}

void Checker::check_paused_ranges(const Value& thread, const std::string& path) {
  const Value* paused = require(thread, path, "pausedRanges");
  if (!paused) return;
  if (!paused->IsArray()) {
    problem(path + ".pausedRanges", "expected an array");
    return;
  }
  for (size_t i = 0; i < paused->Size(); ++i) {
    const Value& r = (*paused)[static_cast<rapidjson::SizeType>(i)];
    std::string range_path = at(path + ".pausedRanges", i);
    if (!r.IsObject()) {
      problem(range_path, "expected an object {startTime, endTime}, got " + show(r));
      continue;
    }
    // null means "before the profile began" / "still paused at its end".
    bool start = require_number(r, range_path, "startTime", Null::kAllowed);
    bool end = require_number(r, range_path, "endTime", Null::kAllowed);
    if (start && end && r["startTime"].IsNumber() && r["endTime"].IsNumber() &&
        r["endTime"].GetDouble() < r["startTime"].GetDouble()) {
      problem(range_path, "ends before it starts");
    }
  }
}

// Profile Info's "Profiler overhead": the viewer reads every statistic below and shows NaN for a
// missing one; the samples' columns are as long as `length`.
void Checker::check_profiler_overhead(const Value& root) {
  const Value* overheads = member(root, "profilerOverhead");
  if (!overheads || !overheads->IsArray()) return;  // reported in run()
  const Value* threads = member(root, "threads");
  const size_t thread_count = threads && threads->IsArray() ? threads->Size() : 0;
  for (size_t i = 0; i < overheads->Size(); ++i) {
    const Value& o = (*overheads)[static_cast<rapidjson::SizeType>(i)];
    const std::string path = at("profilerOverhead", i);
    if (!o.IsObject()) {
      problem(path, "expected an object, got " + show(o));
      continue;
    }
    const Value* pid = require(o, path, "pid");
    if (pid && !pid->IsString()) problem(path + ".pid", "expected a string, got " + show(*pid));
    const Value* main = require(o, path, "mainThreadIndex");
    if (main && (!main->IsUint64() || main->GetUint64() >= thread_count)) {
      problem(path + ".mainThreadIndex", "expected a thread index, got " + show(*main));
    }
    Table samples = open_table(&o, path, "samples",
                               {"counters", "expiredMarkerCleaning", "locking", "threads", "time"});
    for (const char* column : {"counters", "expiredMarkerCleaning", "locking", "threads", "time"}) {
      check_number_column(samples, column, Null::kRejected, /*non_negative=*/true);
    }
    const Value* stats = member(o, "statistics");
    if (!stats) continue;  // optional: no statistics without a sample
    if (!stats->IsObject()) {
      problem(path + ".statistics", "expected an object, got " + show(*stats));
      continue;
    }
    for (const char* key :
         {"profiledDuration", "samplingCount", "overheadDurations", "overheadPercentage"}) {
      require_number(*stats, path + ".statistics", key);
    }
    for (const char* name : {"Overhead", "Thread", "Interval", "Lockings", "Cleaning", "Counter"}) {
      for (const char* kind : {"mean", "min", "max"}) {
        const std::string key = std::string(kind) + name;
        require_number(*stats, path + ".statistics", key.c_str());
      }
    }
  }
}

void Checker::check_counters(const Value& root) {
  const Value* counters = member(root, "counters");
  if (!counters || !counters->IsArray()) return;  // reported in run()
  const Value* threads = member(root, "threads");
  size_t thread_count = threads && threads->IsArray() ? threads->Size() : 0;
  for (size_t i = 0; i < counters->Size(); ++i) {
    const Value& c = (*counters)[static_cast<rapidjson::SizeType>(i)];
    std::string path = at("counters", i);
    if (!c.IsObject()) {
      problem(path, "expected an object, got " + show(c));
      continue;
    }
    require_string(c, path, "name");
    require_string(c, path, "description");
    // A category *name* here, unlike everywhere else.
    if (require_string(c, path, "category") && !category_names_.empty() &&
        !category_names_.count(c["category"].GetString())) {
      problem(path + ".category", show(c["category"]) + " names no category in meta.categories");
    }
    const Value* pid = require(c, path, "pid");
    if (pid && !pid->IsString()) problem(path + ".pid", "expected a string, got " + show(*pid));
    const Value* main = require(c, path, "mainThreadIndex");
    if (main && (!main->IsUint64() || main->GetUint64() >= thread_count)) {
      problem(path + ".mainThreadIndex", "expected a thread index, got " + show(*main));
    }
    // From version 62 on the viewer reads the track's look from here, with no fallback.
    const Value* display = require(c, path, "display");
    if (display && !display->IsObject()) {
      problem(path + ".display", "expected an object, got " + show(*display));
    } else if (display) {
      require_string(*display, path + ".display", "graphType");
      require_string(*display, path + ".display", "unit");
      require_string(*display, path + ".display", "label");
      if (require_string(*display, path + ".display", "color") &&
          !kGraphColors.count((*display)["color"].GetString())) {
        problem(path + ".display.color", "unknown colour " + show((*display)["color"]));
      }
      const Value* rows = member(*display, "tooltipRows");
      for (size_t j = 0; rows && rows->IsArray() && j < rows->Size(); ++j) {
        const Value& row = (*rows)[static_cast<rapidjson::SizeType>(j)];
        const Value* source = row.IsObject() ? member(row, "source") : nullptr;
        if (!source) continue;  // a separator
        std::string rpath = at(path + ".display.tooltipRows", j) + ".source";
        if (!source->IsString() || !kCounterTooltipSources.count(source->GetString())) {
          problem(rpath, "unknown source " + show(*source));
        } else if (*source == "sample-number" && c.HasMember("samples") &&
                   c["samples"].IsObject() && !member(c["samples"], "number")) {
          problem(rpath, "reads samples.number, which the counter does not have");
        }
      }
    }
    Table samples = open_table(&c, path, "samples", {"count"});
    if (!samples.ok) continue;
    bool deltas = member(c["samples"], "timeDeltas") != nullptr;
    bool times = member(c["samples"], "time") != nullptr;
    if (deltas == times) {
      problem(samples.path, deltas ? "has both time and timeDeltas; write one"
                                   : "has neither time nor timeDeltas");
    }
    check_number_column(samples, "timeDeltas", Null::kRejected, true);
    check_number_column(samples, "time", Null::kRejected, false);
    check_number_column(samples, "count", Null::kRejected, false, true);
    if (const Value* time = samples.column("time")) {
      for (size_t k = 1; k < time->Size(); ++k) {
        const Value& a = (*time)[static_cast<rapidjson::SizeType>(k - 1)];
        const Value& b = (*time)[static_cast<rapidjson::SizeType>(k)];
        if (a.IsNumber() && b.IsNumber() && b.GetDouble() < a.GetDouble()) {
          element_problem(samples.path + ".time", k, "goes back in time");
        }
      }
    }
  }
}

void Checker::check_markers(const Value& thread, const std::string& path) {
  Table markers = open_table(&thread, path, "markers",
                             {"name", "startTime", "endTime", "phase", "category", "data"});
  if (!markers.ok) return;
  check_index_column(markers, "name", strings_, Null::kRejected);
  check_number_column(markers, "startTime", Null::kAllowed, false);
  check_number_column(markers, "endTime", Null::kAllowed, false);
  check_index_column(markers, "phase", 4, Null::kRejected);
  std::optional<size_t> category_count;
  if (subcategories_) category_count = subcategories_->size();
  check_index_column(markers, "category", category_count, Null::kRejected);

  const Value* phase = markers.column("phase");
  const Value* start = markers.column("startTime");
  const Value* end = markers.column("endTime");
  if (phase && start && end) {
    for (size_t i = 0; i < markers.length; ++i) {
      auto idx = static_cast<rapidjson::SizeType>(i);
      const Value& p = (*phase)[idx];
      if (!p.IsUint64() || p.GetUint64() > 3) continue;
      bool has_start = (*start)[idx].IsNumber();
      bool has_end = (*end)[idx].IsNumber();
      switch (p.GetUint64()) {
        case 0:
        case 2:
          if (!has_start) element_problem(markers.path + ".startTime", i, "needs a start time");
          break;
        case 1:
          if (!has_start || !has_end) {
            element_problem(markers.path, i, "an interval marker needs both start and end time");
          } else if ((*end)[idx].GetDouble() < (*start)[idx].GetDouble()) {
            element_problem(markers.path + ".endTime", i, "ends before it starts");
          }
          break;
        case 3:
          if (!has_end) element_problem(markers.path + ".endTime", i, "needs an end time");
          break;
      }
    }
  }
  if (const Value* data = markers.column("data")) {
    for (size_t i = 0; i < data->Size(); ++i) {
      check_marker_data((*data)[static_cast<rapidjson::SizeType>(i)],
                        at(markers.path + ".data", i));
    }
  }
}

void Checker::check_marker_data(const Value& data, const std::string& path) {
  if (data.IsNull()) return;
  if (!data.IsObject()) {
    problem(path, "expected an object or null, got " + show(data));
    return;
  }
  if (!require_string(data, path, "type")) return;
  auto it = schemas_.find(data["type"].GetString());
  if (it == schemas_.end()) {
    problem(path + ".type", "no markerSchema entry named " + show(data["type"]));
    return;
  }
  if (const Value* key = member(*it->second, "colorField"); key && key->IsString()) {
    const Value* color = member(data, key->GetString());
    if (color && !(color->IsString() && kGraphColors.count(color->GetString()))) {
      problem(path + "." + key->GetString(),
              "the colour field holds no graph colour: " + show(*color));
    }
  }
  const Value* fields = member(*it->second, "fields");
  if (!fields || !fields->IsArray()) return;
  for (const Value& f : fields->GetArray()) {
    const Value* key = member(f, "key");
    const Value* format = member(f, "format");
    if (!key || !key->IsString() || !format || !(*format == "unique-string")) continue;
    const Value* v = member(data, key->GetString());
    if (v && !v->IsNull() && !valid_string_index(*v)) {
      problem(path + "." + key->GetString(),
              "a unique-string field must be a string index, got " + show(*v));
    }
  }
}

}  // namespace

std::vector<std::string> check_profile(const rapidjson::Value& profile) {
  return Checker().run(profile);
}

CheckResult check_profile_text(std::string_view json) {
  CheckResult result;
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) {
    result.error = std::string("not JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) +
                   " at offset " + std::to_string(doc.GetErrorOffset());
    return result;
  }
  result.parsed = true;
  result.problems = check_profile(doc);
  return result;
}

int run_profile_check(const std::string& path, std::ostream& out, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad()) {
    err << path << ": cannot read the file\n";
    return 2;
  }
  CheckResult result = check_profile_text(text);
  if (!result.parsed) {
    err << path << ": " << result.error << "\n";
    return 2;
  }
  for (const std::string& p : result.problems) out << path << ": " << p << "\n";
  if (!result.problems.empty()) {
    out << path << ": " << result.problems.size() << " problem(s)\n";
    return 1;
  }
  return 0;
}

}  // namespace inprof::test_support
