// The persistent symbol cache (symbolicate --cache-dir): a warm run writes the same bytes as a
// cold one, also for another dump whose new addresses the module index answers; a damaged,
// truncated or foreign cache file is ignored; two processes sharing one cache both write the right
// profile; the size bound evicts the least recently used files; a module of another build-id never
// reuses an entry; a cached debug image is used only intact.
#include "symbolize/cache/symbol_cache.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "symbolize/cache/cache_file_read.h"
#include "symbolize/cache/symbol_cache_file.h"
#include "symbolize/elf/debug_image.h"
#include "symbolize/elf/debug_image_cache.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::CachedModule;
using inprof::symbolicate::decode_symbol_cache;
using inprof::symbolicate::encode_symbol_cache;
using inprof::symbolicate::ModuleFiles;
using inprof::symbolicate::SourceFrame;
using inprof::symbolicate::SymbolCache;
namespace fs = std::filesystem;

using symtest::read_file;

using symtest::write_file;

// The cache files (not temporaries) under a --cache-dir.
std::vector<std::string> cache_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".sym") {
      files.push_back(it->path().string());
    }
  }
  return files;
}

CachedModule sample_symbols(const std::string& name) {
  CachedModule module;
  auto& symbols = module.symbols;
  AddressSymbol a;
  a.frames.push_back(SourceFrame{name, "/src/a.cc", 10, 12, 0x100});
  a.frames.push_back(SourceFrame{"inlined()", "/src/b.h", 3, 4, 0x200});
  a.symbol = inprof::symbolicate::NativeSymbolInfo{name, 0x1000, 64};
  symbols[0x1010] = a;
  AddressSymbol b;  // nothing known
  symbols[0x2000] = b;
  AddressSymbol c;
  c.symbol = inprof::symbolicate::NativeSymbolInfo{"no_size", 0x3000, std::nullopt};
  symbols[0x3004] = c;
  module.return_slots[0x1010] = 2;
  module.return_slots[0x2000] = std::nullopt;
  module.syscall_sites[0x3004] = true;
  module.syscall_sites[0x3010] = false;
  module.syscall_sites[0x3020] = std::nullopt;
  return module;
}

bool same(const CachedModule& x, const CachedModule& y) {
  if (x.return_slots != y.return_slots || x.syscall_sites != y.syscall_sites) return false;
  const auto &a = x.symbols, &b = y.symbols;
  if (a.size() != b.size()) return false;
  for (const auto& [vaddr, s] : a) {
    auto it = b.find(vaddr);
    if (it == b.end()) return false;
    const AddressSymbol& t = it->second;
    if (s.frames.size() != t.frames.size() || s.symbol.has_value() != t.symbol.has_value()) {
      return false;
    }
    for (size_t i = 0; i < s.frames.size(); ++i) {
      const SourceFrame &f = s.frames[i], &g = t.frames[i];
      if (f.function != g.function || f.file != g.file || f.decl_line != g.decl_line ||
          f.line != g.line || f.function_key != g.function_key) {
        return false;
      }
    }
    if (s.symbol && (s.symbol->name != t.symbol->name || s.symbol->vaddr != t.symbol->vaddr ||
                     s.symbol->size != t.symbol->size)) {
      return false;
    }
  }
  return true;
}

TEST(SymbolCacheFile, RoundTrips) {
  const CachedModule symbols = sample_symbols("f()");
  auto decoded = decode_symbol_cache("k", encode_symbol_cache("k", symbols));
  ASSERT_TRUE(decoded);
  EXPECT_TRUE(same(symbols, *decoded));
}

TEST(SymbolCacheFile, TruncatedOrDamagedBytesDecodeToNothing) {
  const std::string bytes = encode_symbol_cache("k", sample_symbols("f()"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_symbol_cache("k", bytes.substr(0, n))) << "truncated to " << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    EXPECT_FALSE(decode_symbol_cache("k", damaged)) << "byte " << i << " flipped";
  }
  // What follows an intact record and is not one is left out (an append cut short).
  const auto tail = decode_symbol_cache("k", bytes + "x");
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->origin.intact_bytes, bytes.size());
  EXPECT_EQ(tail->origin.records, 1u);
}

