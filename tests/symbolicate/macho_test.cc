// Issue 26: symbolicate reads a macOS dump's Mach-O modules. The test binaries
// (testdata/macho, generate.sh) are real Mach-O dylibs made by Debian's clang and ld64.lld for
// x86_64 and arm64, and a fat file holding both; the dumps naming them are synthetic. Names come
// from LC_SYMTAB (underscore stripped, C++ demangled), lines from the .dSYM's __debug_line, a
// module is matched by its LC_UUID, and an address outside every function symbol stays
// module+0x....
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "symbolize/debug_file_locator.h"
#include "symbolize/macho/macho_file.h"
#include "symbolize/module_symbolizer.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;
using inprof::symbolicate::MachOFile;
using inprof::symbolicate::parse_macho;
using inprof::symbolicate::read_macho_file;

const std::string kDir = MACHO_TESTDATA;

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> uuid_bytes(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The vaddr of the symbol named `raw` (as stored, with its underscore).
uint64_t symbol_addr(const MachOFile& file, const std::string& raw) {
  for (const auto& s : file.symbols) {
    if (s.name == raw) return s.addr;
  }
  return 0;
}

TEST(MachOFile, ReadsUuidArchAndFunctionSymbolsOfBothArchitectures) {
  std::string why;
  auto x86 = read_macho_file(kDir + "/demo_x86_64.dylib", "x86_64", &why);
  ASSERT_TRUE(x86) << why;
  EXPECT_EQ(x86->arch, "x86_64");
  // As llvm-objdump --macho -p prints it.
  EXPECT_EQ(x86->uuid, "4c4c446855553144a10002b3a2ff63f0");
  ASSERT_EQ(x86->symbols.size(), 4u);
  // llvm-nm -n: leaf 0x240, middle 0x250, hidden (local) 0x260, start 0x270; __text ends 0x280.
  EXPECT_EQ(x86->symbols[0].name, "__ZN4demo4leafEi");
  EXPECT_EQ(x86->symbols[0].addr, 0x240u);
  EXPECT_EQ(x86->symbols[0].end, 0x250u);
  EXPECT_EQ(x86->symbols[2].name, "__ZL6hiddeni");
  EXPECT_FALSE(x86->symbols[2].external);
  EXPECT_TRUE(x86->symbols[3].external);
  EXPECT_EQ(x86->symbols[3].end, 0x280u);  // the section's end
  EXPECT_EQ(x86->symbol_at(0x23f), nullptr);
  EXPECT_EQ(x86->symbol_at(0x280), nullptr);
  ASSERT_NE(x86->symbol_at(0x265), nullptr);
  EXPECT_EQ(x86->symbol_at(0x265)->name, "__ZL6hiddeni");

  auto arm = read_macho_file(kDir + "/demo_arm64.dylib", "aarch64", &why);
  ASSERT_TRUE(arm) << why;
  EXPECT_EQ(arm->arch, "aarch64");
  EXPECT_EQ(arm->uuid, "4c4c44c255553144a1e42e9f44503efe");
  EXPECT_EQ(symbol_addr(*arm, "__ZN4demo6middleEi"), 0x25cu);
  // A thin file for another architecture is refused.
  EXPECT_FALSE(read_macho_file(kDir + "/demo_arm64.dylib", "x86_64", &why));
  EXPECT_NE(why.find("aarch64"), std::string::npos) << why;
}

TEST(MachOFile, AFatFileGivesTheSliceOfTheDumpsArchitecture) {
  std::string why;
  auto arm = read_macho_file(kDir + "/demo_fat.dylib", "aarch64", &why);
  ASSERT_TRUE(arm) << why;
  EXPECT_EQ(arm->uuid, "4c4c44c255553144a1e42e9f44503efe");
  EXPECT_GT(arm->slice_offset, 0u);
  auto x86 = read_macho_file(kDir + "/demo_fat.dylib", "x86_64", &why);
  ASSERT_TRUE(x86) << why;
  EXPECT_EQ(x86->uuid, "4c4c446855553144a10002b3a2ff63f0");
  EXPECT_FALSE(read_macho_file(kDir + "/demo_fat.dylib", "riscv64", &why));
  EXPECT_NE(why.find("no riscv64 slice"), std::string::npos) << why;
}

// Every prefix of each file, and every single-byte corruption of the header and load commands,
// is read without a crash (ASan/UBSan builds check the bounds), failing with one line.
TEST(MachOFile, TruncatedOrCorruptFilesGiveOneLineNeverACrash) {
  for (const char* name : {"demo_x86_64.dylib", "demo_fat.dylib"}) {
    std::vector<uint8_t> bytes = file_bytes(kDir + "/" + name);
    ASSERT_GT(bytes.size(), 4096u);
    size_t failures = 0;
    for (size_t n = 0; n < bytes.size(); n += (n < 1024 ? 1 : 97)) {
      std::string why;
      auto file = parse_macho(std::span<const uint8_t>(bytes.data(), n), "x86_64", &why);
      if (!file) {
        ++failures;
        EXPECT_FALSE(why.empty());
        EXPECT_EQ(why.find('\n'), std::string::npos);
      }
    }
    EXPECT_GT(failures, 0u);
    for (size_t i = 0; i < 1024 && i < bytes.size(); ++i) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= 0xa5;
      std::string why;
      auto file = parse_macho(bad, "x86_64", &why);
      if (!file) {
        EXPECT_FALSE(why.empty());
      }
    }
  }
  std::string why;
  EXPECT_FALSE(parse_macho(std::vector<uint8_t>{0x7f, 'E', 'L', 'F', 2, 1, 1, 0}, "", &why));
  EXPECT_NE(why.find("not a 64-bit Mach-O"), std::string::npos) << why;
}

