// Markers, categories, labels, idle samples, counters and paused ranges: dumps carrying those
// records go through run_symbolicate, and the JSON must show them as the Firefox Profiler
// expects (see shared/notes/firefox-profiler-format.md and lib/dump/FORMAT.md).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "profile_checker.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;
using rapidjson::Value;
using symtest::FrameView;

using symtest::kMs;

class MarkersTest : public ::testing::Test {
 protected:
  std::string dump_path() const { return dir_.path("m.inprof"); }

  // Symbolicates the dump and expects a profile both checkers accept.
  void convert() {
    std::string out = dir_.path("m.json");
    ASSERT_EQ(symtest::symbolicate_in_process(dump_path(), out, &err_), 0) << err_;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
    for (const auto& p : inprof::test_support::check_profile(doc_)) ADD_FAILURE() << p;
  }

  const Value& thread(size_t i) { return doc_["threads"][static_cast<rapidjson::SizeType>(i)]; }
  // The index of the thread with this tid.
  size_t thread_index(uint64_t tid) {
    for (size_t i = 0; i < doc_["threads"].Size(); ++i) {
      if (thread(i)["tid"].GetUint64() == tid) return i;
    }
    ADD_FAILURE() << "no thread " << tid;
    return 0;
  }
  std::string str(const Value& index) {
    return doc_["shared"]["stringArray"][index.GetUint()].GetString();
  }
  const Value& category(size_t i) {
    return doc_["meta"]["categories"][static_cast<rapidjson::SizeType>(i)];
  }
  std::string category_name(const Value& index) {
    return category(index.GetUint())["name"].GetString();
  }

  struct Marker {
    std::string name;
    std::optional<double> start, end;
    int phase;
    std::string category;
    const Value* data;
  };
  std::vector<Marker> markers(size_t thread_index) {
    const Value& m = thread(thread_index)["markers"];
    std::vector<Marker> out;
    for (rapidjson::SizeType i = 0; i < m["length"].GetUint(); ++i) {
      Marker x;
      x.name = str(m["name"][i]);
      if (!m["startTime"][i].IsNull()) x.start = m["startTime"][i].GetDouble();
      if (!m["endTime"][i].IsNull()) x.end = m["endTime"][i].GetDouble();
      x.phase = m["phase"][i].GetInt();
      x.category = category_name(m["category"][i]);
      x.data = &m["data"][i];
      out.push_back(x);
    }
    return out;
  }
  const Marker* find(const std::vector<Marker>& ms, const std::string& name) {
    for (const Marker& m : ms) {
      if (m.name == name) return &m;
    }
    ADD_FAILURE() << "no marker " << name;
    return nullptr;
  }

  static MarkerRecord marker(uint64_t tid, uint8_t phase, uint64_t start, uint64_t end,
                             const std::string& name, uint32_t category = 0, uint32_t type = 0,
                             std::vector<MarkerValue> values = {}) {
    MarkerRecord r;
    r.tid = tid;
    r.phase = phase;
    r.start_ns = start;
    r.end_ns = end;
    r.name = name;
    r.category = category;
    r.type = type;
    r.values = std::move(values);
    return r;
  }
  static MarkerValue integer(int64_t v) { return {MarkerValue::kInteger, v, 0, {}}; }
  static MarkerValue decimal(double v) { return {MarkerValue::kDecimal, 0, v, {}}; }
  static MarkerValue text(std::string v) { return {MarkerValue::kString, 0, 0, std::move(v)}; }

