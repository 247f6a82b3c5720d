#include "symbolize/cache/cache_dir_listing.h"

#include <chrono>
#include <system_error>

#include "symbolize/cache/cache_file_read.h"

#if !defined(_WIN32)
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#endif

namespace inprof::symbolicate {
namespace fs = std::filesystem;

#if !defined(_WIN32)
std::vector<CacheDirEntry> list_cache_dir(const std::string& dir) {
  std::vector<CacheDirEntry> entries;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return entries;
  const int fd = ::dirfd(d);
  while (const struct dirent* e = ::readdir(d)) {
    if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) continue;
    struct stat st;
    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;  // removed meanwhile, or not a file
    }
    entries.push_back({e->d_name, file_time_of(st), static_cast<uint64_t>(st.st_size),
                       static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_nlink)});
  }
  ::closedir(d);
  return entries;
}
#else
std::vector<CacheDirEntry> list_cache_dir(const std::string& dir) {
  std::vector<CacheDirEntry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!it->is_regular_file(e)) continue;
    const uint64_t size = it->file_size(e);
    const fs::file_time_type time = it->last_write_time(e);
    if (e) continue;                                                        // removed meanwhile
    entries.push_back({it->path().filename().string(), time, size, 0, 1});  // no inode told
  }
  return entries;
}
#endif

}  // namespace inprof::symbolicate
