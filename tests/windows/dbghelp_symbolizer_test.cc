// The Windows symbolicate's module seam, run under Wine: a module's PE file is used only when its
// identity is the one recorded, and DbgHelp then names this very program's functions (its DWARF,
// which Wine's DbgHelp reads; an MSVC build would have a PDB).
// clang-format off
#include <windows.h>
// clang-format on

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sampling/module_lister.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/module_symbolizer.h"

namespace {

using inprof::internal::ModuleInfo;
using inprof::internal::ModuleRecord;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::locate_module_files;
using inprof::symbolicate::LocateOptions;
using inprof::symbolicate::ModuleSymbolizer;

extern "C" __attribute__((noinline)) int windows_symbolizer_probe(int x) {
  asm volatile("" ::: "memory");
  return x * 7 + 1;
}

// This program as the profiler's module lister records it.
ModuleInfo own_module() {
  auto lister = inprof::internal::ModuleLister::create();
  std::vector<ModuleInfo> modules;
  lister->list(modules);
  const auto probe = reinterpret_cast<uint64_t>(&windows_symbolizer_probe);
  for (const ModuleInfo& m : modules) {
    if (probe >= m.start && probe < m.end) return m;
  }
  ADD_FAILURE() << "no module holds the probe function";
  return {};
}

ModuleRecord record_of(const ModuleInfo& m) {
  ModuleRecord r;
  r.path = m.path;
  r.start = m.start;
  r.end = m.end;
  r.load_bias = m.load_bias;
  r.build_id = m.build_id;
  return r;
}

TEST(WindowsSymbolizer, NamesAFunctionOfTheRecordedModule) {
  const ModuleInfo self = own_module();
  ASSERT_EQ(self.build_id.size(), 20u) << "the build links with --build-id: a CodeView record";
  std::string why;
  auto files = locate_module_files(record_of(self), LocateOptions{}, &why);
  ASSERT_TRUE(files) << why;
  EXPECT_EQ(files->binary, self.path);
  EXPECT_EQ(files->debug, self.path) << "MinGW's DWARF is in the PE";
  auto symbolizer = ModuleSymbolizer::open(*files, &why);
  ASSERT_TRUE(symbolizer) << why;
  EXPECT_TRUE(symbolizer->has_dwarf());
  const uint64_t vaddr = reinterpret_cast<uint64_t>(&windows_symbolizer_probe) + 2 - self.load_bias;
  const AddressSymbol& symbol = symbolizer->lookup(vaddr);
  ASSERT_FALSE(symbol.frames.empty());
  EXPECT_EQ(symbol.frames[0].function, "windows_symbolizer_probe");
  EXPECT_GT(symbol.frames[0].line, 0u);
  ASSERT_TRUE(symbol.symbol);
  EXPECT_EQ(symbol.symbol->vaddr + self.load_bias,
            reinterpret_cast<uint64_t>(&windows_symbolizer_probe));
  EXPECT_EQ(windows_symbolizer_probe(1), 8);
}

TEST(WindowsSymbolizer, RefusesAFileWhoseIdentityDiffers) {
  ModuleRecord record = record_of(own_module());
  ASSERT_FALSE(record.build_id.empty());
  record.build_id[0] ^= 0xff;  // the same path, another build
  std::string why;
  EXPECT_FALSE(locate_module_files(record, LocateOptions{}, &why));
  EXPECT_NE(why.find("identity"), std::string::npos) << why;

  record.build_id.clear();  // nothing to prove a match with
  EXPECT_FALSE(locate_module_files(record, LocateOptions{}, &why));
}

TEST(WindowsSymbolizer, RefusesWhatIsNotAPeImage) {
  const std::string path = "not_a_module.exe";
  std::ofstream(path) << "MZ but nothing after";
  ModuleRecord record = record_of(own_module());
  record.path = path;
  std::string why;
  EXPECT_FALSE(locate_module_files(record, LocateOptions{}, &why));
  EXPECT_NE(why.find("not a PE image"), std::string::npos) << why;
  std::remove(path.c_str());
}

}  // namespace