  // The built-in categories, as the library writes them at the start of every session.
  static void builtin_categories(symtest::DumpFile& d) {
    d.category(0, 0, "Other");
    d.category(1, 1, "Idle");
    d.category(2, 3, "IO");
    d.category(3, 6, "Network");
    d.category(4, 4, "Graphics");
    d.category(5, 9, "Memory");
    d.category(6, 5, "User");
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
  std::string err_;
};

TEST_F(MarkersTest, CategoriesAreMergedWithTheNativeOnesAndMapped) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.category(7, 2, "Database");
    d.category(8, 77, "Odd colour");
    d.thread_start(1, 0, "main", kThreadMain);
    d.marker(marker(1, 0, 1 * kMs, 1 * kMs, "query", 7));
    d.marker(marker(1, 0, 2 * kMs, 2 * kMs, "read", 2));
    d.marker(marker(1, 0, 3 * kMs, 3 * kMs, "undeclared", 99));
    d.marker(marker(1, 0, 4 * kMs, 4 * kMs, "odd", 8));
    d.sample(1, 5 * kMs, {0x1000});
    d.end(6 * kMs);
    d.close();
  }
  convert();
  const Value& cats = doc_["meta"]["categories"];
  std::map<std::string, std::string> colours;
  std::map<std::string, int> count;
  for (const Value& c : cats.GetArray()) {
    colours[c["name"].GetString()] = c["color"].GetString();
    ++count[c["name"].GetString()];
    EXPECT_GE(c["subcategories"].Size(), 1u);
  }
  EXPECT_STREQ(cats[0]["name"].GetString(), "Other");
  EXPECT_STREQ(cats[0]["color"].GetString(), "grey");
  EXPECT_EQ(count["Other"], 1);
  EXPECT_EQ(count["Idle"], 1);
  EXPECT_EQ(colours["Idle"], "transparent");
  EXPECT_EQ(colours["IO"], "green");
  EXPECT_EQ(colours["Network"], "lightblue");
  EXPECT_EQ(colours["Memory"], "magenta");
  EXPECT_EQ(colours["Database"], "purple");
  EXPECT_EQ(colours["Odd colour"], "grey");  // out of the enum: the default colour

  std::vector<Marker> ms = markers(0);
  ASSERT_EQ(ms.size(), 4u);
  EXPECT_EQ(find(ms, "query")->category, "Database");
  EXPECT_EQ(find(ms, "read")->category, "IO");
  EXPECT_EQ(find(ms, "undeclared")->category, "Other");
}

