// Our line-program reader (line_table.h) against libdw's on every compilation unit of real
// programs: the same file tables, and at every row address and the bytes around it, the same file
// and line (or the same "nothing here"). Programs: this test itself (DWARF 5, C++), a DWARF 4
// build of the release target, libc's detached debug file (libc6-dbg) and, when installed,
// python3.11's (an LTO build with huge units).
#include "symbolize/line_table.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "code_layout.h"
#include "symbolize/elf/libdw_line_tables.h"

namespace inprof::symbolicate {
namespace {

namespace fs = std::filesystem;

struct Comparison {
  size_t units = 0;
  size_t addresses = 0;
  size_t rows = 0;
  std::vector<std::string> mismatches;

  void mismatch(std::string what) {
    if (mismatches.size() < 10)
      mismatches.push_back(std::move(what));
    else if (mismatches.size() == 10)
      mismatches.push_back("...");
  }
};

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string libdw_answer(Dwarf_Die* cu, uint64_t address) {
  Dwarf_Line* line = dwarf_getsrc_die(cu, address);
  if (!line) return "none";
  const char* file = dwarf_linesrc(line, nullptr, nullptr);
  int lineno = 0;
  dwarf_lineno(line, &lineno);
  return std::string(file ? file : "") + ":" + std::to_string(lineno);
}

std::string our_answer(const LineTable& table, uint64_t address) {
  auto at = table.find(address);
  if (!at) return "none";
  std::string file = at->file < table.files().size() ? table.files()[at->file] : "";
  return file + ":" + std::to_string(static_cast<int>(at->line));
}

Comparison compare_with_libdw(const std::string& path) {
  Comparison c;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    c.mismatch("cannot open " + path);
    return c;
  }
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  if (!dwarf) {
    ::close(fd);
    c.mismatch("libdw cannot read " + path);
    return c;
  }
  auto sections = line_sections_of(dwarf);
  if (!sections) c.mismatch("no line sections found in " + path);

