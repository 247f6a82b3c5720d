// Reading one file of the symbol cache (symbol_cache.h) and keeping its time, which orders the
// eviction (least recently used first). A warm run reads some fifty files, 6 MB: a large one is
// mapped (the page cache's pages, neither copied nor zeroed first; copying them into fresh heap
// pages was a quarter of a warm run's page faults), its pages mapped as they are touched (a
// unit read from a pack touches its own pages only), a small one read into a buffer left
// uninitialised. Its time is refreshed only once it is older than kRefreshAfter, so that a run
// soon after another writes no inode at all (and does not make a debug image's stamp stale,
// debug_image_cache.h).
#ifndef INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_
#define INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

namespace inprof::symbolicate {

// How old a file's time may get before a hit refreshes it: the eviction order is exact to
// within this (runs minutes apart are told apart; runs seconds apart need not be).
inline constexpr std::chrono::minutes kRefreshAfter{10};

// Files from this size on are mapped rather than read.
inline constexpr size_t kMapCacheFilesFrom = 64 << 10;

// A whole cache file, its time when it was opened and its identity (0, 0 where unknown).
class CacheFileBytes {
 public:
  CacheFileBytes(std::shared_ptr<const char> data, size_t size,
                 std::filesystem::file_time_type time, uint64_t device = 0, uint64_t inode = 0)
      : data_(std::move(data)), size_(size), time_(time), device_(device), inode_(inode) {}
  std::string_view view() const { return {data_.get(), size_}; }
  // Keeps the bytes: parts of them may be used past the file's decoding without a copy.
  const std::shared_ptr<const char>& owner() const { return data_; }
  std::filesystem::file_time_type time() const { return time_; }
  uint64_t device() const { return device_; }
  uint64_t inode() const { return inode_; }

 private:
  std::shared_ptr<const char> data_;
  size_t size_;
  std::filesystem::file_time_type time_;
  uint64_t device_, inode_;
};

// The files already read, by identity (device, inode): a unit pack (unit_pack.h) has a name per
// unit, and a run that needs forty of its units maps it once, not forty times. Should an inode
// be freed and reused meanwhile, the bytes remembered are still an intact file of the cache,
// whose contents are checked against the unit asked for: at worst a miss.
class CacheFileMemo {
 public:
  const CacheFileBytes* find(uint64_t device, uint64_t inode) const;
  void add(uint64_t device, uint64_t inode, const CacheFileBytes& bytes);

 private:
  struct Entry {
    uint64_t device, inode;
    CacheFileBytes bytes;
  };
  std::vector<Entry> files_;  // a few: one per pack a run reads
};

// The file at `path`, whole; nullopt if it cannot be read. With `memo`: a file read before
// through another name is not read again, and a file read is remembered.
std::optional<CacheFileBytes> read_cache_file(const std::string& path,
                                              CacheFileMemo* memo = nullptr);

// Whether a file last written or refreshed at `time` is due for a refresh.
bool due_for_refresh(std::filesystem::file_time_type time);

// Marks the file at `path`, found last written or refreshed at `time`, as just used, unless it
// was so less than kRefreshAfter ago.
void refresh_cache_file(const std::string& path, std::filesystem::file_time_type time);

#if !defined(_WIN32)
// A file's modification time as std::filesystem gives it (the clock due_for_refresh reads).
std::filesystem::file_time_type file_time_of(const struct stat& st);
#endif

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_