TEST_F(MarkersTest, PhasesTimesAndPayloads) {
  MarkerSchemaRecord request;
  request.type = 1;
  request.name = "Request";
  request.table_label = "{marker.data.url}";
  request.tooltip_label = "";  // empty labels are left out
  request.description = "An HTTP request";
  request.fields = {{"url", "URL", 10},
                    {"size", "Size", 3},
                    {"ratio", "Ratio", 4},
                    {"count", "Count", 1},
                    {"path", "Path", 9}};
  MarkerSchemaRecord text_schema;
  text_schema.type = 2;
  text_schema.name = "Text";
  text_schema.chart_label = "{marker.data.text}";
  text_schema.fields = {{"text", "Text", 0}};
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.marker_schema(request);
    d.marker_schema(text_schema);
    d.thread_start(1, 0, "main", kThreadMain);
    d.thread_start(2, 0, "worker");
    d.marker(marker(1, 0, 1 * kMs, 1 * kMs, "instant"));
    d.marker(marker(1, 1, 2 * kMs, 12 * kMs, "interval", 2));
    d.marker(marker(
        1, 0, 3 * kMs, 3 * kMs, "fetch", 3, 1,
        {text("https://x.org/a"), integer(4096), decimal(0.25), integer(-3), text("/tmp/a")}));
    d.marker(marker(1, 0, 4 * kMs, 4 * kMs, "log", 0, 2, {text("hello")}));
    d.marker(marker(1, 0, 5 * kMs, 5 * kMs, "nan", 0, 1,
                    {text("u"), integer(1), decimal(std::nan("")), integer(2), text("p")}));
    d.marker(marker(1, 0, 6 * kMs, 6 * kMs, "unknown type", 0, 42, {integer(1)}));
    // A start on the worker ended on main: one interval, on the worker.
    d.marker(marker(2, 2, 7 * kMs, 7 * kMs, "handoff"));
    d.marker(marker(1, 3, 20 * kMs, 20 * kMs, "handoff"));
    // Nested pairs of one name close the latest start first.
    d.marker(marker(1, 2, 8 * kMs, 8 * kMs, "nest"));
    d.marker(marker(1, 2, 9 * kMs, 9 * kMs, "nest"));
    d.marker(marker(1, 3, 10 * kMs, 10 * kMs, "nest"));
    d.marker(marker(1, 3, 11 * kMs, 11 * kMs, "nest"));
    // Left open, and closed without a start.
    d.marker(marker(1, 2, 13 * kMs, 13 * kMs, "open"));
    d.marker(marker(1, 3, 14 * kMs, 14 * kMs, "orphan end"));
    d.sample(1, 15 * kMs, {0x1000});
    d.end(30 * kMs);
    d.close();
  }
  convert();
  const Value& meta = doc_["meta"];
  double start_ms = meta["startTime"].GetDouble();
  EXPECT_GT(start_ms, 0);
  size_t main = thread_index(1), worker = thread_index(2);
  std::vector<Marker> ms = markers(main);
  EXPECT_TRUE(thread(main)["showMarkersInTimeline"].GetBool());

  const Marker* m = find(ms, "instant");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->phase, 0);
  EXPECT_DOUBLE_EQ(*m->start, 1.0);  // ms since meta.startTime, like samples
  EXPECT_FALSE(m->end);
  EXPECT_STREQ((*m->data)["type"].GetString(), "Marker");  // no type: the untyped schema

  m = find(ms, "interval");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->phase, 1);
  EXPECT_DOUBLE_EQ(*m->start, 2.0);
  EXPECT_DOUBLE_EQ(*m->end, 12.0);
  EXPECT_EQ(m->category, "IO");

  m = find(ms, "fetch");
  ASSERT_TRUE(m);
  const Value& data = *m->data;
  ASSERT_TRUE(data.IsObject());
  EXPECT_STREQ(data["type"].GetString(), "Request");
  EXPECT_STREQ(data["url"].GetString(), "https://x.org/a");
  EXPECT_EQ(data["size"].GetInt64(), 4096);
  EXPECT_DOUBLE_EQ(data["ratio"].GetDouble(), 0.25);
  EXPECT_EQ(data["count"].GetInt64(), -3);
  EXPECT_STREQ(data["path"].GetString(), "/tmp/a");
  EXPECT_EQ(m->category, "Network");

  m = find(ms, "log");
  ASSERT_TRUE(m);
  EXPECT_STREQ((*m->data)["type"].GetString(), "Text");
  EXPECT_STREQ((*m->data)["text"].GetString(), "hello");

  m = find(ms, "nan");  // JSON has no NaN: the field is null
  ASSERT_TRUE(m);
  EXPECT_TRUE((*m->data)["ratio"].IsNull());

  m = find(ms, "unknown type");  // no schema for type 42: untyped rather than a broken payload
  ASSERT_TRUE(m);
  EXPECT_STREQ((*m->data)["type"].GetString(), "Marker");
  EXPECT_FALSE(m->data->HasMember("f0"));
  EXPECT_NE(err_.find("marker type"), std::string::npos) << err_;

  // The cross-thread pair: on the thread that started it, as one interval.
  std::vector<Marker> wm = markers(worker);
  ASSERT_EQ(wm.size(), 1u);
  EXPECT_EQ(wm[0].name, "handoff");
  EXPECT_EQ(wm[0].phase, 1);
  EXPECT_DOUBLE_EQ(*wm[0].start, 7.0);
  EXPECT_DOUBLE_EQ(*wm[0].end, 20.0);
  for (const Marker& x : ms) EXPECT_NE(x.name, "handoff");

  std::vector<std::pair<double, double>> nests;
  for (const Marker& x : ms) {
    if (x.name == "nest") {
      EXPECT_EQ(x.phase, 1);
      nests.emplace_back(*x.start, *x.end);
    }
  }
  EXPECT_EQ(nests, (std::vector<std::pair<double, double>>{{8.0, 11.0}, {9.0, 10.0}}));

  m = find(ms, "open");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->phase, 2);
  EXPECT_DOUBLE_EQ(*m->start, 13.0);
  EXPECT_FALSE(m->end);
  m = find(ms, "orphan end");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->phase, 3);
  EXPECT_FALSE(m->start);
  EXPECT_DOUBLE_EQ(*m->end, 14.0);

  // Markers are written in time order.
  double last = -1;
  for (const Marker& x : ms) {
    double t = x.start.value_or(x.end.value_or(0));
    EXPECT_GE(t, last) << x.name;
    last = t;
  }

  // The schemas: the dump's two, then the untyped markers'.
  const Value& schemas = meta["markerSchema"];
  ASSERT_EQ(schemas.Size(), 3u);
  EXPECT_STREQ(schemas[2]["name"].GetString(), "Marker");
  const Value& s = schemas[0];
  EXPECT_STREQ(s["name"].GetString(), "Request");
  std::vector<std::string> display;
  for (const Value& v : s["display"].GetArray()) display.push_back(v.GetString());
  EXPECT_EQ(display,
            (std::vector<std::string>{"marker-chart", "marker-table", "timeline-overview"}));
  EXPECT_STREQ(s["tableLabel"].GetString(), "{marker.data.url}");
  EXPECT_FALSE(s.HasMember("tooltipLabel"));
  EXPECT_FALSE(s.HasMember("chartLabel"));
  EXPECT_STREQ(s["description"].GetString(), "An HTTP request");
  std::vector<std::string> formats;
  for (const Value& f : s["fields"].GetArray()) formats.push_back(f["format"].GetString());
  // The dump's fields, then the context every marker gets (category, thread, colour).
  EXPECT_EQ(formats, (std::vector<std::string>{"url", "bytes", "percentage", "integer", "file-path",
                                               "string", "tid", "string"}));
  EXPECT_STREQ(s["fields"][0]["key"].GetString(), "url");
  EXPECT_STREQ(s["fields"][0]["label"].GetString(), "URL");
  EXPECT_STREQ(schemas[1]["name"].GetString(), "Text");
  EXPECT_STREQ(schemas[1]["chartLabel"].GetString(), "{marker.data.text}");
  EXPECT_FALSE(schemas[1].HasMember("description"));
}