  Dwarf_Off offset = 0, next = 0;
  size_t header_size = 0;
  while (sections && dwarf_next_unit(dwarf, offset, &next, &header_size, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    const Dwarf_Off die_offset = offset + header_size;
    offset = next;
    if (!dwarf_offdie(dwarf, die_offset, &cu)) continue;
    auto options = line_options_of(&cu, true);
    if (!options) continue;
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    Dwarf_Files* files = nullptr;
    size_t file_count = 0;
    if (dwarf_getsrclines(&cu, &lines, &count) != 0 ||
        dwarf_getsrcfiles(&cu, &files, &file_count) != 0) {
      continue;  // libdw cannot read it either
    }
    ++c.units;
    std::string why;
    auto table = LineTable::parse(*sections, *options, &why);
    const std::string unit = path + " unit " + hex(die_offset) + ": ";
    if (!table) {
      c.mismatch(unit + "our reader failed: " + why);
      continue;
    }
    // Only the header: the same files.
    LineTable::Options header_only = *options;
    header_only.with_rows = false;
    auto files_only = LineTable::parse(*sections, header_only, &why);
    if (!files_only || files_only->files() != table->files() || files_only->row_count() != 0) {
      c.mismatch(unit + "the header-only parse differs");
    }
    if (table->files().size() != file_count) {
      c.mismatch(unit + std::to_string(table->files().size()) + " files, libdw " +
                 std::to_string(file_count));
    }
    for (size_t i = 0; i < std::min(file_count, table->files().size()); ++i) {
      const char* name = dwarf_filesrc(files, i, nullptr, nullptr);
      if (table->files()[i] != (name ? name : "???")) {
        c.mismatch(unit + "file " + std::to_string(i) + " '" + table->files()[i] + "', libdw '" +
                   (name ? name : "(null)") + "'");
      }
    }
    c.rows += table->row_count();
    for (size_t i = 0; i < count; ++i) {
      Dwarf_Addr address = 0;
      dwarf_lineaddr(dwarf_onesrcline(lines, i), &address);
      for (uint64_t a : {address - 1, address, address + 1}) {
        ++c.addresses;
        std::string theirs = libdw_answer(&cu, a), ours = our_answer(*table, a);
        if (theirs != ours) c.mismatch(unit + hex(a) + " '" + ours + "', libdw '" + theirs + "'");
      }
    }
  }
  dwarf_end(dwarf);
  ::close(fd);
  return c;
}

void expect_agreement(const std::string& path) {
  Comparison c = compare_with_libdw(path);
  EXPECT_GT(c.units, 0u) << path;
  EXPECT_GT(c.addresses, 0u) << path;
  std::string all;
  for (const std::string& m : c.mismatches) all += m + "\n";
  EXPECT_TRUE(c.mismatches.empty()) << path << ": " << all;
  std::printf("%s: %zu units, %zu rows, %zu addresses agree\n", path.c_str(), c.units, c.rows,
              c.addresses);
}

TEST(LineTableTest, AgreesWithLibdwOnThisTest) { expect_agreement("/proc/self/exe"); }

TEST(LineTableTest, AgreesWithLibdwOnDwarf4) { expect_agreement(DWARF4_TARGET); }

// clang's line programs: DWARF 5's MD5 checksums and DW_FORM_line_strp names, and DWARF 4's.
TEST(LineTableTest, AgreesWithLibdwOnClangBuilds) {
  const std::string dir = CLANG_TARGETS_DIR;
  if (dir.empty()) GTEST_SKIP() << "clang++ was not found when the build was configured";
  for (const char* variant : {"dwarf5", "dwarf4", "line_tables"}) {
    expect_agreement(dir + "/cold_split_" + variant);
  }
}

TEST(LineTableTest, AgreesWithLibdwOnLibcDebugFile) {
  // The libc this test runs on (a cross toolchain may have others).
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  Dl_info info;
  ASSERT_NE(dladdr(dlsym(handle, "qsort"), &info), 0);
  const std::string libc = fs::canonical(info.dli_fname);
  std::string debug = symtest::debug_file_by_build_id(libc);
  ASSERT_FALSE(debug.empty())
      << "libc's debug file is missing: install the Debian package libc6-dbg";
  expect_agreement(debug);
}

TEST(LineTableTest, AgreesWithLibdwOnPythonWhenInstalled) {
  std::string debug = symtest::debug_file_by_build_id("/usr/bin/python3.11");
  if (debug.empty()) GTEST_SKIP() << "python3.11-dbg is not installed";
  expect_agreement(debug);
}

// Malformed programs: a reason, never a crash or a read out of bounds.
TEST(LineTableTest, RejectsDamagedPrograms) {
  // A DWARF 4 header with one directory, one file, and a program: set_address, a special row,
  // end_sequence.
  std::vector<uint8_t> unit = {
      0,   0,   0,   0,             // unit_length (patched below)
      4,   0,                       // version 4
      0,   0,   0,   0,             // header_length (patched below)
      1,   1,   1,   0xfb, 14, 13,  // min_inst 1, max_ops 1, is_stmt, base -5, range 14
      0,   1,   1,   1,    1,  0,  0, 0, 1, 0, 0, 1,  // standard opcode lengths
      'i', 'n', 'c', 0,    0,                         // directories
      'a', '.', 'c', 0,    1,  0,  0, 0,              // files
  };
  const size_t header_end = unit.size();
  const std::vector<uint8_t> program = {0,    9, 2, 0x00, 0x10, 0, 0, 0, 0, 0, 0,  // set_address
                                        0x14,                                      // special
                                        2,    4,                                   // advance_pc
                                        0,    1, 1};                               // end_sequence
  unit.insert(unit.end(), program.begin(), program.end());
  auto patch32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) unit[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  patch32(0, static_cast<uint32_t>(unit.size() - 4));
  patch32(6, static_cast<uint32_t>(header_end - 10));

  LineTable::Options options;
  options.comp_dir = "/src";
  std::string why;
  auto table = LineTable::parse({unit, {}, {}}, options, &why);
  ASSERT_TRUE(table) << why;
  ASSERT_EQ(table->files().size(), 2u);
  EXPECT_EQ(table->files()[0], "???");
  EXPECT_EQ(table->files()[1], "inc/a.c");
  ASSERT_EQ(table->row_count(), 2u);
  auto at = table->find(0x1002);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->line, 1 + (-5) + (0x14 - 13) % 14);
  EXPECT_FALSE(table->find(0x0fff));
  EXPECT_FALSE(table->find(0x1004));  // the end of the sequence

  // Every cut-short copy and every single-byte change fails cleanly or parses; none reads past
  // the buffer (ASan would say) or loops.
  for (size_t n = 0; n < unit.size(); ++n) {
    std::vector<uint8_t> cut(unit.begin(), unit.begin() + n);
    EXPECT_FALSE(LineTable::parse({cut, {}, {}}, options, &why)) << n;
    EXPECT_FALSE(why.empty());
  }
  for (size_t i = 0; i < unit.size(); ++i) {
    for (uint8_t v : {uint8_t{0}, uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> bad = unit;
      bad[i] = v;
      auto t = LineTable::parse({bad, {}, {}}, options, &why);
      if (t) t->find(0x1000);
    }
  }
  // A header length past the unit, in 64-bit DWARF where adding it to the position could wrap.
  {
    std::vector<uint8_t> wide = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0};  // length
    wide.insert(wide.end(), {4, 0});                                               // version 4
    for (int i = 0; i < 8; ++i) wide.push_back(0xff);  // header_length: 2^64 - 1
    wide.insert(wide.end(), unit.begin() + 10, unit.end());
    const uint64_t length = wide.size() - 12;
    for (int i = 0; i < 8; ++i) wide[4 + i] = static_cast<uint8_t>(length >> (8 * i));
    LineTable::Options at_start = options;
    EXPECT_FALSE(LineTable::parse({wide, {}, {}}, at_start, &why));
    EXPECT_EQ(why, "line header runs past its unit");
  }
  // An offset past the section.
  options.offset = unit.size() + 1;
  EXPECT_FALSE(LineTable::parse({unit, {}, {}}, options, &why));
}

}  // namespace
}  // namespace inprof::symbolicate