// A record appended adds its entries; an address in both keeps the first's; a damaged or
// truncated record, and any after it, add nothing.
TEST(SymbolCacheFile, AppendedRecordsAddTheirEntries) {
  const CachedModule base = sample_symbols("f()");
  CachedModule more;
  AddressSymbol d;
  d.frames.push_back(SourceFrame{"g()", "/src/g.cc", 1, 2, 0x300});
  more.symbols[0x4000] = d;
  more.symbols[0x1010] = d;  // also in base
  more.return_slots[0x4000] = 1;
  more.syscall_sites[0x4000] = false;
  const std::string first = encode_symbol_cache("k", base), second = encode_symbol_cache("k", more);
  auto both = decode_symbol_cache("k", first + second);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->origin.records, 2u);
  EXPECT_EQ(both->origin.intact_bytes, first.size() + second.size());
  CachedModule expected = base;
  expected.symbols[0x4000] = d;
  expected.return_slots[0x4000] = 1;
  expected.syscall_sites[0x4000] = false;
  EXPECT_TRUE(same(*both, expected));
  for (size_t n = 1; n < second.size(); ++n) {  // an intact record after it is lost too
    auto cut = decode_symbol_cache("k", first + second.substr(0, n) + first);
    ASSERT_TRUE(cut);
    EXPECT_TRUE(same(*cut, base)) << "cut to " << n;
    EXPECT_EQ(cut->origin.intact_bytes, first.size());
  }
  std::string flipped = second;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 4);
  auto damaged = decode_symbol_cache("k", first + flipped);
  ASSERT_TRUE(damaged);
  EXPECT_TRUE(same(*damaged, base));
  EXPECT_FALSE(decode_symbol_cache("k", second.substr(1) + first));
}

// Given the addresses a run wants, only their symbols are decoded; the others are checked as
// strictly (damage anywhere still decodes to nothing) and decoded when asked for, each as the
// first record that has it says.
TEST(SymbolCacheFile, OnlyWantedSymbolsAreDecodedTheOthersWhenAsked) {
  const CachedModule base = sample_symbols("f()");
  CachedModule more;
  AddressSymbol d;
  d.frames.push_back(SourceFrame{"g()", "/src/g.cc", 1, 2, 0x300});
  more.symbols[0x4000] = d;
  more.symbols[0x1010] = d;  // also in base: base's is the answer
  const std::string first = encode_symbol_cache("k", base), second = encode_symbol_cache("k", more);
  const std::string bytes = first + second;
  const std::vector<uint64_t> wanted = {0x2000, 0x4000, 0x9999};
  auto some = decode_symbol_cache("k", bytes, &wanted);
  ASSERT_TRUE(some);
  EXPECT_EQ(some->symbols.size(), 2u);
  EXPECT_EQ(some->origin.records, 2u);
  EXPECT_EQ(some->return_slots, base.return_slots);  // not filtered
  const AddressSymbol* f = some->find_symbol(0x1010);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->frames.size(), 2u);
  EXPECT_EQ(f->frames[0].function, "f()");
  ASSERT_NE(some->find_symbol(0x3004), nullptr);
  EXPECT_EQ(some->find_symbol(0x3004)->symbol->name, "no_size");
  EXPECT_EQ(some->find_symbol(0x5000), nullptr);
  CachedModule all = *some;
  all.decode_all();
  CachedModule expected = base;
  expected.symbols[0x4000] = d;
  EXPECT_TRUE(same(all, expected));
  const std::vector<uint64_t> none;
  for (size_t i = 0; i < first.size(); ++i) {
    std::string damaged = first;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    EXPECT_FALSE(decode_symbol_cache("k", damaged, &none)) << "byte " << i << " flipped";
  }
  for (size_t n = 0; n < first.size(); ++n) {
    EXPECT_FALSE(decode_symbol_cache("k", first.substr(0, n), &none)) << "truncated to " << n;
  }
  // A damaged appended record adds nothing to find either.
  std::string flipped = second;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 4);
  const std::string with_damage = first + flipped;  // outlives `damaged`, which points into it
  auto damaged = decode_symbol_cache("k", with_damage, &none);
  ASSERT_TRUE(damaged);
  EXPECT_EQ(damaged->find_symbol(0x4000), nullptr);
  ASSERT_NE(damaged->find_symbol(0x1010), nullptr);
  EXPECT_EQ(damaged->find_symbol(0x1010)->frames[0].function, "f()");
}

TEST(SymbolCacheFile, AnotherKeyDecodesToNothing) {
  const std::string bytes = encode_symbol_cache("aaaa-dwarf-0", sample_symbols("f()"));
  EXPECT_FALSE(decode_symbol_cache("bbbb-dwarf-0", bytes));
}