// Issue 22, item 6: the marker chart colours a marker only through its schema's colorField, and
// shows fields and timeline entries only for markers with a payload. Every marker, typed or
// not, carries its category (as a field and as a colour) and its thread.
TEST_F(MarkersTest, EveryMarkerShowsItsCategoryThreadAndColour) {
  MarkerSchemaRecord text_schema;
  text_schema.type = 1;
  text_schema.name = "Text";
  text_schema.table_label = "{marker.name} — {marker.data.text}";
  text_schema.fields = {{"text", "Text", 0}};
  MarkerSchemaRecord own;  // a schema with fields of the context's names, and no table label
  own.type = 2;
  own.name = "Own";
  own.fields = {{"category", "Kind", 0}, {"color", "Paint", 0}};
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.category(7, 2, "Database");
    d.marker_schema(text_schema);
    d.marker_schema(own);
    d.thread_start(1, 0, "main", kThreadMain);
    d.thread_start(2, 0, "database");
    d.marker(marker(2, 0, 1 * kMs, 1 * kMs, "sql", 7, 1, {text("SELECT 1")}));
    d.marker(marker(2, 1, 2 * kMs, 5 * kMs, "query", 7));
    d.marker(marker(1, 1, 3 * kMs, 4 * kMs, "load-interval", 2));
    d.marker(marker(1, 0, 4 * kMs, 4 * kMs, "fetch", 3));
    d.marker(marker(1, 0, 5 * kMs, 5 * kMs, "plain"));
    d.marker(marker(1, 0, 6 * kMs, 6 * kMs, "mine", 5, 2, {text("k"), text("p")}));
    d.marker(marker(1, 2, 7 * kMs, 7 * kMs, "pair", 7));  // untyped start, typed end
    d.marker(marker(1, 3, 8 * kMs, 8 * kMs, "pair", 0, 1, {text("end text")}));
    d.sample(1, 9 * kMs, {0x1000});
    d.end(10 * kMs);
    d.close();
  }
  convert();
  std::map<std::string, const Value*> schemas;
  for (const Value& v : doc_["meta"]["markerSchema"].GetArray())
    schemas[v["name"].GetString()] = &v;
  ASSERT_EQ(schemas.size(), 3u);
  ASSERT_TRUE(schemas.count("Marker"));  // the untyped markers'
  for (const auto& [name, schema] : schemas) {
    SCOPED_TRACE(name);
    const Value& sc = *schema;
    std::vector<std::string> display;
    for (const Value& v : sc["display"].GetArray()) display.push_back(v.GetString());
    EXPECT_EQ(display,
              (std::vector<std::string>{"marker-chart", "marker-table", "timeline-overview"}));
    ASSERT_TRUE(sc.HasMember("colorField"));
    std::map<std::string, const Value*> fields;
    for (const Value& f : sc["fields"].GetArray()) fields[f["key"].GetString()] = &f;
    ASSERT_TRUE(fields.count(sc["colorField"].GetString()));
    EXPECT_TRUE((*fields[sc["colorField"].GetString()])["hidden"].GetBool());
  }
  // The context fields of the untyped schema; a table label naming the category.
  const Value& untyped = *schemas["Marker"];
  std::vector<std::string> keys, labels, formats;
  for (const Value& f : untyped["fields"].GetArray()) {
    keys.push_back(f["key"].GetString());
    labels.push_back(f["label"].GetString());
    formats.push_back(f["format"].GetString());
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"category", "thread", "color"}));
  EXPECT_EQ(labels, (std::vector<std::string>{"Category", "Thread", "Colour"}));
  EXPECT_EQ(formats, (std::vector<std::string>{"string", "tid", "string"}));
  EXPECT_STREQ(untyped["colorField"].GetString(), "color");
  EXPECT_STREQ(untyped["tableLabel"].GetString(), "{marker.category}");
  // A label the dump gives stays; a schema without one names the category.
  EXPECT_STREQ((*schemas["Text"])["tableLabel"].GetString(), "{marker.name} — {marker.data.text}");
  EXPECT_STREQ((*schemas["Own"])["tableLabel"].GetString(), "{marker.category}");
  // The user's own "category" and "color" keep their meaning; the context takes other keys.
  EXPECT_STREQ((*schemas["Own"])["colorField"].GetString(), "color_");

  auto expect_context = [&](const Marker* m, const char* type, const char* category, uint64_t tid,
                            const char* color, const char* category_key = "category",
                            const char* color_key = "color") {
    ASSERT_TRUE(m);
    SCOPED_TRACE(m->name);
    const Value& data = *m->data;
    ASSERT_TRUE(data.IsObject());
    EXPECT_STREQ(data["type"].GetString(), type);
    EXPECT_EQ(m->category, category);
    EXPECT_STREQ(data[category_key].GetString(), category);
    EXPECT_EQ(data["thread"].GetUint64(), tid);
    EXPECT_STREQ(data[color_key].GetString(), color);
  };
  std::vector<Marker> db = markers(thread_index(2));
  std::vector<Marker> main = markers(thread_index(1));
  expect_context(find(db, "sql"), "Text", "Database", 2, "purple");
  EXPECT_STREQ((*find(db, "sql")->data)["text"].GetString(), "SELECT 1");
  expect_context(find(db, "query"), "Marker", "Database", 2, "purple");
  expect_context(find(main, "load-interval"), "Marker", "IO", 1, "green");
  expect_context(find(main, "fetch"), "Marker", "Network", 1, "teal");  // lightblue
  expect_context(find(main, "plain"), "Marker", "Other", 1, "grey");
  expect_context(find(main, "mine"), "Own", "Memory", 1, "magenta", "category_", "color_");
  EXPECT_STREQ((*find(main, "mine")->data)["category"].GetString(), "k");
  EXPECT_STREQ((*find(main, "mine")->data)["color"].GetString(), "p");
  // A pair takes its payload from its end, and its category from its start.
  expect_context(find(main, "pair"), "Text", "Database", 1, "purple");
  EXPECT_STREQ((*find(main, "pair")->data)["text"].GetString(), "end text");
}