// Without the dump's architecture (the symbol server's lookups), a fat file's slice is the one
// whose UUID the dump recorded; the .dSYM next to the x86_64 dylib is found and gives lines.
TEST(MachOFile, TheLocatorPicksTheSliceWithTheDumpsUuidAndFindsTheDsym) {
  ModuleRecord rec;
  rec.path = kDir + "/demo_fat.dylib";
  rec.build_id = uuid_bytes("4c4c44c255553144a1e42e9f44503efe");
  std::string why;
  auto files = inprof::symbolicate::locate_module_files(rec, {}, &why);
  ASSERT_TRUE(files) << why;
  EXPECT_TRUE(files->macho);
  EXPECT_EQ(files->arch, "aarch64");
  auto symbolizer = inprof::symbolicate::ModuleSymbolizer::open(*files, &why);
  ASSERT_TRUE(symbolizer) << why;
  const auto& at = symbolizer->lookup(0x278);
  ASSERT_EQ(at.frames.size(), 1u);
  EXPECT_EQ(at.frames[0].function, "hidden(int)");
  ASSERT_TRUE(at.symbol);
  EXPECT_EQ(at.symbol->vaddr, 0x274u);
  EXPECT_EQ(at.symbol->size, 0x18u);
  EXPECT_TRUE(symbolizer->lookup(0x2a4).frames.empty());  // past __text

  rec.path = kDir + "/demo_x86_64.dylib";
  rec.build_id = uuid_bytes("4c4c446855553144a10002b3a2ff63f0");
  files = inprof::symbolicate::locate_module_files(rec, {}, &why);
  ASSERT_TRUE(files) << why;
  EXPECT_EQ(files->debug,
            kDir + "/demo_x86_64.dylib.dSYM/Contents/Resources/DWARF/demo_x86_64.dylib");
  EXPECT_EQ(files->origin, "dSYM next to the binary");
}

// A .dSYM of another build (its UUID changed by one byte) is never used: the module keeps its
// names from the binary, gets no lines, and the rejection says why.
TEST(MachOFile, ADsymWithAnotherUuidIsRefused) {
  symtest::TempDir dir;
  const std::string dsym_dir = dir.path("demo_x86_64.dylib.dSYM/Contents/Resources/DWARF");
  ASSERT_EQ(std::system(("mkdir -p '" + dsym_dir + "'").c_str()), 0);
  std::vector<uint8_t> binary = file_bytes(kDir + "/demo_x86_64.dylib");
  std::vector<uint8_t> dsym =
      file_bytes(kDir + "/demo_x86_64.dylib.dSYM/Contents/Resources/DWARF/demo_x86_64.dylib");
  const std::vector<uint8_t> uuid = uuid_bytes("4c4c446855553144a10002b3a2ff63f0");
  auto at = std::search(dsym.begin(), dsym.end(), uuid.begin(), uuid.end());
  ASSERT_NE(at, dsym.end());
  at[15] ^= 1;
  std::ofstream(dir.path("demo_x86_64.dylib"), std::ios::binary)
      .write(reinterpret_cast<const char*>(binary.data()), binary.size());
  std::ofstream(dsym_dir + "/demo_x86_64.dylib", std::ios::binary)
      .write(reinterpret_cast<const char*>(dsym.data()), dsym.size());

  ModuleRecord rec;
  rec.path = dir.path("demo_x86_64.dylib");
  rec.build_id = uuid;
  std::string why;
  auto files = inprof::symbolicate::locate_module_files(rec, {}, &why);
  ASSERT_TRUE(files) << why;
  EXPECT_EQ(files->binary, rec.path);
  EXPECT_TRUE(files->debug.empty());
  ASSERT_EQ(files->rejected.size(), 1u);
  EXPECT_NE(files->rejected[0].find("UUID mismatch: " + dsym_dir +
                                    "/demo_x86_64.dylib has "
                                    "4c4c446855553144a10002b3a2ff63f1"),
            std::string::npos)
      << files->rejected[0];
  auto symbolizer = inprof::symbolicate::ModuleSymbolizer::open(*files, &why);
  ASSERT_TRUE(symbolizer) << why;
  const auto& leaf = symbolizer->lookup(0x244);
  ASSERT_EQ(leaf.frames.size(), 1u);
  EXPECT_EQ(leaf.frames[0].function, "demo::leaf(int)");
  EXPECT_EQ(leaf.frames[0].line, 0u);
}

