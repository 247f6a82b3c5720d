// Issue 22, items 11 and 12: the source view's embedded file texts (--sources), a profile written
// without symbols (--no-symbols), and samply's local symbol-server API that --open serves
// (/symbolicate/v5, /source/v1, /asm/v1): request and response shapes as samply's API.md gives
// them, and /source/v1 refusing a file that the profile's addresses do not resolve to.
#include "serve/symbol_server.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "symbolicate.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using inprof::symbolicate::ApiResponse;
using inprof::symbolicate::ProfileSymbolInfo;
using inprof::symbolicate::RunOptions;
using inprof::symbolicate::SymbolServer;
using namespace inprof::internal;
using rapidjson::Document;
using rapidjson::Value;

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

using symtest::read_file;

// A dump of the test executable: leaf_function's first byte as a leaf, under caller_function's
// call (a return address).
void write_dump(const std::string& path) {
  symtest::DumpFile d(path);
  d.process(symtest::test_process());
  d.module(symtest::self_module());
  d.thread_start(1, 0, "main", kThreadMain);
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  const uint64_t ret = symtest::caller_function();
  for (int i = 0; i < 3; ++i) d.sample(1, 1'000'000 * (i + 1), {leaf, ret});
  d.end(5'000'000);
  d.close();
}

struct Conversion {
  int status = -1;
  std::string err;
  Document profile;
  ProfileSymbolInfo info;
};

void run(const std::string& dump, const std::string& out, RunOptions options, Conversion* r) {
  options.dump_path = dump;
  options.output_path = out;
  std::FILE* f = std::tmpfile();
  r->status = inprof::symbolicate::run_symbolicate(options, f, &r->info);
  std::rewind(f);
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) r->err.append(buffer, n);
  std::fclose(f);
  ASSERT_EQ(r->status, 0) << r->err;
  ASSERT_TRUE(symtest::load_json(out, &r->profile));
  std::vector<std::string> problems = symtest::check_structure(r->profile);
  // --no-symbols says so: meta.symbolicated is false on purpose.
  if (options.no_symbols) std::erase(problems, std::string("not symbolicated"));
  EXPECT_EQ(problems, std::vector<std::string>{});
}

std::string string_at(const Document& doc, const Value& index) {
  return doc["shared"]["stringArray"][index.GetUint()].GetString();
}

// The frame address (frameTable.address) of the profile's frame whose function is named
// `name`; -1 if none.
int64_t frame_address_of(const Document& doc, const std::string& name) {
  const Value& frames = doc["shared"]["frameTable"];
  const Value& funcs = doc["shared"]["funcTable"];
  for (rapidjson::SizeType i = 0; i < frames["length"].GetUint(); ++i) {
    const Value& func_name = funcs["name"][frames["func"][i].GetUint()];
    if (string_at(doc, func_name).find(name) != std::string::npos) {
      return frames["address"][i].GetInt64();
    }
  }
  return -1;
}

Document parse(const ApiResponse& r) {
  Document doc;
  doc.Parse(r.body.c_str());
  EXPECT_FALSE(doc.HasParseError()) << r.body;
  return doc;
}

class SymbolServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_dump(dir_.path("d.inprof"));
    RunOptions options;
    ASSERT_NO_FATAL_FAILURE(run(dir_.path("d.inprof"), dir_.path("p.json"), options, &run_));
    const Value& lib = run_.profile["libs"][0];
    debug_name_ = lib["debugName"].GetString();
    breakpad_id_ = lib["breakpadId"].GetString();
  }
  std::string memory_map_request(const std::vector<uint64_t>& offsets) const {
    std::string stack;
    for (uint64_t o : offsets)
      stack += (stack.empty() ? "" : ",") + ("[0," + std::to_string(o) + "]");
    return R"({"jobs":[{"memoryMap":[[")" + debug_name_ + R"(",")" + breakpad_id_ +
           R"("],["nosuch.so","0123456789ABCDEF0123456789ABCDEF0"]],"stacks":[[)" + stack +
           R"(,[1,16]]]}]})";
  }

  symtest::TempDir dir_;
  Conversion run_;
  std::string debug_name_, breakpad_id_;
};

TEST_F(SymbolServerTest, LibsCarryTheIdsTheServerIsAskedBy) {
  const Value& lib = run_.profile["libs"][0];
  EXPECT_EQ(std::string(lib["debugName"].GetString()), std::string(lib["name"].GetString()));
  EXPECT_EQ(breakpad_id_.size(), 33u);
  EXPECT_TRUE(lib["codeId"].IsString());
  EXPECT_GT(run_.profile["shared"]["nativeSymbols"]["length"].GetUint(), 0u);
  EXPECT_GE(frame_address_of(run_.profile, "leaf_function"), 0);
}