// A dump schema named like the untyped one keeps its name; the untyped markers' takes another.
TEST_F(MarkersTest, TheUntypedSchemaTakesAFreeName) {
  MarkerSchemaRecord named;
  named.type = 1;
  named.name = "Marker";
  named.fields = {{"n", "N", 1}};
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.marker_schema(named);
    d.thread_start(1, 0, "main", kThreadMain);
    d.marker(marker(1, 0, 1 * kMs, 1 * kMs, "typed", 0, 1, {integer(3)}));
    d.marker(marker(1, 0, 2 * kMs, 2 * kMs, "untyped"));
    d.sample(1, 3 * kMs, {0x1000});
    d.close();
  }
  convert();
  std::vector<Marker> ms = markers(0);
  EXPECT_STREQ((*find(ms, "typed")->data)["type"].GetString(), "Marker");
  EXPECT_EQ((*find(ms, "typed")->data)["n"].GetInt64(), 3);
  EXPECT_STREQ((*find(ms, "untyped")->data)["type"].GetString(), "Marker 2");
}

TEST_F(MarkersTest, EveryFormatHasItsName) {
  MarkerSchemaRecord all;
  all.type = 1;
  all.name = "All";
  for (uint8_t f = 0; f <= 11; ++f) all.fields.push_back({"f" + std::to_string(f), "", f});
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.marker_schema(all);
    d.sample(1, 1 * kMs, {0x1000});
    d.close();
  }
  convert();
  std::vector<std::string> formats;
  for (const Value& f : doc_["meta"]["markerSchema"][0]["fields"].GetArray()) {
    formats.push_back(f["format"].GetString());
  }
  formats.resize(12);  // the dump's fields; the context fields follow
  EXPECT_EQ(formats, (std::vector<std::string>{"string", "integer", "decimal", "bytes",
                                               "percentage", "duration", "milliseconds",
                                               "microseconds", "nanoseconds", "file-path", "url",
                                               "string"}));  // 11 is unknown: plain string
  // A field without a label is labelled by its key.
  EXPECT_STREQ(doc_["meta"]["markerSchema"][0]["fields"][0]["label"].GetString(), "f0");
}

