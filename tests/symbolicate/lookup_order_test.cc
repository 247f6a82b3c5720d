// A handle reads a function's inside the first time an address falls in it, and a unit's line
// table and file names when first needed: what an address gets must not depend on which
// addresses came before it. Three handles see the same addresses of libc (and of this test, C++
// with templates and inlining) in ascending, descending and interleaved order.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "code_layout.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/module_symbolizer.h"

namespace {

namespace fs = std::filesystem;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::ModuleSymbolizer;

std::string describe_lookup(const AddressSymbol& s) {
  std::string out = s.symbol ? s.symbol->name : "-";
  for (const auto& f : s.frames) {
    out += " > " + f.function + " @" + f.file + ":" + std::to_string(f.line) + " decl " +
           std::to_string(f.decl_line) + " key " + std::to_string(f.function_key);
  }
  return out;
}

TEST(LookupOrder, AnswersDoNotDependOnTheOrderOfLookups) {
  void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc_handle, nullptr);
  Dl_info info;
  ASSERT_NE(dladdr(dlsym(libc_handle, "qsort"), &info), 0);
  for (const std::string& path :
       {std::string(fs::canonical(info.dli_fname)), std::string(fs::canonical("/proc/self/exe"))}) {
    std::string why;
    auto elf = inprof::symbolicate::inspect_elf_file(path, &why);
    ASSERT_TRUE(elf) << why;
    inprof::internal::ModuleRecord module;
    module.path = path;
    for (size_t i = 0; i + 1 < elf->build_id.size(); i += 2) {
      module.build_id.push_back(
          static_cast<uint8_t>(std::stoul(elf->build_id.substr(i, 2), nullptr, 16)));
    }
    auto [text, text_size] = symtest::text_section(path);
    ASSERT_GT(text_size, 0u) << path;
    constexpr size_t kAddresses = 3000;
    std::vector<uint64_t> addresses;
    for (size_t i = 0; i < kAddresses; ++i) {
      addresses.push_back(text + 1 + (text_size - 2) * i / kAddresses);
    }
    std::vector<std::string> first(kAddresses), second(kAddresses), third(kAddresses);
    auto a = ModuleSymbolizer::open(module, &why);
    auto b = ModuleSymbolizer::open(module, &why);
    auto c = ModuleSymbolizer::open(module, &why);
    ASSERT_TRUE(a && b && c) << why;
    ASSERT_TRUE(a->has_dwarf()) << path;
    for (size_t i = 0; i < kAddresses; ++i) first[i] = describe_lookup(a->symbolize(addresses[i]));
    for (size_t i = kAddresses; i-- > 0;) second[i] = describe_lookup(b->symbolize(addresses[i]));
    for (size_t step : {7, 3, 1}) {  // every 7th, then every 3rd, then all: some twice
      for (size_t i = 0; i < kAddresses; i += step) {
        third[i] = describe_lookup(c->symbolize(addresses[i]));
      }
    }
    size_t with_inlines = 0;
    for (size_t i = 0; i < kAddresses; ++i) {
      EXPECT_EQ(first[i], second[i]) << path << " " << std::hex << addresses[i];
      EXPECT_EQ(first[i], third[i]) << path << " " << std::hex << addresses[i];
      with_inlines += first[i].find(" > ") != first[i].rfind(" > ");
    }
    EXPECT_GT(with_inlines, kAddresses / 20) << path << ": too few inlined calls to mean much";
  }
}

}  // namespace
