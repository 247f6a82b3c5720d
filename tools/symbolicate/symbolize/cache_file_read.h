// Reading one file of the symbol cache (symbol_cache.h) and keeping its time, which orders the
// eviction (least recently used first). A warm run reads some fifty files: each is read into a
// buffer left uninitialised (not zeroed first, then overwritten), and its time is refreshed only
// once it is older than kRefreshAfter, so that a run soon after another writes no inode at all
// (and does not make a debug image's stamp stale, debug_image_cache.h).
#ifndef INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_
#define INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace inprof::symbolicate {

// How old a file's time may get before a hit refreshes it: the eviction order is exact to
// within this (runs minutes apart are told apart; runs seconds apart need not be).
inline constexpr std::chrono::minutes kRefreshAfter{10};

// A whole cache file.
class CacheFileBytes {
 public:
  CacheFileBytes(std::unique_ptr<char[]> data, size_t size) : data_(std::move(data)), size_(size) {}
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_;
};

// The file at `path`, whole; nullopt if it cannot be read.
std::optional<CacheFileBytes> read_cache_file(const std::string& path);

// Whether a file last written or refreshed at `time` is due for a refresh.
bool due_for_refresh(std::filesystem::file_time_type time);

// Marks the file at `path` as just used, unless it was so less than kRefreshAfter ago.
void refresh_cache_file(const std::string& path);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CACHE_FILE_READ_H_