TEST_F(MarkersTest, MarkersOfAnUnsampledThreadGetATrack) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {0x1000});
    d.marker(marker(9, 0, 5 * kMs, 5 * kMs, "lonely"));
    d.close();
  }
  convert();
  size_t i = thread_index(9);
  EXPECT_EQ(markers(i).size(), 1u);
  EXPECT_DOUBLE_EQ(thread(i)["registerTime"].GetDouble(), 5.0);
}

TEST_F(MarkersTest, LabelsSitAtTheirPositionInTheStack) {
  // Frames leaf first: 0x3000 (leaf) <- 0x2000 <- 0x1000 (outermost); no module, so the frames
  // are named by address.
  const std::vector<uint64_t> frames = {0x3000, 0x2000, 0x1000};
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.category(7, 2, "Parsing");
    d.string(1, "Parse");
    d.string(2, "Outer");
    d.string(3, "Inner");
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, frames, 0, 100, {}, {{1, 1, 7}});             // child of 0x2000
    d.sample(1, 2 * kMs, frames, 0, 100, {}, {{3, 2, 0}});             // above the outermost frame
    d.sample(1, 3 * kMs, frames, 0, 100, {}, {{0, 1, 7}});             // below the leaf
    d.sample(1, 4 * kMs, frames, 0, 100, {}, {{2, 2, 0}, {2, 3, 6}});  // two in one frame
    d.sample(1, 5 * kMs, frames, 0, 100, {}, {{1, 9, 0}});             // no string record
    d.repeat(1, 6 * kMs, 0);                                           // keeps the labels
    d.sample(1, 7 * kMs, {}, 0, 100, {}, {{0, 1, 7}});                 // a label and no frames
    d.end(8 * kMs);
    d.close();
  }
  convert();
  auto names = [&](size_t sample) {
    std::vector<std::string> out;
    for (const FrameView& f : symtest::sample_stack(doc_, 0, sample)) out.push_back(f.func);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(0), (V{"0x1000", "0x2000", "Parse", "0x3000"}));
  EXPECT_EQ(names(1), (V{"Outer", "0x1000", "0x2000", "0x3000"}));
  EXPECT_EQ(names(2), (V{"0x1000", "0x2000", "0x3000", "Parse"}));
  EXPECT_EQ(names(3), (V{"0x1000", "Outer", "Inner", "0x2000", "0x3000"}));
  EXPECT_EQ(names(4), (V{"0x1000", "0x2000", "[label 9]", "0x3000"}));
  // The repeat keeps the labels; it did not run, so it is idle, with its Idle frame on top.
  V idle = names(4);
  idle.push_back("[not running]");
  EXPECT_EQ(names(5), idle);
  EXPECT_EQ(names(6), (V{"Parse"}));

  // A label frame: its own func without library, address -1, the label's category.
  std::vector<FrameView> s0 = symtest::sample_stack(doc_, 0, 0);
  EXPECT_EQ(s0[2].address, -1);
  EXPECT_EQ(s0[2].lib, "");
  EXPECT_EQ(s0[2].category, "Parsing");
  EXPECT_EQ(symtest::sample_stack(doc_, 0, 3)[2].category, "User");
}