TEST(SymbolCache, KeyNeedsABuildIdAndDiffersWithIt) {
  ModuleFiles files;
  files.binary = symtest::self_path();
  files.debug = files.binary;
  EXPECT_EQ(SymbolCache::key({}, files), "");
  const std::string a = SymbolCache::key({1, 2, 3, 4}, files);
  const std::string b = SymbolCache::key({1, 2, 3, 5}, files);
  EXPECT_NE(a, "");
  EXPECT_NE(a, b);
  ModuleFiles symbols_only = files;
  symbols_only.debug.clear();
  EXPECT_NE(a, SymbolCache::key({1, 2, 3, 4}, symbols_only));
}

TEST(SymbolCache, ABuildIdThatDiffersMisses) {
  symtest::TempDir dir;
  SymbolCache cache(dir.path("c"), 1 << 20);
  ModuleFiles files;
  files.binary = files.debug = symtest::self_path();
  const std::string a = SymbolCache::key({0xaa, 0x01}, files);
  const std::string b = SymbolCache::key({0xaa, 0x02}, files);
  std::string why;
  ASSERT_TRUE(cache.store(a, sample_symbols("f()"), &why)) << why;
  EXPECT_EQ(cache.load(a).symbols.size(), 3u);
  EXPECT_TRUE(cache.load(b).empty());
  // Even a file of build-id a put in b's place: its stored key is a's.
  ASSERT_EQ(cache_files(dir.path("c")).size(), 1u);
  const std::string a_file = cache_files(dir.path("c"))[0];
  fs::copy_file(a_file, fs::path(a_file).parent_path() / (b + ".sym"));
  EXPECT_TRUE(cache.load(b).empty());
}

// What a run learnt is appended to the file it read (the bytes before stay as they are), until
// the file holds kMaxSymbolRecords records: then it is written whole, one record again. A file
// replaced since it was read is not appended to.
TEST(SymbolCache, StoreAppendsWhatWasLearnt) {
  symtest::TempDir dir;
  SymbolCache cache(dir.path("c"), 1 << 20);
  const std::string key = "00ff-dwarf-0000000000000000";
  std::string why;
  ASSERT_TRUE(cache.store(key, sample_symbols("f()"), &why)) << why;
  const std::string path = cache_files(dir.path("c")).at(0);
  for (uint64_t run = 1;; ++run) {
    CachedModule module = cache.load(key);
    ASSERT_EQ(module.symbols.size(), 2 + run);
    const uint32_t records = module.origin.records;
    AddressSymbol learnt;
    learnt.frames.push_back(SourceFrame{"run" + std::to_string(run), "/src/r.cc", 1, 2, run});
    module.learn_symbol(0x10000 + run, learnt);
    module.learn_return_slot(0x10000 + run, 3);
    const std::string before = read_file(path);
    ASSERT_TRUE(cache.store(key, module, &why)) << why;
    const std::string after = read_file(path);
    const CachedModule reread = cache.load(key);
    EXPECT_TRUE(same(reread, module)) << "run " << run;
    if (records == 8) {  // folded: one record, as a module stored whole
      EXPECT_EQ(reread.origin.records, 1u);
      EXPECT_EQ(after, inprof::symbolicate::encode_symbol_cache(key, module));
      break;
    }
    EXPECT_EQ(reread.origin.records, records + 1);
    EXPECT_EQ(after.substr(0, before.size()), before) << "run " << run;
    ASSERT_LT(run, 20u);
  }
  // Read, then replaced by another process's file: written whole, not appended to the other.
  CachedModule module = cache.load(key);
  module.learn_symbol(0x20000, AddressSymbol{});
  ASSERT_TRUE(cache.store(key, sample_symbols("other()"), &why)) << why;
  ASSERT_TRUE(cache.store(key, module, &why)) << why;
  EXPECT_EQ(read_file(path), inprof::symbolicate::encode_symbol_cache(key, module));
}

