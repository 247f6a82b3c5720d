// Agreement with llvm-symbolizer over a dense walk of real binaries' code: every 16th byte of
// .text (at shifting offsets inside the 16) plus the first and last byte of every function
// symbol, of an -O2 C++ program whose functions have .cold parts, of the same program built by
// clang (no .debug_aranges), of libc (libc6-dbg's DWARF) and of python3.11 (python3.11-dbg's). At
// each address the inline chain's function names, and each level's file and line, must be
// llvm-symbolizer's, but for the differences listed in `Kind` and `Place` below, each counted and
// printed (ctest -V); any other difference fails. Skipped when llvm-symbolizer, or the program's
// debug file, is not installed (tools/scripts/install-deps.sh installs them).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <future>
#include <sstream>

#include "code_layout.h"
#include "symbolize/demangle.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/module_symbolizer.h"

namespace {

namespace fs = std::filesystem;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::ModuleSymbolizer;

// Bounds the walk of a bigger binary than python3.11 (2.8 MB of .text: 175,000 addresses, a few
// seconds): the stride grows past 16 bytes so that the suite stays fast. Function starts and
// ends are always all taken.
constexpr uint64_t kMaxStrideAddresses = 200000;

std::string llvm_symbolizer() {
  for (const char* name : {"llvm-symbolizer-14", "llvm-symbolizer"}) {
    if (!symtest::run_command(std::string("command -v ") + name).empty()) return name;
  }
  return {};
}

struct Level {
  std::string function, file;
  long line = 0;
};
using Chain = std::vector<Level>;  // outermost first

// llvm-symbolizer's chains for the addresses listed in the file `list`; `functions` is
// "linkage" (names as it shows them by default: DW_AT_linkage_name, the outermost one replaced
// by the ELF symbol's) or "short" (DW_AT_name alone). Names are left mangled: they are demangled
// here by symbolicate's demangler, so that two demanglers' styles are no difference.
std::vector<Chain> llvm_chains(const std::string& llvm, const std::string& object,
                               const std::string& list, const std::string& functions) {
  std::string output = symtest::run_command(llvm + " --obj='" + object +
                                            "' --inlining --no-demangle --functions=" + functions +
                                            " < '" + list + "'");
  // Blocks separated by blank lines; each level is "function" then "file:line:column",
  // innermost first.
  std::vector<Chain> blocks(1);
  std::istringstream lines(output);
  std::string line, function;
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
      Level level{function, line.substr(0, c1), 0};
      if (c1 != std::string::npos) level.line = std::atol(line.c_str() + c1 + 1);
      blocks.back().insert(blocks.back().begin(), level);
    }
    want_function = !want_function;
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

// The accepted differences, and the rest.
enum class Kind {
  kSame,
  // Neither knows a function here (no DWARF function, no ELF symbol: padding between functions).
  kNeitherKnows,
  // A C function's name: llvm shows the ELF alias at the address or glibc's asm label
  // ("__GI_memcpy", "__memcpy_avx_unaligned"), symbolicate the name its source gives it
  // (DW_AT_name, which llvm-symbolizer --functions=short shows too).
  kCSourceName,
  // The .cold part of a function split by GCC: llvm names it by the part's ELF symbol
  // ("f(int) [clone .cold]"), symbolicate by its function, as in the function's hot part.
  kColdPartNamedAsItsFunction,
  // An inlined function without DW_AT_linkage_name (internal linkage: an anonymous namespace,
  // a static function): llvm shows the bare DW_AT_name ("parse_digit"), symbolicate the name with
  // its namespaces and classes ("(anonymous namespace)::parse_digit").
  kQualifiedWhereDwarfHasNoLinkageName,
  // llvm-symbolizer reads the symbol table of the binary alone, not the debug file's: code that
  // no DWARF function covers (assembly, a .cold part that LTO left without a subprogram) but a
  // local symbol of the debug file's .symtab does is named by symbolicate ("__restore_rt",
  // "sm_traverse.lto_priv.0.cold"), "??" by llvm. Checked: a symbol of that name holds it.
  kDebugFileSymbol,
  kOnlyOursNames,   // fails the test: a name where llvm-symbolizer knows none
  kDifferentName,   // fails the test
  kDifferentDepth,  // fails the test
  kCount
};
constexpr std::array<const char*, size_t(Kind::kCount)> kKindNames = {
    "same names",
    "neither knows a function",
    "C function: source name, llvm an alias or asm label",
    ".cold part named as its function",
    "no linkage name: symbolicate qualifies the bare name",
    "no DWARF function: named by the debug file's .symtab, llvm ??",
    "NAMED ONLY BY SYMBOLICATE",
    "DIFFERENT NAME",
    "DIFFERENT INLINE DEPTH"};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// How symbolicate's name at level `k` differs from llvm's.
Kind compare_name(const std::string& ours, const Level& linkage, const Level& short_name,
                  size_t k) {
  const std::string theirs = inprof::symbolicate::demangle(linkage.function.c_str());
  if (ours == theirs) return Kind::kSame;
  // "f(int) [clone .cold]" demangled, "main.cold" not.
  if (k == 0 && (theirs == ours + " [clone .cold]" || theirs == ours + ".cold")) {
    return Kind::kColdPartNamedAsItsFunction;
  }
  // Not for C++ names: a mangled one says more than DW_AT_name, and symbolicate must show it.
  if (linkage.function.rfind("_Z", 0) != 0 && ours == short_name.function) {
    return Kind::kCSourceName;
  }
  if (k > 0 && linkage.function == short_name.function &&
      ends_with(ours, "::" + short_name.function)) {
    return Kind::kQualifiedWhereDwarfHasNoLinkageName;
  }
  return Kind::kDifferentName;
}

// File and line differences, counted over every level whose names agree, and the accepted ones.
enum class Place {
  kSame,
  // A path relative to the unit's compilation directory: llvm-symbolizer 14 puts the directory
  // in front, symbolicate (as libdw) leaves the path as the line table has it
  // ("/build/.../build-static/../Objects/abstract.c" against "../Objects/abstract.c"). With
  // glibc's relative compilation directories llvm even puts it in front of a path that already
  // starts with it ("./csu/./csu/init-first.c" against "./csu/init-first.c").
  kCompilationDirectoryInFront,
  // No line known (0): one of them names a file, the other none (llvm the unit's name,
  // symbolicate the function's declaration file).
  kNoLineFileOfOne,
  // The line is in another file than its function (a header's code without an inline record,
  // in a .cold part): symbolicate gives the function's declaration file, the one file the
  // Firefox Profiler keeps per function; llvm the line's.
  kFunctionsFile,
  kDifferentLine,  // fails the test
  kDifferentFile,  // fails the test
  kCount
};
constexpr std::array<const char*, size_t(Place::kCount)> kPlaceNames = {
    "same file:line",
    "llvm puts the compilation directory in front",
    "no line, a file from one of them",
    "the function's file, llvm the line's",
    "DIFFERENT LINE",
    "DIFFERENT FILE"};

Place compare_place(const inprof::symbolicate::SourceFrame& ours, const Level& theirs) {
  if (long(ours.line) != theirs.line) return Place::kDifferentLine;
  const std::string file = theirs.file == "??" ? "" : theirs.file;  // llvm's "no file"
  if (ours.file == file) return Place::kSame;
  if (theirs.line == 0 && (ours.file.empty() || file.empty())) return Place::kNoLineFileOfOne;
  if (!ours.file.empty() && ours.file[0] != '/' && ends_with(file, "/" + ours.file)) {
    return Place::kCompilationDirectoryInFront;
  }
  if (ours.decl_line != 0 && !file.empty()) return Place::kFunctionsFile;
  return Place::kDifferentFile;
}

std::string describe(const Chain& chain) {
  std::string out;
  for (const Level& l : chain) {
    out += " > " + inprof::symbolicate::demangle(l.function.c_str()) + " @" + l.file + ":" +
           std::to_string(l.line);
  }
  return out;
}

std::string describe(const AddressSymbol& s) {
  std::string out;
  for (const auto& f : s.frames)
    out += " > " + f.function + " @" + f.file + ":" + std::to_string(f.line);
  return out;
}

// Whether `frames` is one level named as a symbol of `symbols` that holds `address` (a symbol
// without a size runs to the next one).
bool in_symbol_named(const std::vector<symtest::FunctionSymbol>& symbols, uint64_t address,
                     const std::vector<inprof::symbolicate::SourceFrame>& frames) {
  if (frames.size() != 1) return false;
  for (const auto& s : symbols) {
    if (s.start > address || inprof::symbolicate::demangle(s.name.c_str()) != frames[0].function) {
      continue;
    }
    if (s.size > 0 ? address - s.start < s.size
                   : std::none_of(symbols.begin(), symbols.end(), [&](const auto& next) {
                       return next.start > s.start && next.start <= address;
                     })) {
      return true;
    }
  }
  return false;
}

struct Outcome {
  size_t addresses = 0;
  std::array<size_t, size_t(Kind::kCount)> kinds{};    // one per address: its worst level
  std::array<size_t, size_t(Place::kCount)> places{};  // one per level
  std::vector<std::string> examples;                   // of each difference, a few
};

// Walks the code of `binary` (its DWARF in the binary or in `debug`), compares, and prints the
// counts.
Outcome walk(const std::string& llvm, const std::string& label, const std::string& binary,
             const std::string& debug) {
  Outcome outcome;
  std::string why;
  auto elf = inprof::symbolicate::inspect_elf_file(binary, &why);
  if (!elf) {
    ADD_FAILURE() << why;
    return outcome;
  }
  auto [text, text_size] = symtest::text_section(binary);
  if (text_size == 0) {
    ADD_FAILURE() << binary << ": no .text";
    return outcome;
  }

  std::vector<uint64_t> addresses;
  const uint64_t stride = std::max<uint64_t>(16, (text_size / kMaxStrideAddresses + 15) / 16 * 16);
  for (uint64_t i = 0; i * stride < text_size; ++i) {
    addresses.push_back(text + i * stride + (i * 5) % 16);  // every offset in a 16-byte line
  }
  std::vector<symtest::FunctionSymbol> symbols = symtest::function_symbols(binary);
  if (!debug.empty()) {
    std::vector<symtest::FunctionSymbol> more = symtest::function_symbols(debug);
    symbols.insert(symbols.end(), more.begin(), more.end());
  }
  for (const auto& s : symbols) {
    if (s.start < text || s.start + s.size > text + text_size) continue;
    addresses.push_back(s.start);
    if (s.size > 0) addresses.push_back(s.start + s.size - 1);
  }
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  addresses.erase(
      std::remove_if(addresses.begin(), addresses.end(),
                     [text_end = text + text_size](uint64_t a) { return a >= text_end; }),
      addresses.end());

  std::string list =
      fs::temp_directory_path() / ("llvm-agreement-" + label + "-" + std::to_string(getpid()));
  {
    std::FILE* f = std::fopen(list.c_str(), "w");
    if (!f) {
      ADD_FAILURE() << "cannot write " << list;
      return outcome;
    }
    for (uint64_t a : addresses) std::fprintf(f, "0x%llx\n", static_cast<unsigned long long>(a));
    std::fclose(f);
  }
  // Both runs at once, and symbolicate's meanwhile.
  auto linkage_run = std::async(std::launch::async, llvm_chains, llvm, binary, list, "linkage");
  auto short_run = std::async(std::launch::async, llvm_chains, llvm, binary, list, "short");

  inprof::internal::ModuleRecord module;
  module.path = binary;
  const std::string& id = elf->build_id;
  for (size_t i = 0; i + 1 < id.size(); i += 2) {
    module.build_id.push_back(static_cast<uint8_t>(std::stoul(id.substr(i, 2), nullptr, 16)));
  }
  auto symbolizer = ModuleSymbolizer::open(module, &why);
  std::vector<AddressSymbol> ours;
  if (symbolizer) {
    for (uint64_t a : addresses) ours.push_back(symbolizer->symbolize(a));
  }
  std::vector<Chain> linkage = linkage_run.get();
  std::vector<Chain> short_names = short_run.get();
  fs::remove(list);
  if (!symbolizer || !symbolizer->has_dwarf()) {
    ADD_FAILURE() << binary << ": " << (symbolizer ? "no DWARF" : why);
    return outcome;
  }
  if (linkage.size() != addresses.size() || short_names.size() != addresses.size()) {
    ADD_FAILURE() << "llvm-symbolizer answered " << linkage.size() << " and " << short_names.size()
                  << " of " << addresses.size() << " addresses";
    return outcome;
  }

  std::array<size_t, size_t(Kind::kCount)> shown{};
  std::array<size_t, size_t(Place::kCount)> shown_places{};
  for (size_t i = 0; i < addresses.size(); ++i) {
    ++outcome.addresses;
    const Chain& want = linkage[i];
    const Chain& dwarf = short_names[i];
    const AddressSymbol& got = ours[i];
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(addresses[i]));
    auto example = [&](const char* what) {
      outcome.examples.push_back(
          std::string(what) + " at " + hex + "\n    llvm-symbolizer:" + describe(want) +
          "\n    (DWARF names):  " + describe(dwarf) + "\n    symbolicate:    " + describe(got));
    };
    Kind worst = Kind::kSame;
    if (want.size() == 1 && want[0].function == "??") {
      worst = got.frames.empty()                                   ? Kind::kNeitherKnows
              : in_symbol_named(symbols, addresses[i], got.frames) ? Kind::kDebugFileSymbol
                                                                   : Kind::kOnlyOursNames;
    } else if (got.frames.size() != want.size() || dwarf.size() != want.size()) {
      worst = Kind::kDifferentDepth;
    } else {
      for (size_t k = 0; k < want.size(); ++k) {
        Kind kind = compare_name(got.frames[k].function, want[k], dwarf[k], k);
        worst = std::max(worst, kind);
        if (kind == Kind::kDifferentName) continue;
        Place place = compare_place(got.frames[k], want[k]);
        ++outcome.places[size_t(place)];
        if (place != Place::kSame && shown_places[size_t(place)]++ < 3) {
          example(kPlaceNames[size_t(place)]);
        }
      }
    }
    ++outcome.kinds[size_t(worst)];
    if (worst != Kind::kSame && shown[size_t(worst)]++ < 3) example(kKindNames[size_t(worst)]);
  }
  std::printf("%s: %zu addresses (stride %llu, %zu function symbols)\n", label.c_str(),
              outcome.addresses, static_cast<unsigned long long>(stride), symbols.size());
  for (size_t k = 0; k < outcome.kinds.size(); ++k) {
    if (outcome.kinds[k]) std::printf("  %8zu  %s\n", outcome.kinds[k], kKindNames[k]);
  }
  std::printf("  levels:");
  for (size_t p = 0; p < outcome.places.size(); ++p) {
    std::printf("  %zu %s%s", outcome.places[p], kPlaceNames[p],
                p + 1 < outcome.places.size() ? "," : "\n");
  }
  for (const std::string& e : outcome.examples) std::printf("  %s\n", e.c_str());
  return outcome;
}