TEST_F(SymbolServerTest, SymbolicateV5AnswersEachFrameAndFoundModules) {
  const int64_t leaf = frame_address_of(run_.profile, "leaf_function");
  ASSERT_GE(leaf, 0);
  SymbolServer server(run_.info);
  ApiResponse r = server.handle("/symbolicate/v5", memory_map_request({uint64_t(leaf)}));
  ASSERT_EQ(r.status, 200) << r.body;
  Document doc = parse(r);
  ASSERT_TRUE(doc["results"].IsArray());
  ASSERT_EQ(doc["results"].Size(), 1u);
  const Value& result = doc["results"][0];
  const Value& stack = result["stacks"][0];
  ASSERT_EQ(stack.Size(), 2u);
  const Value& f = stack[0];
  EXPECT_EQ(f["frame"].GetUint(), 0u);
  EXPECT_EQ(std::string(f["module"].GetString()), debug_name_);
  EXPECT_EQ(std::string(f["module_offset"].GetString()), hex(uint64_t(leaf)));
  EXPECT_NE(std::string(f["function"].GetString()).find("leaf_function"), std::string::npos);
  EXPECT_EQ(std::string(f["function_offset"].GetString()), "0x0");  // its first byte
  EXPECT_TRUE(f["function_size"].IsString());
  EXPECT_NE(std::string(f["file"].GetString()).find("test_targets.cc"), std::string::npos);
  // The line the profile gives the leaf's frame (its first instruction's, in the body).
  const std::vector<symtest::FrameView> stack0 = symtest::sample_stack(run_.profile, 0, 0);
  ASSERT_FALSE(stack0.empty());
  EXPECT_EQ(f["line"].GetInt(), stack0.back().line);
  EXPECT_GE(f["line"].GetInt(), symtest::kLeafFunctionLine);
  // A module the profile does not have: its frame is echoed unnamed, and it is not found.
  EXPECT_EQ(std::string(stack[1]["module_offset"].GetString()), "0x10");
  EXPECT_FALSE(stack[1].HasMember("function"));
  EXPECT_TRUE(result["found_modules"][(debug_name_ + "/" + breakpad_id_).c_str()].GetBool());
  EXPECT_FALSE(result["found_modules"]["nosuch.so/0123456789ABCDEF0123456789ABCDEF0"].GetBool());
}

TEST_F(SymbolServerTest, SymbolicateV5ListsInlinedFunctionsInnermostFirst) {
  const uint64_t ret = symtest::outer_with_inline() - 1;  // the call inside inlined_helper
  const uint64_t relative = ret - run_.info.lib_modules[0].start;
  SymbolServer server(run_.info);
  ApiResponse r = server.handle("/symbolicate/v5", memory_map_request({relative}));
  ASSERT_EQ(r.status, 200) << r.body;
  Document doc = parse(r);
  const Value& f = doc["results"][0]["stacks"][0][0];
  EXPECT_NE(std::string(f["function"].GetString()).find("outer_with_inline"), std::string::npos);
  EXPECT_EQ(f["line"].GetInt(), symtest::kOuterCallsHelperLine);
  ASSERT_TRUE(f.HasMember("inlines")) << r.body;
  const Value& inl = f["inlines"][0];
  EXPECT_NE(std::string(inl["function"].GetString()).find("inlined_helper"), std::string::npos);
  EXPECT_EQ(inl["line"].GetInt(), symtest::kInlinedCallLine);
}

TEST_F(SymbolServerTest, SourceV1ServesAFileTheProfilesAddressResolvesTo) {
  const int64_t leaf = frame_address_of(run_.profile, "leaf_function");
  SymbolServer server(run_.info);
  const std::string file = __FILE__;
  const std::string targets = file.substr(0, file.rfind('/')) + "/test_targets.cc";
  ApiResponse r =
      server.handle("/source/v1", R"({"debugName":")" + debug_name_ + R"(","debugId":")" +
                                      breakpad_id_ + R"(","moduleOffset":")" + hex(uint64_t(leaf)) +
                                      R"(","file":")" + targets + R"("})");
  ASSERT_EQ(r.status, 200) << r.body;
  Document doc = parse(r);
  EXPECT_TRUE(doc["symbolsLastModified"].IsNull());
  EXPECT_TRUE(doc["sourceLastModified"].IsNull());
  EXPECT_EQ(std::string(doc["file"].GetString()), targets);
  EXPECT_EQ(std::string(doc["source"].GetString()), read_file(targets));
}