// A run that decoded only its own addresses and must write the file whole (folding its
// records) writes what it did not decode too.
TEST(SymbolCache, AFileWrittenWholeKeepsWhatTheRunDidNotDecode) {
  symtest::TempDir dir;
  SymbolCache cache(dir.path("c"), 1 << 20);
  const std::string key = "00ff-dwarf-0000000000000000";
  std::string why;
  CachedModule expected = sample_symbols("f()");
  ASSERT_TRUE(cache.store(key, expected, &why)) << why;
  const std::vector<uint64_t> wanted = {0x2000};
  for (uint64_t run = 1;; ++run) {
    CachedModule module = cache.load(key, &wanted);
    EXPECT_EQ(module.symbols.size(), 1u);
    const uint32_t records = module.origin.records;
    AddressSymbol learnt;
    learnt.frames.push_back(SourceFrame{"run" + std::to_string(run), "/src/r.cc", 1, 2, run});
    module.learn_symbol(0x10000 + run, learnt);
    expected.symbols[0x10000 + run] = learnt;
    ASSERT_TRUE(cache.store(key, module, &why)) << why;
    const CachedModule reread = cache.load(key);
    EXPECT_TRUE(same(reread, expected)) << "run " << run;
    if (records == 8) {
      EXPECT_EQ(reread.origin.records, 1u);
      break;
    }
    ASSERT_LT(run, 20u);
  }
}

TEST(SymbolCache, SizeBoundEvictsTheLeastRecentlyUsed) {
  symtest::TempDir dir;
  const std::string one = encode_symbol_cache("k", sample_symbols("f()"));
  // Room for three files, not four.
  SymbolCache cache(dir.path("c"), one.size() * 3 + one.size() / 2);
  ModuleFiles files;
  std::vector<std::string> keys;
  std::string why;
  for (uint8_t i = 0; i < 3; ++i) {
    keys.push_back(SymbolCache::key({0x10, i}, files));
    ASSERT_TRUE(cache.store(keys.back(), sample_symbols("f()"), &why)) << why;
  }
  ASSERT_EQ(cache_files(dir.path("c")).size(), 3u);
  // Ages set explicitly: file 0 the oldest, then 2, then 1 (no reliance on the clock's pace).
  const auto now = fs::file_time_type::clock::now();
  const std::string base = cache_files(dir.path("c"))[0];
  const fs::path v = fs::path(base).parent_path();
  fs::last_write_time(v / (keys[0] + ".sym"), now - std::chrono::hours(3));
  fs::last_write_time(v / (keys[2] + ".sym"), now - std::chrono::hours(2));
  fs::last_write_time(v / (keys[1] + ".sym"), now - std::chrono::hours(1));
  keys.push_back(SymbolCache::key({0x10, 3}, files));
  ASSERT_TRUE(cache.store(keys.back(), sample_symbols("f()"), &why)) << why;
  EXPECT_TRUE(fs::exists(v / (keys[0] + ".sym")));  // the writer evicts once it has written all
  cache.evict();
  EXPECT_FALSE(fs::exists(v / (keys[0] + ".sym")));
  EXPECT_TRUE(fs::exists(v / (keys[1] + ".sym")));
  EXPECT_TRUE(fs::exists(v / (keys[2] + ".sym")));
  EXPECT_TRUE(fs::exists(v / (keys[3] + ".sym")));
  // A bound below one file leaves none.
  SymbolCache tiny(dir.path("c"), 1);
  tiny.evict();
  EXPECT_TRUE(cache_files(dir.path("c")).empty());
}

TEST(SymbolCache, ByteSizesParse) {
  uint64_t n = 0;
  EXPECT_TRUE(inprof::symbolicate::parse_byte_size("512M", &n));
  EXPECT_EQ(n, uint64_t{512} << 20);
  EXPECT_TRUE(inprof::symbolicate::parse_byte_size("2G", &n));
  EXPECT_EQ(n, uint64_t{2} << 30);
  EXPECT_TRUE(inprof::symbolicate::parse_byte_size("100KiB", &n));
  EXPECT_EQ(n, uint64_t{100} << 10);
  EXPECT_TRUE(inprof::symbolicate::parse_byte_size("4096", &n));
  EXPECT_EQ(n, 4096u);
  for (const char* bad : {"", "M", "12X", "-1", "1.5G", "99999999999999999999G"}) {
    EXPECT_FALSE(inprof::symbolicate::parse_byte_size(bad, &n)) << bad;
  }
}