// Repeats of a thread that did not run, whose code cannot be read (so whether it was in a system
// call is unknown): idle, through an Idle frame of their own on top of the sample's stack. The
// sample's frames keep their category.
TEST_F(MarkersTest, RepeatSamplesHaveAnIdleFrameOnTop) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1 * kMs, {0x2000, 0x1000}, 0, 900'000);
    d.repeat(1, 2 * kMs, 0);
    d.repeat(1, 3 * kMs, 0);
    d.sample(1, 4 * kMs, {0x2000, 0x1000}, 0, 1'000'000);
    d.end(5 * kMs);
    d.close();
  }
  convert();
  const Value& samples = thread(0)["samples"];
  std::vector<int64_t> stacks;
  for (size_t i = 0; i < 4; ++i) stacks.push_back(symtest::sample_stack_index(doc_, 0, i));
  EXPECT_EQ(stacks[0], stacks[3]);
  EXPECT_EQ(stacks[1], stacks[2]);
  EXPECT_NE(stacks[0], stacks[1]);

  std::vector<FrameView> running = symtest::sample_stack(doc_, 0, 0);
  std::vector<FrameView> idle = symtest::sample_stack(doc_, 0, 1);
  ASSERT_EQ(running.size(), 2u);
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_EQ(running[1].category, "Native");
  EXPECT_EQ(idle[2].category, "Idle");  // exactly the name the viewer looks for
  EXPECT_EQ(idle[2].func, "[not running]");
  EXPECT_EQ(idle[2].address, -1);
  EXPECT_EQ(idle[0].category, "Native");
  EXPECT_EQ(idle[1].category, "Native");
  EXPECT_EQ(idle[1].func, running[1].func);
  EXPECT_EQ(idle[1].address, running[1].address);
  // The idle stack sits on the sample's own stack node.
  const Value& prefix = doc_["shared"]["stackTable"]["prefixOffset"];
  EXPECT_EQ(stacks[1] - prefix[static_cast<rapidjson::SizeType>(stacks[1])].GetInt64(), stacks[0]);

  EXPECT_STREQ(doc_["meta"]["sampleUnits"]["threadCPUDelta"].GetString(), "ns");
  const Value& cpu = samples["threadCPUDelta"];
  EXPECT_EQ(cpu[0].GetInt64(), 900'000);
  EXPECT_EQ(cpu[1].GetInt64(), 0);
  EXPECT_EQ(cpu[3].GetInt64(), 1'000'000);
}

TEST_F(MarkersTest, CountersBecomeTracks) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    builtin_categories(d);
    d.thread_start(1, 0, "worker");
    d.thread_start(2, 0, "main", kThreadMain);
    // Samples may come before the declaration, and out of time order.
    d.counter_sample(3, 1 * kMs, 10);
    d.counter_sample(3, 3 * kMs, 5);
    d.counter_sample(3, 2 * kMs, 20);
    d.counter(3, 5, "heap", "Bytes in use");
    d.counter(4, 0, "never sampled");
    d.sample(1, 1 * kMs, {0x1000});
    d.sample(2, 1 * kMs, {0x1000});
    d.end(5 * kMs);
    d.close();
  }
  convert();
  const Value& counters = doc_["counters"];
  ASSERT_EQ(counters.Size(), 1u);  // a counter without samples has nothing to draw
  const Value& c = counters[0];
  EXPECT_STREQ(c["name"].GetString(), "heap");
  EXPECT_STREQ(c["description"].GetString(), "Bytes in use");
  EXPECT_STREQ(c["category"].GetString(), "Memory");  // a name, not an index
  EXPECT_STREQ(c["pid"].GetString(), "4242");
  size_t main = c["mainThreadIndex"].GetUint();
  EXPECT_EQ(thread(main)["tid"].GetUint64(), 2u);
  EXPECT_TRUE(thread(main)["isMainThread"].GetBool());
  EXPECT_STREQ(c["display"]["graphType"].GetString(), "line-accumulated");
  EXPECT_STREQ(c["display"]["color"].GetString(), "magenta");
  const Value& s = c["samples"];
  ASSERT_EQ(s["length"].GetUint(), 4u);
  ASSERT_TRUE(s.HasMember("number"));
  std::vector<double> time;
  std::vector<int64_t> count, number;
  for (rapidjson::SizeType i = 0; i < 4; ++i) {
    time.push_back(s["time"][i].GetDouble());
    count.push_back(s["count"][i].GetInt64());
    number.push_back(s["number"][i].GetInt64());
  }
  // The last value holds to the end of the recording.
  EXPECT_EQ(time, (std::vector<double>{1.0, 2.0, 3.0, 5.0}));
  // Changes since the previous sample; the first is the value itself.
  EXPECT_EQ(count, (std::vector<int64_t>{10, 10, -15, 0}));
  EXPECT_EQ(number, (std::vector<int64_t>{10, 20, 5, 5}));
}

