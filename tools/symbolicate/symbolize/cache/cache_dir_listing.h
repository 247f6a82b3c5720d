// The files of the symbol cache's directory with their sizes and times, for eviction
// (SymbolCache::evict). A warm run lists some hundred files after writing: one stat each
// (std::filesystem's directory entries stat a file once for its size and again for its time).
#ifndef INPROF_TOOLS_SYMBOLICATE_CACHE_DIR_LISTING_H_
#define INPROF_TOOLS_SYMBOLICATE_CACHE_DIR_LISTING_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace inprof::symbolicate {

struct CacheDirEntry {
  std::string name;                      // the file's name, without the directory
  std::filesystem::file_time_type time;  // last modified (a hit refreshes it)
  uint64_t size = 0;
  uint64_t inode = 0;  // 0 where the platform does not tell
  uint64_t links = 1;  // the file's names (hard links)
};

// The regular files directly in `dir`; a file removed while listing is left out. Empty when the
// directory cannot be read.
std::vector<CacheDirEntry> list_cache_dir(const std::string& dir);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CACHE_DIR_LISTING_H_