// The inflated debug image kept beside the symbols: read back only when intact.
TEST(DebugImageCache, OnlyAnIntactImageIsUsed) {
  symtest::TempDir dir;
  std::string bytes(100000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 % 251);
  const int fd = memfd_create("image", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  auto image = inprof::symbolicate::DebugImage::adopt("/x.debug", fd, bytes.size());
  const std::string path =
      dir.path("c/v" + std::to_string(inprof::symbolicate::kSymbolCacheVersion) + "/k.img");
  inprof::symbolicate::save_debug_image(*image, path);
  auto loaded = inprof::symbolicate::load_cached_debug_image(path, "/x.debug");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->size(), bytes.size());
  EXPECT_EQ(loaded->path(), "/x.debug");
  std::string back(bytes.size(), '\0');
  ASSERT_EQ(pread(loaded->fd(), back.data(), back.size(), 0), ssize_t(back.size()));
  EXPECT_EQ(back, bytes);
  const std::string good = read_file(path);
  // Checked whole once: the stamp beside it lets the next run skip reading it all, for this very
  // file only.
  const std::string stamp = inprof::symbolicate::debug_image_stamp_path(path);
  ASSERT_TRUE(fs::exists(stamp));
  ASSERT_TRUE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
  std::string flipped = good;
  flipped[5000] = static_cast<char>(flipped[5000] ^ 4);
  // A damaged copy renamed over it (another file, whatever its stamp says): not used.
  write_file(path + ".other", flipped);
  fs::rename(path + ".other", path);
  EXPECT_FALSE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
  // Intact and stamped again: each damage below is written in place, under a stamp that matched.
  inprof::symbolicate::save_debug_image(*image, path);
  for (const std::string& damaged :
       {flipped, good.substr(0, good.size() - 1), good.substr(0, 10), std::string()}) {
    write_file(path, damaged);
    EXPECT_FALSE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"))
        << damaged.size() << " bytes";
  }
  fs::remove(path);
  EXPECT_FALSE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
}

// A hit refreshes a file's time (the eviction order) only once it is kRefreshAfter old: a run
// soon after another writes nothing, and finds a debug image's stamp as it left it.
TEST(SymbolCache, AHitRefreshesOnlyAnOldTime) {
  symtest::TempDir dir;
  SymbolCache cache(dir.path("c"), uint64_t{1} << 30);
  const std::string key = SymbolCache::key({0x42, 1}, ModuleFiles{});
  std::string why;
  ASSERT_TRUE(cache.store(key, sample_symbols("f()"), &why)) << why;
  const fs::path file = cache_files(dir.path("c")).at(0);
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(file, now - inprof::symbolicate::kRefreshAfter / 2);
  const auto recent = fs::last_write_time(file);
  EXPECT_EQ(cache.load(key).symbols.size(), 3u);
  EXPECT_EQ(fs::last_write_time(file), recent);
  fs::last_write_time(file, now - std::chrono::hours(2));
  EXPECT_EQ(cache.load(key).symbols.size(), 3u);
  EXPECT_GT(fs::last_write_time(file), now - inprof::symbolicate::kRefreshAfter / 2);
}

TEST(DebugImageCache, ALoadSoonAfterWritesNothing) {
  symtest::TempDir dir;
  std::string bytes(50000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 17 % 253);
  const int fd = memfd_create("image", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  auto image = inprof::symbolicate::DebugImage::adopt("/x.debug", fd, bytes.size());
  const std::string path =
      dir.path("c/v" + std::to_string(inprof::symbolicate::kSymbolCacheVersion) + "/k.img");
  const std::string stamp = inprof::symbolicate::debug_image_stamp_path(path);
  inprof::symbolicate::save_debug_image(*image, path);
  auto identity = [](const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return std::to_string(st.st_ino) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
           std::to_string(st.st_ctim.tv_nsec);
  };
  const std::string image_before = identity(path), stamp_before = identity(stamp);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
    EXPECT_EQ(identity(path), image_before);   // not touched
    EXPECT_EQ(identity(stamp), stamp_before);  // not written again
  }
  // Old: checked whole again (its time changed under the stamp), refreshed and stamped anew;
  // the next load finds that stamp as it is.
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::hours(2));
  ASSERT_TRUE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
  EXPECT_GT(fs::last_write_time(path),
            fs::file_time_type::clock::now() - inprof::symbolicate::kRefreshAfter);
  const std::string image_after = identity(path), stamp_after = identity(stamp);
  EXPECT_NE(stamp_after, stamp_before);
  ASSERT_TRUE(inprof::symbolicate::load_cached_debug_image(path, "/x.debug"));
  EXPECT_EQ(identity(path), image_after);
  EXPECT_EQ(identity(stamp), stamp_after);
}

