// The symbol cache's file plumbing: the checksum every file carries (byte_io.h), a file read or
// mapped whole with its time (cache_file_read.h), the directory listed with one stat a file
// (cache_dir_listing.h), and a .sym of another format version left unread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "symbolize/byte_io.h"
#include "symbolize/cache/cache_dir_listing.h"
#include "symbolize/cache/cache_file_read.h"
#include "symbolize/cache/symbol_cache_file.h"
#include "test_support.h"

namespace {

using inprof::symbolicate::fast_checksum;
using inprof::symbolicate::fast_checksum_with;
namespace fs = std::filesystem;

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

using symtest::write_file;

// The SSE2 stripes and the portable ones compute the same value, whatever the length and
// alignment (a cache written on one machine is read on another).
TEST(FastChecksum, VectorAndPortableAgree) {
  const std::string bytes = random_bytes(1000, 1);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= 600; ++n) {
      const char* p = bytes.data() + start;
      ASSERT_EQ(fast_checksum_with<true>(p, n), fast_checksum_with<false>(p, n))
          << "start " << start << " length " << n;
    }
  }
}

// Damage is told from an intact file: every single bit flipped, a byte changed at every place,
// two words swapped, a length one shorter or zeros appended all change the checksum.
TEST(FastChecksum, AnyBitFlippedOrBytesMovedChangeIt) {
  for (size_t n : {1u, 7u, 8u, 63u, 64u, 65u, 200u, 1024u}) {
    std::string bytes = random_bytes(n, static_cast<uint32_t>(n));
    const uint64_t intact = fast_checksum(bytes.data(), n);
    for (size_t bit = 0; bit < n * 8; ++bit) {
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
      EXPECT_NE(fast_checksum(bytes.data(), n), intact) << "length " << n << " bit " << bit;
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
    }
    if (n >= 16) {
      std::string swapped = bytes;
      std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
      if (swapped != bytes) {
        EXPECT_NE(fast_checksum(swapped.data(), n), intact) << n;
      }
    }
    EXPECT_NE(fast_checksum(bytes.data(), n - 1), intact) << n;
    const std::string longer = bytes + std::string(8, '\0');
    EXPECT_NE(fast_checksum(longer.data(), longer.size()), intact) << n;
  }
  const std::string zeros(4096, '\0');
  std::string one = zeros;
  one[4000] = 1;
  EXPECT_NE(fast_checksum(zeros.data(), zeros.size()), fast_checksum(one.data(), one.size()));
}

// Small files are read, large ones mapped: the same bytes either way, and the file's time.
TEST(CacheFileRead, SmallAndLargeFilesReadWholeWithTheirTime) {
  symtest::TempDir dir;
  for (size_t n : {size_t{0}, size_t{100}, inprof::symbolicate::kMapCacheFilesFrom - 1,
                   inprof::symbolicate::kMapCacheFilesFrom, size_t{3} << 20}) {
    const std::string path = dir.path("f" + std::to_string(n));
    const std::string bytes = random_bytes(n, 7);
    write_file(path, bytes);
    const auto when = fs::file_time_type::clock::now() - std::chrono::hours(5);
    fs::last_write_time(path, when);
    auto read = inprof::symbolicate::read_cache_file(path);
    ASSERT_TRUE(read) << n;
    EXPECT_EQ(read->view(), bytes) << n;
    EXPECT_EQ(read->time(), fs::last_write_time(path)) << n;
    // The bytes outlive the file being replaced (renamed over) while they are in use.
    auto owner = read->owner();
    write_file(path + ".new", "other");
    fs::rename(path + ".new", path);
    EXPECT_EQ(std::string_view(owner.get(), n), bytes) << n;
  }
  EXPECT_FALSE(inprof::symbolicate::read_cache_file(dir.path("absent")));
  fs::create_directory(dir.path("a-directory"));
  EXPECT_FALSE(inprof::symbolicate::read_cache_file(dir.path("a-directory")));
}

// Through a memo, a file reached by another name (a unit pack's hard links) is not read again:
// the same bytes are handed out; a file replaced under a name (a new inode) is read afresh.
TEST(CacheFileRead, AMemoReadsAFileOnceWhateverItsNames) {
  symtest::TempDir dir;
  const std::string bytes = random_bytes(inprof::symbolicate::kMapCacheFilesFrom + 100, 3);
  write_file(dir.path("a.unit"), bytes);
  fs::create_hard_link(dir.path("a.unit"), dir.path("b.unit"));
  inprof::symbolicate::CacheFileMemo memo;
  auto a = inprof::symbolicate::read_cache_file(dir.path("a.unit"), &memo);
  auto b = inprof::symbolicate::read_cache_file(dir.path("b.unit"), &memo);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->owner().get(), b->owner().get());
  EXPECT_EQ(b->view(), bytes);
  write_file(dir.path("new"), "replaced");
  fs::rename(dir.path("new"), dir.path("b.unit"));
  auto replaced = inprof::symbolicate::read_cache_file(dir.path("b.unit"), &memo);
  ASSERT_TRUE(replaced);
  EXPECT_EQ(replaced->view(), "replaced");
  auto without = inprof::symbolicate::read_cache_file(dir.path("a.unit"));
  ASSERT_TRUE(without);
  EXPECT_NE(without->owner().get(), a->owner().get());
  EXPECT_EQ(without->view(), bytes);
}

// One stat a file gives what std::filesystem gives with two: the names, sizes and times of the
// regular files, not of directories.
TEST(CacheDirListing, ListsTheFilesWithSizesAndTimes) {
  symtest::TempDir dir;
  const std::string root = dir.path("c");
  fs::create_directories(root + "/sub");
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 5; ++i) {
    const std::string path = root + "/f" + std::to_string(i) + ".unit";
    write_file(path, std::string(100 * i, 'x'));
    fs::last_write_time(path, now - std::chrono::minutes(7 * i));
  }
  auto entries = inprof::symbolicate::list_cache_dir(root);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  ASSERT_EQ(entries.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    const std::string path = root + "/f" + std::to_string(i) + ".unit";
    EXPECT_EQ(entries[i].name, "f" + std::to_string(i) + ".unit");
    EXPECT_EQ(entries[i].size, fs::file_size(path));
    EXPECT_EQ(entries[i].time, fs::last_write_time(path));
  }
  EXPECT_TRUE(inprof::symbolicate::list_cache_dir(dir.path("absent")).empty());
}

// A .sym written by another format version (its version field, checksum made good) decodes to
// nothing: a version bump leaves older files unread.
TEST(SymbolCacheFile, AnotherVersionDecodesToNothing) {
  inprof::symbolicate::CachedModule module;
  module.syscall_sites[0x10] = true;
  std::string bytes = inprof::symbolicate::encode_symbol_cache("k", module);
  ASSERT_TRUE(inprof::symbolicate::decode_symbol_cache("k", bytes));
  const uint32_t older = inprof::symbolicate::kSymbolCacheVersion - 1;
  std::memcpy(bytes.data() + 8, &older, sizeof older);  // after the 8-byte magic
  const uint64_t sum = fast_checksum(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, sizeof sum);
  EXPECT_FALSE(inprof::symbolicate::decode_symbol_cache("k", bytes));
}

}  // namespace