TEST_F(SymbolServerTest, SourceV1RefusesAFileTheProfileDoesNotReference) {
  const int64_t leaf = frame_address_of(run_.profile, "leaf_function");
  SymbolServer server(run_.info);
  auto request = [&](uint64_t offset, const std::string& file) {
    return R"({"debugName":")" + debug_name_ + R"(","debugId":")" + breakpad_id_ +
           R"(","moduleOffset":")" + hex(offset) + R"(","file":")" + file + R"("})";
  };
  // A file no address resolves to, asked with a real frame address.
  ApiResponse other = server.handle("/source/v1", request(uint64_t(leaf), "/etc/passwd"));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_TRUE(parse(other)["error"].IsString());
  EXPECT_EQ(other.body.find("root:"), std::string::npos);
  // The right file, but through an address that is no frame of the profile.
  const std::string file = __FILE__;
  const std::string targets = file.substr(0, file.rfind('/')) + "/test_targets.cc";
  ApiResponse not_a_frame = server.handle("/source/v1", request(uint64_t(leaf) + 1, targets));
  EXPECT_EQ(not_a_frame.status, 403) << not_a_frame.body;
  // A library the profile does not have; a malformed request.
  ApiResponse unknown = server.handle(
      "/source/v1", R"({"debugName":"x","debugId":"y","moduleOffset":"0x0","file":"/etc/passwd"})");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(server.handle("/source/v1", "[1,2").status, 400);
  EXPECT_EQ(server.handle("/nosuch/v1", "{}").status, 404);
}

TEST_F(SymbolServerTest, AsmV1DisassemblesAFunction) {
  const Value& symbols = run_.profile["shared"]["nativeSymbols"];
  uint64_t start = 0, size = 0;
  for (rapidjson::SizeType i = 0; i < symbols["length"].GetUint(); ++i) {
    if (string_at(run_.profile, symbols["name"][i]).find("leaf_function") != std::string::npos) {
      start = symbols["address"][i].GetUint64();
      size = symbols["functionSize"][i].GetUint64();
    }
  }
  ASSERT_GT(size, 0u);
  SymbolServer server(run_.info);
  ApiResponse r = server.handle("/asm/v1", R"({"debugName":")" + debug_name_ + R"(","debugId":")" +
                                               breakpad_id_ + R"(","startAddress":")" + hex(start) +
                                               R"(","size":")" + hex(size) + R"("})");
#if !defined(__x86_64__) && !defined(__aarch64__)
  GTEST_SKIP() << "no disassembler for this architecture";
#endif
  ASSERT_EQ(r.status, 200) << r.body;
  Document doc = parse(r);
  EXPECT_EQ(std::string(doc["startAddress"].GetString()), hex(start));
  EXPECT_EQ(std::string(doc["size"].GetString()), hex(size));
  EXPECT_TRUE(doc["arch"].IsString());
  ASSERT_TRUE(doc["syntax"].IsArray());
  const Value& insns = doc["instructions"];
  ASSERT_TRUE(insns.IsArray());
  ASSERT_GT(insns.Size(), 1u);
  int64_t previous = -1;
  for (const Value& insn : insns.GetArray()) {
    ASSERT_TRUE(insn.IsArray());
    ASSERT_EQ(insn.Size(), 1 + doc["syntax"].Size());
    ASSERT_TRUE(insn[0].IsUint());
    EXPECT_GT(int64_t(insn[0].GetUint()), previous);
    EXPECT_LT(insn[0].GetUint(), size);
    previous = insn[0].GetUint();
    EXPECT_GT(std::string(insn[1].GetString()).size(), 1u);
  }
  EXPECT_EQ(insns[0][0].GetUint(), 0u);
  // Too large, and not hex.
  EXPECT_EQ(
      server
          .handle("/asm/v1", R"({"debugName":")" + debug_name_ + R"(","debugId":")" + breakpad_id_ +
                                 R"(","startAddress":"0x0","size":"0x10000000"})")
          .status,
      400);
  EXPECT_EQ(server.handle("/asm/v1", R"({"startAddress":"zz","size":"0x10"})").status, 400);
}

