// What the viewer's "Profile Info" shows (issue 22, item 8): the machine's facts from the process
// record, and nothing made up when a dump from an older library has none.
#include <gtest/gtest.h>

#include <string>

#include "dump/byte_io.h"
#include "output_file.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

class ProfileInfoTest : public ::testing::Test {
 protected:
  void convert() {
    std::string out = dir_.path("p.json");
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dir_.path("p.inprof"), out, &err), 0) << err;
    ASSERT_TRUE(symtest::load_json(out, &doc_));
    for (const auto& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }
  std::string extra(const std::string& label) {
    for (const auto& e : doc_["meta"]["extra"][0]["entries"].GetArray()) {
      if (label == e["label"].GetString()) return e["value"].GetString();
    }
    return "(none)";
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(ProfileInfoTest, MachineFactsAndCommandLine) {
  ProcessRecord p = symtest::test_process();
  p.executable = "/opt/app/bin/server";
  p.command_line = {"/opt/app/bin/server", "--name", "two words", "it's"};
  p.os_name = "Debian GNU/Linux 12 (bookworm)";
  p.os_release = "6.1.0-27-amd64";
  p.cpu_name = "Test CPU 9000";
  p.physical_cpus = 4;
  p.logical_cpus = 8;
  p.memory_bytes = 16ull << 30;
  {
    symtest::DumpFile d(dir_.path("p.inprof"));
    d.process(p);
    d.thread_start(1, 0, "server", kThreadMain);
    d.sample(1, 1'000'000, {0x1000});
    d.end(2'000'000);
    d.close();
  }
  convert();
  const auto& meta = doc_["meta"];
  EXPECT_STREQ(meta["product"].GetString(), "server");
  EXPECT_STREQ(meta["arguments"].GetString(), "/opt/app/bin/server --name 'two words' 'it'\\''s'");
  EXPECT_STREQ(meta["oscpu"].GetString(), "Linux 6.1.0-27-amd64 x86_64");
  EXPECT_STREQ(meta["platform"].GetString(), "Linux");
  EXPECT_STREQ(meta["CPUName"].GetString(), "Test CPU 9000");
  EXPECT_EQ(meta["physicalCPUs"].GetUint(), 4u);
  EXPECT_EQ(meta["logicalCPUs"].GetUint(), 8u);
  EXPECT_EQ(meta["mainMemory"].GetUint64(), 16ull << 30);
  EXPECT_EQ(extra("Operating system"), "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(extra("Executable"), "/opt/app/bin/server");
}

// A process record as libraries wrote it before the machine's facts: it ends after the library
// version. It still reads, and the facts are simply absent.
TEST_F(ProfileInfoTest, AnOlderProcessRecordStillReads) {
  const ProcessRecord p = symtest::test_process();
  {
    inprof::Status status;
    auto writer = DumpWriter::create(OutputFile::create(dir_.path("p.inprof"), &status), &status);
    ASSERT_TRUE(writer) << status.message();
    std::vector<uint8_t> payload;
    {
      ByteWriter w(&payload);
      w.varint(p.pid);
      w.varint(p.start_unix_ns);
      w.varint(p.interval_ns);
      w.string(p.arch);
      w.string(p.os);
      w.string(p.executable);
      w.varint(p.command_line.size());
      for (const auto& arg : p.command_line) w.string(arg);
      w.string(p.library_version);
    }
    writer->add_payload(RecordType::kProcess, payload);
    writer->add(RecordType::kThreadStart, ThreadRecord{1, 0, kThreadMain, "main"});
    writer->add(RecordType::kEnd, EndRecord{1'000'000});
    ASSERT_TRUE(writer->close().ok());
  }
  convert();
  const auto& meta = doc_["meta"];
  EXPECT_DOUBLE_EQ(meta["interval"].GetDouble(), 1.0);
  EXPECT_STREQ(meta["oscpu"].GetString(), "Linux x86_64");
  EXPECT_FALSE(meta.HasMember("CPUName"));
  EXPECT_FALSE(meta.HasMember("physicalCPUs"));
  EXPECT_FALSE(meta.HasMember("logicalCPUs"));
  EXPECT_FALSE(meta.HasMember("mainMemory"));
  EXPECT_EQ(extra("Operating system"), "(none)");
}

}  // namespace
