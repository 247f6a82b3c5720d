// Functions GCC split into a hot part and a "name.cold" part (cold_split_target.cc): every
// address of either part is named as the function, whichever part was looked up first, while
// the native symbol stays the part's own. The .cold part lies lower than the hot one, and a
// function with internal linkage has no DW_AT_linkage_name: naming it by the ELF symbol at its
// lowest address called the whole function "f() [clone .cold]" (issue 22, item 1).
#include <gtest/gtest.h>

#include <map>

#include "code_layout.h"
#include "symbolize/demangle.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/module_symbolizer.h"

namespace {

using inprof::symbolicate::demangle;
using inprof::symbolicate::ModuleSymbolizer;

struct SplitFunction {
  symtest::FunctionSymbol hot, cold;
};

// The target is built by the compiler of this file: clang splits no .cold parts off without a
// profile to guide it.
#if defined(__clang__)
constexpr bool kNoColdParts = true;
#else
constexpr bool kNoColdParts = false;
#endif
constexpr const char* kNoColdPartsWhy = "clang makes no .cold parts (GCC's hot/cold splitting)";

std::vector<SplitFunction> split_functions(const std::string& path) {
  std::map<std::string, symtest::FunctionSymbol> by_name;
  for (const auto& s : symtest::function_symbols(path)) by_name[s.name] = s;
  std::vector<SplitFunction> out;
  const std::string kCold = ".cold";
  for (const auto& [name, s] : by_name) {
    if (name.size() <= kCold.size() ||
        name.compare(name.size() - kCold.size(), kCold.size(), kCold)) {
      continue;
    }
    auto hot = by_name.find(name.substr(0, name.size() - kCold.size()));
    if (hot != by_name.end()) out.push_back({hot->second, s});
  }
  return out;
}

std::unique_ptr<ModuleSymbolizer> open(const std::string& path) {
  std::string why;
  auto elf = inprof::symbolicate::inspect_elf_file(path, &why);
  if (!elf) return nullptr;
  inprof::internal::ModuleRecord module;
  module.path = path;
  for (size_t i = 0; i + 1 < elf->build_id.size(); i += 2) {
    module.build_id.push_back(
        static_cast<uint8_t>(std::stoul(elf->build_id.substr(i, 2), nullptr, 16)));
  }
  return ModuleSymbolizer::open(module, &why);
}

TEST(ColdSplit, BothPartsAreNamedAsTheFunction) {
  if (kNoColdParts) GTEST_SKIP() << kNoColdPartsWhy;
  const std::vector<SplitFunction> split = split_functions(COLD_SPLIT_TARGET);
  // All five of the program's functions with internal linkage and an external one, at least.
  ASSERT_GE(split.size(), 5u) << "GCC split fewer functions than expected";
  size_t internal = 0;
  for (const auto& f : split) internal += f.hot.name.find("_GLOBAL__N_") != std::string::npos;
  EXPECT_GE(internal, 3u);

  // One handle meets the hot parts first, the other the .cold parts.
  for (bool cold_first : {false, true}) {
    auto symbolizer = open(COLD_SPLIT_TARGET);
    ASSERT_TRUE(symbolizer && symbolizer->has_dwarf());
    for (int pass = 0; pass < 2; ++pass) {
      const bool cold = (pass == 0) == cold_first;
      for (const auto& f : split) {
        const symtest::FunctionSymbol& part = cold ? f.cold : f.hot;
        const std::string function = demangle(f.hot.name.c_str());
        for (uint64_t a : {part.start, part.start + part.size / 2, part.start + part.size - 1}) {
          auto got = symbolizer->symbolize(a);
          ASSERT_FALSE(got.frames.empty()) << std::hex << a;
          EXPECT_EQ(got.frames[0].function, function) << std::hex << a << " in " << part.name;
          ASSERT_TRUE(got.symbol) << std::hex << a;
          EXPECT_EQ(got.symbol->name, demangle(part.name.c_str())) << std::hex << a;
          EXPECT_EQ(got.symbol->vaddr, part.start);
        }
      }
    }
  }
}

}  // namespace