// End to end, with the symbolicate binary on a dump of this test executable.
class SymbolCacheRun : public ::testing::Test {
 protected:
  void SetUp() override {
    symtest::DumpFile d(dump());
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    const uint64_t caller = symtest::caller_function();
    d.sample(1, 1'000'000, {leaf, caller});
    d.sample(1, 2'000'000, {leaf});
    d.sample(1, 3'000'000, {symtest::after_syscall_address()});
    d.end(4'000'000);
    d.close();
    ASSERT_EQ(symtest::run_symbolicate_binary({dump(), "--no-cache", "-o", cold()}, &err_), 0)
        << err_;
    ASSERT_NE(read_file(cold()).find("leaf_function"), std::string::npos);
  }
  std::string dump() const { return dir_.path("d.inprof"); }
  std::string cold() const { return dir_.path("cold.json"); }
  std::string cache() const { return dir_.path("cache"); }
  // Symbolicates the dump with the cache into `out`; its stderr in err_.
  int run(const std::string& out) {
    return symtest::run_symbolicate_binary({dump(), "--cache-dir", cache(), "-o", out}, &err_);
  }

  symtest::TempDir dir_;
  std::string err_;
};

TEST_F(SymbolCacheRun, WarmOutputIsByteIdenticalToCold) {
  ASSERT_EQ(run(dir_.path("first.json")), 0) << err_;
  EXPECT_NE(err_.find("0 addresses found"), std::string::npos) << err_;
  ASSERT_EQ(cache_files(cache()).size(), 1u);
  ASSERT_EQ(run(dir_.path("warm.json")), 0) << err_;
  EXPECT_NE(err_.find(" 0 symbolized"), std::string::npos) << err_;
  EXPECT_EQ(read_file(dir_.path("first.json")), read_file(cold()));
  EXPECT_EQ(read_file(dir_.path("warm.json")), read_file(cold()));
}

// Another dump of the same build: its addresses are new, but in the units the first dump's
// touched. The module index answers them, without opening the module, exactly as cold.
TEST_F(SymbolCacheRun, NewAddressesOfKnownUnitsAreAnsweredAsCold) {
  const std::string other = dir_.path("other.inprof");
  {
    symtest::DumpFile d(other);
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    const uint64_t caller = symtest::caller_function();
    d.sample(1, 1'000'000, {leaf + 2, caller - 1});
    d.sample(1, 2'000'000, {leaf + 1, caller});
    d.end(3'000'000);
    d.close();
  }
  const std::string other_cold = dir_.path("other_cold.json");
  ASSERT_EQ(symtest::run_symbolicate_binary({other, "--no-cache", "-o", other_cold}, &err_), 0)
      << err_;
  ASSERT_EQ(run(dir_.path("first.json")), 0) << err_;  // fills the cache from the first dump
  auto warm = [&](const std::string& out) {
    return symtest::run_symbolicate_binary({other, "--cache-dir", cache(), "-o", out}, &err_);
  };
  const std::string saved = dir_.path("saved");
  fs::copy(cache(), saved, fs::copy_options::recursive);
  ASSERT_EQ(warm(dir_.path("other_warm.json")), 0) << err_;
  EXPECT_NE(err_.find(" 0 symbolized"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("(0 found by the module index)"), std::string::npos) << err_;
  EXPECT_EQ(read_file(dir_.path("other_warm.json")), read_file(other_cold));
  // Its unit files damaged or cut short, or the module part: the same output, from the reader.
  std::vector<std::string> index_files;
  for (const auto& entry : fs::recursive_directory_iterator(saved)) {
    const auto ext = entry.path().extension();
    if (ext == ".unit" || ext == ".idx") index_files.push_back(entry.path().string());
  }
  ASSERT_FALSE(index_files.empty());
  for (const std::string damage : {"flip", "cut", "empty"}) {
    fs::remove_all(cache());
    fs::copy(saved, cache(), fs::copy_options::recursive);
    for (const std::string& f : index_files) {
      const std::string target = cache() + f.substr(saved.size());
      std::string bytes = read_file(target);
      if (damage == "flip")
        bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 8);
      if (damage == "cut") bytes.resize(bytes.size() - 9);
      if (damage == "empty") bytes.clear();
      write_file(target, bytes);
    }
    const std::string out = dir_.path("damaged.json");
    ASSERT_EQ(warm(out), 0) << err_;
    EXPECT_NE(err_.find("(0 found by the module index)"), std::string::npos) << damage << err_;
    EXPECT_EQ(read_file(out), read_file(other_cold)) << damage;
  }
}