void expect_agreement(const Outcome& o) {
  EXPECT_EQ(o.kinds[size_t(Kind::kOnlyOursNames)], 0u);
  EXPECT_EQ(o.kinds[size_t(Kind::kDifferentName)], 0u);
  EXPECT_EQ(o.kinds[size_t(Kind::kDifferentDepth)], 0u);
  EXPECT_EQ(o.places[size_t(Place::kDifferentLine)], 0u);
  EXPECT_EQ(o.places[size_t(Place::kDifferentFile)], 0u);
  EXPECT_GT(o.kinds[size_t(Kind::kSame)], o.addresses / 2);
}

std::string libc_path() {
  // libc's own qsort, not a sanitizer's interceptor of the same name.
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  Dl_info info;
  if (!handle || dladdr(dlsym(handle, "qsort"), &info) == 0) return {};
  return fs::canonical(info.dli_fname);
}

constexpr const char* kNoLlvm = "llvm-symbolizer is not installed (Debian package llvm-14)";

TEST(LlvmAgreement, ColdSplitProgram) {
  const std::string llvm = llvm_symbolizer();
  if (llvm.empty()) GTEST_SKIP() << kNoLlvm;
  Outcome o = walk(llvm, "cold_split_target", COLD_SPLIT_TARGET, "");
  expect_agreement(o);
#if !defined(__clang__)  // (clang splits no .cold parts off without a profile to guide it)
  // The program has .cold parts, and the walk went through them.
  EXPECT_GT(o.kinds[size_t(Kind::kColdPartNamedAsItsFunction)], 0u);
#endif
}

