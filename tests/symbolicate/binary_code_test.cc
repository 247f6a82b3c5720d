// The binary's own answers to the leaf questions (binary_code.h) are the module reader's: at
// every sampled address of this test executable's and libc's code, where .eh_frame covers it,
// the same return-address slot, and everywhere the same code bytes.
#include "symbolize/binary_code.h"

#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "symbolize/elf/elf_file.h"
#include "symbolize/module_symbolizer.h"
#include "test_support.h"

namespace {

using inprof::symbolicate::BinaryCode;
using inprof::symbolicate::ModuleFiles;
using inprof::symbolicate::ModuleSymbolizer;

struct Range {
  uint64_t start, end;
};

// The executable loaded segments of the ELF file at `path`, at its own addresses.
std::vector<Range> code_segments(const std::string& path) {
  std::vector<Range> out;
  std::string why;
  const int fd = inprof::symbolicate::open_regular_file(path, &why);
  if (fd < 0) return out;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t n = 0;
  if (elf && elf_getphdrnum(elf, &n) == 0) {
    for (size_t i = 0; i < n; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD &&
          (ph.p_flags & PF_X)) {
        out.push_back({ph.p_vaddr, ph.p_vaddr + ph.p_memsz});
      }
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return out;
}

// The file libc was loaded from here.
std::string libc_path() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name && std::strstr(name, "/libc.so")) *static_cast<std::string*>(out) = name;
        return 0;
      },
      &path);
  return path;
}

void expect_agreement(const std::string& path, bool has_own_dwarf) {
  ModuleFiles files;
  files.binary = path;
  if (has_own_dwarf) files.debug = path;
  auto code = BinaryCode::open(files);
  ASSERT_TRUE(code) << path;
  std::string why;
  auto reader = ModuleSymbolizer::open(files, &why);
  ASSERT_TRUE(reader) << why;
  const std::vector<Range> segments = code_segments(path);
  ASSERT_FALSE(segments.empty()) << path;
  size_t answered = 0, asked = 0, slots = 0;
  for (const Range& r : segments) {
    // Every 5th byte of up to 4 MB per segment (5 is prime to every instruction-size pattern),
    // and a few addresses past the end.
    const uint64_t end = std::min(r.end + 64, r.start + (uint64_t{4} << 20));
    for (uint64_t a = r.start; a < end; a += 5) {
      ++asked;
      const bool aarch64 = false;
      if (auto slot = code->return_address_slot(a, aarch64)) {
        ++answered;
        slots += slot->has_value();
        ASSERT_EQ(*slot, reader->return_address_slot(a, aarch64)) << path << std::hex << " 0x" << a;
      }
      uint8_t mine[2] = {1, 2}, theirs[2] = {3, 4};
      const bool read_mine = code->read_code(a, mine);
      ASSERT_EQ(read_mine, reader->read_code(a, theirs)) << path << std::hex << " 0x" << a;
      if (read_mine) {
        ASSERT_EQ(std::memcmp(mine, theirs, 2), 0) << path << std::hex << " 0x" << a;
      }
    }
  }
  // .eh_frame covers nearly all code; most of it has its CFA on the stack pointer somewhere.
  EXPECT_GT(answered, asked / 2) << path;
  EXPECT_GT(slots, 0u) << path;
}

#if defined(__x86_64__)
TEST(BinaryCode, AnswersAsTheModuleReaderInThisExecutable) {
  expect_agreement(symtest::self_path(), /*has_own_dwarf=*/true);
}

TEST(BinaryCode, AnswersAsTheModuleReaderInLibc) {
  const std::string libc = libc_path();
  if (libc.empty()) GTEST_SKIP() << "libc not found among the loaded objects";
  expect_agreement(libc, /*has_own_dwarf=*/false);
}
#endif

TEST(BinaryCode, NothingWithoutABinary) {
  ModuleFiles files;
  EXPECT_FALSE(BinaryCode::open(files));
  files.debug = symtest::self_path();  // a debug file alone: the reader's
  EXPECT_FALSE(BinaryCode::open(files));
  files.binary = "/nonexistent/binary";
  EXPECT_FALSE(BinaryCode::open(files));
  files.binary = "/proc/self/status";  // not a regular ELF file
  EXPECT_FALSE(BinaryCode::open(files));
}

}  // namespace
