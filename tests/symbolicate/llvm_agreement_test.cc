// Agreement with llvm-symbolizer: for addresses spread over libc's code (its DWARF from Debian's
// libc6-dbg), the inline chain (function names, outermost to innermost) and each level's line are
// the ones llvm-symbolizer gives.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "elf_file.h"
#include "module_symbolizer.h"

namespace {

namespace fs = std::filesystem;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::ModuleSymbolizer;

std::string run(const std::string& command) {
  std::FILE* p = popen(command.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
  pclose(p);
  return out;
}

std::string llvm_symbolizer() {
  for (const char* name : {"llvm-symbolizer-14", "llvm-symbolizer"}) {
    if (!run(std::string("command -v ") + name).empty()) return name;
  }
  return {};
}

// .text's address and size in the ELF file at `path`, from readelf (binutils); size 0 if absent.
std::pair<uint64_t, uint64_t> text_section(const std::string& path) {
  std::istringstream sections(run("readelf -SW '" + path + "'"));
  std::string line;
  std::pair<uint64_t, uint64_t> text{0, 0};
  while (std::getline(sections, line)) {
    size_t at = line.find(" .text ");
    if (at == std::string::npos) continue;
    std::istringstream fields(line.substr(at + 7));
    std::string type, address, offset, size;
    fields >> type >> address >> offset >> size;
    text = {std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return text;
}

// "__GI___foo" -> "__foo": glibc's internal alias prefix.
std::string without_gi(std::string name) {
  while (name.rfind("__GI_", 0) == 0) name.erase(0, 5);
  return name;
}

struct Level {
  std::string function;
  long line = 0;
};

TEST(LlvmAgreement, InlineChainsAndLinesMatchLlvmSymbolizerOnLibc) {
  std::string llvm = llvm_symbolizer();
  ASSERT_FALSE(llvm.empty()) << "llvm-symbolizer not found: install the Debian package llvm-14";
  Dl_info info;
  // libc's own qsort, not a sanitizer's interceptor of the same name.
  void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc_handle, nullptr);
  ASSERT_NE(dladdr(dlsym(libc_handle, "qsort"), &info), 0);
  std::string libc = fs::canonical(info.dli_fname);
  std::string why;
  auto elf = inprof::symbolicate::inspect_elf_file(libc, &why);
  ASSERT_TRUE(elf) << why;
  const std::string& id = elf->build_id;
  ASSERT_TRUE(
      fs::exists("/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug"))
      << "libc's debug file is missing: install the Debian package libc6-dbg";

  auto [text, text_size] = text_section(libc);
  ASSERT_GT(text_size, 0u);
  std::string line;  // of llvm-symbolizer's output, below

  constexpr int kAddresses = 600;
  std::vector<uint64_t> addresses;
  std::string input;
  for (int i = 0; i < kAddresses; ++i) {
    uint64_t a = text + 3 + (text_size - 8) * uint64_t(i) / kAddresses;
    addresses.push_back(a);
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx\n", static_cast<unsigned long long>(a));
    input += hex;
  }
  std::string list = fs::temp_directory_path() / ("llvm-agreement-" + std::to_string(getpid()));
  {
    std::FILE* f = std::fopen(list.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(input.c_str(), f);
    std::fclose(f);
  }
  // Twice: as it is used (linkage names; the outermost one taken from the ELF symbol table,
  // which for an address with several aliases is any of them), and with DWARF's names alone.
  auto symbolize_with_llvm = [&](const std::string& extra) {
    std::string output =
        run(llvm + " --obj='" + libc + "' --inlining --demangle " + extra + " < '" + list + "'");
    // Blocks separated by blank lines; each level is "function" then "file:line:column",
    // innermost first.
    std::vector<std::vector<Level>> blocks(1);
    std::istringstream lines(output);
    std::string function;
    bool want_function = true;
    while (std::getline(lines, line)) {
      if (line.empty()) {
        if (!blocks.back().empty()) blocks.emplace_back();
        want_function = true;
        continue;
      }
      if (want_function) {
        function = line;
      } else {
        size_t c2 = line.rfind(':');
        size_t c1 = c2 == std::string::npos ? c2 : line.rfind(':', c2 - 1);
        long number = c1 == std::string::npos ? 0 : std::atol(line.c_str() + c1 + 1);
        blocks.back().insert(blocks.back().begin(), Level{function, number});
      }
      want_function = !want_function;
    }
    if (blocks.back().empty()) blocks.pop_back();
    return blocks;
  };
  std::vector<std::vector<Level>> expected = symbolize_with_llvm("--functions=linkage");
  // Short names are DW_AT_name as they are, never overridden by the symbol table; in C they are
  // the functions' full names.
  std::vector<std::vector<Level>> dwarf_only = symbolize_with_llvm("--functions=short");
  fs::remove(list);
  ASSERT_EQ(expected.size(), addresses.size());
  ASSERT_EQ(dwarf_only.size(), addresses.size());

  inprof::internal::ModuleRecord module;
  module.path = libc;
  for (size_t i = 0; i + 1 < id.size(); i += 2) {
    module.build_id.push_back(static_cast<uint8_t>(std::stoul(id.substr(i, 2), nullptr, 16)));
  }
  auto symbolizer = ModuleSymbolizer::open(module, &why);
  ASSERT_TRUE(symbolizer) << why;
  ASSERT_TRUE(symbolizer->has_dwarf());
  int compared = 0, differ = 0;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const std::vector<Level>& want = expected[i];
    if (want.size() == 1 && want[0].function == "??") continue;  // nothing known to llvm
    ++compared;
    AddressSymbol got = symbolizer->symbolize(addresses[i]);
    std::vector<Level> ours;
    for (const auto& f : got.frames) ours.push_back(Level{f.function, long(f.line)});
    const std::vector<Level>& dwarf = dwarf_only[i];
    bool same = ours.size() == want.size() && ours.size() == dwarf.size();
    for (size_t k = 0; same && k < ours.size(); ++k) {
      // glibc declares its functions with asm labels ("__GI_rewind" for rewind): llvm prints
      // that linkage name, symbolicate the name the source uses (DW_AT_name, as --functions=short
      // prints it). The outermost level may also carry the ELF alias llvm picked.
      const std::string& name = ours[k].function;
      same = ours[k].line == want[k].line &&
             (without_gi(name) == without_gi(dwarf[k].function) ||
              (k == 0 && without_gi(name) == without_gi(want[k].function)));
    }
    if (!same && ++differ <= 10) {
      std::string a, b;
      for (const auto& l : want) a += " > " + l.function + ":" + std::to_string(l.line);
      a += "\n  (DWARF only):   ";
      for (const auto& l : dwarf) a += " > " + l.function + ":" + std::to_string(l.line);
      for (const auto& l : ours) b += " > " + l.function + ":" + std::to_string(l.line);
      ADD_FAILURE() << std::hex << addresses[i] << "\n  llvm-symbolizer:" << a
                    << "\n  symbolicate:    " << b;
    }
  }
  EXPECT_GT(compared, kAddresses / 2);
  EXPECT_EQ(differ, 0) << "of " << compared << " addresses";
}

}  // namespace

namespace {

std::string describe(const AddressSymbol& s) {
  std::string out = s.symbol ? s.symbol->name : "-";
  for (const auto& f : s.frames) {
    out += " > " + f.function + " @" + f.file + ":" + std::to_string(f.line) + " decl " +
           std::to_string(f.decl_line) + " key " + std::to_string(f.function_key);
  }
  return out;
}

}  // namespace

// A handle reads a function's inside the first time an address falls in it, and a unit's line
// table and file names when first needed: what an address gets must not depend on which
// addresses came before it. Three handles see the same addresses of libc (and of this test, C++
// with templates and inlining) in ascending, descending and interleaved order.
TEST(LlvmAgreement, AnswersDoNotDependOnTheOrderOfLookups) {
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
    auto [text, text_size] = text_section(path);
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
    for (size_t i = 0; i < kAddresses; ++i) first[i] = describe(a->symbolize(addresses[i]));
    for (size_t i = kAddresses; i-- > 0;) second[i] = describe(b->symbolize(addresses[i]));
    for (size_t step : {7, 3, 1}) {  // every 7th, then every 3rd, then all: some twice
      for (size_t i = 0; i < kAddresses; i += step) {
        third[i] = describe(c->symbolize(addresses[i]));
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