TEST(NoSymbols, FramesStayAddressesAndTheServerNamesThem) {
  symtest::TempDir dir;
  write_dump(dir.path("d.inprof"));
  RunOptions options;
  options.no_symbols = true;
  Conversion r;
  ASSERT_NO_FATAL_FAILURE(run(dir.path("d.inprof"), dir.path("p.json"), options, &r));
  EXPECT_FALSE(r.profile["meta"]["symbolicated"].GetBool());
  EXPECT_EQ(frame_address_of(r.profile, "leaf_function"), -1);
  EXPECT_NE(r.err.find("left as module+0x... (--no-symbols)"), std::string::npos) << r.err;
  // The leaf's frame: named lib+0x..., with its address, which the server names.
  std::vector<symtest::FrameView> stack = symtest::sample_stack(r.profile, 0, 0);
  ASSERT_FALSE(stack.empty());
  const symtest::FrameView& leaf = stack.back();
  EXPECT_EQ(leaf.func.find(leaf.lib + "+0x"), 0u) << leaf.func;
  ASSERT_GE(leaf.address, 0);
  const Value& lib = r.profile["libs"][0];
  SymbolServer server(r.info);
  ApiResponse answer = server.handle(
      "/symbolicate/v5", std::string(R"({"memoryMap":[[")") + lib["debugName"].GetString() +
                             R"(",")" + lib["breakpadId"].GetString() + R"("]],"stacks":[[[0,)" +
                             std::to_string(leaf.address) + "]]]}");
  ASSERT_EQ(answer.status, 200) << answer.body;
  Document doc = parse(answer);
  EXPECT_NE(
      std::string(doc["results"][0]["stacks"][0][0]["function"].GetString()).find("leaf_function"),
      std::string::npos)
      << answer.body;
}

// The text of sources.content for the file whose name ends in `suffix`; "<none>" if null,
// "<missing>" if no such file.
std::string content_of(const Document& doc, const std::string& suffix) {
  const Value& sources = doc["shared"]["sources"];
  for (rapidjson::SizeType i = 0; i < sources["length"].GetUint(); ++i) {
    const std::string name = string_at(doc, sources["filename"][i]);
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const Value& c = sources["content"][i];
      return c.IsNull() ? "<none>" : c.GetString();
    }
  }
  return "<missing>";
}

TEST(Sources, TheFilesSamplesTouchAreEmbeddedUnlessTurnedOffOrTooLarge) {
  symtest::TempDir dir;
  write_dump(dir.path("d.inprof"));
  const std::string file = __FILE__;
  const std::string targets = read_file(file.substr(0, file.rfind('/')) + "/test_targets.cc");
  ASSERT_GT(targets.size(), 1024u);  // the cap below must leave it out

  Conversion on;
  ASSERT_NO_FATAL_FAILURE(run(dir.path("d.inprof"), dir.path("on.json"), RunOptions{}, &on));
  EXPECT_EQ(content_of(on.profile, "/test_targets.cc"), targets);
  EXPECT_NE(on.err.find("files embedded for the source view"), std::string::npos) << on.err;

  RunOptions no;
  no.sources.enabled = false;
  Conversion off;
  ASSERT_NO_FATAL_FAILURE(run(dir.path("d.inprof"), dir.path("off.json"), no, &off));
  EXPECT_EQ(content_of(off.profile, "/test_targets.cc"), "<none>");

  RunOptions small;
  small.sources.max_file_bytes = 1024;
  Conversion capped;
  ASSERT_NO_FATAL_FAILURE(run(dir.path("d.inprof"), dir.path("capped.json"), small, &capped));
  // What the source view then shows says why (issue 45, item 8).
  EXPECT_EQ(content_of(capped.profile, "/test_targets.cc"),
            "// inprof: this file's text is not in the profile: it is larger than "
            "--sources-max-file (1 KiB).\n");
  EXPECT_NE(capped.err.find("over the per-file cap"), std::string::npos) << capped.err;

  RunOptions total;
  total.sources.max_total_bytes = 1;
  Conversion over;
  ASSERT_NO_FATAL_FAILURE(run(dir.path("d.inprof"), dir.path("over.json"), total, &over));
  EXPECT_EQ(
      content_of(over.profile, "/test_targets.cc").rfind("// inprof: this file's text is not", 0),
      0u);
  EXPECT_NE(over.err.find("past the total cap"), std::string::npos) << over.err;
}

TEST(Sources, CommandLineFlags) {
  symtest::TempDir dir;
  write_dump(dir.path("d.inprof"));
  std::string err;
  EXPECT_EQ(symtest::run_symbolicate_binary(
                {dir.path("d.inprof"), "-o", dir.path("p.json"), "--no-sources"}, &err),
            0)
      << err;
  Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("p.json"), &doc));
  EXPECT_EQ(content_of(doc, "/test_targets.cc"), "<none>");
  EXPECT_EQ(symtest::run_symbolicate_binary(
                {dir.path("d.inprof"), "-o", dir.path("p.json"), "--sources-max-file", "x"}, &err),
            2);
  EXPECT_NE(err.find("--sources-max-file needs a size"), std::string::npos) << err;
}

}  // namespace
