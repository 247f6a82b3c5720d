#include "convert/profile_builder.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdio>
#include <vector>

#include "convert/profile_converter.h"
#include "read/flat_index_set.h"
#include "text_util.h"
#include "write/profile_json_writer.h"

namespace {

using namespace inprof::symbolicate;

TEST(ProfileBuilder, InternsStrings) {
  ProfileBuilder b;
  StringIndex a = b.handle_for_string("a");
  StringIndex c = b.handle_for_string("c");
  EXPECT_EQ(b.handle_for_string("a"), a);
  EXPECT_NE(a, c);
  EXPECT_EQ(b.strings().size(), 2u);
}

TEST(ProfileBuilder, DeduplicatesFuncsFramesAndStacks) {
  ProfileBuilder b;
  CategoryIndex cat = b.add_category({"Other", "grey", {"Other"}});
  FuncIndex f1 = b.handle_for_func(b.handle_for_string("f"), std::nullopt, std::nullopt, 3);
  FuncIndex f2 = b.handle_for_func(b.handle_for_string("f"), std::nullopt, std::nullopt, 3);
  FuncIndex g = b.handle_for_func(b.handle_for_string("g"), std::nullopt, std::nullopt, 3);
  EXPECT_EQ(f1, f2);
  EXPECT_NE(f1, g);
  FrameIndex fr1 = b.handle_for_frame(f1, 0x10, 0, cat, 0, std::nullopt, 4);
  FrameIndex fr2 = b.handle_for_frame(f1, 0x10, 0, cat, 0, std::nullopt, 4);
  FrameIndex fr3 = b.handle_for_frame(f1, 0x10, 1, cat, 0, std::nullopt, 4);
  EXPECT_EQ(fr1, fr2);
  EXPECT_NE(fr1, fr3);
  StackIndex root = b.handle_for_stack(std::nullopt, fr1);
  StackIndex child = b.handle_for_stack(root, fr3);
  EXPECT_EQ(b.handle_for_stack(root, fr3), child);
  EXPECT_NE(b.handle_for_stack(std::nullopt, fr3), child);
  EXPECT_EQ(b.stacks().size(), 3u);
  EXPECT_EQ(b.stacks().prefix[raw(child)], std::optional<StackIndex>(root));
}

TEST(ProfileBuilder, WritesParsableJsonWithPrefixOffsets) {
  ProfileBuilder b;
  CategoryIndex cat = b.add_category({"Other", "grey", {"Other"}});
  LibIndex lib = b.add_lib({"libx.so", "/lib/libx.so", "libx.so", "/lib/libx.so",
                            std::string(33, '0'), std::nullopt, "x86_64"});
  FuncIndex f = b.handle_for_func(b.handle_for_string("f\xff"), b.resource_for_lib(lib),
                                  b.handle_for_source("/src/a.cc"), std::nullopt);
  FrameIndex fr = b.handle_for_frame(f, 0x20, 0, cat, 0, std::nullopt, std::nullopt);
  StackIndex s0 = b.handle_for_stack(std::nullopt, fr);
  StackIndex s1 = b.handle_for_stack(s0, fr);
  Thread t;
  t.name = "main";
  t.pid = 12;
  t.tid = 13;
  t.samples.push_back({s1, 1'500'000, std::nullopt});
  t.samples.push_back({std::nullopt, 2'500'000, 7});
  b.add_thread(t);
  b.meta().has_cpu_deltas = true;

  std::FILE* f_out = std::tmpfile();
  ASSERT_TRUE(write_profile_json(b, f_out));
  std::rewind(f_out);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f_out)) > 0) text.append(buf, n);
  std::fclose(f_out);

  rapidjson::Document doc;
  doc.Parse(text.c_str());
  ASSERT_FALSE(doc.HasParseError()) << text;
  EXPECT_EQ(doc["meta"]["preprocessedProfileVersion"].GetInt(), 66);
  const auto& prefix = doc["shared"]["stackTable"]["prefixOffset"];
  EXPECT_EQ(prefix[0].GetInt(), 0);
  EXPECT_EQ(prefix[1].GetInt(), 1);
  const auto& th = doc["threads"][0];
  EXPECT_STREQ(th["pid"].GetString(), "12");
  EXPECT_DOUBLE_EQ(th["samples"]["timeDeltas"][0].GetDouble(), 1.5);
  EXPECT_DOUBLE_EQ(th["samples"]["timeDeltas"][1].GetDouble(), 1.0);
  EXPECT_TRUE(th["samples"]["stack"][1].IsNull());
  EXPECT_TRUE(th["samples"]["threadCPUDelta"][0].IsNull());
  EXPECT_EQ(th["samples"]["threadCPUDelta"][1].GetInt(), 7);
  // The invalid byte became U+FFFD rather than breaking the JSON.
  uint32_t func_name = doc["shared"]["funcTable"]["name"][0].GetUint();
  EXPECT_STREQ(doc["shared"]["stringArray"][func_name].GetString(), "f\xEF\xBF\xBD");
}

TEST(ProfileJsonWriter, SanitizesUtf8) {
  EXPECT_EQ(sanitize_utf8("plain"), "plain");
  EXPECT_EQ(sanitize_utf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(sanitize_utf8("a\xC3"), "a\xEF\xBF\xBD");
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
}

TEST(ProfileConverter, BreakpadIdIsALittleEndianGuidPlusAge) {
  std::vector<uint8_t> id;
  for (int i = 0; i < 20; ++i) id.push_back(static_cast<uint8_t>(i));
  EXPECT_EQ(breakpad_id(id),
            "03020100050407060809"
            "0A0B0C0D0E0F"
            "0");
  EXPECT_EQ(breakpad_id(id).size(), 33u);
  EXPECT_EQ(hex_string(std::vector<uint8_t>{0xab, 0x01}), "ab01");
}

// Rows deduplicated by FlatIndexSet stay distinct and are found again across many growths, also
// when every row has the same hash (the equality test alone tells them apart) or when hashes
// differ only in their low bits.
TEST(FlatIndexSet, FindsEveryRowAcrossGrowthAndCollisions) {
  for (int mode = 0; mode < 3; ++mode) {
    auto hash = [mode](uint64_t key) -> uint64_t {
      return mode == 0 ? key * 0x9e3779b97f4a7c15ull : mode == 1 ? 42 : key;
    };
    const uint64_t n = mode == 1 ? 3000 : 100000;  // all colliding: quadratic, keep it small
    FlatIndexSet set;
    std::vector<uint64_t> rows;  // the "table": row -> key
    for (uint64_t key = 0; key < n; ++key) {
      const auto next = static_cast<uint32_t>(rows.size());
      const uint32_t row =
          set.find_or_insert(hash(key * 7), next, [&](uint32_t r) { return rows[r] == key * 7; });
      ASSERT_EQ(row, next) << "mode " << mode << ": key " << key << " taken for another row";
      rows.push_back(key * 7);
    }
    for (uint64_t key = 0; key < n; ++key) {
      const auto next = static_cast<uint32_t>(rows.size());
      const uint32_t row =
          set.find_or_insert(hash(key * 7), next, [&](uint32_t r) { return rows[r] == key * 7; });
      ASSERT_EQ(row, key) << "mode " << mode << ": key " << key << " not found again";
    }
  }
}

}  // namespace