struct Symbolicated {
  std::vector<symtest::FrameView> stack;  // of the only sample
  std::string err;
};

// A macOS dump of `arch` whose one sample's stack is `vaddrs` (leaf first) in the module at
// `path` loaded with a slide, recorded with the UUID `uuid`.
Symbolicated symbolicate_sample(const std::string& path, const std::string& arch,
                                const std::string& uuid, const std::vector<uint64_t>& vaddrs) {
  constexpr uint64_t kSlide = 0x104a8c000;
  symtest::TempDir dir;
  Symbolicated out;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    ProcessRecord p = symtest::test_process();
    p.arch = arch;
    p.os = "macos";
    d.process(p);
    ModuleRecord rec;
    rec.id = 1;
    rec.start = kSlide;
    rec.end = kSlide + 0x4000;
    rec.load_bias = kSlide;
    rec.path = path;
    rec.build_id = uuid_bytes(uuid);
    d.module(rec);
    d.thread_start(1, 0, "main", kThreadMain);
    std::vector<uint64_t> frames;
    for (uint64_t v : vaddrs) frames.push_back(kSlide + v);
    d.sample(1, 1'000'000, frames);
    d.end(2'000'000);
    d.close();
  }
  if (symtest::symbolicate_in_process(dir.path("d.inprof"), dir.path("p.json"), &out.err) != 0) {
    return out;
  }
  rapidjson::Document doc;
  if (symtest::load_json(dir.path("p.json"), &doc)) out.stack = symtest::sample_stack(doc, 0, 0);
  return out;
}

std::vector<std::string> names(const Symbolicated& s) {
  std::vector<std::string> out;
  for (const auto& f : s.stack) out.push_back(f.func);
  return out;
}

TEST(MachOSymbolicate, NamesFramesOfAnX86_64DylibFromItsSymbolTable) {
  // Return addresses inside start, hidden and middle; the leaf inside leaf; and 0x10, in the
  // Mach-O header: inside the module, outside every function.
  Symbolicated s =
      symbolicate_sample(kDir + "/demo_x86_64.dylib", "x86_64", "4c4c446855553144a10002b3a2ff63f0",
                         {0x244, 0x255, 0x268, 0x275, 0x10});
  ASSERT_EQ(s.stack.size(), 5u) << s.err;
  EXPECT_EQ(names(s), (std::vector<std::string>{"demo_x86_64.dylib+0x10", "start", "hidden(int)",
                                                "demo::middle(int)", "demo::leaf(int)"}))
      << s.err;
  EXPECT_EQ(s.err.find("mismatch"), std::string::npos) << s.err;
  // Lines from the .dSYM next to the dylib (demo.cc: leaf on line 4, middle 5, hidden 8,
  // start 10); none for the address outside every function.
  EXPECT_EQ(s.stack[0].line, -1);
  const std::vector<int64_t> lines = {10, 8, 5, 4};
  for (size_t i = 1; i < s.stack.size(); ++i) {
    EXPECT_EQ(s.stack[i].line, lines[i - 1]) << s.stack[i].func;
    EXPECT_EQ(s.stack[i].file, "demo.cc") << s.stack[i].func;
  }
}

TEST(MachOSymbolicate, NamesFramesOfAnArm64SliceOfAFatFile) {
  // arm64: leaf 0x250, middle 0x25c, hidden 0x274, start 0x28c (llvm-nm -n).
  Symbolicated s = symbolicate_sample(kDir + "/demo_fat.dylib", "aarch64",
                                      "4c4c44c255553144a1e42e9f44503efe", {0x254, 0x260, 0x290});
  ASSERT_EQ(s.stack.size(), 3u) << s.err;
  EXPECT_EQ(names(s), (std::vector<std::string>{"start", "demo::middle(int)", "demo::leaf(int)"}))
      << s.err;
  EXPECT_EQ(s.stack[0].line, -1);  // no .dSYM for the arm64 slice: names only
}

TEST(MachOSymbolicate, AFileWithAnotherUuidIsRefusedInOneLine) {
  Symbolicated s = symbolicate_sample(kDir + "/demo_x86_64.dylib", "x86_64",
                                      "00112233445566778899aabbccddeeff", {0x244});
  ASSERT_EQ(s.stack.size(), 1u) << s.err;
  EXPECT_EQ(s.stack[0].func, "demo_x86_64.dylib+0x244");
  const size_t at = s.err.find("UUID mismatch: " + kDir + "/demo_x86_64.dylib has " +
                               "4c4c446855553144a10002b3a2ff63f0, the dump " +
                               "00112233445566778899aabbccddeeff");
  EXPECT_NE(at, std::string::npos) << s.err;
}

}  // namespace
