// The checker must accept the notes' minimal valid profile and report each kind of damage the
// Firefox Profiler accepts silently. Each breakage starts from the valid fixture and changes one
// thing, so a report can only come from that change.
#include "profile_checker.h"

#include <gtest/gtest.h>
#include <rapidjson/pointer.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace inprof::test_support {
namespace {

using rapidjson::Document;
using rapidjson::Pointer;

std::string fixture_path(const std::string& name) {
  return std::string(INPROF_TESTDATA_DIR) + "/" + name;
}

Document load_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Document doc;
  doc.Parse(text.c_str(), text.size());
  EXPECT_FALSE(doc.HasParseError()) << name;
  return doc;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string s;
  for (const auto& p : problems) s += "  " + p + "\n";
  return s.empty() ? "  (none)\n" : s;
}

// Whether one problem mentions both `path` and `what`.
::testing::AssertionResult reports(const Document& doc, const std::string& path,
                                   const std::string& what) {
  std::vector<std::string> problems = check_profile(doc);
  for (const auto& p : problems) {
    if (p.find(path) != std::string::npos && p.find(what) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "expected a problem at \"" << path << "\" saying \"" << what << "\"; got:\n"
         << joined(problems);
}

class ProfileCheckerTest : public ::testing::Test {
 protected:
  Document doc_ = load_fixture("minimal.json");

  void set(const char* pointer, const rapidjson::Value& v) {
    Pointer(pointer).Set(doc_, rapidjson::Value(v, doc_.GetAllocator()));
  }
  void set(const char* pointer, int v) { Pointer(pointer).Set(doc_, v); }
  void set(const char* pointer, double v) { Pointer(pointer).Set(doc_, v); }
  void set(const char* pointer, const char* v) { Pointer(pointer).Set(doc_, v); }
  void set_null(const char* pointer) { Pointer(pointer).Set(doc_, rapidjson::Value()); }
  void erase(const char* pointer) { ASSERT_TRUE(Pointer(pointer).Erase(doc_)) << pointer; }
};

TEST_F(ProfileCheckerTest, MinimalExamplePasses) {
  std::vector<std::string> problems = check_profile(doc_);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

// The end-to-end checker's fixtures must be structurally sound, the broken one included: it
// differs in call-tree shape only.
TEST(ProfileCheckerFixtures, EndToEndShapesPass) {
  for (const char* name : {"e2e_shape.json", "e2e_shape_broken.json"}) {
    std::vector<std::string> problems = check_profile(load_fixture(name));
    EXPECT_TRUE(problems.empty()) << name << ":\n" << joined(problems);
  }
}

TEST_F(ProfileCheckerTest, NullCpuDeltaAndNullStackAreAccepted) {
  set_null("/threads/0/samples/threadCPUDelta/1");
  set_null("/threads/0/samples/stack/0");
  std::vector<std::string> problems = check_profile(doc_);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_F(ProfileCheckerTest, SampleStackOutOfRange) {
  set("/threads/0/samples/stack/0", 3);
  EXPECT_TRUE(reports(doc_, "threads[0].samples.stack[0]", "out of range"));
}

TEST_F(ProfileCheckerTest, PrefixOffsetPointingAfterTheChild) {
  set("/shared/stackTable/prefixOffset/1", 2);  // > i: the parent would come first
  EXPECT_TRUE(reports(doc_, "shared.stackTable.prefixOffset[1]", "parent must come before"));
}

TEST_F(ProfileCheckerTest, NegativePrefixOffset) {
  set("/shared/stackTable/prefixOffset/2", -1);
  EXPECT_TRUE(reports(doc_, "shared.stackTable.prefixOffset[2]", "not in [0, 2]"));
}

TEST_F(ProfileCheckerTest, MissingFuncColumn) {
  erase("/shared/funcTable/source");
  EXPECT_TRUE(reports(doc_, "shared.funcTable.source", "missing column"));
}

TEST_F(ProfileCheckerTest, MissingMarkerPhaseColumn) {
  erase("/threads/0/markers/phase");
  EXPECT_TRUE(reports(doc_, "threads[0].markers.phase", "missing column"));
}

TEST_F(ProfileCheckerTest, UnknownColour) {
  set("/meta/categories/1/color", "chartreuse");
  EXPECT_TRUE(reports(doc_, "meta.categories[1].color", "unknown colour \"chartreuse\""));
}

TEST_F(ProfileCheckerTest, NoGreyCategory) {
  set("/meta/categories/0/color", "blue");
  EXPECT_TRUE(reports(doc_, "meta.categories", "no category is grey"));
}

TEST_F(ProfileCheckerTest, FuncIndexOutOfRange) {
  set("/shared/frameTable/func/2", 3);
  EXPECT_TRUE(reports(doc_, "shared.frameTable.func[2]", "out of range"));
}

TEST_F(ProfileCheckerTest, ColumnLongerThanTable) {
  Pointer("/shared/frameTable/address/-").Set(doc_, 9000);
  EXPECT_TRUE(
      reports(doc_, "shared.frameTable.address", "has 4 entries but the table's length is 3"));
}

TEST_F(ProfileCheckerTest, SampleColumnShorterThanTable) {
  doc_["threads"][0]["samples"]["timeDeltas"].PopBack();
  EXPECT_TRUE(reports(doc_, "threads[0].samples.timeDeltas", "has 2 entries"));
}

TEST_F(ProfileCheckerTest, InlineFrameAtAnotherAddress) {
  set("/shared/frameTable/address/2", 8260);
  EXPECT_TRUE(reports(doc_, "shared.stackTable[2]", "must sit on the frame it was inlined into"));
}

TEST_F(ProfileCheckerTest, InlineFrameWithAnotherNativeSymbol) {
  set("/shared/frameTable/nativeSymbol/2", 0);
  EXPECT_TRUE(reports(doc_, "shared.stackTable[2]", "must sit on the frame it was inlined into"));
}

TEST_F(ProfileCheckerTest, InlineFrameSkippingADepth) {
  set("/shared/frameTable/inlineDepth/2", 2);
  EXPECT_TRUE(reports(doc_, "shared.stackTable[2]", "must sit on the frame it was inlined into"));
}

TEST_F(ProfileCheckerTest, InlineFrameAsRoot) {
  set("/shared/stackTable/prefixOffset/2", 0);
  EXPECT_TRUE(reports(doc_, "shared.stackTable[2]", "but is a root"));
}

TEST_F(ProfileCheckerTest, WrongVersion) {
  set("/meta/preprocessedProfileVersion", 70);
  EXPECT_TRUE(reports(doc_, "meta.preprocessedProfileVersion", "expected 66"));
}

TEST_F(ProfileCheckerTest, NotSymbolicated) {
  Pointer("/meta/symbolicated").Set(doc_, false);
  EXPECT_TRUE(reports(doc_, "meta.symbolicated", "must be true"));
}

TEST_F(ProfileCheckerTest, MissingMetaParts) {
  erase("/meta/markerSchema");
  erase("/meta/categories");
  erase("/meta/sampleUnits");
  EXPECT_TRUE(reports(doc_, "meta.markerSchema", "missing"));
  EXPECT_TRUE(reports(doc_, "meta.categories", "missing"));
  EXPECT_TRUE(reports(doc_, "meta.sampleUnits", "missing"));
}

TEST_F(ProfileCheckerTest, CpuDeltaWithoutUnit) {
  erase("/meta/sampleUnits/threadCPUDelta");
  EXPECT_TRUE(reports(doc_, "meta.sampleUnits.threadCPUDelta", "threads carry threadCPUDelta"));
}

TEST_F(ProfileCheckerTest, StringIndexOutOfRange) {
  set("/shared/funcTable/name/1", 9);
  EXPECT_TRUE(reports(doc_, "shared.funcTable.name[1]", "out of range"));
}

TEST_F(ProfileCheckerTest, OtherIndicesOutOfRange) {
  set("/shared/frameTable/nativeSymbol/0", 2);
  set("/shared/funcTable/resource/0", 1);
  set("/shared/funcTable/source/0", 3);
  set("/shared/resourceTable/lib/0", 1);
  set("/shared/nativeSymbols/libIndex/1", 1);
  set("/shared/stackTable/frame/0", 3);
  set("/shared/frameTable/category/0", 2);
  set("/threads/0/markers/category/0", 2);
  EXPECT_TRUE(reports(doc_, "shared.frameTable.nativeSymbol[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.funcTable.resource[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.funcTable.source[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.resourceTable.lib[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.nativeSymbols.libIndex[1]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.stackTable.frame[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "shared.frameTable.category[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "threads[0].markers.category[0]", "out of range"));
}

TEST_F(ProfileCheckerTest, SubcategoryOutsideItsCategory) {
  set("/shared/frameTable/subcategory/1", 1);  // category 1 has one subcategory
  EXPECT_TRUE(
      reports(doc_, "shared.frameTable.subcategory[1]", "is not a subcategory of category 1"));
}

TEST_F(ProfileCheckerTest, NegativeTimeDelta) {
  set("/threads/0/samples/timeDeltas/2", -1);
  EXPECT_TRUE(reports(doc_, "threads[0].samples.timeDeltas[2]", "negative"));
}

TEST_F(ProfileCheckerTest, NegativeCpuDelta) {
  set("/threads/0/samples/threadCPUDelta/1", -5);
  EXPECT_TRUE(reports(doc_, "threads[0].samples.threadCPUDelta[1]", "negative"));
}

TEST_F(ProfileCheckerTest, BadMarkers) {
  set("/threads/0/markers/phase/0", 4);
  set("/threads/0/markers/endTime/1", 0.5);  // before its start, 1.0
  EXPECT_TRUE(reports(doc_, "threads[0].markers.phase[0]", "out of range"));
  EXPECT_TRUE(reports(doc_, "threads[0].markers.endTime[1]", "ends before it starts"));
}

TEST_F(ProfileCheckerTest, IntervalMarkerWithoutEnd) {
  set_null("/threads/0/markers/endTime/1");
  EXPECT_TRUE(reports(doc_, "threads[0].markers[1]", "needs both start and end"));
}

TEST_F(ProfileCheckerTest, MarkerPayloadWithoutSchema) {
  set("/threads/0/markers/data/1/type", "Unknown");
  EXPECT_TRUE(reports(doc_, "threads[0].markers.data[1].type", "no markerSchema entry"));
}

TEST_F(ProfileCheckerTest, UniqueStringFieldOutOfRange) {
  set("/meta/markerSchema/0/fields/0/format", "unique-string");
  set("/threads/0/markers/data/1/label", 42);
  EXPECT_TRUE(reports(doc_, "threads[0].markers.data[1].label", "must be a string index"));
}

TEST_F(ProfileCheckerTest, BadSchema) {
  set("/meta/markerSchema/0/display/0", "somewhere");
  set("/meta/markerSchema/0/fields/1/format", "kilobytes");
  EXPECT_TRUE(reports(doc_, "meta.markerSchema[0].display[0]", "unknown display location"));
  EXPECT_TRUE(reports(doc_, "meta.markerSchema[0].fields[1].format", "unknown format"));
}

// The marker chart reads a marker's colour from the payload key its schema's colorField names;
// anything but a graph colour silently leaves it blue.
TEST_F(ProfileCheckerTest, ColorFieldNamingNoFieldOrHoldingNoGraphColour) {
  set("/meta/markerSchema/0/colorField", "paint");
  EXPECT_TRUE(reports(doc_, "meta.markerSchema[0].colorField", "names none of the fields"));
  set("/meta/markerSchema/0/colorField", "label");
  set("/threads/0/markers/data/1/label", "lightblue");  // a category colour, not a graph colour
  EXPECT_TRUE(reports(doc_, "threads[0].markers.data[1].label", "holds no graph colour"));
  set("/threads/0/markers/data/1/label", "teal");
  std::vector<std::string> problems = check_profile(doc_);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_F(ProfileCheckerTest, PidAndTidTypes) {
  set("/threads/0/pid", 100);
  set("/threads/0/tid", "101");
  EXPECT_TRUE(reports(doc_, "threads[0].pid", "expected a string"));
  EXPECT_TRUE(reports(doc_, "threads[0].tid", "expected a number"));
}

TEST_F(ProfileCheckerTest, Pre66StackColumnIsRejected) {
  doc_["shared"]["stackTable"].RemoveMember("prefixOffset");
  rapidjson::Value prefix(rapidjson::kArrayType);
  prefix.PushBack(rapidjson::Value(), doc_.GetAllocator())
      .PushBack(0, doc_.GetAllocator())
      .PushBack(1, doc_.GetAllocator());
  doc_["shared"]["stackTable"].AddMember("prefix", prefix, doc_.GetAllocator());
  EXPECT_TRUE(reports(doc_, "shared.stackTable.prefixOffset", "missing column"));
  EXPECT_TRUE(reports(doc_, "shared.stackTable.prefix", "pre-66"));
}

TEST_F(ProfileCheckerTest, ManyBadRowsAreSummarised) {
  Pointer("/threads/0/samples/stack").Set(doc_, rapidjson::Value(rapidjson::kArrayType));
  Pointer("/threads/0/samples/timeDeltas").Set(doc_, rapidjson::Value(rapidjson::kArrayType));
  auto& samples = doc_["threads"][0]["samples"];
  samples.RemoveMember("threadCPUDelta");
  for (int i = 0; i < 20; ++i) {
    samples["stack"].PushBack(7, doc_.GetAllocator());
    samples["timeDeltas"].PushBack(1, doc_.GetAllocator());
  }
  samples["length"] = 20;
  std::vector<std::string> problems = check_profile(doc_);
  EXPECT_EQ(problems.size(), 6u) << joined(problems);  // five listed, one summary
  EXPECT_TRUE(reports(doc_, "threads[0].samples.stack", "15 more bad entries"));
}

// The command-line contract: 0 good, 1 problems, 2 not readable as JSON.
TEST(ProfileCheckCommand, ExitStatus) {
  std::ostringstream out, err;
  EXPECT_EQ(run_profile_check(fixture_path("minimal.json"), out, err), 0) << out.str() << err.str();
  EXPECT_EQ(out.str(), "");

  EXPECT_EQ(run_profile_check(fixture_path("truncated.json"), out, err), 2);
  EXPECT_NE(err.str().find("not JSON"), std::string::npos) << err.str();

  EXPECT_EQ(run_profile_check(fixture_path("no-such-file.json"), out, err), 2);
  EXPECT_NE(err.str().find("cannot read"), std::string::npos) << err.str();

  Document doc = load_fixture("minimal.json");
  Pointer("/threads/0/samples/stack/0").Set(doc, 99);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  std::string broken = ::testing::TempDir() + "/profile_check_broken.json";
  std::ofstream(broken) << buffer.GetString();
  out.str("");
  EXPECT_EQ(run_profile_check(broken, out, err), 1);
  EXPECT_NE(out.str().find("threads[0].samples.stack[0]: 99 is out of range"), std::string::npos)
      << out.str();
}

// A counter as symbolicate writes it (v66: display required, category by name).
constexpr const char* kCounter = R"({
  "name": "queue", "category": "Other", "description": "", "pid": "100", "mainThreadIndex": 0,
  "display": {"graphType": "line-accumulated", "unit": "", "color": "grey",
              "markerSchemaLocation": null, "sortWeight": 50, "label": "queue"},
  "samples": {"length": 3, "time": [1.0, 2.0, 3.0], "count": [10, 10, -15]}})";

class CounterCheckTest : public ProfileCheckerTest {
 protected:
  void SetUp() override {
    Document counter;
    counter.Parse(kCounter);
    ASSERT_FALSE(counter.HasParseError());
    set("/counters/0", counter);
  }
};

TEST_F(CounterCheckTest, WellFormedCounterPasses) {
  std::vector<std::string> problems = check_profile(doc_);
  EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST_F(CounterCheckTest, CountColumnShorterThanLength) {
  erase("/counters/0/samples/count/2");
  EXPECT_TRUE(reports(doc_, "counters[0].samples.count", "length is 3"));
}

TEST_F(CounterCheckTest, MainThreadOutOfRange) {
  set("/counters/0/mainThreadIndex", 1);
  EXPECT_TRUE(reports(doc_, "counters[0].mainThreadIndex", "expected a thread index"));
}

TEST_F(CounterCheckTest, CategoryIndexInsteadOfName) {
  set("/counters/0/category", 0);
  EXPECT_TRUE(reports(doc_, "counters[0].category", "expected a string"));
}

TEST_F(CounterCheckTest, UnknownCategoryName) {
  set("/counters/0/category", "Nonexistent");
  EXPECT_TRUE(reports(doc_, "counters[0].category", "names no category"));
}

TEST_F(CounterCheckTest, MissingDisplay) {
  erase("/counters/0/display");
  EXPECT_TRUE(reports(doc_, "counters[0].display", "missing"));
}

// A counter track's colour is a graph colour: with a category colour the track fails to draw.
TEST_F(CounterCheckTest, CategoryColourOnATrack) {
  set("/counters/0/display/color", "lightblue");
  EXPECT_TRUE(reports(doc_, "counters[0].display.color", "unknown colour"));
}

TEST_F(CounterCheckTest, TooltipRowReadingAMissingColumn) {
  Document rows;
  rows.Parse(R"([{"type": "value", "source": "sample-number", "format": {"unit": "number"},
                  "label": "value"}, {"type": "separator"},
                 {"type": "value", "source": "level", "format": {"unit": "number"}, "label": "x"}])");
  set("/counters/0/display/tooltipRows", rows);
  EXPECT_TRUE(reports(doc_, "counters[0].display.tooltipRows[0].source", "samples.number"));
  EXPECT_TRUE(reports(doc_, "counters[0].display.tooltipRows[2].source", "unknown source"));
  Document number;
  number.Parse("[10, 20, 5]");
  set("/counters/0/samples/number", number);
  EXPECT_FALSE(reports(doc_, "counters[0].display.tooltipRows[0].source", "samples.number"));
}

TEST_F(CounterCheckTest, TimeGoesBack) {
  set("/counters/0/samples/time/2", 0);
  EXPECT_TRUE(reports(doc_, "counters[0].samples.time[2]", "goes back in time"));
}

TEST_F(ProfileCheckerTest, PausedRangeEndingBeforeItStarts) {
  Document range;
  range.Parse(R"({"startTime": 5.0, "endTime": 2.0})");
  set("/threads/0/pausedRanges/0", range);
  EXPECT_TRUE(reports(doc_, "threads[0].pausedRanges[0]", "ends before it starts"));
}

TEST_F(ProfileCheckerTest, PausedRangeWithoutTimes) {
  Document range;
  range.Parse(R"({"startTime": 5.0})");
  set("/threads/0/pausedRanges/0", range);
  EXPECT_TRUE(reports(doc_, "threads[0].pausedRanges[0].endTime", "missing"));
}

}  // namespace
}  // namespace inprof::test_support