// Issue 22, item 7: the viewer draws a counter's running total of `count` less its lowest point,
// and its tooltip showed that too (16 where the value was -1). The tooltip must read the real
// value, and a value that holds between two changes must be drawn as a step.
TEST_F(MarkersTest, CounterTracksShowTheRealValues) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());  // 1 ms interval
    builtin_categories(d);
    d.thread_start(1, 0, "main", kThreadMain);
    d.counter(3, 3, "queue", "Waiting");
    d.counter_sample(3, 2 * kMs, 0);
    d.counter_sample(3, 3 * kMs, -1);    // next tick: no step needed
    d.counter_sample(3, 10 * kMs, -17);  // 7 ms later: it was still -1 one tick before
    d.counter_sample(3, 12 * kMs, 4);
    d.sample(1, 1 * kMs, {0x1000});
    d.pause(15 * kMs);  // never resumed: the counter was not read after it
    d.end(20 * kMs);
    d.close();
  }
  convert();
  const Value& c = doc_["counters"][0];
  EXPECT_STREQ(c["display"]["graphType"].GetString(), "line-accumulated");  // a level
  EXPECT_STREQ(c["display"]["color"].GetString(),
               "teal");  // Network's lightblue is no graph colour
  // The tooltip's first row is the value, read from samples.number.
  const Value& rows = c["display"]["tooltipRows"];
  ASSERT_GE(rows.Size(), 1u);
  EXPECT_STREQ(rows[0]["source"].GetString(), "sample-number");
  ASSERT_TRUE(c["samples"].HasMember("number"));
  for (const Value& row : rows.GetArray()) {
    EXPECT_STRNE(row["source"].GetString(), "accumulated");  // offset by the minimum
  }
  const Value& s = c["samples"];
  std::vector<double> time;
  std::vector<int64_t> count, number;
  for (rapidjson::SizeType i = 0; i < s["length"].GetUint(); ++i) {
    time.push_back(s["time"][i].GetDouble());
    count.push_back(s["count"][i].GetInt64());
    number.push_back(s["number"][i].GetInt64());
  }
  EXPECT_EQ(time, (std::vector<double>{2, 3, 9, 10, 11, 12, 15}));
  EXPECT_EQ(number, (std::vector<int64_t>{0, -1, -1, -17, -17, 4, 4}));
  // The running total of the counts is the value itself.
  int64_t total = 0;
  for (size_t i = 0; i < count.size(); ++i) {
    total += count[i];
    EXPECT_EQ(total, number[i]) << i;
  }
}

TEST_F(MarkersTest, PausedRangesReachEveryThread) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.thread_start(2, 0, "worker");
    d.sample(1, 1 * kMs, {0x1000});
    d.pause(10 * kMs);
    d.resume(20 * kMs);
    d.resume(25 * kMs);  // no pause to end: ignored
    d.pause(30 * kMs);   // never resumed: ends with the profile
    d.sample(2, 22 * kMs, {0x1000});
    d.end(50 * kMs);
    d.close();
  }
  convert();
  for (size_t t = 0; t < 2; ++t) {
    const Value& r = thread(t)["pausedRanges"];
    ASSERT_EQ(r.Size(), 2u) << t;
    EXPECT_DOUBLE_EQ(r[0]["startTime"].GetDouble(), 10.0);
    EXPECT_DOUBLE_EQ(r[0]["endTime"].GetDouble(), 20.0);
    EXPECT_DOUBLE_EQ(r[1]["startTime"].GetDouble(), 30.0);
    EXPECT_DOUBLE_EQ(r[1]["endTime"].GetDouble(), 50.0);
  }
}

TEST_F(MarkersTest, NoMarkerRecordsKeepTheEmptyForm) {
  {
    symtest::DumpFile d(dump_path());
    d.process(symtest::test_process());
    d.sample(1, 1 * kMs, {0x1000});
    d.close();
  }
  convert();
  EXPECT_EQ(doc_["meta"]["markerSchema"].Size(), 0u);
  EXPECT_EQ(doc_["counters"].Size(), 0u);
  EXPECT_EQ(thread(0)["markers"]["length"].GetUint(), 0u);
  EXPECT_EQ(thread(0)["pausedRanges"].Size(), 0u);
  EXPECT_FALSE(thread(0).HasMember("showMarkersInTimeline"));
}

}  // namespace
