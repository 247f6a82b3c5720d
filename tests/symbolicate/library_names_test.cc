// A library is named by the file that was mapped. Dumps written before the library resolved the
// loader's links name the link (liblzma.so.5 for liblzma.so.5.4.1): symbolicate follows it when
// the file it leads to is the module's own build, and keeps the recorded name otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

class LibraryNamesTest : public ::testing::Test {
 protected:
  // Symbolicates one sample in `module` (the test executable's code, under whatever record).
  void convert(const ModuleRecord& module, uint64_t address) {
    {
      symtest::DumpFile d(dir_.path("t.inprof"));
      d.process(symtest::test_process());
      d.module(module);
      d.sample(1, 1'000'000, {address});
      d.close();
    }
    std::string err;
    ASSERT_EQ(symtest::symbolicate_in_process(dir_.path("t.inprof"), dir_.path("t.json"), &err), 0)
        << err;
    ASSERT_TRUE(symtest::load_json(dir_.path("t.json"), &doc_));
    for (const std::string& p : symtest::check_structure(doc_)) ADD_FAILURE() << p;
  }

  std::string lib(const char* field) const { return doc_["libs"][0][field].GetString(); }

  // A link to the test executable, as the loader names a library (libfoo.so.1 -> libfoo.so.1.2).
  std::string link_to_self(const std::string& name) const {
    std::string link = dir_.path(name);
    EXPECT_EQ(::symlink(symtest::self_path().c_str(), link.c_str()), 0);
    return link;
  }

  symtest::TempDir dir_;
  rapidjson::Document doc_;
};

TEST_F(LibraryNamesTest, RecordedLinkIsNamedByTheFileItLeadsTo) {
  ModuleRecord module = symtest::self_module();
  module.flags = 0;
  module.path = link_to_self("libself.so.1");
  convert(module, reinterpret_cast<uintptr_t>(&symtest::leaf_function));
  const std::string file = std::filesystem::canonical(symtest::self_path()).string();
  const std::string name = std::filesystem::path(file).filename().string();
  EXPECT_EQ(lib("name"), name);
  EXPECT_EQ(lib("path"), file);
  EXPECT_EQ(lib("debugName"), name);
  EXPECT_EQ(lib("debugPath"), file);
  std::vector<symtest::FrameView> s = symtest::sample_stack(doc_, 0, 0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].func, "symtest::leaf_function(int)");
  EXPECT_EQ(s[0].lib, name);
}

TEST_F(LibraryNamesTest, LinkToAnotherBuildKeepsTheRecordedName) {
  ModuleRecord module = symtest::self_module();
  module.flags = 0;
  module.path = link_to_self("libother.so.1");
  for (uint8_t& b : module.build_id) b = static_cast<uint8_t>(~b);  // not this file's build
  const uint64_t address = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  convert(module, address);
  EXPECT_EQ(lib("name"), "libother.so.1");
  EXPECT_EQ(lib("path"), module.path);
  std::vector<symtest::FrameView> s = symtest::sample_stack(doc_, 0, 0);
  ASSERT_EQ(s.size(), 1u);
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%llx",
                static_cast<unsigned long long>(address - module.start));
  EXPECT_EQ(s[0].func, std::string("libother.so.1") + offset);
  EXPECT_EQ(s[0].lib, "libother.so.1");
}

}  // namespace