// Another dump of the same build whose new addresses are leaves: the leaf fix-up's CFI question
// and the system-call check are answered from the binary (binary_code.h), the frames from the
// module index. No module is opened, and the output is the cold run's.
TEST_F(SymbolCacheRun, NewLeavesOfKnownUnitsOpenNoModule) {
  const std::string other = dir_.path("leaves.inprof");
  const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
  const uint64_t caller = symtest::caller_function();
  {
    symtest::DumpFile d(other);
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    // A frame-pointer walk that may have missed the leaf's caller: the CFI decides.
    d.sample(1, 1'000'000, {leaf + 1, caller}, kSampleFramePointerWalk, std::nullopt,
             {{0, caller}, {1, caller + 1}});
    d.sample(1, 2'000'000, {leaf, caller}, kSampleFramePointerWalk, std::nullopt,
             {{0, caller - 1}});
    // Sampled without CPU time at new leaves: was it in a system call?
    d.sample(1, 3'000'000, {leaf + 2, caller}, 0, 0);
    d.sample(1, 4'000'000, {leaf + 3}, 0, 0);
    d.end(5'000'000);
    d.close();
  }
  const std::string other_cold = dir_.path("leaves_cold.json");
  ASSERT_EQ(symtest::run_symbolicate_binary({other, "--no-cache", "-o", other_cold}, &err_), 0)
      << err_;
  ASSERT_EQ(run(dir_.path("first.json")), 0) << err_;  // fills the cache from the first dump
  EXPECT_NE(err_.find(", 1 module opened"), std::string::npos) << err_;
  const std::string out = dir_.path("leaves_warm.json");
  ASSERT_EQ(symtest::run_symbolicate_binary({other, "--cache-dir", cache(), "-o", out}, &err_), 0)
      << err_;
  EXPECT_NE(err_.find(" 0 symbolized"), std::string::npos) << err_;
  EXPECT_NE(err_.find(", 0 modules opened"), std::string::npos) << err_;
  EXPECT_EQ(read_file(out), read_file(other_cold));
  // Once more: now every answer is in the cache file itself.
  ASSERT_EQ(symtest::run_symbolicate_binary({other, "--cache-dir", cache(), "-o", out}, &err_), 0)
      << err_;
  EXPECT_NE(err_.find(", 0 modules opened"), std::string::npos) << err_;
  EXPECT_EQ(read_file(out), read_file(other_cold));
}

TEST_F(SymbolCacheRun, CorruptOrTruncatedCacheFilesAreIgnored) {
  ASSERT_EQ(run(dir_.path("first.json")), 0) << err_;
  ASSERT_EQ(cache_files(cache()).size(), 1u);
  const std::string file = cache_files(cache())[0];
  const std::string good = read_file(file);
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 1);
  // Names of another build under this module's file name: their key is not the module's.
  CachedModule poison;
  const std::optional<CachedModule> decoded =
      decode_symbol_cache(fs::path(file).stem().string(), good);
  ASSERT_TRUE(decoded);
  for (const auto& [vaddr, s] : decoded->symbols) {
    AddressSymbol wrong;
    wrong.frames.push_back(SourceFrame{"WRONG_NAME", "wrong.cc", 1, 1, 0});
    poison.symbols[vaddr] = wrong;
  }
  const std::string foreign = encode_symbol_cache("00-dwarf-0000000000000000", poison);
  for (const std::string& bytes : {good.substr(0, good.size() / 2), good.substr(0, 3),
                                   std::string(), flipped, foreign, std::string(4096, '\xff')}) {
    write_file(file, bytes);
    const std::string out = dir_.path("out.json");
    ASSERT_EQ(run(out), 0) << err_;
    EXPECT_EQ(read_file(out), read_file(cold())) << "cache file of " << bytes.size() << " bytes";
    // Rewritten whole by the run.
    EXPECT_EQ(read_file(file), good);
  }
}

TEST_F(SymbolCacheRun, TwoConcurrentProcessesSharingACacheAgree) {
  for (int round = 0; round < 5; ++round) {
    fs::remove_all(cache());
    std::string err_a, err_b;
    int status_a = -1, status_b = -1;
    const std::string a = dir_.path("a.json"), b = dir_.path("b.json");
    std::thread other([&] {
      status_b = symtest::run_symbolicate_binary({dump(), "--cache-dir", cache(), "-o", b}, &err_b);
    });
    status_a = symtest::run_symbolicate_binary({dump(), "--cache-dir", cache(), "-o", a}, &err_a);
    other.join();
    ASSERT_EQ(status_a, 0) << err_a;
    ASSERT_EQ(status_b, 0) << err_b;
    EXPECT_EQ(read_file(a), read_file(cold()));
    EXPECT_EQ(read_file(b), read_file(cold()));
    // And the cache they left is whole: a third run takes everything from it.
    ASSERT_EQ(run(dir_.path("c.json")), 0) << err_;
    EXPECT_NE(err_.find(" 0 symbolized"), std::string::npos) << err_;
    EXPECT_EQ(read_file(dir_.path("c.json")), read_file(cold()));
  }
}