// clang writes no .debug_aranges: the units are found by their own ranges (unit_ranges.h), in
// DWARF 5 and 4, and with -gline-tables-only's functions that have only a name.
TEST(LlvmAgreement, ClangPrograms) {
  const std::string llvm = llvm_symbolizer();
  if (llvm.empty()) GTEST_SKIP() << kNoLlvm;
  const std::string dir = CLANG_TARGETS_DIR;
  if (dir.empty()) GTEST_SKIP() << "clang++ was not found when the build was configured";
  for (const char* variant : {"dwarf5", "dwarf4", "line_tables"}) {
    const std::string target = dir + "/cold_split_" + variant;
    SCOPED_TRACE(target);
    Outcome o = walk(llvm, std::string("clang_") + variant, target, "");
    expect_agreement(o);
    // Lines, not only names: most levels have llvm-symbolizer's file and line.
    EXPECT_GT(o.places[size_t(Place::kSame)], o.addresses / 2);
  }
}

TEST(LlvmAgreement, Libc) {
  const std::string llvm = llvm_symbolizer();
  if (llvm.empty()) GTEST_SKIP() << kNoLlvm;
  const std::string libc = libc_path();
  ASSERT_FALSE(libc.empty());
  const std::string debug = symtest::debug_file_by_build_id(libc);
  if (debug.empty()) GTEST_SKIP() << "libc's debug file is missing: install libc6-dbg";
  expect_agreement(walk(llvm, "libc", libc, debug));
}

TEST(LlvmAgreement, Python) {
  const std::string llvm = llvm_symbolizer();
  if (llvm.empty()) GTEST_SKIP() << kNoLlvm;
  const std::string python = "/usr/bin/python3.11";
  if (!fs::exists(python)) GTEST_SKIP() << "python3.11 is not installed";
  const std::string debug = symtest::debug_file_by_build_id(fs::canonical(python));
  if (debug.empty()) GTEST_SKIP() << "python3.11's debug file is missing: install python3.11-dbg";
  expect_agreement(walk(llvm, "python3.11", fs::canonical(python), debug));
}

}  // namespace
