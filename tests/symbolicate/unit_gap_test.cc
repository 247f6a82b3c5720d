// Code that no compilation unit covers (crt1.o's _start, between the units' ranges) gets no
// source file or line: libdwfl would place it in the unit before it, and that unit's line rows
// could then name it.
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "symbolize/module_symbolizer.h"
#include "test_support.h"

namespace {

using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::ModuleSymbolizer;

struct Entry {
  uint64_t address = 0;    // the ELF entry point: _start
  bool in_a_unit = false;  // libdwfl on its own finds a compilation unit there
};

// The entry point of the ELF file at `path`, as libdwfl sees it.
std::optional<Entry> entry_of(const std::string& path) {
  static char* debuginfo_path = nullptr;
  static const Dwfl_Callbacks callbacks = {
      .find_elf = nullptr,
      .find_debuginfo = dwfl_standard_find_debuginfo,
      .section_address = dwfl_offline_section_address,
      .debuginfo_path = &debuginfo_path,
  };
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (!dwfl) return std::nullopt;
  dwfl_report_begin(dwfl);
  Dwfl_Module* module = dwfl_report_elf(dwfl, "target", path.c_str(), -1, 0, true);
  dwfl_report_end(dwfl, nullptr, nullptr);
  std::optional<Entry> entry;
  Dwarf_Addr bias = 0;
  Elf* elf = module ? dwfl_module_getelf(module, &bias) : nullptr;
  GElf_Ehdr header;
  if (elf && gelf_getehdr(elf, &header)) {
    entry = Entry{header.e_entry, dwfl_module_addrdie(module, header.e_entry, &bias) != nullptr};
  }
  dwfl_end(dwfl);
  return entry;
}

TEST(UnitGapTest, StartBorrowsNoFileFromTheUnitBeforeIt) {
  const std::string target = UNIT_GAP_TARGET;
  std::optional<Entry> entry = entry_of(target);
  ASSERT_TRUE(entry);
  // The premise: libdwfl places _start in a unit (the one whose ranges precede the gap).
  ASSERT_TRUE(entry->in_a_unit);

  inprof::internal::ModuleRecord module;
  module.id = 1;
  module.path = target;
  module.load_bias = 0x40000000;
  module.start = module.load_bias;
  module.end = module.load_bias + (16u << 20);
  std::string why;
  std::unique_ptr<ModuleSymbolizer> symbolizer = ModuleSymbolizer::open(module, &why);
  ASSERT_TRUE(symbolizer) << why;
  AddressSymbol s = symbolizer->symbolize(entry->address);
  ASSERT_EQ(s.frames.size(), 1u);
  EXPECT_EQ(s.frames[0].function, "_start");  // named by the ELF symbol
  EXPECT_EQ(s.frames[0].file, "");
  EXPECT_EQ(s.frames[0].line, 0u);
  EXPECT_EQ(s.frames[0].decl_line, 0u);
  EXPECT_EQ(symbolizer->unit_of(entry->address), 0u);

  // And so in the profile.
  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("t.inprof"));
    d.process(symtest::test_process());
    d.module(module);
    d.sample(1, 1'000'000, {module.load_bias + entry->address});
    d.close();
  }
  std::string err;
  ASSERT_EQ(symtest::symbolicate_in_process(dir.path("t.inprof"), dir.path("t.json"), &err), 0)
      << err;
  rapidjson::Document doc;
  ASSERT_TRUE(symtest::load_json(dir.path("t.json"), &doc));
  std::vector<symtest::FrameView> stack = symtest::sample_stack(doc, 0, 0);
  ASSERT_EQ(stack.size(), 1u);
  EXPECT_EQ(stack[0].func, "_start");
  EXPECT_EQ(stack[0].file, "");
  EXPECT_EQ(stack[0].line, -1);
}

}  // namespace
