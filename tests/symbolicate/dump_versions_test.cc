// Dumps of format version 1 (every sample written whole) still symbolicate, to the same profile
// as version 2 (stacks once per chunk, samples referring to them) gives for the same records.
#include <gtest/gtest.h>

#include <fstream>

#include "session/output_file.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

class DumpVersionsTest : public ::testing::Test {
 protected:
  // Two threads, two stacks, three chunks; every time a whole µs, so both versions hold the same.
  void write(const std::string& path, uint32_t version) {
    const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    const uint64_t caller_ra = symtest::caller_function();
    inprof::Status status;
    auto writer = DumpWriter::create(OutputFile::create(path, &status), &status,
                                     DumpWriter::kDefaultCompressionLevel, version);
    ASSERT_TRUE(writer) << status.message();
    writer->add(RecordType::kProcess, symtest::test_process());
    writer->add(RecordType::kModuleLoad, symtest::self_module());
    writer->add(RecordType::kThreadStart, ThreadRecord{1, 0, kThreadMain, "main"});
    writer->add(RecordType::kThreadStart, ThreadRecord{2, 0, 0, "worker"});
    for (uint64_t chunk = 0; chunk < 3; ++chunk) {
      for (uint64_t i = 0; i < 20; ++i) {
        const uint64_t n = chunk * 20 + i;
        const std::vector<uint64_t> frames =
            n % 3 ? std::vector<uint64_t>{leaf, caller_ra} : std::vector<uint64_t>{caller_ra};
        std::vector<uint8_t> payload;
        {
          ByteWriter w(&payload);
          encode_sample(w, 1 + n % 2, (n + 1) * 1'000'000, 250'000 + n * 1000, 0, frames, {});
        }
        writer->add_payload(RecordType::kSample, payload);
        if (n % 5 == 0) {
          writer->add(RecordType::kSampleRepeat,
                      SampleRepeatRecord{1 + n % 2, (n + 1) * 1'000'000 + 500'000, 0});
        }
      }
      ASSERT_TRUE(writer->flush().ok());
    }
    writer->add(RecordType::kEnd, EndRecord{100'000'000});
    ASSERT_TRUE(writer->close().ok());
  }

  void convert(const std::string& dump, const std::string& out, rapidjson::Document* doc) {
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dump, out, &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(out, doc));
    for (const auto& p : symtest::check_structure(*doc)) ADD_FAILURE() << p;
  }

  symtest::TempDir dir_;
};

TEST_F(DumpVersionsTest, Version1DumpSymbolicatesLikeVersion2) {
  const std::string old_dump = dir_.path("v1.inprof"), new_dump = dir_.path("v2.inprof");
  write(old_dump, 1);
  write(new_dump, kDumpFormatVersion);
  char version[9] = {};
  std::ifstream(old_dump, std::ios::binary).read(version, 9);
  ASSERT_EQ(version[8], 1);  // really the old format

  rapidjson::Document old_doc, new_doc;
  convert(old_dump, dir_.path("v1.json"), &old_doc);
  convert(new_dump, dir_.path("v2.json"), &new_doc);
  ASSERT_EQ(old_doc["threads"].Size(), 2u);
  ASSERT_EQ(new_doc["threads"].Size(), 2u);
  for (rapidjson::SizeType t = 0; t < 2; ++t) {
    const auto& old_samples = old_doc["threads"][t]["samples"];
    const auto& new_samples = new_doc["threads"][t]["samples"];
    ASSERT_EQ(old_samples["length"].GetUint(), 36u);  // 30 samples, 6 repeats
    ASSERT_EQ(new_samples["length"].GetUint(), 36u);
    for (rapidjson::SizeType i = 0; i < 36; ++i) {
      EXPECT_DOUBLE_EQ(old_samples["timeDeltas"][i].GetDouble(),
                       new_samples["timeDeltas"][i].GetDouble());
      EXPECT_EQ(old_samples["threadCPUDelta"][i].GetUint64(),
                new_samples["threadCPUDelta"][i].GetUint64());
      const auto old_stack = symtest::sample_stack(old_doc, t, i);
      const auto new_stack = symtest::sample_stack(new_doc, t, i);
      ASSERT_EQ(old_stack.size(), new_stack.size()) << "thread " << t << " sample " << i;
      ASSERT_FALSE(old_stack.empty());
      for (size_t f = 0; f < old_stack.size(); ++f) {
        EXPECT_EQ(old_stack[f].func, new_stack[f].func);
        EXPECT_EQ(old_stack[f].category, new_stack[f].category);
      }
    }
  }
  // And the functions are the real ones: the old dump is symbolicated, not just read.
  const auto stack = symtest::sample_stack(old_doc, 1, 0);  // thread 2's first sample: n = 1
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(stack[0].func, "symtest::caller_function()");
  EXPECT_EQ(stack[1].func, "symtest::leaf_function(int)");
}

}  // namespace