// Two warm runs of another dump at once: each appends what it learnt to the same .sym
// (symbol_cache_file.h). The file they leave is intact and answers every address.
TEST_F(SymbolCacheRun, TwoConcurrentAppendsLeaveAnIntactFile) {
  const std::string other = dir_.path("other.inprof");
  {
    symtest::DumpFile d(other);
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    const uint64_t leaf = reinterpret_cast<uintptr_t>(&symtest::leaf_function);
    const uint64_t caller = symtest::caller_function();
    d.sample(1, 1'000'000, {leaf + 2, caller - 1});
    d.sample(1, 2'000'000, {leaf + 1, caller});
    d.end(3'000'000);
    d.close();
  }
  const std::string other_cold = dir_.path("other_cold.json");
  ASSERT_EQ(symtest::run_symbolicate_binary({other, "--no-cache", "-o", other_cold}, &err_), 0)
      << err_;
  auto warm = [&](const std::string& out, std::string* err) {
    return symtest::run_symbolicate_binary({other, "--cache-dir", cache(), "-o", out}, err);
  };
  for (int round = 0; round < 5; ++round) {
    fs::remove_all(cache());
    ASSERT_EQ(run(dir_.path("first.json")), 0) << err_;
    std::string err_a, err_b;
    int status_a = -1, status_b = -1;
    const std::string a = dir_.path("a.json"), b = dir_.path("b.json");
    std::thread second([&] { status_b = warm(b, &err_b); });
    status_a = warm(a, &err_a);
    second.join();
    ASSERT_EQ(status_a, 0) << err_a;
    ASSERT_EQ(status_b, 0) << err_b;
    EXPECT_EQ(read_file(a), read_file(other_cold));
    EXPECT_EQ(read_file(b), read_file(other_cold));
    ASSERT_EQ(cache_files(cache()).size(), 1u);
    const std::string file = cache_files(cache())[0];
    const std::string bytes = read_file(file);
    const auto decoded = decode_symbol_cache(fs::path(file).stem().string(), bytes);
    ASSERT_TRUE(decoded);
    EXPECT_EQ(decoded->origin.intact_bytes, bytes.size());
    EXPECT_GE(decoded->origin.records, 2u);  // the first run's, then at least one appended
    ASSERT_EQ(warm(dir_.path("c.json"), &err_), 0) << err_;
    EXPECT_NE(err_.find(" 0 symbolized (0 found by the module index)"), std::string::npos) << err_;
    EXPECT_EQ(read_file(dir_.path("c.json")), read_file(other_cold));
  }
}

TEST_F(SymbolCacheRun, NoCacheWritesNothingAndBadSizesAreOneClearLine) {
  ASSERT_EQ(symtest::run_symbolicate_binary(
                {dump(), "--cache-dir", cache(), "--no-cache", "-o", dir_.path("n.json")}, &err_),
            0)
      << err_;
  EXPECT_FALSE(fs::exists(cache()));
  EXPECT_EQ(symtest::run_symbolicate_binary(
                {dump(), "--cache-max", "lots", "-o", dir_.path("n.json")}, &err_),
            2);
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
  EXPECT_NE(err_.find("--cache-max"), std::string::npos) << err_;
}

TEST_F(SymbolCacheRun, DefaultIsUnderXdgCacheHome) {
  const std::string xdg = dir_.path("xdg");
  const char* before = std::getenv("XDG_CACHE_HOME");
  const std::string saved = before ? before : "";
  ASSERT_EQ(setenv("XDG_CACHE_HOME", xdg.c_str(), 1), 0);
  const int status = symtest::run_symbolicate_binary({dump(), "-o", dir_.path("x.json")}, &err_);
  if (before) {
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_CACHE_HOME");
  }
  ASSERT_EQ(status, 0) << err_;
  EXPECT_EQ(cache_files(xdg + "/inprof").size(), 1u);
}

}  // namespace
